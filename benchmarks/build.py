"""The Burn trainer's build profile, chosen by measurement: a cold build's time against the
speed of the binary it makes at 10^6 parameters.

    uv run python benchmarks/build.py [--profiles current cgu1 deps-o2 thin-lto]
        [--repeat 3] [--json results/benchmarks/build.json]

Each profile is rust/Cargo.toml's `[profile.release]` with some settings overridden on the
command line (`cargo build --release --locked --config …`, which edits no file), built cold
into a target folder of its own (nothing shared with rust/target, so every crate is
compiled, as on a fresh clone). For each build: its wall time and the CPU time of the
compiler processes (user + system), then Burn's bare training speed (`--bare`: nothing
recorded; the trainer's own "N steps in s") of the transformer at 802,563 parameters
(benchmarks/scale.py's 1e6 size), SGD and Adam, f32 and f64, 100 steps, the median of
--repeat runs each.

Run it on an otherwise idle machine: the wall times of a build are the cores' to share.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import ROOT, copy_project, snakemake  # noqa: E402
from scale import OPTIMIZERS, SIZES, TRAINED, run  # noqa: E402

# Settings over rust/Cargo.toml's [profile.release] (opt-level 3, 16 codegen units, no LTO).
PROFILES: dict[str, list[str]] = {
    "current": [],
    # One codegen unit per crate: more inlining across a crate's functions, less parallelism.
    "cgu1": ["profile.release.codegen-units=1"],
    # The dependencies (Burn, gemm, …) at opt-level 2, the trainer at 3.
    "deps-o2": ['profile.release.package."*".opt-level=2'],
    # Thin LTO: the dependencies compiled to bitcode only, their machine code made at the
    # link (but every test binary of `cargo test --release` is then linked with LTO too).
    "thin-lto": ['profile.release.lto="thin"'],
}
DTYPES = ("f32", "f64")


def build(profile: str, target: Path) -> dict[str, float]:
    """A cold build of the trainer with `profile`'s settings into `target`: wall and CPU s."""
    cmd = ["cargo", "build", "--release", "--locked", "--manifest-path",
           str(ROOT / "rust/Cargo.toml"), "--target-dir", str(target)]  # fmt: skip
    for setting in PROFILES[profile]:
        cmd += ["--config", setting]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"build: {profile}: cargo failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"build_wall_s": wall, "build_cpu_s": cpu}


def experiments(work: Path, env: dict) -> dict[str, tuple[str, str]]:
    """The specs and dataset of the 1e6 transformer, SGD and Adam: {optimizer: (spec, data)}."""
    names = {optimizer: f"build_1e6_{optimizer}" for optimizer in OPTIMIZERS}
    config = {
        "steps": 100,
        "batch_size": 16,
        "experiments": {
            name: {"model": SIZES["1e6"], **OPTIMIZERS[optimizer], "probe_steps": [1, 100]}
            for optimizer, name in names.items()
        },
    }
    (work / "build.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    from torch_burn_parity.models.model_specs import spec_of_config

    specs = [f"results/specs/{name}.json" for name in names.values()]
    data = f"results/data/{spec_of_config(SIZES['1e6']).tag}.safetensors"
    # the targets before --configfile, which takes every argument after it as a file
    run(snakemake(*specs, data, "--cores", "2", "--configfile", "build.yaml"), work, env)
    return {o: (str(work / spec), str(work / data)) for o, spec in zip(names, specs, strict=True)}


def speed(binary: Path, runs: dict[str, tuple[str, str]], repeat: int, out: Path) -> dict:
    """Median seconds of `repeat` bare trainings per optimizer and dtype."""
    seconds = {}
    for optimizer, (spec, data) in runs.items():
        for dtype in DTYPES:
            times = []
            for _ in range(repeat):
                cmd = [binary, "--spec", spec, "--dtype", dtype, "--data", data,
                       "--out", str(out / f"{optimizer}-{dtype}.json"), "--bare"]  # fmt: skip
                times.append(float(TRAINED.search(run(cmd, out, os.environ.copy())).group(2)))
            seconds[f"{optimizer}_{dtype}"] = statistics.median(times)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=PROFILES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=ROOT / "results/benchmarks/build.json")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "project"
        work.mkdir()
        copy_project(work)
        env = dict(os.environ, PYTHONPATH=str(work / "src"))
        print("the 1e6 experiments' specs and dataset …", flush=True)
        runs = experiments(work, env)
        for profile in args.profiles:
            target = Path(tmp) / f"target-{profile}"
            print(f"{profile}: cold build {PROFILES[profile] or '(rust/Cargo.toml as is)'} …",
                  flush=True)  # fmt: skip
            row = {"profile": profile, "settings": PROFILES[profile], **build(profile, target)}
            binary = target / "release/parity-train"
            row["binary_bytes"] = binary.stat().st_size
            print(f"  built in {row['build_wall_s']:.0f} s; training …", flush=True)
            row["train_s"] = speed(binary, runs, args.repeat, Path(tmp))
            row["train_total_s"] = sum(row["train_s"].values())
            rows.append(row)
            shutil.rmtree(target)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1) + "\n")
    keys = [f"{o}_{d}" for o in OPTIMIZERS for d in DTYPES]
    print(f"\n{'profile':<10} {'build wall':>10} {'build cpu':>10} "
          + " ".join(f"{k:>10}" for k in keys) + f" {'total':>7}")  # fmt: skip
    for r in rows:
        print(f"{r['profile']:<10} {r['build_wall_s']:>9.0f}s {r['build_cpu_s']:>9.0f}s "
              + " ".join(f"{r['train_s'][k]:>9.2f}s" for k in keys)
              + f" {r['train_total_s']:>6.2f}s")  # fmt: skip
    print(f"-> {args.json}")


if __name__ == "__main__":
    main()
