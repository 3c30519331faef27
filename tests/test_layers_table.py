"""layers_table.py: where the f64 difference enters, on synthetic run blocks of four runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from torch_burn_parity.analysis import layers_table as lt
from torch_burn_parity.analysis.layers_words import buffer_rows
from torch_burn_parity.models.model_specs import spec as model_spec
from torch_burn_parity.report import layers_plot

STEPS = 3
PROBE_STEPS = [1, 3]

CNN_BN = model_spec("cnn_bn")
# The model's names with small sizes: the rows depend on the names and their order only.
LAYERS = {name: 3 if name == CNN_BN.layers[-1] else 8 for name in CNN_BN.layers}
INPUT = 6  # size of the batch input, the input of the first layer
PARAMS = {name: 3 + i % 3 for i, name in enumerate(CNN_BN.param_names)}
BUFFERS = {name: 4 for name in CNN_BN.buffer_names}
RUNS = ("torch_f32", "burn_f32", "torch_f64", "burn_f64")
RUN_FILES = {key: key.replace("_", "-") + ".json" for key in RUNS}


def blocks(
    buffers: dict[str, int] | None = None,
    shift: dict | None = None,
    seed: int = 0,
    params: dict[str, int] | None = None,
) -> dict[str, dict]:
    """Four run blocks of one synthetic experiment that differ by rounding only: each f32
    run is the f64 values rounded to f32 plus a relative 1e-7 of noise; Burn's f64 run
    differs from PyTorch's by a relative 1e-16.

    shift: {(kind, name): delta} added to both Burn runs from step 1 on, e.g.
    {("buffers", "bn.running_var"): 2e-3} (kind: params, buffers, outputs, losses).
    """
    buffers = BUFFERS if buffers is None else buffers
    params = PARAMS if params is None else params
    shift = shift or {}
    rng = np.random.default_rng(seed)

    def base(n: int, scale: float = 1.0) -> np.ndarray:
        return rng.uniform(0.2, 1.0, n) * scale

    values = {
        "params": {n: [base(s) for _ in range(STEPS)] for n, s in params.items()},
        "grads": {n: [base(s, 1e-2) for _ in range(STEPS)] for n, s in params.items()},
        "buffers": {n: [base(s) for _ in range(STEPS)] for n, s in buffers.items()},
        "outputs": {n: [base(s, 3.0) for _ in range(STEPS)] for n, s in LAYERS.items()},
        "input_grads": {n: [base(s, 1e-3) for _ in range(STEPS)]
                        for n, s in zip(LAYERS, [INPUT, *list(LAYERS.values())[:-1]], strict=True)},
        "losses": [base(1)[0] for _ in range(STEPS)],
    }  # fmt: skip
    out = {}
    for key in RUNS:
        fw, dt = key.split("_")
        noise = np.random.default_rng(RUNS.index(key) + 1)

        def look(x: np.ndarray, kind: str, name: str, fw=fw, dt=dt, noise=noise) -> list:
            x = np.asarray(x, float) + (shift.get((kind, name), 0.0) if fw == "burn" else 0.0)
            rel = 1e-7 if dt == "f32" else (1e-16 if fw == "burn" else 0.0)
            x = x * (1 + rel * noise.uniform(-1, 1, x.shape))
            return (x.astype(np.float32).astype(float) if dt == "f32" else x).tolist()

        trajectory = {
            kind: {n: [look(v, kind, n) for v in series] for n, series in values[kind].items()}
            for kind in ("params", "grads", "buffers")
        }
        losses = [look(np.array([x]), "losses", "loss")[0] for x in values["losses"]]
        layers = [
            {
                "step": step,
                "names": list(LAYERS),
                "outputs": [look(values["outputs"][n][step - 1], "outputs", n) for n in LAYERS],
                "input_grads": [
                    look(values["input_grads"][n][step - 1], "input_grads", n) for n in LAYERS
                ],  # fmt: skip
            }
            for step in PROBE_STEPS
        ]
        out[key] = {
            "losses": losses,
            "final": {"loss": losses[-1], "correct": 50, "predictions": [0] * 96},
            "params": {n: s[-1] for n, s in trajectory["params"].items()},
            "buffers": {n: s[-1] for n, s in trajectory["buffers"].items()},
            "trajectory": trajectory,
            "layers": layers,
            "meta": {
                "framework": fw,
                "dtype": dt,
                "model": "cnn_bn",
                "input_sha256": "ab" * 32,
                "layer_hyperparameters": {},
            },  # fmt: skip
        }
    return out


def write(folder, runs: dict[str, dict]) -> list[str]:
    """The run files in folder; the CLI arguments that name them."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = []
    for key, block in runs.items():
        path = folder / RUN_FILES[key]
        path.write_text(json.dumps({"exp": block}))
        argv += [f"--{key.replace('_', '-')}", str(path)]
    return argv


