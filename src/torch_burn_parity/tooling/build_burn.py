"""Build the Burn trainer and copy it out, as the rule `build_burn` runs it:

    python workflow/scripts/build_burn.py --manifest rust/Cargo.toml \
        --out results/bin/parity-train --log results/logs/build_burn.log

`cargo build --release --locked` into the crate's target folder (`$CARGO_TARGET_DIR`, else
rust/target), cargo's output to the log. A first build (no Burn compiled there yet) says so
and prints a progress line every 30 s: crates compiled of the crates to compile
(tooling/cargo_build.py). A crate that does not build stops here with its first error.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from torch_burn_parity.tooling.cargo_build import (
    burn_compiled,
    crates_to_compile,
    first_error,
    run_cargo,
    target_dir,
)

BINARY = "parity-train"


def build(manifest: Path, out: Path, log_path: Path) -> None:
    """Build the trainer of `manifest` and copy its binary to `out` (through a .tmp file, so
    that a killed build leaves no binary a later run would trust)."""
    if shutil.which("cargo") is None:
        sys.exit("build_burn: cargo not found on PATH; install a Rust toolchain "
                 "(https://rustup.rs) and rerun")  # fmt: skip
    target = target_dir(manifest.parent)
    first = not burn_compiled(target)
    note = " (a first build: Burn is compiled too, about 6 min on 2 cores)" if first else ""
    print(f"build_burn: cargo build --release --locked{note}; log: {log_path}",
          file=sys.stderr, flush=True)  # fmt: skip
    total = crates_to_compile(manifest) if first else 0
    args = ["build", "--release", "--locked", "--manifest-path", str(manifest)]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        code = run_cargo(args, log, "build_burn", total)
    if code != 0:
        sys.exit(f"build_burn: the trainer does not build; its first error:\n"
                 f"{first_error(log_path)}")  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".tmp")
    shutil.copy2(target / "release" / BINARY, partial)
    partial.replace(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, required=True, help="the trainer's Cargo.toml")
    parser.add_argument("--out", type=Path, required=True, help="where the binary is copied")
    parser.add_argument("--log", type=Path, required=True, help="cargo's output")
    args = parser.parse_args(argv)
    build(args.manifest, args.out, args.log)


if __name__ == "__main__":
    main()
