"""Build your own port's Burn binary (models/port.py) and copy it out, as the rule
`build_port` runs it:

    python -m torch_burn_parity.tooling.build_port --crate CRATE --bin BIN --out OUT --log LOG

The crate is built with `cargo build --release --locked` into the trainer's target folder
(`$CARGO_TARGET_DIR`, else rust/target), where Burn is already compiled: the crates its lock
file shares with rust/Cargo.lock are built once, for the trainer and every port.

One target folder for several crates has a trap: cargo tells a package's builds apart by
its name, version and path *relative to its workspace*, so two crates of one package name
in two folders look the same to it, and the second one's build can be "fresh" with the
first one's binary (even the dep-info file beside the binary, `BIN.d`, is rewritten to name
the second crate's sources). So the package's own artifacts are cleaned before every build
(`cargo clean -p PACKAGE`: Burn and the trainer library are kept), and builds into one
target folder take turns (a file lock) from the clean to the copy, so that two ports never
copy each other's binary. The rule runs only when the crate's sources or the trainer's
changed, when the crate is compiled again in any case.

A first build (no Burn compiled in the target folder yet) says so, and every build prints
a progress line every 30 seconds: crates compiled so far, of those the crate needs
(tooling/cargo_build.py).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

from torch_burn_parity.tooling.cargo_build import (
    burn_compiled,
    crates_to_compile,
    first_error,
    run_cargo,
    target_dir,
)


class BuildError(Exception):
    """A build that failed: one line (and the compiler's first error, when there is one)."""


def package_of(crate: Path, bin_name: str) -> str:
    """The package (of the crate's workspace) that holds binary `bin_name`."""
    proc = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline",
         "--manifest-path", str(crate / "Cargo.toml")],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        raise BuildError(f"{crate}: cargo metadata failed: {proc.stderr.strip()[:300]}")
    for package in json.loads(proc.stdout)["packages"]:
        for target in package["targets"]:
            if target["name"] == bin_name and "bin" in target["kind"]:
                return package["name"]
    raise BuildError(f"{crate}: no binary {bin_name!r} in the crate (burn.bin)")


def build(crate: Path, bin_name: str, out: Path, log_path: Path) -> None:
    """Build `bin_name` of `crate` into the shared target folder and copy it to `out`."""
    crate = crate.resolve()
    target = target_dir(Path("rust"))
    target.mkdir(parents=True, exist_ok=True)
    label = "build_port"
    build_args = ["build", "--release", "--locked", "--manifest-path", str(crate / "Cargo.toml"),
                  "--bin", bin_name, "--target-dir", str(target)]  # fmt: skip
    total = crates_to_compile(crate / "Cargo.toml")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(target / ".parity-port-build.lock", "w") as turn, open(log_path, "w") as log:
        fcntl.flock(turn, fcntl.LOCK_EX)
        if not burn_compiled(target):
            print(f"{label}: Burn is not compiled in {target} yet: this build compiles it first"
                  " (about 6 min on 2 cores, more on a busy machine)", file=sys.stderr,
                  flush=True)  # fmt: skip
        print(f"{label}: cargo build --release --locked in {crate} (log: {log_path})",
              file=sys.stderr, flush=True)  # fmt: skip
        # Another crate of this package name may have been built here last: cargo would
        # take this one's build for fresh. Its artifacts go; the dependencies stay.
        package = package_of(crate, bin_name)
        clean = ["clean", "--release", "--manifest-path", str(crate / "Cargo.toml"),
                 "-p", package, "--target-dir", str(target)]  # fmt: skip
        if run_cargo(clean, log, label) != 0:
            raise BuildError(f"{crate}: cargo clean -p {package} failed (log: {log_path})")
        if run_cargo(build_args, log, label, total) != 0:
            raise BuildError(f"{crate} does not build; its first error:\n{first_error(log_path)}")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".tmp")
        shutil.copy2(target / "release" / bin_name, partial)
        partial.replace(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crate", type=Path, required=True, help="the port's crate folder")
    parser.add_argument("--bin", required=True, help="the crate's binary that runs the port")
    parser.add_argument("--out", type=Path, required=True, help="where the binary is copied")
    parser.add_argument("--log", type=Path, required=True, help="cargo's output")
    args = parser.parse_args(argv)
    try:
        build(args.crate, args.bin, args.out, args.log)
    except BuildError as exc:
        raise SystemExit(f"build_port: {exc}") from None


if __name__ == "__main__":
    main()