def table(runs: dict[str, dict]) -> pd.DataFrame:
    paths = {key: RUN_FILES[key] for key in RUNS}
    return lt.layers_frame(lt.quantities(runs, paths))


def outputs(folder) -> dict:
    return {x: folder / f"layers_exp.{x}" for x in ("csv", "md", "png")}


def run_main(tmp_path, runs: dict[str, dict]):
    """The table's program, then the plot's, on the CSV it wrote (as the analyse job)."""
    out = outputs(tmp_path / "out")
    lt.main(["--experiment", "exp", *write(tmp_path / "runs", runs),
             "--csv", str(out["csv"]), "--md", str(out["md"])])  # fmt: skip
    layers_plot.main(["--experiment", "exp", "--csv", str(out["csv"]), "--png", str(out["png"])])
    return out


# ---------------------------------------------------------------------------- the rows


def test_rows_follow_the_computation_in_order():
    frame = table(blocks())
    step1 = frame[frame["step"] == 1]
    # each running statistic right after the output of the BatchNorm that updates it
    forward = [("forward", n) for n in LAYERS]
    bn = forward.index(("forward", "bn")) + 1
    forward[bn:bn] = [("forward", n) for n in BUFFERS]
    expected = (
        forward
        + [("loss", "loss")]
        + [("backward", n) for n in reversed(LAYERS)]
        + [("backward", n) for n in reversed(PARAMS)]
        + [("update", n) for n in PARAMS]
    )
    assert list(zip(step1["phase"], step1["layer"], strict=True)) == expected
    assert frame["step"].tolist() == [1] * len(expected) + [3] * len(expected)
    assert list(frame.columns[: len(lt.COLUMNS)]) == lt.COLUMNS


def test_everything_within_rounding_flags_no_row():
    frame = table(blocks())
    assert (frame["max_abs_diff_f64"] <= frame["floor"]).all()
    assert not frame["first_above_floor"].any()
    assert (
        lt.sentence(frame) == "f64: every quantity stays within rounding at the probe steps 1, 3."
    )
    one = frame[frame["step"] == 1]
    assert lt.sentence(one) == "f64: every quantity stays within rounding at the probe step 1."


def test_a_buffer_gap_flags_the_running_variance_in_the_forward_of_step_1():
    frame = table(blocks(shift={("buffers", "bn.running_var"): 2.1e-3}))
    flagged = frame[frame["first_above_floor"]]
    assert len(flagged) == 1
    row = flagged.iloc[0]
    assert (row["step"], row["phase"], row["layer"]) == (1, "forward", "bn.running_var")
    assert row["max_abs_diff_f64"] == pytest.approx(2.1e-3, rel=1e-6)
    # every row before it stays within rounding; the same buffer at step 3 is above too
    before = frame.loc[: flagged.index[0] - 1]
    assert (before["max_abs_diff_f64"] <= before["floor"]).all()
    later = frame[(frame["step"] == 3) & (frame["layer"] == "bn.running_var")].iloc[0]
    assert later["max_abs_diff_f64"] > later["floor"] and not later["first_above_floor"]
    # a buffer: not "in the update" (the optimizer never touches it), but in the forward
    assert lt.sentence(frame) == (
        "f64: the difference enters at `bn.running_var` after the forward pass of step 1"
        f" (max|Δ| {row['max_abs_diff_f64']:.2e} against a rounding floor of {row['floor']:.2e};"
        " a buffer: BatchNorm updates it in the train-mode forward). Apart from the running"
        " statistics, every quantity stays within rounding at the probe steps 1, 3."
    )
    assert "in the update" not in lt.sentence(frame)


