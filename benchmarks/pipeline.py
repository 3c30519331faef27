"""Wall times of the pipeline on this machine, against the seed's hand-run sequence.

    uv run python benchmarks/pipeline.py [--repeat 3] [--json results/benchmarks/pipeline.json]

Works in a temporary copy of the project (the checkout's results/ are left alone), with
the environment and the Burn binary already built, and measures:

  reference     the seed's sequence by hand: one PyTorch process training sgd and adam
                (f32), the Burn binary for both, compare.py on the two
  cold          `snakemake --cores 4` from an empty results/ (binary prebuilt), on the
                seed's two experiments (sgd, adam) like the reference; it trains each in
                both frameworks and both dtypes (4× the reference's trainings) and adds
                the replays, probes, plots and report. Every cold run starts its own
                warm server (tooling/warm.py: PyTorch, pandas and matplotlib
                imported once, each script forked from it) and its time counts
  no-op         the same command again: nothing to do
  edit          after editing one analysis script (steps_table.py): the analysis jobs and
                the report (the warm server of the cold run still up, as in daily use)
  cold-default  for scale: a cold run of the default config.yaml (all its experiments)
  startup       `snakemake --version`: Snakemake's own start-up
  sweep         cold runs of two sweep sizes (--sweep-sizes, default 2 and 6 Adam points
                beside sgd): the marginal seconds per added experiment (the slope), the
                peak memory per job of the larger run (per script from the line warm.py
                writes to its log, for the Burn binary from Snakemake's benchmark file), its
                no-op rerun against `snakemake --version`

  cpu-path      PyTorch's training time (the trainer's own "N steps in s", imports left out)
                of adam and transformer_sgd, f32 and f64, under each cpu_path setting: what
                pinning the kernel paths costs (config/cpu_path.py)

Prints a table with the median of --repeat runs and the ratio to the reference.
`--only sweep` or `--only cpu-path` measures that alone; `--only sweep` measures the sweep
--repeat times (interleaved with --against's revision) and reports the medians.

`--against REV` measures a git revision of this checkout too (its files from `git archive`,
the same Python environment, Cargo's target folder shared), in the same run: each round
measures this checkout, then REV, so that both see the same machine. The table then has a
column for each, and the JSON a block for each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

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

REFERENCE_TORCH = """
import json
import torch
from torch_burn_parity.config.parity_config import load_config
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import read_dataset, write_run
from torch_burn_parity.training.train_torch import train
torch.set_num_threads(1)
config = load_config("config.yaml")
arrays, _ = read_dataset("results/data/cnn1d.safetensors")
for name in ("sgd", "adam"):
    spec = experiment_spec(config, name)
    # for the Burn binary (a revision --against measures may return the spec as a dict)
    held = spec.as_dict() if hasattr(spec, "as_dict") else spec
    open(f"ref/{name}.json", "w").write(json.dumps(held))
    write_run(f"ref/{name}-torch.json", {name: train(spec, arrays, "f32")})
"""


# What warm.py writes to a job's log: "warm: replay exit 0, cpu 0.52 s, peak RSS 700 MB"
WARM_LINE = re.compile(r"warm: (\S+?)(?:\.py)? exit \d+, cpu [\d.]+ s, peak RSS (\d+) MB")


def cold(env: dict) -> dict:
    """`env` with a runtime folder of its own: the run starts its own warm server
    (tooling/warm.py), as the first run after a reboot would, and pays for it."""
    return dict(env, XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="runtime-"))


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def snakemake(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", *args]


def reference(work: Path, env: dict) -> float:
    binary = work / "results/bin/parity-train"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", REFERENCE_TORCH], cwd=work, env=env, check=True)
    for name in ("sgd", "adam"):
        subprocess.run(
            [binary, "--spec", f"ref/{name}.json", "--dtype", "f32",
             "--data", "results/data/cnn1d.safetensors", "--out", f"ref/{name}-burn.json"],
            cwd=work, env=env, check=True, capture_output=True,
        )  # fmt: skip
    for name in ("sgd", "adam"):
        subprocess.run(
            [sys.executable, "-m", "torch_burn_parity.analysis.compare", f"ref/{name}-torch.json",
             f"ref/{name}-burn.json"],
            cwd=work, env=env, check=True, capture_output=True,
        )  # fmt: skip
    return time.perf_counter() - start


def copy_revision(work: Path, revision: str) -> None:
    """The project's files as git revision ``revision`` has them, into ``work``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "--", *PROJECT_FILES],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)


