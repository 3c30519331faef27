"""One experiment's report section, from files written by hand: a model with buffers
(`cnn_bn`) whose runs, tables and verdict record are made up here, each test moving one
number (a buffer gap, a parameter gap, a loss, a probe row) and checking that the section's
sentences follow it. The report of a real pipeline run: test_report.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import numpy as np
import pandas as pd

from torch_burn_parity.analysis.gaps import flat_names
from torch_burn_parity.io.parity_io import DTYPES, RUNS
from torch_burn_parity.judgement import judge
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.report import readings
from torch_burn_parity.report import verdict_text as vt
from torch_burn_parity.report.experiment import Experiment
from torch_burn_parity.report.markdown import distinct
from torch_burn_parity.report.verdict_text import e


def cnn_bn_results(
    folder, buffer_shift: float = 2.1e-3, param_shift: float = 0.0, steps=4, name="cnn_bn",
    loss_shift: float = 0.0, replay_gap: float = 1e-17,
):  # fmt: skip
    """A results folder of one synthetic experiment `bn` of model `name`: runs, tables and
    compare outputs as the pipeline writes them. The f64 runs differ by rounding in the
    parameters (plus param_shift) and by buffer_shift in bn.running_var from step 1 on
    (Burn's biased estimator; cnn_bn only), Burn's train-mode losses by loss_shift; the
    replay leaves replay_gap (by default: it reproduces Burn's run), the counterfactual
    reproduces PyTorch's."""
    from torch_burn_parity.analysis import config_diff, layers_table, steps_table
    from torch_burn_parity.config.resolve import experiment_spec
    from torch_burn_parity.models.model_specs import spec as model_spec

    model = model_spec(name)
    shapes = model.shapes()
    rng = np.random.default_rng(1)
    base = {n: rng.uniform(-1, 1, (steps, int(np.prod(s)))) for n, s in shapes.items()}
    grads = {
        n: rng.uniform(-1e-2, 1e-2, (steps, int(np.prod(shapes[n])))) for n in model.param_names
    }
    layers = {n: rng.uniform(-2, 2, 24) for n in model.layers}
    exp = {"model": name, "optimizer": "sgd", "lr": 0.1, "momentum": 0.0, "dampening": 0.0,
           "weight_decay": 0.0, "nesterov": False, "probe_steps": [1]}  # fmt: skip
    spec = experiment_spec({"steps": steps, "batch_size": 16, "experiments": {"bn": exp}}, "bn")
    runs, paths = {}, {}
    for fw in ("torch", "burn"):
        for dt in DTYPES:
            noise = np.random.default_rng(len(runs) + 7)

            def look(x, shift=0.0, fw=fw, dt=dt, noise=noise):
                x = np.asarray(x, float) + (shift if fw == "burn" else 0.0)
                rel = 1e-7 if dt == "f32" else (2e-16 if fw == "burn" else 0.0)
                return x * (1 + rel * noise.uniform(-1, 1, x.shape))

            state = {n: look(base[n], param_shift if n in model.param_names else 0.0)
                     for n in model.state_names}  # fmt: skip
            if "bn.running_var" in state:
                state["bn.running_var"] = look(base["bn.running_var"], buffer_shift)
            losses = look(np.linspace(1.1, 0.9, steps), loss_shift).tolist()
            # eval mode: Burn's running variance costs it (more in f32, as a check on the dtype)
            shift = {("burn", "f64"): 0.05, ("burn", "f32"): 0.053}.get((fw, dt), 0.04)
            final = {"loss": losses[-1] + shift, "predictions": [0] * 96,
                     "correct": 60 if fw == "burn" else 61}  # fmt: skip
            estimator = {"bn.running_var_estimator": "biased" if fw == "burn" else "unbiased"}
            layer_hyperparameters = (
                {**model.hyperparameters, **estimator} if model.buffer_names else {}
            )
            runs[fw, dt] = {
                "losses": losses, "final": final, "lrs": [0.1] * steps,
                "params": {n: state[n][-1].tolist() for n in model.param_names},
                "buffers": {n: state[n][-1].tolist() for n in model.buffer_names},
                "trajectory": {
                    "params": {n: state[n].tolist() for n in model.param_names},
                    "grads": {n: look(grads[n]).tolist() for n in model.param_names},
                    "buffers": {n: state[n].tolist() for n in model.buffer_names},
                },
                "layers": [{"step": 1, "names": list(model.layers),
                            "outputs": [look(layers[n]).tolist() for n in model.layers],
                            "input_grads": [look(layers[n] / 1e3).tolist()
                                            for n in model.layers]}],
                "meta": {"framework": fw, "dtype": dt, "model": name, "optimizer": "sgd",
                         "hyperparameters": {"lr": 0.1}, "input_sha256": "cd" * 32,
                         "schedule": {"kind": "constant"}, "clip_grad": None,
                         "layer_hyperparameters": layer_hyperparameters},
            }  # fmt: skip
            path = folder / "runs" / "bn" / f"{fw}-{dt}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"bn": runs[fw, dt]}))
            paths[f"{fw}_{dt}"] = path
    tables = folder / "tables"
    tables.mkdir()
    blocks = {key: runs[tuple(key.split("_"))] for key in paths}
    steps_frame = steps_table.steps_frame(blocks)
    steps_frame.to_csv(tables / "steps_bn.csv", index=False, float_format="%.17g")
    (tables / "steps_bn.md").write_text(steps_table.render_md(steps_frame, "Per-step gaps: bn"))
    layers_args = [a for key, p in paths.items() for a in (f"--{key.replace('_', '-')}", str(p))]
    layers_table.main(["--experiment", "bn", *layers_args, "--csv", str(tables / "layers_bn.csv"),
                       "--md", str(tables / "layers_bn.md")])  # fmt: skip
    recorded = tuple(runs[fw, "f64"]["meta"]["layer_hyperparameters"] for fw in ("torch", "burn"))
    diff = pd.DataFrame(config_diff.diff_rows(spec, recorded), columns=config_diff.COLUMNS)
    diff.to_csv(tables / "config_diff_bn.csv", index=False)
    (tables / "config_diff_bn.md").write_text(config_diff.render_md(diff, "bn"))
    tiny = np.full(steps, 1e-17)
    where = ["bn.running_var[0]"] * steps
    replay = pd.DataFrame(
        {"step": range(1, steps + 1), "dloss": 0.0, "dparam": tiny, "where": where}
    )
    counter = replay.assign(dparam_held_f64=tiny)
    replay = replay.assign(dparam=np.full(steps, replay_gap))
    if model.buffer_names:
        counter["dparam_burn_running_stats"] = steps_frame["f64_f64"]
    for key, frame in (("replay", replay), ("counterfactual", counter)):
        frame.to_csv(tables / f"{key}_bn.csv", index=False, float_format="%.17g")
        (tables / f"{key}_bn.md").write_text(f"### {key}\n\n```text\n{key} rows\n```\n")
    probe_row = {"parameter": "fc.weight[1,19]", "initial": 0.066, "grad": 1e-3,
                 "update": -1e-4, "grad_rel_err": 0.0, "update_diff": 0.0}  # fmt: skip
    probe = pd.DataFrame([{"framework": fw, "dtype": dt, **probe_row} for fw, dt in RUNS])
    probe.to_csv(tables / "probe_bn.csv", index=False)
    (tables / "probe_bn.md").write_text("### probe\n\n| a |\n| --- |\n| 1 |\n")
    lrs = pd.DataFrame(
        {"step": range(1, steps + 1), "lr_torch": 0.1, "lr_burn": 0.1, "rel_diff": 0.0}
    )
    lrs.to_csv(tables / "lrs_bn.csv", index=False)
    (tables / "lrs_bn.md").write_text(
        "### lrs\n\nPyTorch and Burn use the same lr at every step.\n"
    )
    (folder / "compare").mkdir()
    for dt in DTYPES:
        (folder / "compare" / f"bn-{dt}.txt").write_text(
            "bn.losses  n=  4  max|diff|=1.00e-07\nworst=1.00e-07 tol=1e-06 OK\n"
        )
    record = asdict(judge.judge_experiment("bn", judge.read_tables(tables, "bn", True), runs, 1e-6))
    return Experiment("bn", spec, folder, {"f32": 1e-6, "f64": 1e-12}, [shapes], [1, 2], record)


def rejudge(x) -> None:
    """Judge an experiment again from its tables as the test has changed them."""
    tables = {"steps": x.steps, "replay": x.replay, "counterfactual": x.counterfactual,
              "config_diff": x.config_diff, "layers": x.layers, "probe": x.probe}  # fmt: skip
    x.record = asdict(judge.judge_experiment(x.name, tables, x.runs, x.tolerances["f32"]))
    x.verdict = judge.verdict_of(x.record)


def test_a_gap_in_the_running_variance_alone_is_named_evaluation_only(tmp_path):
    x = cnn_bn_results(tmp_path)
    v = x.verdict
    assert v.label == vd.EXPLAINED and v.scope == vd.EVALUATION
    assert v.split.params_first is None and v.split.buffers_first == 1
    cause = "the running-variance estimator (Burn biased, PyTorch unbiased)"
    assert v.cause == f"{cause} (100.0% of the gap, measured)"
    line = vt.verdict_line(x.record)
    assert line.startswith(
        "algorithmic difference, explained, in the evaluation state only: training matches up"
        " to rounding (the f64 parameter gap stays within the floor, at most"
    )
    assert (
        "the buffers (bn.running_mean, bn.running_var) leave the rounding floor at step 1" in line
    )
    assert line.endswith(f"(f64 gap up to {e(v.split.buffers_gap)}) — caused by {cause}"
                         " (100.0% of the gap, measured)")  # fmt: skip
    assert x.summary_row()["cause, or where it starts"].startswith(
        "evaluation state only (training matches up to rounding): " + cause
    )
    assert vt.short_verdict(x.record) == (
        f"`bn`: algorithmic difference, explained (evaluation state only) — {cause}"
    )
    # the numbers beside the words
    assert e(v.split.buffers_gap) in line and e(v.split.params_gap) in line


def test_a_parameter_gap_keeps_the_verdict_on_training(tmp_path):
    x = cnn_bn_results(tmp_path, param_shift=1e-9)
    assert x.verdict.scope == vd.TRAINING and not vt.evaluation_only(x.record)
    assert "evaluation state only" not in vt.verdict_line(x.record)
    # both parts part: each gets its own causes, the parameters' shares of their own gap
    split = x.verdict.split
    assert x.verdict.cause == (
        "training: Burn's f32 arithmetic in its update (100.0% of the parameter gap, the"
        " remainder); evaluation state: the running-variance estimator (Burn biased, PyTorch"
        " unbiased) (100.0% of the gap, measured)"
    )
    assert vt.verdict_line(x.record) == (
        "algorithmic difference, explained, in training and in the evaluation state: the"
        f" parameters leave the rounding floor at step 1 (f64 gap up to"
        f" {e(split.params_gap)}), the buffers (bn.running_mean, bn.running_var) at"
        f" step 1 (up to {e(split.buffers_gap)}) — {x.verdict.cause}"
    )
    assert "Training matches" not in x.split_reading()
    assert "leaving the rounding floor at step 1" in x.split_reading()


def test_the_section_of_a_model_with_buffers(tmp_path):
    x = cnn_bn_results(tmp_path)
    text = x.section({})
    assert text.startswith("## Experiment `bn` (optimizer: sgd, model: cnn_bn)\n")
    split = x.verdict.split
    assert (
        "- Parameters and buffers apart: the f64 parameter gap reaches"
        f" {e(split.params_gap)}"
        " (within the rounding floor at every step); the f64 gap of the buffers (bn.running_mean,"
        " bn.running_var, which only an eval-mode forward reads) reaches"
        f" {e(split.buffers_gap)} (leaving the rounding floor at step 1). Training"
        " matches; only the evaluation state (the running statistics) differs."
    ) in text
    layers = text.split("### Where the difference enters\n")[1].split("### Replay")[0]
    row = x.layers[x.layers["first_above_floor"]].iloc[0]
    assert (row["phase"], row["layer"]) == ("forward", "bn.running_var")
    assert layers.startswith(
        "\nf64: the difference enters at `bn.running_var` after the forward pass of step 1 (max|Δ|"
        f" {e(row['max_abs_diff_f64'])} against a rounding floor of"
        f" {e(row['floor'])}; a buffer: BatchNorm updates it in the train-mode forward)."
    )
    assert "![where the difference enters in bn](plots/layers_bn.png)" in layers
    # train mode beside eval mode, from losses[-1] and final: the train-mode losses agree to
    # rounding (the parameters do), so no ratio to a rounding residue
    t64, b64 = x.runs["torch", "f64"], x.runs["burn", "f64"]
    d_train = abs(t64["losses"][-1] - b64["losses"][-1])
    d_eval = abs(t64["final"]["loss"] - b64["final"]["loss"])
    floor = vd.rounding_floor(x.steps["torch_f64"], x.steps["burn_f64"])[-1]
    assert 0 < d_train <= floor
    assert (
        "In f64, PyTorch's and Burn's losses at the last step, 4, in train mode (each batch's"
        f" own statistics) agree to rounding ({e(d_train)}, under the rounding floor of"
        f" {e(floor)}); their final losses in eval mode (the running statistics, the"
        f" whole dataset) differ by {e(d_eval)}: only the running statistics separate"
        " them; in eval mode PyTorch gets 61 right, Burn 60."
    ) in layers
    assert "× the train-mode difference" not in layers
    assert f"| PyTorch f32 | {x.runs['torch', 'f32']['losses'][-1]:.8g} |" in layers
    assert "| 61 of 96 |" in layers and "| 60 of 96 |" in layers
    assert "After training the two f32 models (in eval mode) agree on" in text


def test_the_seeds_model_section_only_gains_the_layers_subsection(tmp_path):
    # A model without buffers: no split, no eval-mode table, the heading without a model;
    # the layers subsection is one sentence and the plot.
    x = cnn_bn_results(tmp_path, name="cnn1d")
    assert x.verdict.split is None and x.verdict.label == vd.EQUIVALENT
    text = x.section({})
    assert text.startswith("## Experiment `bn` (optimizer: sgd)\n")
    assert "Parameters and buffers apart" not in text and "eval mode" not in text
    assert "The f32 parameter gap stays within" in text
    layers = text.split("### Where the difference enters\n")[1].split("### Replay")[0]
    assert layers.strip().count("\n\n") == 1  # the sentence, then the plot
    assert layers.strip().startswith(
        "f64: every quantity stays within rounding at the probe step 1."
    )


def test_two_different_final_losses_never_print_alike(tmp_path):
    assert distinct(0.578532, 0.578462) == ("0.57853", "0.57846")
    assert distinct(0.07011, 0.06) == ("0.07011", "0.06")  # apart already: 4 digits
    assert distinct(0.5, 0.5) == ("0.5", "0.5")
    x = cnn_bn_results(tmp_path)
    x.runs["burn", "f32"]["final"]["loss"] = x.runs["torch", "f32"]["final"]["loss"] + 1e-6
    sentence = next(line for line in x.evidence() if line.startswith("After training"))
    torch, burn = re.findall(r"final loss ([\d.]+)\)", sentence)
    assert torch != burn


def test_train_mode_losses_apart_keep_the_ratio(tmp_path):
    x = cnn_bn_results(tmp_path, loss_shift=1e-5)
    t64, b64 = x.runs["torch", "f64"], x.runs["burn", "f64"]
    d_train = abs(t64["losses"][-1] - b64["losses"][-1])
    d_eval = abs(t64["final"]["loss"] - b64["final"]["loss"])
    text = readings.eval_reading(x)
    assert f"differ by {e(d_train)}; their final losses in eval mode" in text
    assert f"({d_eval / d_train:.3g}× the train-mode difference)" in text
    assert "agree to rounding" not in text


def test_an_unexplained_difference_in_both_parts_names_each_parts_cause(tmp_path):
    x = cnn_bn_results(tmp_path, param_shift=1e-9, replay_gap=1e-6)
    v = x.verdict
    assert v.label == vd.UNEXPLAINED and x.record["both_parts"]
    cause = "the running-variance estimator (Burn biased, PyTorch unbiased)"
    moved = x.counterfactual[vd.RUNNING_STATS_COLUMN].max()
    buffers = (
        f"buffers — caused by {cause}: Burn's estimator alone moves PyTorch's run by"
        f" {e(moved)} (counterfactual, `dparam_burn_running_stats`), against the"
        f" buffers' f64 gap of {e(v.split.buffers_gap)}"
    )
    detail = x.summary_row()["cause, or where it starts"]
    assert detail.startswith("parameters — the replay of Burn's run leaves the rounding floor")
    assert detail.endswith("; " + buffers)
    line = vt.verdict_line(x.record)
    assert f"(up to {e(v.split.buffers_gap)}): parameters — " in line
    assert line.endswith(buffers) and " — parameters" not in line
    # a variant that moves the run by much less than the buffer gap is not named the cause
    x.counterfactual[vd.RUNNING_STATS_COLUMN] *= 0.5
    rejudge(x)
    assert x.record["buffers_cause"]["accounts_for_it"] is False
    assert vt.buffer_cause(x.record).startswith(f"not accounted for by {cause} alone: ")
    # the replay bullet says the replay misses Burn's run
    replay = next(line for line in x.evidence() if line.startswith("Replay:"))
    assert "misses Burn's f64 run by up to 1.00e-06 over 4 steps (step 1," in replay
    assert "above the rounding floor (which it leaves at step 1," in replay
    assert "reproduces" not in replay


def test_a_difference_before_the_update_says_why_the_replay_cannot_follow(tmp_path):
    x = cnn_bn_results(tmp_path)
    x.layers["first_above_floor"] = False
    gelu = x.layers[(x.layers["phase"] == "backward") & (x.layers["layer"] == "gelu")].index[0]
    x.layers.loc[gelu, "first_above_floor"] = True
    x.layers["introduced_first"] = False
    rejudge(x)
    # no local values: whether gelu introduces it is not known
    assert x.record["entry"] == {
        "layer": "gelu", "phase": "backward", "step": 1, "introduced": None,
    }  # fmt: skip
    x.layers["local_f64"] = 0.0  # measured: no layer introduces one
    rejudge(x)
    assert x.record["entry"] == {
        "layer": "gelu", "phase": "backward", "step": 1, "introduced": False,
    }  # fmt: skip
    assert vt.model_entry(x.record) == (
        "; it enters before the update, at the input gradient of `gelu` in the backward pass of"
        " step 1 (layers table): the replay re-runs only the update on PyTorch's gradients, so"
        " it cannot follow a difference in the backward pass"
    )
    # Measured on PyTorch's input, the layer that introduces it names the entry, even where
    # an earlier quantity (here conv's output) is already above its floor.
    conv = x.layers[(x.layers["phase"] == "forward") & (x.layers["layer"] == "conv")].index[0]
    x.layers["first_above_floor"] = False
    x.layers.loc[conv, "first_above_floor"] = True
    x.layers.loc[gelu, "introduced_first"] = True
    rejudge(x)
    assert x.record["entry"] == {
        "layer": "gelu", "phase": "backward", "step": 1, "introduced": True,
    }  # fmt: skip
    assert vt.model_entry(x.record).startswith(
        "; Burn's `gelu` introduces it, at the input gradient of `gelu` in the backward pass of"
        " step 1 (the layer run on PyTorch's input, layers table): the replay"
    )


def set_probe(x, grad: float, rel: float, update: float, optimizer: str = "sgd") -> None:
    """The probe rows of `fc.weight[1,19]` with f64 gradient `grad` (PyTorch's run's too),
    f32 relative gradient error `rel`, and f64 update `update` in both frameworks."""
    rows = x.probe
    rows["parameter"] = "fc.weight[1,19]"
    rows["grad"] = grad
    rows["grad_rel_err"] = np.where(rows["dtype"] == "f32", rel, 0.0)
    rows["update"], rows["update_diff"] = update, 0.0
    column = flat_names({"fc.weight": x.shapes["fc.weight"]}).index("fc.weight[1,19]")
    x.runs["torch", "f64"]["trajectory"]["grads"]["fc.weight"][0][column] = grad
    for run in x.runs.values():
        run["meta"]["optimizer"] = optimizer
        run["meta"]["hyperparameters"] = {"lr": 0.01, "eps": 1e-8}


def test_a_probed_gradient_of_rounding_noise_is_not_compared(tmp_path):
    x = cnn_bn_results(tmp_path)
    set_probe(x, 2.7e-19, 8.6e8, 0.0)
    rejudge(x)
    text = readings.probe_reading(x)
    assert (
        "That is rounding noise: at most 64 f64 ulps of the largest |f64 gradient| of its" in text
    )
    assert "rounding noise" in text and "nothing to be compared with" in text
    assert "×" not in text and "few correct" not in text and "inf" not in text


def test_the_probe_never_divides_by_a_zero_update(tmp_path):
    x = cnn_bn_results(tmp_path)
    set_probe(x, 1e-3, 1e-5, 0.0)
    rejudge(x)
    text = readings.probe_reading(x)
    assert "Neither framework moves it in f64: nothing to compare." in text
    assert "×" not in text and "inf" not in text


def test_the_probes_fixed_clauses_follow_the_numbers(tmp_path):
    x = cnn_bn_results(tmp_path)
    set_probe(x, 1e-3, 1e-5, -1e-4)
    rejudge(x)
    text = readings.probe_reading(x)
    assert "ordinary f32 accumulation error." in text and "few correct" not in text
    set_probe(x, 1e-3, 5e-3, -1e-4)
    rejudge(x)
    assert "terms that nearly cancel keeps few correct f32 digits" in readings.probe_reading(x)
    # Adam's full first step: "although the gradient is tiny" only for a tiny gradient
    set_probe(x, 1.6e-3, 1e-5, -0.01, optimizer="adam")
    rejudge(x)
    text = readings.probe_reading(x)
    assert "That is 1.000 of a full step of lr = 0.01: adam's first update" in text
    assert "tiny" not in text
    set_probe(x, 1e-6, 4e-3, -0.0099, optimizer="adam")
    rejudge(x)
    assert "of lr = 0.01 although the gradient is tiny: adam's" in readings.probe_reading(x)