def test_update_rows_that_leave_their_floors_in_one_step_leave_together():
    # Adam's f32 factors: every parameter's update parts a little, one more. The update rows
    # are one per parameter: none of them is "first", none is where it enters.
    shift = {("params", n): 2.2e-10 for n in PARAMS} | {("params", "fc.weight"): 2.5e-8}
    frame = table(blocks(shift=shift))
    first = frame[frame["first_above_floor"]].iloc[0]
    assert (first["phase"], first["layer"]) == ("update", next(iter(PARAMS)))
    text = lt.sentence(frame)
    assert "enters at" not in text
    assert text == (
        f"f64: the difference enters in the update of step 1, where {len(PARAMS)} rows leave"
        " their floors together: " + ", ".join(f"`{n}`" for n in PARAMS)
        + " (max|Δ| 2.20e-10 to 2.50e-08). The largest f64 difference of step 1 is at"
        " `fc.weight` in the update of step 1: 2.50e-08."
    )  # fmt: skip
    # the running variance (Burn's biased estimator) apart a lot, in the forward before them
    shift |= {("buffers", "bn.running_var"): 2.5e-4}
    text = lt.sentence(table(blocks(shift=shift)))
    assert text.startswith(
        "f64: the difference enters at `bn.running_var` after the forward pass of step 1"
    )
    assert (
        "train-mode forward). Apart from the running statistics, the difference enters in the"
        f" update of step 1, where {len(PARAMS)} rows leave their floors together: "
    ) in text


def test_many_rows_above_their_floor_are_counted_and_ties_not_repeated(monkeypatch):
    from torch_burn_parity.analysis import layers_words

    shift = {("params", n): 3e-9 for n in PARAMS}
    text = lt.sentence(table(blocks(shift=shift)))
    assert f"where {len(PARAMS)} rows leave their floors together: " in text
    assert text.endswith("(max|Δ| 3.00e-09 each).")  # a tie, to the digits shown: no largest
    monkeypatch.setattr(layers_words, "NAMED_UP_TO", 2)
    text = lt.sentence(table(blocks(shift=shift)))
    assert text == (
        f"f64: the difference enters in the update of step 1, where {len(PARAMS)} rows leave"
        " their floors together (max|Δ| 3.00e-09 each)."
    )


def test_an_earlier_difference_is_named_before_a_later_one():
    # A layer output in the forward pass precedes everything after it.
    shift = {("buffers", "bn.running_var"): 2e-3, ("outputs", "conv"): 1e-9}
    frame = table(blocks(shift=shift))
    row = frame[frame["first_above_floor"]].iloc[0]
    assert (row["step"], row["phase"], row["layer"]) == (1, "forward", "conv")
    assert lt.sentence(frame).startswith(
        "f64: the difference enters at the output of `conv` in the forward pass of step 1"
    )


@pytest.mark.parametrize(
    ("shift", "words"),
    [
        ({("losses", "loss"): 1e-9}, "the loss of step 1"),
        (
            {("input_grads", "ln"): 1e-9},
            "the input gradient of `ln` in the backward pass of step 1",
        ),
        ({("grads", "fc.bias"): 1e-9}, "the gradient of `fc.bias` in the backward pass of step 1"),
    ],
)
def test_each_kind_of_quantity_is_named_as_what_it_is(shift, words):
    assert f"enters at {words} (" in lt.sentence(table(blocks(shift=shift)))


def test_the_floor_is_the_verdicts_rounding_floor_of_one_quantity():
    runs = blocks()
    frame = table(runs)
    row = frame[(frame["step"] == 3) & (frame["layer"] == "fc.weight")]
    row = row[row["phase"] == "update"].iloc[0]
    series = {k: np.asarray(runs[k]["trajectory"]["params"]["fc.weight"][2]) for k in RUNS}
    noise = max(np.abs(series["torch_f32"] - series["torch_f64"]).max(),
                np.abs(series["burn_f32"] - series["burn_f64"]).max())  # fmt: skip
    size = max(np.abs(series["torch_f64"]).max(), np.abs(series["burn_f64"]).max())
    assert row["floor"] == max(noise * 2.0**-29 * 100, 64 * 2.0**-52 * size)


