"""Judge one experiment, once: its verdict record, which every reader takes as it is.

    python -m torch_burn_parity.judgement.judge --experiment adam \\
        --tables results/tables --runs results/runs/adam --tol-f32 1e-6 \\
        --out results/verdicts/adam.json
    python -m torch_burn_parity.judgement.judge --collect results/verdicts/*.json \\
        --out results/verdicts.json

Reads the experiment's tables (steps, replay, counterfactual, config diff, and layers where
the runs hold a layer record) and its four run files; decides, with the rule of verdict.py,
the verdict, its causes and their shares, where an unexplained difference starts, the layer
where it enters, and every judgement the report's sentences rest on (how far above the
floor, whether the buffers' cause accounts for their gap, whether f32 rounding alone
exceeds the f32 tolerance). The report, the sweep summaries and the HTML pages read this
record; none of them decides a verdict or holds a threshold of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from torch_burn_parity.analysis.gaps import (
    StepMax,
    column_blocks,
    flat_name,
    recorded_steps,
    state_row,
)
from torch_burn_parity.analysis.layers_words import buffer_rows
from torch_burn_parity.io.parity_io import (
    RUNS,
    FormatError,
    experiment_block,
    read_table,
    write_text_atomic,
)
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.effect import effect, marginal, sensitivity
from torch_burn_parity.judgement.record_parts import (
    VERSION,
    document_problems,
    parts_of,
    record_problems,
)
from torch_burn_parity.judgement.step_one import loss_judgement, probe_judgement
from torch_burn_parity.models.model_specs import model_of

# A gap more than FAR_ABOVE times its floor is "far above" it.
FAR_ABOVE = 10.0
# The counterfactual's running-statistics variant accounts for the buffers' gap when it
# moves PyTorch's run by this fraction of that gap, on either side.
ACCOUNTS_FOR = (0.9, 1.1)
# f32 rounding alone exceeds the f32 tolerance when a framework's own f32-vs-f64 gap is over
# it and at least this fraction of the torch-vs-burn f32 gap (of the same order).
SAME_ORDER = 0.1


def far_above(gap: float, floor: float) -> bool:
    """A gap more than FAR_ABOVE times its floor."""
    return bool(gap > FAR_ABOVE * floor)


def accounts_for(moved: float, gap: float) -> bool:
    """A variant that moves the run by `moved` accounts for a gap within ACCOUNTS_FOR."""
    low, high = ACCOUNTS_FOR
    return bool(low * gap <= moved <= high * gap)


def f32_rounding_exceeds(own: float, f32_gap: float, tol: float) -> bool:
    """A framework's own f32-vs-f64 gap `own` is over the f32 tolerance and of the order of
    the torch-vs-burn f32 gap (at least SAME_ORDER of it): f32 rounding alone exceeds it."""
    return bool(own > tol and own >= SAME_ORDER * f32_gap)


def has_factors(config_diff: pd.DataFrame) -> bool:
    """Burn's update uses per-step factors it evaluates in f32 (Adam's bias correction):
    the config diff lists them, and the replay uses the ones Burn's run recorded."""
    return bool((config_diff["hyperparameter"] == "bias-correction factors").any())


def state_split(steps: pd.DataFrame, torch_f64: dict, burn_f64: dict) -> vd.StateSplit | None:
    """The f64 gap of the parameters and of the buffers apart, for a model with buffers."""
    model = model_of(torch_f64)
    if not model.buffer_names:
        return None
    floor = vd.rounding_floor(steps["torch_f64"], steps["burn_f64"])
    count = len(recorded_steps(torch_f64))
    parts = {"params": StepMax(count), "buffers": StepMax(count)}
    for _, trajectory, column, part in column_blocks({"t": torch_f64, "b": burn_f64}):
        parts[trajectory].add(part["t"], part["b"], column)
    return vd.split_state(parts["params"].result(), parts["buffers"].result(), floor, steps["step"])


def both_parts(verdict: vd.Verdict) -> bool:
    """Both the parameters and the buffers leave the rounding floor."""
    split = verdict.split
    return bool(split) and split.scope == vd.TRAINING and split.buffers_first is not None


