"""judgement/judge.py: one record per experiment, every judgement made there and once.

The thresholds the report's sentences rest on, each on both sides of its edge (written out
here, not read from the module); the record of a synthetic experiment; the record files the
pipeline writes, read back against the report and the landing page that are built from
them. The program's files (its tables, run files, records and `--collect`):
test_judge_files.py.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from conftest import python_module
from pipeline_helpers import EXPERIMENTS
from torch_burn_parity.judgement import judge, step_one
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.record_parts import document_problems
from torch_burn_parity.models.model_specs import CNN1D
from torch_burn_parity.report import verdict_text as vt
from torch_burn_parity.report.headline import effect_cell, margin_cell

FAR_ABOVE = 10.0  # "far above" the floor: more than 10× it
ACCOUNTS_FOR = (0.9, 1.1)  # a variant accounts for a gap within ±10 % of it
SAME_ORDER = 0.1  # f32 rounding "of the order of" the f32 gap: at least a tenth of it


def past(x: float, direction: float = np.inf) -> float:
    return float(np.nextafter(x, direction))


def test_far_above_is_more_than_ten_times_the_floor():
    assert not judge.far_above(FAR_ABOVE * 3e-13, 3e-13)
    assert judge.far_above(past(FAR_ABOVE * 3e-13), 3e-13)


@pytest.mark.parametrize("gap", [2.1e-3, 1.0, 7e-14])
def test_a_variant_accounts_for_a_gap_within_ten_percent_either_side(gap):
    low, high = ACCOUNTS_FOR[0] * gap, ACCOUNTS_FOR[1] * gap
    assert judge.accounts_for(low, gap) and judge.accounts_for(high, gap)
    assert not judge.accounts_for(past(low, -np.inf), gap)
    assert not judge.accounts_for(past(high), gap)


def test_f32_rounding_exceeds_the_tolerance_when_over_it_and_of_the_gaps_order():
    tol, gap = 1e-6, 3e-5
    edge = SAME_ORDER * gap  # 3e-6: over the tolerance
    assert judge.f32_rounding_exceeds(edge, gap, tol)
    assert not judge.f32_rounding_exceeds(past(edge, -np.inf), gap, tol)
    assert not judge.f32_rounding_exceeds(tol, 5e-6, tol)  # at the tolerance: not over it
    assert judge.f32_rounding_exceeds(past(tol), 5e-6, tol)


# --------------------------------------------------------------------------- a synthetic record


def synthetic(steps: int = 5, shift: float = 0.0, diverge_at: int | None = None):
    """Tables and four run blocks of a cnn1d experiment whose f64 runs differ by `shift`
    in `conv.weight[0,0,1]` from step 2 on, the f32 ones by 1e-7 relative noise."""
    shapes = CNN1D.shapes()
    rng = np.random.default_rng(3)
    base = {n: rng.uniform(-1, 1, (steps, int(np.prod(s)))) for n, s in shapes.items()}
    runs = {}
    for fw in ("torch", "burn"):
        for dt in ("f32", "f64"):
            params = {n: v.copy() for n, v in base.items()}
            if dt == "f32":
                params = {n: v * (1 + 1e-7 * (fw == "burn")) for n, v in params.items()}
            elif fw == "burn":
                params["conv.weight"][1:, 1] += shift
            losses = np.linspace(1.0, 0.5, steps)
            if diverge_at and fw == "burn" and dt == "f32":
                losses[diverge_at - 1 :] = np.inf
            runs[fw, dt] = {
                "losses": losses.tolist(), "lrs": [0.1] * steps,
                "final": {"loss": 0.5, "correct": 50, "predictions": [0] * 96},
                "params": {n: v[-1].tolist() for n, v in params.items()},
                "trajectory": {"params": {n: v.tolist() for n, v in params.items()},
                               "grads": {n: v.tolist() for n, v in params.items()}},
                "meta": {"model": "cnn1d", "optimizer": "sgd", "schedule": {"kind": "constant"},
                         "clip_grad": None, "hyperparameters": {"lr": 0.1}},
            }  # fmt: skip
    gaps = {
        "f64_f64": np.r_[0.0, np.full(steps - 1, shift)],
        "torch_f64": np.full(steps, 1e-7),
        "burn_f64": np.full(steps, 1e-7),
        "dparam": np.full(steps, 2e-7),
    }
    step = range(1, steps + 1)
    zero = np.zeros(steps)
    where = ["conv.weight[0,0,1]"] * steps
    tables = {
        "steps": pd.DataFrame({"step": step, **gaps}),
        "replay": pd.DataFrame({"step": step, "dparam": zero, "where": where}),
        "counterfactual": pd.DataFrame(
            {"step": step, "dparam": zero, "dparam_held_f64": gaps["f64_f64"], "where": where}
        ),
        "config_diff": pd.DataFrame(
            {
                "hyperparameter": ["lr"],
                "torch": ["0.1"],
                "burn": ["0.1"],
                "status": ["same"],
                "note": [""],
            }
        ),  # fmt: skip
        "layers": None,
        "probe": pd.DataFrame(
            [{"framework": fw, "dtype": dt, "parameter": "fc.weight[1,19]", "initial": 0.066,
              "grad": 1e-3, "update": -1e-4, "grad_rel_err": 1e-6, "update_diff": 0.0}
             for fw in ("torch", "burn") for dt in ("f32", "f64")]
        ),
    }  # fmt: skip
    return tables, runs


def test_a_gap_above_the_floor_gets_every_figure_of_its_record():
    tables, runs = synthetic(shift=1e-9)
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    floor = vd.rounding_floor(tables["steps"]["torch_f64"], tables["steps"]["burn_f64"])
    assert record.verdict == vd.EXPLAINED and record.scope == vd.TRAINING
    assert record.first_above_floor == 2 and record.where_first_above == "conv.weight[0,0,1]"
    assert record.f64_gap == 1e-9 and record.gap_over_floor == pytest.approx(1e-9 / floor[1])
    assert record.far_above_floor and record.first_f32_step_above_tol is None
    assert record.causes[0]["how"] == "measured" and record.causes[0]["share"] == 1.0
    assert record.divergence == [] and record.split is None and record.entry is None
    # the record's verdict reads back as the one judged
    assert judge.verdict_of(asdict(record)).label == record.verdict


def test_rounding_alone_is_equivalent_with_no_cause():
    tables, runs = synthetic(shift=0.0)
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.verdict == vd.EQUIVALENT and record.scope is None
    assert record.first_above_floor is None and record.where_first_above is None
    assert vt.verdict_detail(asdict(record)) == ""


def test_a_run_that_went_non_finite_makes_the_verdict_diverged():
    tables, runs = synthetic(shift=1e-9, diverge_at=3)
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.verdict == vd.DIVERGED
    assert record.divergence == [{"framework": "burn", "dtype": "f32", "step": 3, "loss": np.inf}]
    assert (
        vt.verdict_detail(asdict(record)) == "burn f32 diverged at step 3 (loss inf at that step)"
    )


def test_the_entry_layer_is_the_first_quantity_above_its_floor_before_the_update():
    rows = [("update", "fc", 1, False), ("backward", "gelu", 1, True),
            ("forward", "conv", 2, True)]  # fmt: skip
    layers = pd.DataFrame(rows, columns=["phase", "layer", "step", "first_above_floor"])
    gelu = {"layer": "gelu", "phase": "backward", "step": 1}
    # no local mode ran (no `local_f64` values): whether it introduces it is not known
    assert judge.entry_layer(layers) == gelu | {"introduced": None}
    layers["local_f64"] = 0.0  # the local mode ran, and no layer introduces a difference
    assert judge.entry_layer(layers) == gelu | {"introduced": False}
    del layers["local_f64"]
    layers.loc[0, "first_above_floor"] = True  # the update comes first: nothing to add
    assert judge.entry_layer(layers) is None
    assert judge.entry_layer(None) is None
    # With the layers run on PyTorch's input, the first that introduces a difference.
    layers["introduced_first"] = [False, False, True]
    assert judge.entry_layer(layers) == {
        "layer": "conv", "phase": "forward", "step": 2, "introduced": True,
    }  # fmt: skip
    layers["introduced_first"] = False  # measured, and no layer introduces one
    assert judge.entry_layer(layers) is None


def test_a_running_statistic_first_above_its_floor_is_no_entry_point():
    """BatchNorm's running variance (a forward row) is the evaluation state's, judged by the
    replay of Burn's estimator: the entry is the first other row above its floor."""
    rows = [
        ("forward", "bn.running_var", 1, True, 1e-3, 1e-15),
        ("forward", "gelu", 1, False, 0.0, 1e-15),
        ("backward", "ln", 1, False, 1e-9, 1e-15),
        ("update", "fc", 1, False, 1e-9, 1e-15),
    ]
    columns = ["phase", "layer", "step", "first_above_floor", "max_abs_diff_f64", "floor"]
    layers = pd.DataFrame(rows, columns=columns)
    assert judge.entry_layer(layers) == {
        "layer": "ln", "phase": "backward", "step": 1, "introduced": None,
    }  # fmt: skip
    layers.loc[2, "max_abs_diff_f64"] = 0.0  # then the update alone: no entry
    assert judge.entry_layer(layers) is None