def test_a_quantitys_floor_is_its_f32_noise_scaled_or_a_few_ulps_of_its_size():
    one = lambda *x: np.array(x, float)  # noqa: E731
    noisy = {"torch_f32": one(1.0 + 1e-4, 2.0), "torch_f64": one(1.0, 2.0),
             "burn_f32": one(1.0, 2.0), "burn_f64": one(1.0, 2.0)}  # fmt: skip
    assert lt.floor_of(noisy) == ((1.0 + 1e-4) - 1.0) * 2.0**-29 * 100  # the noise's
    quiet = {k: one(-3.0, 0.5) for k in RUNS}  # no noise: 64 f64 ulps of the largest |value|
    assert lt.floor_of(quiet) == 64 * 2.0**-52 * 3.0
    # one framework's f32 run not finite: the other's noise sets the floor; both: no floor
    assert lt.floor_of(dict(quiet, burn_f32=one(np.nan, 0.5))) == 64 * 2.0**-52 * 3.0
    broken = dict(quiet, burn_f32=one(np.nan, 0.5), torch_f32=one(np.inf, 0.5))
    assert lt.floor_of(broken) == np.inf
    assert math.isnan(lt.max_abs_diff(one(np.inf), one(np.inf)))
    assert lt.max_abs_diff(one(), one()) == 0.0


def test_a_difference_exactly_at_its_floor_is_not_above_it():
    frame = table(blocks()).head(1).copy()
    frame["floor"] = frame["max_abs_diff_f64"] = frame["local_f64"] = 1e-16
    md = lt.render_md(frame, "T")
    assert "above" not in md.split("```text")[1] and "yes" not in md.split("```text")[1]


def test_a_value_that_is_exactly_equal_has_a_zero_floor_and_is_not_above():
    runs = blocks()
    for block in runs.values():
        block["trajectory"]["grads"]["fc.bias"][0] = [0.0, 0.0, 0.0]
    row = table(runs).query("phase == 'backward' and layer == 'fc.bias' and step == 1").iloc[0]
    assert row["floor"] == 0.0 and row["max_abs_diff_f64"] == 0.0
    assert not row["first_above_floor"]


def test_a_non_finite_difference_is_above_any_floor():
    runs = blocks()
    runs["burn_f64"]["layers"][0]["outputs"][2][0] = math.inf
    runs["burn_f32"]["layers"][0]["outputs"][2][0] = math.inf
    frame = table(runs)
    row = frame[frame["first_above_floor"]].iloc[0]
    assert (row["phase"], row["layer"]) == ("forward", "gelu")
    assert math.isnan(row["max_abs_diff_f64"]) and "max|Δ| NaN" in lt.sentence(frame)


def test_a_model_without_buffers_has_no_buffer_rows():
    # The seed's model: its parameters only, and run files without a buffers key.
    seed = list(model_spec("cnn1d").param_names)
    runs = blocks(buffers={}, params=dict.fromkeys(seed, 3))
    for block in runs.values():
        del block["trajectory"]["buffers"]
        block["meta"]["model"] = "cnn1d"
    frame = table(runs)
    assert (frame[frame["phase"] == "update"]["layer"] == seed * 2).all()
    grads = frame[(frame["phase"] == "backward") & frame["layer"].str.contains(".", regex=False)]
    assert grads["layer"].tolist() == seed[::-1] * 2


def test_parameters_follow_the_models_order_whatever_the_files_order():
    runs = blocks()
    for block in runs.values():  # Burn writes its maps in name order
        for kind in ("params", "grads", "buffers"):
            block["trajectory"][kind] = dict(sorted(block["trajectory"][kind].items()))
    frame = table(runs).query("step == 1")
    assert frame.query("phase == 'update'")["layer"].tolist() == [*PARAMS]
    assert frame[buffer_rows(frame)]["layer"].tolist() == [*BUFFERS]


# ---------------------------------------------------------------------------- the files


def test_main_writes_the_csv_the_markdown_and_the_plot(tmp_path, capsys):
    out = run_main(tmp_path, blocks(shift={("buffers", "bn.running_var"): 2e-3}))
    frame = pd.read_csv(out["csv"])
    assert list(frame.columns) == lt.COLUMNS
    assert frame["first_above_floor"].tolist().count(True) == 1
    md = out["md"].read_text()
    assert md.startswith("### Where the difference enters: exp\n\nf64: the difference enters at"
                         " `bn.running_var` after the forward pass of step 1")  # fmt: skip
    assert "above ← first" in md and md.count("\n   1  ") == len(frame) // 2
    assert out["png"].read_bytes().startswith(b"\x89PNG")
    assert "bn.running_var after the forward pass of step 1" in capsys.readouterr().out.replace(
        "`", ""
    )


