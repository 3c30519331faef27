"""The pipeline's cost against the model's size: the transformer from ~10^3 to ~10^6 parameters,
and torchvision's ResNet-18 at its full 11 M (the port of examples/ports).

    uv run python benchmarks/scale.py [--sizes 1e3 1e4 1e5 1e6 resnet18] [--steps 100]
        [--json results/benchmarks/scale.json] [--plot results/benchmarks/scale.png]

Works in a temporary copy of the project (the checkout's results/ are left alone), with the
Burn binary built once (cargo's own cache). For each size and each optimizer (SGD lr 0.01,
Adam lr 0.001), one experiment of --steps steps (probe steps 1 and the last), measured as:

  bare          each of its four trainings alone, nothing recorded (`--bare`): the
                trainer's own "N steps in s" (start-up and imports left out)
  pipeline      `snakemake --cores 2` of that experiment from an empty results/ but the
                binary: dataset, specs, the four recorded trainings, every analysis, the
                report; its wall time against the sum of the four bare trainings
  disk          the bytes of its four runs (JSON and tensors files) against the raw bytes of
                the values they record (the tensors' data: 4 or 8 bytes a value)
  memory        the peak RSS of each job (pipeline.peak_memory; the warm server's own
                ~0.4 GB of imported PyTorch included, as the job sees it)
  recorded      how many of the steps the runs recorded (config/record.py's budget; the
                ResNet-18's `record: {steps: [last]}` keeps step 1, the last and the one
                before it, as a user of a model that size would choose)

The ResNet-18 runs as its config in examples/ports runs it (its crate, its weights and data
written by its make_files.py in the copy); its port's binary is built before the timing, as
the trainer's is, and its bare trainings are that binary's.

Prints a table, writes the figures as JSON and a log-log plot of each against the parameter
count.
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

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import ROOT, cold, copy_project, peak_memory, snakemake  # noqa: E402

# The transformer at each size: heads 4, 16 or 64 wide (an exact f32 square root on Burn's
# side, see docs/benchmarks.md "Cost against the model's size").
SIZES = {
    "1e3": {"name": "transformer"},  # 1,003 parameters
    "1e4": {"name": "transformer", "d_model": 32, "heads": 2, "layers": 1, "d_ff": 64},
    "1e5": {"name": "transformer", "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256},
    "1e6": {"name": "transformer", "d_model": 256, "heads": 4, "layers": 1, "d_ff": 1024},
    "1e7": {"name": "transformer", "d_model": 512, "heads": 8, "layers": 3, "d_ff": 2048},
}
# A port at its size: its model mapping from examples/ports/config.yaml, by the port's name.
PORTS = {"resnet18": "examples/ports/resnet18"}
OPTIMIZERS = {
    "sgd": {"optimizer": "sgd", "lr": 0.01, "momentum": 0.0, "dampening": 0.0,
            "weight_decay": 0.0, "nesterov": False},
    "adam": {"optimizer": "adam", "lr": 0.001, "betas": [0.9, 0.999], "eps": 1.0e-8,
             "weight_decay": 0.0},
}  # fmt: skip
TRAINED = re.compile(r"(\d+) steps in ([\d.]+)s")


def run(cmd: list, cwd: Path, env: dict) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"scale: {' '.join(map(str, cmd))} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout + proc.stderr


def bare_seconds(work: Path, env: dict, name: str, data: str, binary: Path) -> dict[str, float]:
    """Each framework's training alone at each precision, nothing recorded."""
    spec, times = f"results/specs/{name}.json", {}
    for dtype in ("f32", "f64"):
        out = f"bare/{name}-{dtype}"
        torch = [
            sys.executable,
            "-m",
            "torch_burn_parity.training.train_torch",
            "--spec",
            spec,
            "--dtype",
            dtype,
            "--data",
            data,
            "--out",
            f"{out}-torch.json",
            "--bare",
        ]
        burn = [binary, "--spec", spec, "--dtype", dtype, "--data", data,
                "--out", f"{out}-burn.json", "--bare"]  # fmt: skip
        for framework, cmd in (("torch", torch), ("burn", burn)):
            found = TRAINED.search(run(cmd, work, env))
            times[f"{framework}_{dtype}"] = float(found.group(2))
    return times


def disk(work: Path, name: str) -> dict[str, int]:
    """The bytes of the experiment's run files, and of the values their tensors hold."""
    files = list((work / "results/runs" / name).iterdir())
    raw = 0
    for path in files:
        if path.suffix == ".safetensors":
            with path.open("rb") as f:
                header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
            header.pop("__metadata__", None)
            raw += sum(e["data_offsets"][1] - e["data_offsets"][0] for e in header.values())
    return {"bytes": sum(p.stat().st_size for p in files), "raw_bytes": raw}


def port_model(size: str) -> dict:
    """A port's model mapping as examples/ports/config.yaml gives it."""
    config = yaml.safe_load((ROOT / "examples/ports/config.yaml").read_text())
    return next(e["model"] for e in config["experiments"].values() if e["model"]["name"] == size)


def copy_port(work: Path, size: str) -> None:
    """The port's folder into the copy, its weights and data written there."""
    folder = PORTS[size]
    shutil.copytree(ROOT / folder, work / folder,
                    ignore=shutil.ignore_patterns("target", "*.safetensors"))  # fmt: skip
    run([sys.executable, f"{folder}/make_files.py"], work, dict(os.environ))


