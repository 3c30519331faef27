"""What moves with the CPU path: a config's whole pipeline under every path this machine can take.

    uv run python benchmarks/cpu_paths.py [--config config.yaml] [--paths native avx2 …]
        [--json results/benchmarks/cpu_paths.json]

Each path runs the pipeline cold in a copy of the project (binary prebuilt, not timed):

  native      cpu_path: native, nothing pinned (this CPU's best kernels)
  avx2        cpu_path: avx2 (ATen AVX2, MKL_CBWR=AVX2, oneDNN ≤ AVX2)
  compatible  cpu_path: compatible (ATen scalar, MKL_CBWR=COMPATIBLE, oneDNN ≤ SSE4.1)
  haswell     cpu_path: avx2, and Burn run under `qemu-x86_64 -cpu Haswell`: an AVX2 CPU
              without AVX-512, as Burn's dispatchers see it (needs Debian's qemu-user)
  nehalem     cpu_path: compatible, and Burn under `qemu-x86_64 -cpu Nehalem`: no AVX, no
              FMA (gemm's scalar kernels, matrixmultiply's SSE2)

and prints, against the first path: which runs have identical parameter and buffer
trajectories and by how much the others moved (max |Δ| over every recorded parameter, buffer,
step and run), how many CSV tables are byte-identical, each experiment's
verdict and the figures the report shows beside it (f64 gap and floor, f32 gap, compare
worst, final losses), and the wall time of the pipeline. PyTorch under emulation is not
run here (half a minute just to import it); tests/test_cpu_path.py runs one training that way.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from torch_burn_parity.analysis.gaps import param_matrix
from torch_burn_parity.config import cpu_path
from torch_burn_parity.config.cpu_path import describe
from torch_burn_parity.io.parity_io import experiment_block
from torch_burn_parity.judgement.verdict import rounding_floor

ROOT = Path(__file__).resolve().parents[1]

PROJECT_FILES = (
    "Snakefile",
    "config.yaml",
    "pyproject.toml",
    "src",
    "workflow",
    "rust",
    "profiles",
)
# path: (cpu_path setting, qemu CPU model for the Burn binary or None)
PATHS = {
    "native": ("native", None),
    "avx2": ("avx2", None),
    "compatible": ("compatible", None),
    "haswell": ("avx2", "Haswell"),
    "nehalem": ("compatible", "Nehalem"),
}
ROW = re.compile(r"^\| (\w+) \| (\w+) \| ([a-z ,]+?) \|", re.M)
WORST = re.compile(r"worst=(\S+) tol=")


def snakemake(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", *args]


def emulated(work: Path, cpu: str) -> None:
    """Put the Burn binary behind `qemu-x86_64 -cpu <cpu>` (newer than its inputs, so the
    Burn trainings rerun and nothing rebuilds it)."""
    binary = work / "results/bin/parity-train"
    real = work / "results/bin/parity-train.native"
    shutil.move(binary, real)
    binary.write_text(f'#!/bin/sh\nexec qemu-x86_64 -cpu {cpu} "{real}" "$@" 2>/dev/null\n')
    binary.chmod(0o755)


def run_path(name: str, config: dict, env: dict) -> tuple[Path, float]:
    setting, qemu = PATHS[name]
    work = Path(tempfile.mkdtemp(prefix=f"cpu-path-{name}-"))
    for item in PROJECT_FILES:
        src = ROOT / item
        if src.is_dir():
            ignore = shutil.ignore_patterns("target", "__pycache__")
            shutil.copytree(src, work / item, ignore=ignore)
        else:
            shutil.copy2(src, work / item)
    (work / "config.yaml").write_text(yaml.safe_dump(dict(config, cpu_path=setting)))
    subprocess.run(snakemake("--cores", "2", "results/bin/parity-train"), cwd=work, env=env,
                   check=True, capture_output=True)  # fmt: skip
    if qemu:
        emulated(work, qemu)
    # A runtime folder of its own: a warm server started under this path's variables.
    run_env = dict(env, XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="runtime-"))
    start = time.perf_counter()
    proc = subprocess.run(snakemake("--cores", "2"), cwd=work, env=run_env, capture_output=True,
                          text=True)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the pipeline failed\n{proc.stderr[-3000:]}")
    return work, time.perf_counter() - start


def figures(work: Path) -> dict:
    """Per experiment: verdict, the report's figures, and the run files' CPU paths."""
    report = (work / "results/report.md").read_text()
    out: dict = {}
    for experiment, _, verdict in ROW.findall(report):
        steps = work / f"results/tables/steps_{experiment}.csv"
        if not steps.is_file() or experiment in out:
            continue
        table = pd.read_csv(steps)
        floor = rounding_floor(table["torch_f64"], table["burn_f64"])
        row = {"verdict": verdict, "f64_gap": float(table["f64_f64"].max()),
               "f32_gap": float(table["dparam"].max()),
               "gap_over_floor": float((table["f64_f64"] / floor).max())}  # fmt: skip
        for dtype in ("f32", "f64"):
            text = (work / f"results/compare/{experiment}-{dtype}.txt").read_text()
            row[f"compare_{dtype}"] = float(WORST.search(text).group(1))
        for fw in ("torch", "burn"):
            block = experiment_block(work / f"results/runs/{experiment}/{fw}-f32.json")
            row[f"{fw}_final_loss_f32"] = float(block["final"]["loss"])
            row[f"{fw}_path"] = describe(block["meta"])
        out[experiment] = row
    return out


def run_moves(base: Path, other: Path) -> dict[str, dict[str, float]]:
    """{framework-dtype: {identical files, max |Δ| over all experiments}} between two runs."""
    moves: dict[str, dict[str, float]] = {}
    for path in sorted((base / "results/runs").glob("*/*.json")):
        rel = path.relative_to(base)
        key = path.stem
        a, b = param_matrix(experiment_block(path)), param_matrix(experiment_block(other / rel))
        gap = float(np.nanmax(np.abs(a - b))) if a.size else 0.0
        m = moves.setdefault(key, {"files": 0, "identical": 0, "max_moved": 0.0})
        m["files"] += 1
        m["identical"] += int(np.array_equal(a, b, equal_nan=True))
        m["max_moved"] = max(m["max_moved"], gap)
    return moves


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    parser.add_argument("--paths", nargs="+", choices=list(PATHS),
                        help="default: every path this CPU can take")  # fmt: skip
    parser.add_argument("--json", type=Path, default=ROOT / "results/benchmarks/cpu_paths.json")
    args = parser.parse_args(argv)
    if args.paths is None:
        args.paths = [p for p in PATHS if cpu_path.problem(PATHS[p][0]) is None]
        for name in PATHS:
            if name not in args.paths:
                print(f"{name}: left out: cpu_path: {cpu_path.problem(PATHS[name][0])}")
    for name in args.paths:
        if (why := cpu_path.problem(PATHS[name][0])) is not None:
            parser.error(f"--paths {name}: cpu_path: {why}")
    if any(PATHS[p][1] for p in args.paths) and shutil.which("qemu-x86_64") is None:
        parser.error("the haswell and nehalem paths need qemu-x86_64 (apt-get install qemu-user)")
    config = yaml.safe_load(args.config.read_text())
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "rust" / "target"))
    results: dict = {}
    works: dict[str, Path] = {}
    for name in args.paths:
        print(f"{name}: running the pipeline …", flush=True)
        works[name], seconds = run_path(name, config, env)
        results[name] = {"seconds": seconds, "experiments": figures(works[name])}
        print(f"{name}: {seconds:.1f} s", flush=True)
    base = args.paths[0]
    for name in args.paths[1:]:
        results[name]["moves"] = run_moves(works[base], works[name])
        csvs = sorted((works[base] / "results/tables").glob("*.csv"))
        same = sum(p.read_bytes() == (works[name] / "results/tables" / p.name).read_bytes()
                   for p in csvs)  # fmt: skip
        results[name]["tables_identical"] = [same, len(csvs)]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print_summary(results, base)
    for work in works.values():
        shutil.rmtree(work, ignore_errors=True)


def spread(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    if lo == hi:
        return "same"
    rel = (hi - lo) / max(abs(hi), abs(lo)) if max(abs(hi), abs(lo)) else math.inf
    return f"{lo:.3g} … {hi:.3g} ({rel:.0%})"


def print_summary(results: dict, base: str) -> None:
    names = list(results)
    print("\n| path | seconds | PyTorch path (sgd) | Burn path (sgd) |")
    print("| --- | --- | --- | --- |")
    for name in names:
        exp = next(iter(results[name]["experiments"].values()))
        print(f"| {name} | {results[name]['seconds']:.1f} | {exp['torch_path']} "
              f"| {exp['burn_path']} |")  # fmt: skip
    print(f"\nRun files against {base}: identical / files, max |Δ parameter| over every step")
    for name in names[1:]:
        moves = sorted(results[name]["moves"].items())
        if name == names[1]:
            print("| path | " + " | ".join(key for key, _ in moves) + " | tables (CSV) |")
        cells = [f"{m['identical']}/{m['files']}, {m['max_moved']:.2g}" for _, m in moves]
        tables = results[name]["tables_identical"]
        print(f"| {name} | " + " | ".join(cells) + f" | {tables[0]}/{tables[1]} identical |")
    print("\nPer experiment, over the paths: verdict, and each figure's range")
    keys = ("f64_gap", "gap_over_floor", "f32_gap", "compare_f32", "compare_f64",
            "torch_final_loss_f32", "burn_final_loss_f32")  # fmt: skip
    print("| experiment | verdict | " + " | ".join(keys) + " |")
    print("| --- " * (len(keys) + 2) + "|")
    for experiment in results[base]["experiments"]:
        rows = [results[n]["experiments"][experiment] for n in names]
        verdicts = sorted({r["verdict"] for r in rows})
        cells = [spread([r[k] for r in rows]) for k in keys]
        shown = verdicts[0] if len(verdicts) == 1 else "CHANGES: " + " / ".join(verdicts)
        print(f"| {experiment} | {shown} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
