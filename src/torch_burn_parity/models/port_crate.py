"""A port's Burn crate, checked before any job: its manifest and lock file are there, and
its lock resolves every crate it shares with the trainer (rust/Cargo.lock) to the trainer's
version.

The port's binary is built in the trainer's target folder so that it reuses the Burn the
trainer compiled (tooling/build_port.py). That holds only while the port's lock file picks
the same versions: a lock started with `cargo generate-lockfile` resolves the newest
versions of the day (cubecl 0.11.4 where the trainer has 0.11.3, say), and the port's build
then compiles a second Burn (20 minutes and more on 2 cores) whose dependencies are not
the ones the report names. The fix starts the port's lock from the trainer's.

The release profile too: cargo takes it from the crate's own manifest, and a package built
with other settings is another build. A port whose `[profile.release]` (with its
per-package settings, e.g. burn-ndarray's opt-level) is not the trainer's compiles Burn
again; the fix copies the trainer's profile.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

TRAINER_LOCK = Path(__file__).resolve().parents[3] / "rust" / "Cargo.lock"
TRAINER_MANIFEST = TRAINER_LOCK.with_name("Cargo.toml")
SHOWN = 3  # differing packages named in the refusal


def locked_versions(lock: Path) -> dict[str, set[str]]:
    """{package: versions} of a Cargo.lock (registry and git packages; path ones have no
    `source`); ValueError (one line) when it cannot be read."""
    try:
        packages = tomllib.loads(lock.read_text()).get("package", [])
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not a Cargo.lock ({exc})") from None
    versions: dict[str, set[str]] = {}
    for package in packages:
        if isinstance(package, dict) and "source" in package:
            versions.setdefault(str(package.get("name")), set()).add(str(package.get("version")))
    return versions


def other_versions(port: dict[str, set[str]], trainer: dict[str, set[str]]) -> list[str]:
    """The shared packages the port's lock resolves to other versions than the trainer's:
    `name a.b.c (trainer's x.y.z)`. A package the port holds in the trainer's version beside
    another (two major versions, for its own dependencies) rebuilds nothing."""
    return [
        f"{name} {', '.join(sorted(port[name]))} (the trainer's {', '.join(sorted(want))})"
        for name, want in sorted(trainer.items())
        if name in port and not want <= port[name]
    ]


def release_profile(manifest: Path) -> dict:
    """A manifest's `[profile.release]` table ({} without one); ValueError when the file is
    not TOML."""
    try:
        table = tomllib.loads(manifest.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not TOML ({exc})") from None
    return table.get("profile", {}).get("release", {})


def flat(table: dict, prefix: str = "") -> dict[str, object]:
    """A TOML table's settings by dotted key: {"package.burn-ndarray.opt-level": 0, …}."""
    out: dict[str, object] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def toml(value: object) -> str:
    """A setting as TOML writes it: true, "thin", 3."""
    return str(value).lower() if isinstance(value, bool) else json.dumps(value)


def profile_problem(manifest: Path, trainer_manifest: Path) -> str | None:
    """Why the crate's release profile would compile a second Burn, with the fix; None when
    it is the trainer's."""
    try:
        port = flat(release_profile(manifest))
    except ValueError as exc:
        return f"{manifest}: {exc}"
    want = flat(release_profile(trainer_manifest))
    differ = []
    for key in sorted(set(port) | set(want)):
        if key not in want:
            differ.append(f"{key} = {toml(port[key])} (the trainer has none)")
        elif key not in port:
            differ.append(f"no {key} (the trainer's {toml(want[key])})")
        elif port[key] != want[key]:
            differ.append(f"{key} = {toml(port[key])} (the trainer's {toml(want[key])})")
    if not differ:
        return None
    return (
        f"{manifest}: its [profile.release] has {'; '.join(differ)}: its build would compile"
        " a second Burn instead of reusing the trainer's; copy the [profile.release] tables"
        f" of {trainer_manifest} into it"
    )


def crate_problems(
    crate: str, trainer_lock: Path = TRAINER_LOCK, trainer_manifest: Path = TRAINER_MANIFEST
) -> list[str]:
    """Why the crate at `crate` cannot be built as a port (one line each); [] when it can."""
    folder = Path(crate)
    problems = []
    if not (folder / "Cargo.toml").is_file():
        problems.append(f"{crate}: no Cargo.toml")
    elif problem := profile_problem(folder / "Cargo.toml", trainer_manifest):
        problems.append(problem)
    lock = folder / "Cargo.lock"
    if not lock.is_file():
        return [*problems, f"{crate}: no Cargo.lock (built with --locked: commit the lock file)"]
    try:
        port = locked_versions(lock)
    except ValueError as exc:
        return [*problems, f"{lock}: {exc}"]
    differ = other_versions(port, locked_versions(trainer_lock))
    if differ:
        more = f" and {len(differ) - SHOWN} more" if len(differ) > SHOWN else ""
        problems.append(
            f"{lock} resolves {'; '.join(differ[:SHOWN])}{more}: its build would compile a"
            " second Burn (20+ min) instead of reusing the trainer's; start the lock from the"
            f" trainer's: cp {trainer_lock} {lock} && cargo update --workspace --manifest-path"
            f" {folder / 'Cargo.toml'}"
        )
    return problems
