"""Assemble results/report.md from the pipeline's outputs.

    python -m torch_burn_parity.report.report --config results/specs/report/config.json \\
        --results results --data results/data/cnn1d.bin results/data/cnn_bn.bin \\
        --out results/report.md

Reads the compare outputs, the tables (steps, config diff, replay, counterfactual, probe,
learning rates, layers where the runs hold a layer record, bias correction), the run files,
the dataset files (--data, one per model: the shapes), the plots and provenance.json. Every
number and verdict in the report is computed here from those files; nothing is typed in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from torch_burn_parity.io.parity_io import (
    FormatError,
    read_text,
    write_text_atomic,
)
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.models.model_specs import DEFAULT_MODEL
from torch_burn_parity.report.atlas import atlas_section
from torch_burn_parity.report.cpu_section import cpu_section
from torch_burn_parity.report.experiment import Experiment, dataset_shapes
from torch_burn_parity.report.markdown import md_table
from torch_burn_parity.report.summaries import FULL_SECTIONS_UP_TO, bias_section, sweep_section
from torch_burn_parity.report.what_was_run import hyperparameter_table, provenance_lines

# How to read the tables of an experiment's section: said once, true of every section.
READING_GUIDE = """## How to read an experiment's section

- **Config diff**: each hyperparameter as the framework will hold it, the schedule as each
  computes it and the clipping scope: `same`, `f32 storage` (Burn keeps the f32 rounding of
  the value), `differs` (a different value or rule), `precision` (the same formula evaluated
  at another precision), `formula` (the same quantity at the same precision by different
  arithmetic, e.g. a recursive and a closed-form schedule: apart by rounding only), `unused`
  (not used by this setting).
- **Compare (losses and final values)**: the original `compare` script's output, side by
  side for f32 and f64: `max|diff|` between PyTorch and Burn for every step's loss, the
  final loss and correct count, and each final parameter tensor, then the worst against the
  tolerance of that dtype.
- **Gaps step by step**: each gap is max |Δ| over all parameters after the step; `first step
  above tolerance` is the first step over that dtype's tolerance (not the rounding floor),
  growth the last step over step 1.
  In the per-step table, `|dloss|` = |torch loss − burn loss| (f32 batch losses),
  `max|dparam|` torch f32 vs burn f32, `torch-f64` torch f32 vs torch f64, `burn-f64` burn
  f32 vs burn f64, `f64-f64` torch f64 vs burn f64.
- **Plots**: the four gaps on a log scale with the tolerances and the rounding floor (grey
  band); |Δloss| per step on a log scale, with the two loss curves below.
- **Replay and counterfactual**: per step, `|dloss|` and `max|dparam|` between the replay
  and the run it reproduces, and `where` the largest parameter gap is.
- **Gradient probe**: one parameter's step-1 gradient and update (parameter after step 1
  minus its initial value) in both frameworks and precisions; the error columns compare
  each row with the same framework's f64 row.