def copy_project(work: Path) -> None:
    """The project's files into ``work`` (not cargo's target: the build cache stays put)."""
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("target"))
        else:
            shutil.copy2(src, work / name)


def clean(work: Path) -> None:
    """Empty results/ but for the prebuilt binary and dataset, and Snakemake's metadata."""
    for path in (work / "results").iterdir():
        if path.name not in ("bin", "data"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.rmtree(work / ".snakemake", ignore_errors=True)


def sweep_config(seed_config: dict, size: int) -> dict:
    """sgd beside a sweep of `size` Adam points (learning rates from 0.001 up)."""
    rates = [round(0.001 * 1.5**i, 6) for i in range(size)]
    base = dict(seed_config["experiments"]["adam"])
    base.pop("description", None)
    base.pop("probe", None)
    return {**seed_config, "experiments": {"sgd": seed_config["experiments"]["sgd"]},
            "sweeps": {"bench": {"base": base, "axes": {"lr": rates}}}}  # fmt: skip


def peak_memory(work: Path) -> dict[str, float]:
    """Largest peak RSS (MB) per job kind: a Python script's from the line warm.py writes
    to its log (the forked child's own peak), a program's from Snakemake's benchmark file."""
    peaks: dict[str, float] = {}
    for log in (work / "results/logs").rglob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if match := WARM_LINE.match(line):
                script, mb = match.group(1), float(match.group(2))
                peaks[script] = max(peaks.get(script, 0.0), mb)
    for tsv in (work / "results/benchmarks").rglob("*.tsv"):
        lines = tsv.read_text().splitlines()
        if len(lines) < 2:
            continue
        row = dict(zip(lines[0].split("\t"), lines[1].split("\t"), strict=False))
        rule = tsv.relative_to(work / "results/benchmarks").parts[0]
        if row.get("max_rss", "NA") != "NA":
            peaks[rule] = max(peaks.get(rule, 0.0), float(row["max_rss"]))
    return peaks


def measure_sweep(work: Path, env: dict, seed_config: dict, sizes: list[int]) -> dict:
    """Cold runs of two sweep sizes: seconds per added experiment, memory, no-op rerun."""
    times = {}
    for size in sizes:
        (work / "config.yaml").write_text(
            yaml.safe_dump(sweep_config(seed_config, size), sort_keys=False)
        )
        clean(work)
        print(f"sweep of {size} …", flush=True)
        env = cold(env)
        times[size] = timed(snakemake("--cores", "4"), work, env)
    small, large = sizes
    no_op = timed(snakemake("--cores", "4"), work, env)
    startup = timed(snakemake("--version"), work, env)
    return {
        "cold_s": {str(k): v for k, v in times.items()},
        "marginal_s_per_experiment": (times[large] - times[small]) / (large - small),
        "peak_rss_mb_per_rule": peak_memory(work),
        "no_op_s": no_op,
        "startup_s": startup,
        "no_op_over_startup": no_op / startup,
    }


def median_sweep(runs: list[dict]) -> dict:
    """The median of each figure over rounds of measure_sweep (peak memory: the largest);
    every round's marginal seconds kept beside it."""
    median = statistics.median
    sizes = runs[0]["cold_s"]
    return {
        "cold_s": {n: median(r["cold_s"][n] for r in runs) for n in sizes},
        "marginal_s_per_experiment": median(r["marginal_s_per_experiment"] for r in runs),
        "marginal_s_per_round": [r["marginal_s_per_experiment"] for r in runs],
        "peak_rss_mb_per_rule": {
            rule: max(r["peak_rss_mb_per_rule"].get(rule, 0.0) for r in runs)
            for rule in runs[-1]["peak_rss_mb_per_rule"]
        },
        "no_op_s": median(r["no_op_s"] for r in runs),
        "startup_s": median(r["startup_s"] for r in runs),
        "no_op_over_startup": median(r["no_op_over_startup"] for r in runs),
    }


def prepare(work: Path, env: dict) -> dict:
    """The Burn binary and the datasets built in the copy at ``work`` (not timed); the
    environment its runs take."""
    env = dict(env, PYTHONPATH=str(work / "src"))  # the copy's own code, as its Snakefile does
    subprocess.run(
        snakemake("--cores", "2", "results/bin/parity-train", "results/data/cnn1d.safetensors",
                  "results/data/transformer.safetensors"),
        cwd=work, env=env, check=True, capture_output=True,
    )  # fmt: skip
    (work / "ref").mkdir()
    return env


def measure_round(work: Path, env: dict, times: dict[str, list[float]], i: int) -> None:
    """One round of the timed runs of one copy, appended to ``times``."""
    script = work / "src/torch_burn_parity/analysis/steps_table.py"
    default_config = (work / "config.yaml").read_text()
    seed_config = seed_of(default_config)
    (work / "config.yaml").write_text(yaml.safe_dump(seed_config, sort_keys=False))
    times["reference"].append(reference(work, env))
    (work / "config.yaml").write_text(default_config)
    clean(work)
    times["cold-default"].append(timed(snakemake("--cores", "4"), work, cold(env)))
    (work / "config.yaml").write_text(yaml.safe_dump(seed_config, sort_keys=False))
    clean(work)
    env = cold(env)
    times["cold"].append(timed(snakemake("--cores", "4"), work, env))
    times["no-op"].append(timed(snakemake("--cores", "4"), work, env))
    script.write_text(script.read_text() + f"\n# benchmark edit {i}\n")
    times["edit"].append(timed(snakemake("--cores", "4"), work, env))
    times["startup"].append(timed(snakemake("--version"), work, env))
    (work / "config.yaml").write_text(default_config)


def seed_of(config_text: str) -> dict:
    """The config with the seed's two experiments only."""
    config = yaml.safe_load(config_text)
    config["experiments"] = {k: config["experiments"][k] for k in ("sgd", "adam")}
    return config


def summary(times: dict[str, list[float]]) -> dict[str, dict]:
    ref = statistics.median(times["reference"])
    return {k: {"median_s": statistics.median(v), "runs_s": v, "ratio": statistics.median(v) / ref}
            for k, v in times.items()}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=ROOT / "results/benchmarks/pipeline.json")
    parser.add_argument("--only", choices=["sweep", "cpu-path"], help="measure only this")
    parser.add_argument("--sweep-sizes", type=int, nargs=2, default=[2, 6])
    parser.add_argument("--against", metavar="REV", help="measure this git revision too")
    args = parser.parse_args(argv)
    if args.sweep_sizes[0] >= args.sweep_sizes[1]:
        parser.error("--sweep-sizes: give the smaller size first")
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "rust" / "target"))
    keys = ("reference", "cold", "no-op", "edit", "cold-default", "startup")
    with tempfile.TemporaryDirectory() as tmp:
        copies = {"now": Path(tmp) / "now"}
        copies["now"].mkdir()
        copy_project(copies["now"])
        if args.against:
            copies[args.against] = Path(tmp) / "before"
            copy_revision(copies[args.against], args.against)
        print("building the Burn binary and the dataset (not timed) …", flush=True)
        envs = {label: prepare(work, env) for label, work in copies.items()}
        work, env = copies["now"], envs["now"]
        speed = measure_cpu_paths(work, env, args.repeat) if args.only != "sweep" else {}
        if args.only == "cpu-path":
            return
        # Each round measures every copy in turn, so that all see the same machine; with
        # --only sweep there are --repeat rounds and the medians are reported.
        rounds = args.repeat if args.only == "sweep" else 1
        measured: dict[str, list[dict]] = {label: [] for label in copies}
        for i in range(rounds):
            for label, work in copies.items():
                seed_config = seed_of((work / "config.yaml").read_text())
                default_config = (work / "config.yaml").read_text()
                print(f"round {i + 1}/{rounds} [{label}]", end=" ", flush=True)
                one = measure_sweep(work, envs[label], seed_config, args.sweep_sizes)
                measured[label].append(one)
                (work / "config.yaml").write_text(default_config)
        sweeps = {label: median_sweep(runs) for label, runs in measured.items()}
        for label, sweep in sweeps.items():
            print(f"[{label}]", end="")
            print_sweep(sweep)
        if args.only == "sweep":
            args.json.parent.mkdir(parents=True, exist_ok=True)
            block = sweeps["now"] if len(copies) == 1 else sweeps
            args.json.write_text(
                json.dumps({"cpu_count": os.cpu_count(), "sweep": block}, indent=2)
            )
            print(f"\nwritten to {args.json}")
            return
        times = {label: {k: [] for k in keys} for label in copies}
        for i in range(args.repeat):
            for label, work in copies.items():
                print(f"round {i + 1}/{args.repeat} [{label}] …", flush=True)
                measure_round(work, envs[label], times[label], i)
    rows = {label: summary(t) for label, t in times.items()}
    labels = list(rows)
    print(
        f"\n{'measurement':<12} "
        + " ".join(f"{f'{lb} median s':>16} {'× ref':>6}" for lb in labels)
    )
    for key in keys:
        cells = " ".join(
            f"{rows[lb][key]['median_s']:>16.2f} {rows[lb][key]['ratio']:>6.2f}" for lb in labels
        )
        runs = "; ".join(", ".join(f"{t:.2f}" for t in rows[lb][key]["runs_s"]) for lb in labels)
        print(f"{key:<12} {cells}   {runs}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    result = {"cpu_count": os.cpu_count(), "results": rows["now"], "sweep": sweeps["now"],
              "cpu_path": speed}  # fmt: skip
    if args.against:
        result["against"] = {"revision": args.against, "results": rows[args.against],
                             "sweep": sweeps[args.against]}  # fmt: skip
    args.json.write_text(json.dumps(result, indent=2))
    print(f"\nwritten to {args.json}")


