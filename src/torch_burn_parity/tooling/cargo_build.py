"""Cargo run with a progress line: what the build jobs (`build_burn`, `build_port`) print
while a first build compiles Burn for minutes.

Cargo draws its own progress bar only on a terminal; under Snakemake its output goes to
the job's log. So the build's output is read here, and every PROGRESS_EVERY_S seconds one
line goes to stderr (the screen):

    build_burn: 140 crates compiled (its dependency tree has 192), 5 min 00 s; compiling burn-flex

A crate is compiled when cargo reports its artifact (`--message-format=json-render-diagnostics`:
one JSON line per finished artifact on stdout, the diagnostics still rendered on stderr,
which goes to the log); it is compiling from its `Compiling NAME vX` line on. The tree is
`cargo tree`'s: the normal and build dependencies on this host, each package once. Cargo
compiles each package once (its build script included), so a cold build ends near that
number: a few build dependencies of features that cargo tree counts and the build leaves
out are never compiled (the trainer: 190 of 192). A rebuild compiles only what changed, and
says so without the tree.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

PROGRESS_EVERY_S = 30.0
COMPILING = re.compile(r"^\s*Compiling (\S+) v(\S+)")


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


def package_name_version(package_id: str) -> tuple[str, str]:
    """(name, version) of a cargo package ID spec: `registry+https://…#burn-flex@0.22.1`, or
    `path+file:///…/dep#0.1.0` where the name is the folder's."""
    url, _, fragment = package_id.partition("#")
    name, at, version = fragment.partition("@")
    return (name, version) if at else (url.rstrip("/").rsplit("/", 1)[-1], fragment)


class Progress:
    """What a build has done so far: the crates started (cargo's `Compiling NAME vX` lines)
    and finished (its `compiler-artifact` messages for a package's library, proc-macro or
    binary; a build script's own artifact is not the crate)."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.start = time.monotonic()
        self.started: list[tuple[str, str]] = []
        self.finished: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    def saw_stderr(self, text: str) -> None:
        if match := COMPILING.match(text):
            with self.lock:
                self.started.append((match.group(1), match.group(2)))

    def saw_message(self, text: str) -> None:
        try:
            message = json.loads(text)
        except json.JSONDecodeError:
            return
        kinds = message.get("target", {}).get("kind", []) if isinstance(message, dict) else []
        if (message.get("reason") == "compiler-artifact" and not message.get("fresh")
                and "custom-build" not in kinds):  # fmt: skip
            with self.lock:
                self.finished.add(package_name_version(message["package_id"]))

    def line(self, final: bool = False) -> str:
        with self.lock:
            compiled = len(self.finished)
            running = [name for name, v in self.started if (name, v) not in self.finished]
        crates = "crate" if compiled == 1 else "crates"
        tree = f" (its dependency tree has {self.total})" if self.total else ""
        now = f"; compiling {', '.join(running[-3:])}" if running and not final else ""
        elapsed = minutes(time.monotonic() - self.start)
        return f"{self.label}: {compiled} {crates} compiled{tree}, {elapsed}{now}"


def run_cargo(args: list[str], log: TextIO, label: str, total: int = 0) -> int:
    """Run `cargo ARGS` with its output appended to `log`; every PROGRESS_EVERY_S seconds a
    line to stderr with the crates compiled so far (and `total`, the crates of the dependency
    tree, when known) and those compiling now. Cargo's exit code.

    A `build` gets `--message-format=json-render-diagnostics`: cargo still writes its
    diagnostics to stderr (the log) as a person reads them, and adds one JSON line per
    finished artifact on stdout, read here and not logged."""
    progress = Progress(label, total)
    done = threading.Event()

    def report() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            print(progress.line(), file=sys.stderr, flush=True)

    def read_messages(stream: TextIO) -> None:
        for text in stream:
            progress.saw_message(text)

    if args[:1] == ["build"]:
        args = [*args, "--message-format=json-render-diagnostics"]
    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        proc = subprocess.Popen(["cargo", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        reader = threading.Thread(target=read_messages, args=(proc.stdout,), daemon=True)
        reader.start()
        for text in proc.stderr:
            log.write(text)
            log.flush()
            progress.saw_stderr(text)
        code = proc.wait()
        reader.join()
    finally:
        done.set()
        reporter.join()
    if progress.started:
        print(progress.line(final=True), file=sys.stderr, flush=True)
    return code


def first_error(log_path: Path) -> str:
    """The compiler's first error and the 8 lines after it, else the log's last 20 lines."""
    lines = log_path.read_text(errors="replace").splitlines()
    for i, text in enumerate(lines):
        if text.startswith("error"):
            return "\n".join(lines[i : i + 9])
    return "\n".join(lines[-20:])
