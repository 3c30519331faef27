"""Cargo run with a progress line: what the build jobs (`build_burn`, `build_port`) print
while a first build compiles Burn for minutes.

Cargo draws its own progress bar only on a terminal; under Snakemake its output goes to
the job's log. So cargo's stderr is read here: every `Compiling NAME vX` line is one crate
compiled, and every PROGRESS_EVERY_S seconds one line goes to stderr (the screen):

    build_burn: 57 crates compiled (its dependency tree has 192), 2 min 30 s

The tree is `cargo tree`'s: the normal and build dependencies on this host, each package
once. Cargo compiles each package once (its build script included), so a cold build ends
near that number: a few build dependencies of features that cargo tree counts and the
build leaves out are never compiled (the trainer: 190 of 192). A rebuild compiles only
what changed, and says so without the tree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

PROGRESS_EVERY_S = 30.0
COMPILING = re.compile(r"^\s*Compiling (\S+) v")


def target_dir(crate: Path) -> Path:
    """Where cargo builds `crate` (a folder): `$CARGO_TARGET_DIR`, else its own target/."""
    return Path(os.environ.get("CARGO_TARGET_DIR") or crate / "target").resolve()


def burn_compiled(target: Path) -> bool:
    """Whether the target folder holds a release build of Burn already."""
    return any((target / "release" / ".fingerprint").glob("burn-core-*"))


def crates_to_compile(manifest: Path) -> int:
    """The packages a release build of `manifest`'s crate compiles on this host: `cargo tree`
    over normal and build dependencies, each package once; 0 when cargo cannot tell (the
    progress line then gives the count alone)."""
    proc = subprocess.run(
        ["cargo", "tree", "--locked", "--manifest-path", str(manifest), "--edges", "normal,build",
         "--prefix", "none", "--format", "{p}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        return 0
    # "burn-core v0.22.1", "serde_derive v1.0.228 (proc-macro)", "… (*)" for a repeat.
    packages = {" ".join(line.split()[:2]) for line in proc.stdout.splitlines() if line.strip()}
    return len(packages)


def minutes(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def run_cargo(args: list[str], log: TextIO, label: str, total: int = 0) -> int:
    """Run `cargo ARGS` with its output appended to `log`; every PROGRESS_EVERY_S seconds a
        line to stderr with the crates compiled so far (and `total`, the crates of the dependency
    tree, when known). Cargo's exit
        code."""
    start = time.monotonic()
    compiled = 0
    done = threading.Event()

    def line() -> str:
        crates = "crate" if compiled == 1 else "crates"
        tree = f" (its dependency tree has {total})" if total else ""
        return f"{label}: {compiled} {crates} compiled{tree}, {minutes(time.monotonic() - start)}"

    def report() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            print(line(), file=sys.stderr, flush=True)

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        proc = subprocess.Popen(["cargo", *args], stdout=log, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        for text in proc.stderr:
            log.write(text)
            log.flush()
            if COMPILING.match(text):
                compiled += 1
        code = proc.wait()
    finally:
        done.set()
        reporter.join()
    if compiled:
        print(line(), file=sys.stderr, flush=True)
    return code


def first_error(log_path: Path) -> str:
    """The compiler's first error and the 8 lines after it, else the log's last 20 lines."""
    lines = log_path.read_text(errors="replace").splitlines()
    for i, text in enumerate(lines):
        if text.startswith("error"):
            return "\n".join(lines[i : i + 9])
    return "\n".join(lines[-20:])
