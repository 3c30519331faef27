"""layers_table.py refuses what it cannot read in one line, writing nothing: malformed run
files, missing arguments, and blocks of other models or short trajectories given directly.
The table itself: test_layers_table.py."""

from __future__ import annotations

import pytest

from test_layers_table import RUN_FILES, STEPS, blocks, outputs, run_main, write
from torch_burn_parity.analysis import layers_table as lt


def broken(change) -> dict[str, dict]:
    runs = blocks()
    change(runs)
    return runs


MALFORMED = {
    "no layer record": (
        lambda r: r["burn_f32"].pop("layers"),
        "burn-f32.json: no 'layers' record",
    ),
    "other layer names": (
        lambda r: r["burn_f64"]["layers"][1].__setitem__(
            "names", ["conv", "bn", "relu", "ln", "fc"]
        ),
        "burn-f64.json: layer names ['conv', 'bn', 'relu', 'ln', 'fc'] at step 3 differ from",
    ),
    "other probe steps": (
        lambda r: r["torch_f32"]["layers"][1].__setitem__("step", 2),
        "torch-f32.json: probe steps [1, 2] differ from",
    ),
    "a probe step after the last step": (
        lambda r: r["torch_f64"]["layers"][1].__setitem__("step", STEPS + 1),
        "torch-f64.json: layers[1].step is 4; probe steps must rise, from 1 to the last step (3)",
    ),
    "an output missing": (
        lambda r: r["burn_f32"]["layers"][0]["outputs"].pop(),
        "burn-f32.json: layers[0] (step 1) has 5 names but 4 outputs",
    ),
    "an output of another size": (
        lambda r: r["burn_f64"]["layers"][0]["outputs"][1].pop(),
        "burn-f64.json: the output of layer bn at step 1 has 7 values",
    ),
    "other parameters": (
        lambda r: r["burn_f64"]["trajectory"]["params"].__setitem__("fc.extra", [[0.0]] * STEPS),
        "burn-f64.json: parameters ['bn.bias', 'bn.weight', 'conv.weight',"
        " 'fc.bias', 'fc.extra', 'fc.weight', 'ln.bias', 'ln.weight'] differ from",
    ),
    "other buffers": (
        lambda r: r["burn_f64"]["trajectory"]["buffers"].__setitem__("bn.extra", [[0.0]] * STEPS),
        "burn-f64.json: buffers ['bn.extra', 'bn.running_mean', 'bn.running_var'] differ from",
    ),
    "an empty layer record": (
        lambda r: r["torch_f32"].__setitem__("layers", []),
        "torch-f32.json: 'layers' must be a non-empty list, one entry per probe step",
    ),
    "a layer entry without its outputs": (
        lambda r: r["burn_f32"]["layers"][0].pop("outputs"),
        "burn-f32.json: layers[0] must hold step, names, outputs, input_grads",
    ),
    "a probe step repeated": (
        lambda r: r["torch_f64"]["layers"][1].__setitem__("step", 1),
        "torch-f64.json: layers[1].step is 1; probe steps must rise, from 1 to the last step (3)",
    ),
    "a probe step true": (
        lambda r: r["torch_f64"]["layers"][0].__setitem__("step", True),
        "torch-f64.json: layers[0].step is True; probe steps must rise",
    ),
    "no layer names": (
        lambda r: r["burn_f64"]["layers"][0].__setitem__("names", []),
        "burn-f64.json: layers[0].names must be a list of layer names",
    ),
    "outputs not a list": (
        lambda r: r["burn_f64"]["layers"][0].__setitem__("outputs", 3),
        "burn-f64.json: layers[0] (step 1) has 5 names but no list of outputs",
    ),
    "a loss not a number": (
        lambda r: r["burn_f64"]["losses"].__setitem__(0, "x"),
        "burn-f64.json: the loss at step 1 must be a flat list of numbers",
    ),
    "a gradient not numbers": (
        lambda r: r["torch_f32"]["trajectory"]["grads"]["conv.weight"].__setitem__(2, ["x"]),
        "torch-f32.json: the gradient of conv.weight at step 3 must be a flat list of numbers",
    ),
    "a buffer not numbers": (
        lambda r: r["burn_f32"]["trajectory"]["buffers"]["bn.running_var"].__setitem__(0, ["x"]),
        "burn-f32.json: bn.running_var after the step at step 1 must be a flat list of numbers",
    ),
    "a trajectory short of a probe step": (
        lambda r: r["burn_f32"]["trajectory"]["params"]["fc.bias"].pop(),
        "burn-f32.json: trajectory.params.fc.bias must hold one entry per recorded step (3)",
    ),
    "a trajectory not a list": (
        lambda r: r["burn_f32"]["trajectory"]["params"].__setitem__("fc.bias", 3),
        "burn-f32.json: trajectory.params.fc.bias must hold one entry per recorded step (3)",
    ),
    "not numbers": (
        lambda r: r["burn_f32"]["layers"][0]["input_grads"].__setitem__(0, ["x"]),
        "burn-f32.json: the input gradient of layer conv at step 1 must be a flat list of numbers",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_a_malformed_run_is_refused_in_one_line_and_nothing_is_written(case, tmp_path, capsys):
    change, message = MALFORMED[case]
    with pytest.raises(SystemExit) as exit_info:
        run_main(tmp_path, broken(change))
    text = str(exit_info.value.code)
    assert text.startswith("layers_table: ") and "\n" not in text
    assert message in text, text
    assert not any(p.exists() for p in outputs(tmp_path / "out").values())


@pytest.mark.parametrize("left_out", ["--experiment", "--csv", "--md", "--torch-f32"])
def test_main_needs_each_of_its_arguments(tmp_path, capsys, left_out):
    out = outputs(tmp_path / "out")
    argv = ["--experiment", "exp", *write(tmp_path / "runs", blocks()),
            "--csv", str(out["csv"]), "--md", str(out["md"])]  # fmt: skip
    at = argv.index(left_out)
    with pytest.raises(SystemExit) as stop:
        lt.main(argv[:at] + argv[at + 2 :])
    assert stop.value.code == 2 and left_out in capsys.readouterr().err
    assert not any(p.exists() for p in out.values())


def test_quantities_refuse_runs_of_other_models_and_trajectories_without_a_step():
    """What load_runs and the run files' checks refuse first, refused here too for blocks
    given directly: another model, a trajectory entry that is no list, one step short."""
    runs = blocks()
    other = {**runs, "burn_f32": {**runs["burn_f32"], "meta": {**runs["burn_f32"]["meta"],
                                                               "model": "cnn1d"}}}  # fmt: skip
    with pytest.raises(lt.FormatError, match=r"burn-f32.json: model cnn1d differ from"):
        lt.quantities(other, RUN_FILES)
    runs["burn_f32"]["trajectory"]["params"]["fc.bias"] = 3
    with pytest.raises(lt.FormatError) as error:
        lt.quantities(runs, RUN_FILES)
    assert str(error.value) == "burn-f32.json: trajectory.params.fc.bias has no entry for step 1"
    runs = blocks()
    runs["torch_f64"]["trajectory"]["grads"]["conv.weight"].pop()
    with pytest.raises(lt.FormatError) as error:
        lt.quantities(runs, RUN_FILES)
    assert str(error.value) == (
        "torch-f64.json: trajectory.grads.conv.weight holds 2 entries, not one per recorded step"
        " (3)"
    )