def test_the_markdown_marks_each_row_above_its_floor_and_each_layer_that_introduces():
    """render_md on four rows with the local mode's column: above and introduced, the first
    of each, a row not measured locally (blank), and one within its floor on both."""
    frame = table(blocks(shift={("buffers", "bn.running_var"): 2e-3})).head(4).copy()
    frame["max_abs_diff_f64"] = [0.0, 1e-3, 2e-3, 5e-17]
    frame["floor"] = 1e-16
    frame["first_above_floor"] = [False, True, False, False]
    frame["local_f64"] = [0.0, 1e-3, math.nan, 5e-16]
    frame["introduced_first"] = [False, True, False, False]
    md = lt.render_md(frame, "T")
    assert md.startswith(
        "### T\n\nf64: the difference enters at the output of `bn` in the forward pass of step 1"
        " (max|Δ| 1.00e-03 against a rounding floor of 1.00e-16); 1 more forward row of step 1"
        " leaves its floor: `bn.running_mean` (max|Δ| 2.00e-03 each). The largest"
    )
    assert "2.00e-03. Run on PyTorch's input, the first layer to introduce" in md
    assert md.endswith(
        " (its floor 1.00e-16).\n\n```text\n"
        "step  phase     layer             f32 max|Δ|  f64 max|Δ|  floor     f64"
        "        local f64  introduced\n"
        "   1  forward   conv              2.38e-07    0.00e+00    1.00e-16"
        "                 0.00e+00\n"
        "   1  forward   bn                2.38e-07    1.00e-03    1.00e-16  above ← first"
        "  1.00e-03   yes ← first\n"
        "   1  forward   bn.running_mean   5.96e-08    2.00e-03    1.00e-16  above\n"
        "   1  forward   bn.running_var    2.00e-03    5.00e-17    1.00e-16"
        "                 5.00e-16   yes\n```\n"
    )
    # Without the local mode: no local columns, the header ends at "f64".
    plain = lt.render_md(frame.assign(local_f64=math.nan, introduced_first=False), "T")
    assert "\nstep  phase     layer             f32 max|Δ|  f64 max|Δ|  floor     f64\n" in plain
    assert "\n   1  forward   bn.running_mean   5.96e-08    2.00e-03    1.00e-16  above\n" in plain
    assert "yes" not in plain and "local f64" not in plain


def local_file(path, run: dict, shift: dict[str, float]) -> str:
    """A local layers file (analysis/local_layers.py) holding PyTorch's own recorded layer
    values, each layer's output moved by shift[name]: what Burn's layers alone would make."""
    from torch_burn_parity.analysis.local_layers import FORMAT
    from torch_burn_parity.io.run_tensors import TensorWriter

    shapes = {f"local/{r['step']}/{field}/{k}": [len(values)]
              for r in run["layers"] for field in ("outputs", "input_grads")
              for k, values in enumerate(r[field])}  # fmt: skip
    meta = {"format": FORMAT, "steps": json.dumps(PROBE_STEPS), "names": json.dumps(list(LAYERS))}
    writer = TensorWriter(path, shapes, "f64", meta)
    for r in run["layers"]:
        for field in ("outputs", "input_grads"):
            for k, (name, values) in enumerate(zip(r["names"], r[field], strict=True)):
                moved = np.asarray(values) + (shift.get(name, 0.0) if field == "outputs" else 0.0)
                writer.write(f"local/{r['step']}/{field}/{k}", moved)
    writer.close()
    return str(path)