"""


LAYERS_GUIDE = """- **Where the difference enters**: at each probe step, every quantity of the step
  in the order it is computed — each layer's output (forward), the loss, each layer's input
  gradient and each parameter's gradient (backward), each parameter and buffer after the
  step (update) — torch vs burn in f32 and in f64, each against a rounding floor of its own
  (verdict.py's rule applied to that quantity, its minimum of 64 f64 ulps scaled by the
  quantity's largest |f64 value|); the sentence names the first quantity whose f64
  difference leaves it, the others of that step and phase that leave theirs, and the
  largest f64 difference of that step when it is elsewhere. For a model with buffers, the
  last train-mode loss beside the final eval-mode loss and correct count.
"""
BUFFERS_GUIDE = """- **A model with buffers** (BatchNorm's running mean and variance): the gaps
  cover the buffers as well as the parameters. Training moves the parameters (a train-mode
  forward normalizes with each batch's own statistics); the buffers are updated alongside
  and only an eval-mode forward reads them. The verdict says which of the two leaves the
  rounding floor, and `final` (loss, correct) is an eval-mode evaluation.
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="report_config.json")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument(
        "--data", required=True, type=Path, nargs="+", help="the dataset files (shapes)"
    )
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        text = build(args)
    except (FormatError, OSError, KeyError, ValueError) as exc:
        sys.exit(f"report: {exc}")
    write_text_atomic(args.out, text)
    print(f"report: {args.out}")


def read_json(path: Path) -> dict:
    """A JSON file of the pipeline's, or a FormatError naming it."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def verdict_records(path: Path) -> dict[str, dict]:
    """results/verdicts.json by experiment (judgement/judge.py's records)."""
    try:
        return {r["experiment"]: r for r in read_json(path)["experiments"]}
    except (KeyError, TypeError):
        raise FormatError(f"{path}: not a verdicts file (no experiments' records)") from None


def missing_record(results: Path, name: str) -> dict:
    raise FormatError(f"{results / 'verdicts.json'}: no verdict record of experiment {name}")


def what_was_trained(models: list[str]) -> str:
    """The report's opening words: 'The same 1-D CNN' (the seed's model alone), or 'The same
    small models (`cnn1d`, `cnn_bn`, `transformer`)'."""
    if models in ([], [DEFAULT_MODEL]):
        return "The same 1-D CNN"
    plural = "s" if len(models) > 1 else ""
    return f"The same small model{plural} (" + ", ".join(f"`{m}`" for m in models) + ")"


def build(args: argparse.Namespace) -> str:
    """The whole report's text, from the files under --results."""
    effective = read_json(args.config)
    config = effective["config"]
    sweeps = effective.get("sweeps", {})
    # Experiments of a large sweep get no section of their own: the sweep's section sums
    # them up from its summary and links their tables.
    summarised = {n for members in sweeps.values() if len(members) > FULL_SECTIONS_UP_TO
                  for n in members}  # fmt: skip
    info = read_json(args.results / "provenance.json")
    records = verdict_records(args.results / "verdicts.json")
    shapes = dataset_shapes(args.data)
    experiments = [
        Experiment(
            name, spec, args.results, effective["tolerances"][name], shapes,
            config["report_steps"], records.get(name) or missing_record(args.results, name),
        )
        for name, spec in config["experiments"].items()
        if name not in summarised
    ]  # fmt: skip
    sweep_parts = [
        sweep_section(args.results, name, members, len(members) > FULL_SECTIONS_UP_TO)
        for name, members in sweeps.items()
    ]
    summary = pd.DataFrame([x.summary_row() for x in experiments])
    summary = md_table(summary) if experiments else "No experiment outside the sweeps."
    shown: dict[str, str] = {}
    faults = sorted(
        {
            f"`{x.name}` ({fw} {dt}: {f['parameter']} flat index {f['index']} += {f['delta']:g}"
            f" after step {f['step']})"
            for x in experiments
            for (fw, dt), run in x.runs.items()
            if (f := run["meta"].get("fault"))
        }
    )
    what = what_was_trained(sorted({x.model for x in experiments}))
    parts = [
        "# PyTorch ↔ Burn training parity\n",
        f"{what}, trained from the same data and initial weights by PyTorch and by"
        f" Burn, {config['steps']} steps per run (batches of {config['batch_size']} in rotation),"
        " in f32 and in f64. Every number below is computed from this pipeline run.\n",
        *(
            [
                "**Warning: faults were injected on purpose (PARITY_FAULT) into "
                + "; ".join(faults)
                + ". The verdicts below judge those faults, not the frameworks.**\n"
            ]
            if faults
            else []
        ),
        atlas_section(experiments) if len({x.optimizer for x in experiments}) > 1 else "",
        "## Verdicts\n",
        summary + "\n",
        "How to read this: the f64 runs of the two frameworks should differ only by f64"
        " rounding. `f64 gap (max over steps)` is the largest torch-f64 vs burn-f64 parameter"
        " gap after any step; `compare … (worst key)` is the original `compare` script's"
        " worst difference over its keys: the per-step losses, the final loss, the correct count"
        " (a difference in samples, not in values) and the final parameters. The `rounding"
        " floor` is an estimate of what f64"
        f" rounding can explain: f64 rounds 2²⁹ times more finely than f32, so {vd.SAFETY:g} ×"
        " 2⁻²⁹ × the larger of the two frameworks' own f32-vs-f64 gaps (a running maximum), the"
        f" factor {vd.SAFETY:g} leaving room for the frameworks' different order of operations,"
        f" and never below {vd.ABSOLUTE_FLOOR:.2g} (64 f64 ulps of 1). A gap above the floor is"
        " an algorithmic difference; it is *explained* when the replays of Burn's update rule"
        " (`replays leave`: the largest gap the replay and the counterfactual leave) close it,"
        " and its causes are shared out by measurement (see each experiment). These figures"
        " come from the CPU path named under What depends on your CPU: on another CPU the"
        " figures that are rounding (the f32 columns, an f64 gap of a rounding verdict, the"
        " floor) can come out several times larger or smaller.\n",
        "## What was run\n",
        *provenance_lines(info, experiments),
        "",
        hyperparameter_table(config, effective["tolerances"], summarised) + "\n",
        cpu_section(
            [run["meta"] for x in experiments for run in x.runs.values()],
            max(
                (x.verdict.f64_gap for x in experiments if x.verdict.label == vd.EQUIVALENT),
                default=None,
            ),
        ),
        READING_GUIDE
        + (LAYERS_GUIDE if any(x.has_layers for x in experiments) else "")
        + (BUFFERS_GUIDE if any(x.buffer_names for x in experiments) else ""),
        *sweep_parts,
        *[x.section(shown) for x in experiments],
        bias_section(args.results, config["report_steps"]),
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