# --------------------------------------------------------------------------- the pipeline's records


@pytest.fixture(scope="module")
def records(pipeline) -> dict[str, dict]:
    document = json.loads((pipeline / "results/verdicts.json").read_text())
    assert document_problems(document) == []  # its schema, and no record at odds with itself
    return {r["experiment"]: r for r in document["experiments"]}


def test_every_experiment_has_one_record_equal_to_its_own_file(pipeline, records):
    assert list(records) == list(EXPERIMENTS)
    for name, record in records.items():
        own = json.loads((pipeline / f"results/verdicts/{name}.json").read_text())
        assert own == record


def test_the_reports_verdict_table_says_what_the_records_hold(pipeline, records):
    text = (pipeline / "results/report.md").read_text()
    table = re.search(r"^## Verdicts\n\n(.*?)\n\n", text, flags=re.M | re.S).group(1)
    lines = table.splitlines()
    split = lambda line: [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]  # noqa: E731
    header = split(lines[0])
    # the experiment's cell links to its section: [name](#experiment-name)
    name_of = lambda cell: re.fullmatch(r"\[(\w+)\]\(#experiment-[\w-]+\)", cell).group(1)  # noqa: E731
    rows = {name_of(cells[0]): dict(zip(header, cells, strict=True)) for line in lines[2:]
            if (cells := split(line))}  # fmt: skip
    assert set(rows) == set(records)
    for name, record in records.items():
        row = rows[name]
        assert row["verdict"] == record["verdict"]
        assert row["effect on training (f32)"] == effect_cell(record)
        assert row["cause, or where it starts"] == (
            (vt.verdict_detail(record) or "—").replace("|", "\\|")
        )
        assert row["f64 gap (max over steps)"] == vt.e(record["f64_gap"])
        assert row["gap / floor"] == margin_cell(record)
        assert f"**Verdict: {vt.verdict_line(record)}.**" in text