def test_main_with_the_local_mode_names_the_layer_that_introduces(tmp_path, capsys):
    runs = blocks(shift={("outputs", "bn"): 1e-3})
    local = [local_file(tmp_path / f"local-{dt}.safetensors", runs[f"torch_{dt}"], {"bn": 1e-3})
             for dt in ("f32", "f64")]  # fmt: skip
    out = outputs(tmp_path / "out")
    argv = ["--experiment", "exp", *write(tmp_path / "runs", runs),
            "--csv", str(out["csv"]), "--md", str(out["md"])]  # fmt: skip
    lt.main([*argv, "--burn-local-f32", local[0], "--burn-local-f64", local[1]])
    frame = pd.read_csv(out["csv"])
    first = frame[frame["introduced_first"]]
    assert (first["step"].tolist(), first["phase"].tolist(), first["layer"].tolist()) == (
        [1], ["forward"], ["bn"])  # fmt: skip
    assert frame["local_f64"].notna().sum() == 2 * len(LAYERS) * len(PROBE_STEPS)
    md = out["md"].read_text()
    assert "local f64  introduced" in md and "yes ← first" in md
    assert "Run on PyTorch's input, the first layer to introduce a difference is `bn`" in md
    # a port's local files hold no layer: nothing is measured locally
    from torch_burn_parity.analysis.local_layers import FORMAT
    from torch_burn_parity.io.run_tensors import TensorWriter

    for dt in ("f32", "f64"):
        meta = {"format": FORMAT, "steps": json.dumps(PROBE_STEPS), "names": "[]"}
        TensorWriter(tmp_path / f"port-{dt}.safetensors", {}, "f64", meta).close()
    lt.main([*argv, "--burn-local-f32", str(tmp_path / "port-f32.safetensors"),
             "--burn-local-f64", str(tmp_path / "port-f64.safetensors")])  # fmt: skip
    assert pd.read_csv(out["csv"])["local_f64"].isna().all()
    assert "local f64" not in out["md"].read_text()
    # the two local files go together
    with pytest.raises(SystemExit):
        lt.main([*argv, "--burn-local-f64", local[1]])
    assert capsys.readouterr().err.endswith(
        "error: --burn-local-f32 and --burn-local-f64 go together\n"
    )


def test_the_plot_is_byte_deterministic_and_follows_the_data(tmp_path):
    shifted = blocks(shift={("buffers", "bn.running_var"): 2e-3})
    a = run_main(tmp_path / "a", shifted)["png"].read_bytes()
    b = run_main(tmp_path / "b", shifted)["png"].read_bytes()
    c = run_main(tmp_path / "c", blocks())["png"].read_bytes()
    assert a == b != c


def test_the_plot_title_says_where_the_difference_enters():
    frame = table(blocks(shift={("buffers", "bn.running_var"): 2e-3}))
    title, subtitle = layers_plot.layers_title("cnn_bn_sgd", frame)
    assert title == "cnn_bn_sgd: the f64 difference enters at bn.running_var (forward, step 1)"
    assert subtitle.startswith("there f64 max|Δ| 0.002 against a rounding floor of")
    title, _ = layers_plot.layers_title("cnn1d", table(blocks()))
    assert title == "cnn1d: every f64 difference stays within rounding at the probe steps"
    # several update rows at once: no "first" among them, the largest named
    shift = {("params", n): 2.2e-10 for n in PARAMS} | {("params", "fc.weight"): 2.5e-8}
    title, subtitle = layers_plot.layers_title("cnn_bn_adam", table(blocks(shift=shift)))
    assert title == (
        f"cnn_bn_adam: the f64 difference enters in the update of step 1, {len(PARAMS)} rows"
        " together"
    )
    assert subtitle.startswith("largest there fc.weight: f64 max|Δ| 2.5e-08 · ")


def test_a_long_probe_step_wraps_onto_panels_that_fit_1400_px(tmp_path, monkeypatch):
    """Each probe step's rows in runs of PANEL_ROWS: all rows once, in order, and a figure
    no wider than 1,400 px however many rows (a 2,640 px plot was unreadable)."""
    import struct

    frame = table(blocks())
    monkeypatch.setattr(layers_plot, "PANEL_ROWS", 7)
    cut = layers_plot.panels(frame)
    assert all(len(rows) <= 7 for _, _, rows in cut)
    assert pd.concat([rows for _, _, rows in cut]).index.tolist() == frame.index.tolist()
    assert [(s, p) for s, p, _ in cut][:2] == [(1, 0), (1, 1)]
    monkeypatch.undo()
    many = pd.concat([frame] * 4, ignore_index=True)  # ~4× the rows of each step
    path = tmp_path / "layers.png"
    layers_plot.layers_plot(many, "deep", path)
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    assert width <= 1400 and height > width


def test_the_csv_holds_17_significant_digits_as_python_writes_them(tmp_path):
    out = run_main(tmp_path, blocks(shift={("buffers", "bn.running_var"): 2e-3}))
    frame = pd.read_csv(out["csv"])
    text = out["csv"].read_text()
    floor = frame["floor"].iloc[0]
    assert f"{floor:.17g}" in text and "E-" not in text  # not repr's shortest form alone