def judge(
    steps: pd.DataFrame,
    replay: pd.DataFrame,
    counterfactual: pd.DataFrame,
    config_diff: pd.DataFrame,
    torch_f64: dict,
    burn_f64: dict,
) -> tuple[vd.Verdict, list, list | None]:
    """The verdict of one experiment, its causes with their shares (of the largest gap), and
    when both its parameters and its buffers part, the parameters' own causes (shares of the
    parameter gap; else None), from its tables and its two f64 run blocks (their schedules,
    lrs and clipping name the further causes).

    A NaN gap (a run went non-finite) makes the verdict `diverged`.
    """
    differing = config_diff[config_diff["status"] == "differs"]
    stored = config_diff[config_diff["status"] == "f32 storage"]["hyperparameter"]
    values = (
        float(np.nanmax(counterfactual["dparam_held_f64"], initial=0.0)),
        differing.to_dict("records"),
        list(stored),
        "Burn's f32 evaluation of its per-step Adam factors"
        if has_factors(config_diff)
        else "Burn's f32 arithmetic in its update",
    )
    causes = vd.causes(
        float(np.nanmax(steps["f64_f64"], initial=0.0)),
        *values,
        vd.further_causes(counterfactual, torch_f64, burn_f64),
        vd.value_gaps(counterfactual),
    )
    verdict = vd.classify(
        steps["f64_f64"],
        steps["torch_f64"],
        steps["burn_f64"],
        [replay["dparam"], counterfactual["dparam"]],
        vd.cause_text(causes),
        steps["step"],
    )
    if steps[["dparam", "f64_f64"]].isna().any().any():
        verdict.label = vd.DIVERGED
    verdict.split = state_split(steps, torch_f64, burn_f64)
    training = None
    if verdict.label == vd.EXPLAINED and both_parts(verdict):
        # The shares above are of the largest gap, the buffers' when they part too. The
        # parameters' own: the same chain up to, not with, Burn's running statistics. Its
        # variants keep PyTorch's update of the running statistics, so their buffers move
        # only with their parameters and their gaps (over both) measure what Burn's values,
        # lrs and clipping do to training.
        trained = counterfactual.drop(columns=[vd.RUNNING_STATS_COLUMN], errors="ignore")
        training = vd.causes(
            verdict.split.params_gap,
            *values,
            vd.further_causes(trained, torch_f64, burn_f64),
            vd.value_gaps(trained),
        )
        verdict.cause = (
            f"training: {vd.cause_text(training, 'the parameter gap')};"
            f" evaluation state: {verdict.cause}"
        )
    return verdict, causes, training


def where_f64(torch_f64: dict, burn_f64: dict, step: int) -> str:
    """The parameter (or buffer) with the largest torch-f64 vs burn-f64 gap after `step`."""
    model = model_of(torch_f64)
    shapes = model.shapes()
    row = recorded_steps(torch_f64).index(step)  # a recorded step: the verdict's
    diff = np.abs(state_row(torch_f64, row) - state_row(burn_f64, row))
    column = int(np.argmax(np.nan_to_num(diff, nan=np.inf)))
    return flat_name({name: shapes[name] for name in model.state_names}, column)


def unexplained_start(
    steps: pd.DataFrame, replay: pd.DataFrame, counterfactual: pd.DataFrame
) -> str | None:
    """Where the part of the gap that no replay reproduces starts: the first step at which
    the replay (or else the counterfactual) leaves the rounding floor, and the parameter
    with the largest gap there. Before that step the replays account for every gap."""
    floor = vd.rounding_floor(steps["torch_f64"], steps["burn_f64"])
    for label, frame in (("Burn's run", replay), ("PyTorch's run", counterfactual)):
        step = vd.first_step_above(frame["dparam"], floor, frame["step"])
        if step is not None:
            where = frame.loc[frame["step"] == step, "where"].iloc[0]
            return f"the replay of {label} leaves the rounding floor at step {step} (`{where}`)"
    return None