def test_the_landing_page_lists_every_record(pipeline, records):
    page = (pipeline / "results/verdicts.html").read_text()
    for name, record in records.items():
        assert f"<td>{name}</td>\n<td>{record['verdict']}</td>" in page


# --------------------------------------------------------------------------- bad input


def test_a_table_with_rows_missing_is_refused(pipeline, tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    for path in (pipeline / "results/tables").glob("*_sgd.csv"):
        (tables / path.name).write_bytes(path.read_bytes())
    steps = tables / "replay_sgd.csv"
    steps.write_text("".join(steps.read_text().splitlines(keepends=True)[:-1]))  # whole rows
    proc = subprocess.run(
        [*python_module("judgement.judge"), "--experiment", "sgd", "--tables", tables,
         "--runs", pipeline / "results/runs/sgd", "--tol-f32", "1e-6",
         "--out", tmp_path / "v.json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0
    assert re.fullmatch(
        rf"judge: {steps}: (\d+) rows, but the runs record (\d+) steps\n", proc.stderr
    ), proc.stderr


# --------------------------------------------------------------------------- the record's figures


def test_f32_rounding_over_the_tolerance_is_said_only_of_a_difference_past_it():
    tables, runs = synthetic(shift=1e-9)
    steps = tables["steps"]
    steps["dparam"], steps["torch_f64"] = 3e-6, 2e-6  # both over the tolerance of 1e-6
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.first_f32_step_above_tol == 1 and record.f32_rounding_exceeds_tol
    # not when the f32 gap stays within the tolerance
    assert not judge.judge_experiment("x", tables, runs, tol_f32=1e-5).f32_rounding_exceeds_tol
    # nor for a verdict of rounding: the f64 runs agree
    tables, runs = synthetic(shift=0.0)
    tables["steps"]["dparam"], tables["steps"]["torch_f64"] = 3e-6, 2e-6
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.verdict == vd.EQUIVALENT and not record.f32_rounding_exceeds_tol


def test_the_unexplained_start_is_where_a_replay_leaves_the_floor():
    tables, runs = synthetic(shift=1e-9)
    tables["counterfactual"].loc[2:, "dparam"] = 1e-9
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.verdict == vd.UNEXPLAINED and record.cause is None
    assert record.unexplained_start == (
        "the replay of PyTorch's run leaves the rounding floor at step 3 (`conv.weight[0,0,1]`)"
    )
    tables["replay"].loc[1:, "dparam"] = 1e-9  # Burn's replay first, when both leave it
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.unexplained_start.startswith(
        "the replay of Burn's run leaves the rounding floor at step 2"
    )


def test_a_non_finite_gap_leaves_the_ratio_unknown():
    tables, runs = synthetic(shift=1e-9)
    tables["steps"].loc[3, "f64_f64"] = np.nan
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.verdict == vd.DIVERGED and np.isnan(record.gap_over_floor)


# --------------------------------------------------------------------------- the step-1 probe

FEW_DIGITS = 1e-3  # a relative f32 gradient error above this keeps few correct digits
SAME_STEP = (0.99, 1.01)  # Burn's f64 update over PyTorch's, the same step
FULL_STEP = 0.05  # Adam's first update within 5 % of lr
TINY_GRADIENT = 100 * 2.0**-23


def probed(rel: float = 1e-6, burn_update: float = -1e-4, torch_update: float = -1e-4,
           grad: float = 1e-3, optimizer: str = "sgd", lr: float = 0.01) -> dict:  # fmt: skip
    tables, runs = synthetic()
    frame = tables["probe"]
    frame["grad"], frame["grad_rel_err"] = grad, np.where(frame["dtype"] == "f32", rel, 0.0)
    frame["update"] = np.where(frame["framework"] == "burn", burn_update, torch_update)
    meta = runs["torch", "f64"]["meta"]
    meta.update(optimizer=optimizer, hyperparameters={"lr": lr, "eps": 1e-8})
    return step_one.probe_judgement(frame, runs["torch", "f64"])


def test_the_probes_thresholds_on_both_sides_of_their_edges():
    assert not probed(rel=FEW_DIGITS)["few_digits"] and probed(rel=past(FEW_DIGITS))["few_digits"]
    low, high = SAME_STEP  # a PyTorch update of -1 makes the ratio exact
    assert probed(torch_update=-1.0, burn_update=-low)["same_step"]
    assert probed(torch_update=-1.0, burn_update=-high)["same_step"]
    assert not probed(torch_update=-1.0, burn_update=past(-high, -np.inf))["same_step"]
    assert not probed(torch_update=-1.0, burn_update=past(-low))["same_step"]
    assert not probed(burn_update=0.0)["same_step"]  # a framework that does not move it
    full = dict(optimizer="adam", lr=100.0)  # |u| − lr exact at 105 and 95
    assert probed(torch_update=-100 * (1 + FULL_STEP), **full)["full_step"]
    assert probed(torch_update=-100 * (1 - FULL_STEP), **full)["full_step"]
    assert not probed(torch_update=past(-100 * (1 + FULL_STEP), -np.inf), **full)["full_step"]
    assert not probed(torch_update=past(-100 * (1 - FULL_STEP)), **full)["full_step"]
    assert not probed(torch_update=-100.0, optimizer="sgd", lr=100.0)["full_step"]
    assert probed(grad=past(TINY_GRADIENT, -np.inf))["tiny_gradient"]
    assert not probed(grad=TINY_GRADIENT)["tiny_gradient"]


def test_the_causes_name_the_differing_values_what_burn_holds_in_f32_and_its_factors():
    tables, runs = synthetic(shift=1e-9)
    tables["config_diff"] = pd.DataFrame(
        {"hyperparameter": ["lr", "eps", "betas", "bias-correction factors", "schedule"],
         "torch": ["0.1", "1e-08", "[0.9, 0.999]", "f64", "constant"],
         "burn": ["0.1", "1e-05", "[0.9, 0.999]", "f32", "constant"],
         "status": ["same", "differs", "f32 storage", "precision", "differs"],
         "note": [""] * 5}
    )  # fmt: skip
    # Burn's values alone move PyTorch's run by a quarter of the gap; its f32 factors the rest
    tables["counterfactual"]["dparam_held_f64"] = tables["steps"]["f64_f64"] / 4
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.verdict == vd.EXPLAINED
    assert record.causes == [
        {"cause": "Burn's f32 evaluation of its per-step Adam factors", "share": 0.75,
         "how": "the remainder", "part": "training"},
        {"cause": "config diff: eps (torch 1e-08, burn 1e-05), with f32 storage of betas",
         "share": 0.25, "how": "measured", "part": "training"},
    ]  # fmt: skip
    assert record.parts == [{"part": "training", "verdict": vd.EXPLAINED,
                             "gap": record.f64_gap, "causes": record.causes}]  # fmt: skip
    assert record.cause == (
        "Burn's f32 evaluation of its per-step Adam factors (75.0% of the gap, the remainder);"
        " config diff: eps (torch 1e-08, burn 1e-05), with f32 storage of betas (25.0% of the"
        " gap, measured)"
    )
    # without per-step factors the remainder is Burn's f32 arithmetic in its update
    tables["config_diff"] = tables["config_diff"].iloc[[0, 1, 2]]
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert record.causes[0]["cause"] == "Burn's f32 arithmetic in its update"


def test_the_probe_judgement_reads_its_own_rows():
    judged = probed()
    assert judged["parameter"] == "fc.weight[1,19]" and judged["noise"] == 0.0
    # one framework does not move it: not the same step, whatever the other does
    assert not probed(torch_update=0.0, burn_update=-1e-4)["same_step"]
    # a full step of AdamW too, but never a clipped one
    assert probed(torch_update=-100.0, optimizer="adamw", lr=100.0)["full_step"]
    tables, runs = synthetic()
    frame = tables["probe"]
    frame["update"] = -100.0
    meta = runs["torch", "f64"]["meta"]
    meta.update(optimizer="adam", hyperparameters={"lr": 100.0}, clip_grad={"norm": 1.0})
    assert not step_one.probe_judgement(frame, runs["torch", "f64"])["full_step"]


def test_an_f32_update_one_ulp_off_the_f64_one_is_within_it():
    tables, runs = synthetic()
    frame = tables["probe"]
    ulp = float(np.spacing(np.float32(0.066)))  # the probed parameter's initial value
    f32 = frame["dtype"] == "f32"
    frame.loc[~f32, "update"] = -1e-4
    frame.loc[f32, "update"] = -1e-4 + ulp
    assert step_one.probe_judgement(frame, runs["torch", "f64"])["within_ulp"]
    frame.loc[f32, "update"] = -1e-4 + 1.5 * ulp
    assert not step_one.probe_judgement(frame, runs["torch", "f64"])["within_ulp"]
    frame.loc[f32, "update"] = 1e-4  # the sign counts: 2e-4 apart, not 0
    assert not step_one.probe_judgement(frame, runs["torch", "f64"])["within_ulp"]


def test_the_record_holds_the_runs_own_figures():
    tables, runs = synthetic(shift=1e-9)
    tables["steps"]["torch_f64"] = 4e-7  # the noisier side sets the floor, either side
    record = judge.judge_experiment("x", tables, runs, tol_f32=1e-6)
    assert (record.optimizer, record.model) == ("sgd", "cnn1d")
    assert record.replay_gap == 0.0 and record.f32_gap == 2e-7
    floor = vd.rounding_floor(np.full(5, 4e-7), np.full(5, 1e-7))
    assert record.floor == floor[1] and record.gap_over_floor == pytest.approx(1e-9 / floor[1])
    tables["steps"]["torch_f64"], tables["steps"]["burn_f64"] = 1e-7, 4e-7
    assert judge.judge_experiment("x", tables, runs, tol_f32=1e-6).floor == floor[1]
    # an experiment without a probe table has no probe judgement
    tables["probe"] = None
    assert judge.judge_experiment("x", tables, runs, tol_f32=1e-6).probe is None


def test_a_parameter_gone_non_finite_is_a_divergence_at_its_step_whatever_the_loss():
    """The loss stays finite but conv.weight holds a NaN after step 3 and an infinity after
    step 5 (a later one changes nothing): the first step either is non-finite is named."""
    tables, runs = synthetic(steps=5)
    runs["torch", "f64"]["trajectory"]["params"]["conv.weight"][2][0] = float("nan")
    runs["torch", "f64"]["trajectory"]["params"]["fc.bias"][4][1] = float("inf")
    runs["burn", "f32"]["losses"][3] = float("nan")
    found = judge.divergence(runs)
    assert [(d["framework"], d["dtype"], d["step"]) for d in found] == [
        ("torch", "f64", 3), ("burn", "f32", 4)]  # fmt: skip
    assert found[0]["loss"] == runs["torch", "f64"]["losses"][2] and math.isnan(found[1]["loss"])


@pytest.mark.parametrize("larger", ["torch_f64", "burn_f64"])
def test_the_unexplained_start_takes_the_floor_of_both_runs_and_names_recorded_steps(larger):
    """Steps 1, 2, 4, 8 recorded; either run's f32-vs-f64 gap alone sets the floor when it is
    the larger (1e-5: a floor of about 1.9e-12), so a replay gap of 1e-13 stays under it;
    1e-11 at step 4 leaves it."""
    steps = pd.DataFrame({"step": [1, 2, 4, 8], "torch_f64": [1e-7] * 4, "burn_f64": [1e-7] * 4})
    steps[larger] = 1e-5
    under = pd.DataFrame({"step": [1, 2, 4, 8], "dparam": [1e-13] * 4, "where": list("abcd")})
    assert judge.unexplained_start(steps, under, under) is None
    above = under.assign(dparam=[0.0, 0.0, 1e-11, 1e-11])
    assert judge.unexplained_start(steps, under, above) == (
        "the replay of PyTorch's run leaves the rounding floor at step 4 (`c`)"
    )


def test_value_gaps_read_each_held_value_column_in_order():
    table = pd.DataFrame({"dparam_burn_value[eps]": [1e-9, 3e-9],
                          "dparam_burn_value[betas]": [2e-9, float("nan")],
                          "dparam_burn_layer[norm.eps]": [5.0, 5.0],
                          "dparam_burn_values": [7.0, 7.0]})  # fmt: skip
    found = vd.value_gaps(table)
    assert [name for name, _ in found] == ["eps", "betas"]
    assert found[0][1] == 3e-9 and math.isnan(found[1][1])


def test_the_buffers_cause_needs_the_estimators_column_a_split_and_a_buffer_gap():
    held = {"meta": {"layer_hyperparameters": {"bn.running_var_estimator": "unbiased"}}}
    burn = {"meta": {"layer_hyperparameters": {"bn.running_var_estimator": "biased"}}}
    table = pd.DataFrame({vd.RUNNING_STATS_COLUMN: [1e-9, 2e-9]})
    verdict = vd.Verdict(vd.EXPLAINED, 2e-9, 1e-14, 1)
    assert judge.buffers_cause(verdict, table, held, burn) is None  # no split
    verdict.split = vd.StateSplit(1e-9, 1, 0.0, None)
    assert judge.buffers_cause(verdict, table, held, burn) is None  # the buffers do not part
    verdict.split = vd.StateSplit(0.0, None, 2.1e-9, 1)
    assert judge.buffers_cause(verdict, pd.DataFrame({"dparam": [0.0]}), held, burn) is None
    assert judge.buffers_cause(verdict, table, held, burn) == {
        "name": "the running-variance estimator (Burn biased, PyTorch unbiased)",
        "moved": 2e-9, "buffers_gap": 2.1e-9, "accounts_for_it": True}  # fmt: skip


def test_where_the_f64_runs_part_most_a_nan_counts_as_the_largest():
    _, runs = synthetic(steps=5, shift=1e-9)
    torch_f64, burn_f64 = runs["torch", "f64"], runs["burn", "f64"]
    assert judge.where_f64(torch_f64, burn_f64, 2) == "conv.weight[0,0,1]"
    burn_f64["trajectory"]["params"]["fc.bias"][1][2] = float("nan")
    assert judge.where_f64(torch_f64, burn_f64, 2) == "fc.bias[2]"
    assert judge.where_f64(torch_f64, burn_f64, 3) == "conv.weight[0,0,1]"