def measure(work: Path, env: dict, size: str, optimizer: str, steps: int) -> dict:
    name = f"scale_{size}_{optimizer}"
    port = size in PORTS
    experiment = {"model": port_model(size) if port else SIZES[size], **OPTIMIZERS[optimizer],
                  "probe_steps": [1, steps]}  # fmt: skip
    if port:
        experiment["record"] = {"steps": [steps]}
    config = {"steps": steps, "batch_size": 16, "experiments": {name: experiment}}
    (work / "scale.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for path in (work / "results").iterdir():
        if path.name != "bin":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.rmtree(work / ".snakemake", ignore_errors=True)
    shutil.rmtree(work / "bare", ignore_errors=True)
    (work / "bare").mkdir()
    args = ("--cores", "2", "--configfile", "scale.yaml")
    binary = work / "results/bin/parity-train"
    if port:  # its binary built before the timing, as the trainer's is
        binary = work / f"results/bin/ports/{size}"
        run(snakemake(str(binary.relative_to(work)), *args), work, env)
    env = cold(env)
    start = time.perf_counter()
    run(snakemake(*args), work, env)
    pipeline = time.perf_counter() - start
    spec = json.loads((work / f"results/specs/{name}.json").read_text())
    data = next(str(p.relative_to(work)) for p in (work / "results/data").iterdir())
    if port:  # the bare trainings find the port by name, as the pipeline's jobs do
        from torch_burn_parity.models import port as ports

        env = dict(env, **{ports.ENV: json.dumps({size: experiment["model"]})})
    bare = bare_seconds(work, env, name, data, binary)
    block = json.loads((work / f"results/runs/{name}/torch-f64.json").read_text())[name]
    if port:
        tag = spec["model"]
        parameters = sum(math.prod(p["shape"]) for p in spec["port"]["params"])
    else:
        from torch_burn_parity.models.model_specs import spec as model_spec

        model = model_spec(spec["model"], spec["model_size"])
        tag, parameters = model.tag, model.param_count
    return {
        "size": size,
        "optimizer": optimizer,
        "model": tag,
        "parameters": parameters,
        "recorded_steps": len(block["tensors"]["steps"]),
        "steps": steps,
        "bare_s": bare,
        "bare_total_s": sum(bare.values()),
        "pipeline_s": pipeline,
        "pipeline_over_bare": pipeline / sum(bare.values()),
        **disk(work, name),
        "peak_rss_mb": peak_memory(work),
    }


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), layout="constrained")
    for optimizer, marker, colour in (("sgd", "o", "tab:blue"), ("adam", "s", "tab:orange")):
        own = sorted(
            (r for r in rows if r["optimizer"] == optimizer), key=lambda r: r["parameters"]
        )
        n = [r["parameters"] for r in own]
        style = {"marker": marker, "color": colour}
        axes[0].plot(n, [r["pipeline_s"] for r in own], **style, label=f"pipeline ({optimizer})")
        axes[0].plot(n, [r["bare_total_s"] for r in own], **style, linestyle="--",
                     label=f"4 bare trainings ({optimizer})")  # fmt: skip
        axes[1].plot(n, [r["bytes"] / 2**20 for r in own], **style, label=optimizer)
        axes[2].plot(n, [max(r["peak_rss_mb"].values()) for r in own], **style, label=optimizer)
    titles = ("wall time (s)", "disk per experiment (MB)", "largest peak RSS of a job (MB)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("parameters")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e3", "1e4", "1e5", "1e6"],
                        choices=[*SIZES, *PORTS])  # fmt: skip
    parser.add_argument("--optimizers", nargs="+", default=list(OPTIMIZERS), choices=OPTIMIZERS)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--json", type=Path, default=ROOT / "results/benchmarks/scale.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "results/benchmarks/scale.png")
    parser.add_argument("--replot", action="store_true", help="redraw --plot from --json")
    args = parser.parse_args(argv)
    if args.replot:
        return plot(json.loads(args.json.read_text()), args.plot)
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "rust" / "target"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        copy_project(work)
        env["PYTHONPATH"] = str(work / "src")
        print("building the Burn trainer …", flush=True)
        run(snakemake("--cores", "2", "results/bin/parity-train"), work, env)
        for size in set(args.sizes) & set(PORTS):
            print(f"writing the {size} port's files …", flush=True)
            copy_port(work, size)
        for size in args.sizes:
            for optimizer in args.optimizers:
                print(f"{size} {optimizer} …", flush=True)
                rows.append(measure(work, env, size, optimizer, args.steps))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1) + "\n")
    plot(rows, args.plot)
    print(f"\n{'model':<48} {'opt':<5} {'params':>10} {'rec':>4} {'bare s':>7} "
          f"{'pipe s':>7} {'ratio':>5} {'disk MB':>8} {'disk/raw':>8} {'peak MB':>8}")  # fmt: skip
    for r in rows:
        print(f"{r['model']:<48} {r['optimizer']:<5} {r['parameters']:>10,} "
              f"{r['recorded_steps']:>4} {r['bare_total_s']:>7.2f} {r['pipeline_s']:>7.1f} "
              f"{r['pipeline_over_bare']:>5.2f} {r['bytes'] / 2**20:>8.1f} "
              f"{r['bytes'] / max(r['raw_bytes'], 1):>8.3f} "
              f"{max(r['peak_rss_mb'].values()):>8.0f}")  # fmt: skip
    print(f"-> {args.json}, {args.plot}")


if __name__ == "__main__":
    main()
