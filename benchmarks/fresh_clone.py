"""A fresh clone to its report, phase by phase: what a newcomer waits for.

    uv run python benchmarks/fresh_clone.py [--rev HEAD] [--against REV] [--cold-caches]
        [--build-beside] [--json results/benchmarks/fresh_clone.json]

Clones this checkout's --rev (`git clone`, so committed files only) into a temporary
folder and runs the README's pipeline command there, `uv run snakemake --cores 4`, as its
two parts, each timed:

  environment   `uv sync --locked`: what `uv run` does first in a fresh clone
  pipeline      `uv run snakemake --cores 4`, the default config, from nothing: inside it
    binary at     when the trainer's binary landed, from the pipeline's start
    burn build    the build_burn job (Snakemake's benchmark file of the rule), Burn and
                  the trainer compiled from nothing into the clone's rust/target
    after build   from the trainer's binary landing to the end of the run: the Burn
                  trainings and everything after them
  total         clone to report

--against REV measures that revision too, after --rev, in the same run (each a clone of its
own), for a before-and-after on the same machine.

--cold-caches gives uv and cargo empty caches of their own (UV_CACHE_DIR, CARGO_HOME in the
temporary folder): every wheel and crate is downloaded, as on a fresh machine. Without it
the machine's download caches serve (nothing is compiled or installed from them: the
clone's environment and target folder are new either way).

--build-beside starts `cargo build --release --locked` in rust/ at the same moment as the
environment, as a newcomer could by hand; the pipeline's build_burn then waits for it and
finds the trainer built.

Run it on an otherwise idle machine; it takes as long as it measures (about 10 minutes on 2
cores).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINARY = "results/bin/parity-train"


def run(cmd: list[str], cwd: Path, env: dict, log: Path) -> float:
    """Run `cmd`, its output to `log`; its wall time. A failure ends the benchmark."""
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        sys.exit(f"fresh_clone: {' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return time.perf_counter() - start


def environment(tmp: Path, cold_caches: bool) -> dict:
    """The environment the commands run in: the clone's own virtual environment (uv's
    default, not this checkout's), and with --cold-caches empty download caches."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CARGO_TARGET_DIR")}
    if cold_caches:
        env["UV_CACHE_DIR"] = str(tmp / "uv-cache")
        env["CARGO_HOME"] = str(tmp / "cargo-home")
    return env


def build_seconds(clone: Path) -> float | None:
    """The build_burn job's wall time, from the rule's benchmark file (None for a revision
    whose rule has none: "binary at" then bounds it)."""
    path = clone / "results/benchmarks/build_burn.tsv"
    if not path.is_file():
        return None
    with open(path) as tsv:
        return float(next(csv.DictReader(tsv, delimiter="\t"))["s"])


def measure(rev: str, cold_caches: bool, build_beside: bool, keep: Path | None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="fresh-clone-"))
    clone = tmp / "clone"
    logs = tmp / "logs"
    logs.mkdir()
    env = environment(tmp, cold_caches)
    try:
        start = time.perf_counter()
        subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
        times = {"clone": time.perf_counter() - start}
        beside = None
        if build_beside:
            cargo_log = open(logs / "cargo-beside.log", "w")  # noqa: SIM115 (closed below)
            beside = subprocess.Popen(
                ["cargo", "build", "--release", "--locked"],
                cwd=clone / "rust", env=env, stdout=cargo_log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        print("environment: uv sync --locked …", flush=True)
        times["environment"] = run(["uv", "sync", "--locked"], clone, env, logs / "uv-sync.log")
        print(f"  {times['environment']:.1f} s\npipeline: uv run snakemake --cores 4 …", flush=True)
        pipeline_start = time.time()
        times["pipeline"] = run(
            ["uv", "run", "snakemake", "--cores", "4"], clone, env, logs / "snakemake.log"
        )
        end = time.time()
        if beside is not None:
            beside.wait()
            cargo_log.close()
        times["burn build"] = build_seconds(clone)
        times["binary at"] = (clone / BINARY).stat().st_mtime - pipeline_start
        times["after build"] = end - (clone / BINARY).stat().st_mtime
        times["total"] = time.perf_counter() - start
        report = clone / "results/report.md"
        if not report.is_file():
            sys.exit("fresh_clone: the pipeline ended without results/report.md")
        return times
    finally:
        if keep is not None:
            shutil.copytree(logs, keep, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


def short(rev: str) -> str:
    """A revision's short hash (a bad one ends the benchmark in one line)."""
    proc = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"fresh_clone: {rev}: not a revision of this checkout")
    return proc.stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="HEAD", help="the revision to clone (default HEAD)")
    parser.add_argument("--against", metavar="REV", help="measure this revision too")
    parser.add_argument("--cold-caches", action="store_true", help="empty uv and cargo caches")
    parser.add_argument("--build-beside", action="store_true",
                        help="start the Burn build beside `uv sync`")  # fmt: skip
    parser.add_argument("--keep-logs", type=Path, help="copy the phases' logs here")
    parser.add_argument("--json", type=Path, default=ROOT / "results/benchmarks/fresh_clone.json")
    args = parser.parse_args(argv)
    for tool in ("git", "uv", "cargo"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found on PATH")
    revs = [short(args.rev)] + ([short(args.against)] if args.against else [])
    record = {"cpu_count": os.cpu_count(), "cold_caches": args.cold_caches,
              "build_beside": args.build_beside, "seconds": {}}  # fmt: skip
    for rev in revs:
        print(f"[{rev}]", flush=True)
        keep = args.keep_logs / rev if args.keep_logs else None
        record["seconds"][rev] = measure(rev, args.cold_caches, args.build_beside, keep)
    print(f"\nfresh clone to its report, {os.cpu_count()} cores"
          f"{', cold caches' if args.cold_caches else ''}"
          f"{', Burn built beside the environment' if args.build_beside else ''}")  # fmt: skip
    print(f"  {'phase':<12} " + " ".join(f"{rev:>22}" for rev in revs))
    for phase in ("clone", "environment", "pipeline", "binary at", "burn build", "after build",
                  "total"):  # fmt: skip
        cells = []
        for rev in revs:
            value = record["seconds"][rev][phase]
            if value is None:
                cells.append(f"{'(not recorded)':>22}")
            else:
                minutes, seconds = divmod(value, 60)
                cells.append(f"{value:7.1f} s ({int(minutes)} min {seconds:04.1f})")
        print(f"  {phase:<12} " + " ".join(f"{c:>22}" for c in cells))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written to {args.json}")


if __name__ == "__main__":
    main()