def entry_layer(layers: pd.DataFrame | None) -> dict | None:
    """Where the model's own computation makes a difference the replay cannot follow (it
    re-runs only the update): the first layer that introduces one, run on PyTorch's input
    (`introduced_first`, `introduced`: true); else, without that measurement, the first
    quantity above its floor when it comes before the update (the forward pass, the loss or
    the backward pass)."""
    if layers is None:
        return None
    introduced = "introduced_first" in layers and layers["introduced_first"].astype(str) == "True"
    if "introduced_first" in layers and introduced.any():
        row = layers[introduced].iloc[0]
    else:
        first = layers[layers["first_above_floor"].astype(str) == "True"]
        if not first.empty and buffer_rows(first).iloc[0]:
            # The running statistics (forward rows) are the evaluation state's, which the
            # replay of Burn's estimator judges: the entry is the first other row above.
            f64, floor = (layers[c].astype(float) for c in ("max_abs_diff_f64", "floor"))
            first = layers[~(f64 <= floor) & ~buffer_rows(layers)]
        if first.empty or first.iloc[0]["phase"] == "update":
            return None
        row = first.iloc[0]
    # Introduction is measured where the local mode ran (its `local_*` columns filled): a
    # port's layers table has none, and then whether it introduces the difference is unknown.
    measured = "local_f64" in layers and layers["local_f64"].notna().any()
    found = bool(introduced is not False and introduced.any())
    return {"layer": str(row["layer"]), "phase": str(row["phase"]), "step": int(row["step"]),
            "introduced": found if measured or found else None}  # fmt: skip


def buffers_cause(
    verdict: vd.Verdict, counterfactual: pd.DataFrame, torch_f64: dict, burn_f64: dict
) -> dict | None:
    """What the counterfactual's variant with Burn's running-variance estimator (on
    PyTorch's gradients, so its parameters stay with PyTorch's) measures against the
    buffers' f64 gap, and whether it accounts for it (within ACCOUNTS_FOR)."""
    split = verdict.split
    if vd.RUNNING_STATS_COLUMN not in counterfactual or not split or not split.buffers_gap > 0:
        return None
    moved = float(np.nanmax(counterfactual[vd.RUNNING_STATS_COLUMN], initial=0.0))
    return {
        "name": vd.running_stats_cause(torch_f64, burn_f64),
        "moved": moved,
        "buffers_gap": split.buffers_gap,
        "accounts_for_it": accounts_for(moved, split.buffers_gap),
    }


def divergence(runs: dict) -> list[dict]:
    """Each run whose loss or parameters went non-finite: its first such step and loss."""
    found = []
    for fw, dt in RUNS:
        losses = np.asarray(runs[fw, dt]["losses"], dtype=float)
        finite = np.isfinite(losses)
        rows = np.asarray(recorded_steps(runs[fw, dt])) - 1  # the steps with a state
        state = np.ones(len(rows), dtype=bool)
        for *_, part in column_blocks({"run": runs[fw, dt]}):
            state &= np.isfinite(part["run"]).all(axis=1)
        finite[rows[~state]] = False
        if not finite.all():
            step = int(np.argmin(finite))
            found.append(
                {"framework": fw, "dtype": dt, "step": step + 1, "loss": float(losses[step])}
            )
    return found