TRAINED = re.compile(r"(\d+) steps in ([\d.]+)s")


def measure_cpu_paths(work: Path, env: dict, repeat: int) -> dict[str, float]:
    """Median PyTorch training seconds (adam and transformer_sgd, f32 and f64, summed) per
    cpu_path setting this CPU can take (avx2: Intel only); each trainer process cold,
    started with the setting's variables."""
    from torch_burn_parity.config import cpu_path
    from torch_burn_parity.config.resolve import experiment_spec

    config = yaml.safe_load((work / "config.yaml").read_text())
    settings = [s for s in cpu_path.SETTINGS if cpu_path.problem(s) is None]
    for setting in cpu_path.SETTINGS:
        if setting not in settings:
            print(f"cpu-path: {setting} not measured: {cpu_path.problem(setting)}")
    seconds: dict[str, list[float]] = {s: [] for s in settings}
    for _ in range(repeat):
        for setting in settings:
            specs = {
                name: work / f"ref/cpu_path_{setting}_{name}.json"
                for name in ("adam", "transformer_sgd")
            }
            for name, path in specs.items():
                spec = experiment_spec(dict(config, cpu_path=setting), name)
                path.write_text(json.dumps(spec.as_dict()))
            run_env = {k: v for k, v in env.items() if k not in cpu_path.VARIABLES}
            cpu_path.apply(setting, run_env)
            total = 0.0
            for experiment, data in (("adam", "cnn1d"), ("transformer_sgd", "transformer")):
                for dtype in ("f32", "f64"):
                    out = subprocess.run(
                        [sys.executable, "-m", "torch_burn_parity.training.train_torch",
                         "--spec", specs[experiment], "--dtype", dtype, "--data",
                         f"results/data/{data}.safetensors", "--out", f"ref/{setting}.json"],
                        cwd=work, env=run_env, check=True, capture_output=True, text=True,
                    ).stdout  # fmt: skip
                    total += float(TRAINED.search(out).group(2))
            seconds[setting].append(total)
    medians = {s: statistics.median(v) for s, v in seconds.items()}
    print("\nPyTorch training time by cpu_path (adam + transformer_sgd, f32 + f64, median):")
    for setting, median in medians.items():
        print(f"  {setting:<11} {median:6.2f} s  ({median / medians['native']:.2f}× native)")
    return medians


def print_sweep(sweep: dict) -> None:
    cold = ", ".join(f"{n} points {t:.1f} s" for n, t in sweep["cold_s"].items())
    print(f"\nsweep (beside sgd): cold {cold}")
    each = ", ".join(f"{m:.2f}" for m in sweep.get("marginal_s_per_round", []))
    print(f"  marginal {sweep['marginal_s_per_experiment']:.2f} s per added experiment"
          + (f" (median of rounds: {each})" if each else ""))  # fmt: skip
    peaks = ", ".join(f"{r} {m:.0f}" for r, m in sorted(sweep["peak_rss_mb_per_rule"].items()))
    print(f"  peak memory per job (MB): {peaks}")
    print(f"  no-op rerun {sweep['no_op_s']:.2f} s, snakemake --version {sweep['startup_s']:.2f} s"
          f" ({sweep['no_op_over_startup']:.2f}×)")  # fmt: skip


if __name__ == "__main__":
    main()
