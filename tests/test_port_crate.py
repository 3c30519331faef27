"""models/port_crate.py: a port's crate is refused before any job when its lock file would
compile a second Burn, with the command that fixes it."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT
from torch_burn_parity.models.port_crate import (
    TRAINER_LOCK,
    TRAINER_MANIFEST,
    crate_problems,
    locked_versions,
)

EXAMPLE_LOCK = ROOT / "examples/byo/burn/Cargo.lock"
EXAMPLE_MANIFEST = EXAMPLE_LOCK.with_name("Cargo.toml")


def crate_with(tmp_path: Path, lock: str | None, manifest: bool = True) -> str:
    crate = tmp_path / "burn"
    crate.mkdir()
    if manifest:
        (crate / "Cargo.toml").write_text(EXAMPLE_MANIFEST.read_text())
    if lock is not None:
        (crate / "Cargo.lock").write_text(lock)
    return str(crate)


def test_the_examples_lock_resolves_the_trainers_versions(tmp_path):
    assert crate_problems(crate_with(tmp_path, EXAMPLE_LOCK.read_text())) == []
    assert locked_versions(TRAINER_LOCK)["cubecl"] == {"0.11.3"}


def test_a_lock_with_newer_burn_dependencies_is_refused_with_the_fix(tmp_path):
    lock = EXAMPLE_LOCK.read_text().replace(
        'name = "cubecl"\nversion = "0.11.3"', 'name = "cubecl"\nversion = "0.11.4"'
    )
    crate = crate_with(tmp_path, lock)
    (problem,) = crate_problems(crate)
    assert problem.startswith(f"{crate}/Cargo.lock resolves cubecl 0.11.4 (the trainer's 0.11.3)")
    assert "would compile a second Burn" in problem
    assert problem.endswith(
        f"cp {TRAINER_LOCK} {crate}/Cargo.lock && cargo update --workspace --manifest-path"
        f" {crate}/Cargo.toml"
    )


def test_many_differing_packages_are_counted_not_listed(tmp_path):
    lock = EXAMPLE_LOCK.read_text()
    for name, old in (("cubecl", "0.11.3"), ("serde", "1.0.229"), ("burn", "0.22.1"),
                      ("burn-core", "0.22.1"), ("burn-nn", "0.22.1")):  # fmt: skip
        pinned = f'name = "{name}"\nversion = '
        lock = lock.replace(f'{pinned}"{old}"', f'{pinned}"9"')
    (problem,) = crate_problems(crate_with(tmp_path, lock))
    assert problem.count(" (the trainer's ") == 3 and " and 2 more: " in problem


def test_a_second_major_version_beside_the_trainers_rebuilds_nothing(tmp_path):
    extra = '\n[[package]]\nname = "cubecl"\nversion = "0.12.0"\nsource = "registry+x"\n'
    assert crate_problems(crate_with(tmp_path, EXAMPLE_LOCK.read_text() + extra)) == []


def test_missing_and_malformed_files_are_named(tmp_path):
    (a, b, c) = (tmp_path / "a", tmp_path / "b", tmp_path / "c")
    for folder in (a, b, c):
        folder.mkdir()
    assert crate_problems(crate_with(a, None)) == [
        f"{a}/burn: no Cargo.lock (built with --locked: commit the lock file)"
    ]
    assert crate_problems(crate_with(b, EXAMPLE_LOCK.read_text(), manifest=False)) == [
        f"{b}/burn: no Cargo.toml"
    ]
    (problem,) = crate_problems(crate_with(c, "[[package]\nname ="))
    assert problem.startswith(f"{c}/burn/Cargo.lock: not a Cargo.lock (")


def test_the_examples_crates_have_the_trainers_release_profile():
    for crate in ("examples/byo/burn", *map(str, ROOT.glob("examples/ports/*/burn"))):
        assert crate_problems(str(ROOT / crate)) == [], crate


def profile_of(tmp_path: Path, profile: str) -> list[str]:
    manifest = EXAMPLE_MANIFEST.read_text()
    manifest = manifest[: manifest.index("[profile.release]")] + profile
    crate = crate_with(tmp_path, EXAMPLE_LOCK.read_text())
    (Path(crate) / "Cargo.toml").write_text(manifest)
    return crate_problems(crate)


def test_a_release_profile_other_than_the_trainers_is_refused_with_the_fix(tmp_path):
    """Cargo takes the profile from the port's manifest: another one compiles Burn again."""
    (a, b, c) = (tmp_path / "a", tmp_path / "b", tmp_path / "c")
    for folder in (a, b, c):
        folder.mkdir()
    (problem,) = profile_of(a, "")  # cargo's defaults: burn-ndarray at opt-level 3
    assert problem == (
        f"{a}/burn/Cargo.toml: its [profile.release] has no debug (the trainer's false); no"
        " package.burn-ndarray.opt-level (the trainer's 0): its build would compile a second"
        " Burn instead of reusing the trainer's; copy the [profile.release] tables of"
        f" {TRAINER_MANIFEST} into it"
    )
    other = '[profile.release]\ndebug = false\nlto = "thin"\n'
    other += "[profile.release.package.burn-ndarray]\nopt-level = 3\n"
    (problem,) = profile_of(b, other)
    assert problem.startswith(
        f'{b}/burn/Cargo.toml: its [profile.release] has lto = "thin" (the trainer has none);'
        " package.burn-ndarray.opt-level = 3 (the trainer's 0): "
    )
    (problem,) = profile_of(c, "[profile.release\n")
    assert problem.startswith(f"{c}/burn/Cargo.toml: not TOML (")