@dataclass
class Record:
    """One experiment's judgement, as results/verdicts/{experiment}.json holds it."""

    experiment: str
    model: str
    model_size: dict[str, int]  # its size keys (model_specs.SIZES)
    optimizer: str
    verdict: str  # the worst of its parts' (record_parts.py)
    cause: str | None  # the causes with their shares, in words (explained verdicts)
    causes: list[dict]  # an explained verdict's: its parts' causes (record_parts.py), else []
    parts: list[dict]  # training and, with buffers, the evaluation state: each one's verdict
    scope: str | None  # verdict.TRAINING, verdict.EVALUATION or None
    both_parts: bool  # parameters and buffers both leave the floor
    f64_gap: float  # the largest f64-f64 gap over the steps
    floor: float  # the rounding floor at that step
    gap_over_floor: float  # the largest ratio of the f64 gap to its step's floor
    first_above_floor: int | None
    far_above_floor: bool
    where_first_above: str | None  # the parameter with the largest gap at that step
    replay_gap: float | None
    f32_gap: float
    first_f32_step_above_tol: int | None
    f32_rounding_exceeds_tol: bool  # the f32 tolerance is below what f32 rounding reaches
    split: dict | None  # parameters and buffers apart (models with buffers)
    unexplained_start: str | None  # where no replay follows the gap any more
    entry: dict | None  # the layer where it enters, when before the update
    buffers_cause: dict | None
    probe: dict | None  # the step-1 probe's judgements (step_one.py), when probed
    losses: dict  # the last train-mode and the eval-mode f64 losses apart
    effect: dict  # what the difference does to the trained model (effect.py)
    marginal: bool  # gap_over_floor within effect.MARGINAL of 1 (effect.py)
    sensitivity: dict | None  # rounding alone of the size of what is measured (effect.py)
    f32_rounding_over_tol: bool  # each framework's own f32 rounding exceeds the f32 tolerance
    divergence: list[dict] = field(default_factory=list)


def judge_experiment(
    name: str, tables: dict[str, pd.DataFrame | None], runs: dict, tol_f32: float
) -> Record:
    """The record of one experiment from its tables (steps, replay, counterfactual,
    config_diff, layers or None, probe or None) and its four run blocks keyed
    (framework, dtype)."""
    steps, replay, counterfactual = tables["steps"], tables["replay"], tables["counterfactual"]
    torch64, burn64 = runs["torch", "f64"], runs["burn", "f64"]
    verdict, causes, training = judge(
        steps, replay, counterfactual, tables["config_diff"], torch64, burn64
    )
    diverged = divergence(runs)
    if diverged:
        verdict.label = vd.DIVERGED
    held = buffers_cause(verdict, counterfactual, torch64, burn64)
    parts, found = parts_of(verdict.label, verdict.f64_gap, causes, training, verdict.split, held)
    first = verdict.first_above_floor
    first32 = vd.first_step_above(steps["dparam"], tol_f32, steps["step"])
    f32_gap = float(np.nanmax(steps["dparam"], initial=0.0))
    own_gaps = {fw: float(steps[f"{fw}_f64"].max()) for fw in ("torch", "burn")}
    own = max(own_gaps.values())
    floor = vd.rounding_floor(steps["torch_f64"], steps["burn_f64"])
    ratio = np.asarray(steps["f64_f64"], float) / floor
    gap_over_floor = float(np.max(ratio)) if not np.isnan(ratio).any() else float("nan")
    judged = verdict.label in (vd.EXPLAINED, vd.UNEXPLAINED)
    return Record(
        experiment=name,
        model=model_of(runs["torch", "f32"]).name,
        model_size=model_of(runs["torch", "f32"]).size,
        optimizer=runs["torch", "f32"]["meta"]["optimizer"],
        verdict=verdict.label,
        cause=verdict.cause,
        causes=found,
        parts=parts,
        scope=verdict.scope if judged else None,
        both_parts=judged and both_parts(verdict),
        f64_gap=verdict.f64_gap,
        floor=verdict.floor,
        gap_over_floor=gap_over_floor,
        first_above_floor=first,
        far_above_floor=far_above(verdict.f64_gap, verdict.floor),
        where_first_above=where_f64(torch64, burn64, first) if first else None,
        replay_gap=verdict.replay_gap,
        f32_gap=f32_gap,
        first_f32_step_above_tol=first32,
        f32_rounding_exceeds_tol=bool(first32)
        and verdict.label != vd.EQUIVALENT
        and f32_rounding_exceeds(own, f32_gap, tol_f32),
        split=asdict(verdict.split) if verdict.split else None,
        unexplained_start=unexplained_start(steps, replay, counterfactual),
        entry=entry_layer(tables.get("layers")),
        buffers_cause=held,
        probe=probe_judgement(tables["probe"], torch64)
        if tables.get("probe") is not None
        else None,
        losses=loss_judgement(steps, torch64, burn64),
        effect=effect(runs),
        marginal=marginal(gap_over_floor),
        sensitivity=sensitivity(parts, own_gaps, verdict.f64_gap) if judged else None,
        f32_rounding_over_tol=bool(own > tol_f32),
        divergence=diverged,
    )


def verdict_of(record: dict) -> vd.Verdict:
    """The record's verdict as verdict.Verdict, for code that reads its properties."""
    split = vd.StateSplit(**record["split"]) if record["split"] else None
    return vd.Verdict(
        record["verdict"], record["f64_gap"], record["floor"], record["first_above_floor"],
        record["replay_gap"], record["cause"], split,
    )  # fmt: skip


def read_record(path: Path) -> dict:
    """A verdict record written by this module; FormatError naming the file otherwise."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{path}: not a verdict record ({exc})") from None
    missing = [
        f for f in Record.__dataclass_fields__ if not isinstance(record, dict) or f not in record
    ]
    if missing:
        raise FormatError(f"{path}: not a verdict record (missing {', '.join(missing)})")
    return record


PER_STEP = ("steps", "replay", "counterfactual")  # tables with one row per step


def read_tables(
    tables: Path, name: str, layers: bool, steps: int | None = None
) -> dict[str, pd.DataFrame | None]:
    """An experiment's tables; FormatError naming a table whose rows are not one per step
    (of `steps`, the runs' count, when given): a table cut at a row's end reads whole."""
    read = lambda kind, **o: read_table(tables / f"{kind}_{name}.csv", **o)  # noqa: E731
    found = {
        "steps": read("steps"),
        "replay": read("replay"),
        "counterfactual": read("counterfactual"),
        "config_diff": read("config_diff", keep_default_na=False),
        "layers": read("layers") if layers else None,
        "probe": read("probe"),
    }
    for kind in PER_STEP:
        rows = len(found[kind])
        if steps is not None and rows != steps:
            path = tables / f"{kind}_{name}.csv"
            raise FormatError(f"{path}: {rows} rows, but the runs record {steps} steps")
    return found


def collect(records: list[Path], out: Path) -> None:
    """results/verdicts.json: the records of every experiment, in the order given."""
    try:
        experiments = [read_record(path) for path in records]
    except FormatError as exc:
        sys.exit(f"judge: {exc}")
    for path, record in zip(records, experiments, strict=True):
        if problems := record_problems(record):  # at odds with itself: this project's bug
            sys.exit(f"judge: {path}: {problems[0]}")
    document = {"version": VERSION, "experiments": experiments}
    if problems := document_problems(document):
        sys.exit(f"judge: {out}: {problems[0]} (verdicts.schema.json)")
    write_text_atomic(out, json.dumps(document, indent=1) + "\n")
    print(f"{len(experiments)} verdicts -> {out}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", help="the experiment to judge")
    parser.add_argument("--tables", type=Path, help="folder of the tables")
    parser.add_argument("--runs", type=Path, help="the experiment's run folder")
    parser.add_argument("--tol-f32", type=float)
    parser.add_argument("--collect", type=Path, nargs="+", help="records to gather into --out")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.collect:
        return collect(args.collect, args.out)
    if None in (args.experiment, args.tables, args.runs, args.tol_f32):
        parser.error("give --collect, or --experiment, --tables, --runs and --tol-f32")
    name = args.experiment
    try:
        runs = {(fw, dt): experiment_block(args.runs / f"{fw}-{dt}.json", name) for fw, dt in RUNS}
        has_layers = all("layers" in run for run in runs.values())
        steps = len(recorded_steps(runs["torch", "f64"]))  # the per-step tables' rows
        record = judge_experiment(
            name, read_tables(args.tables, name, has_layers, steps), runs, args.tol_f32
        )
    except (OSError, KeyError, ValueError, FormatError, pd.errors.ParserError) as exc:
        sys.exit(f"judge: {exc}")
    write_text_atomic(args.out, json.dumps(asdict(record), indent=1) + "\n")
    print(f"{name}: {record.verdict}")


if __name__ == "__main__":
    main()
