"""Where the difference enters: every quantity of a probe step, layer by layer, both dtypes.

    python -m torch_burn_parity.analysis.layers_table --experiment cnn_bn_sgd \\
        --torch-f32 T32 --burn-f32 B32 --torch-f64 T64 --burn-f64 B64 \\
        --csv results/tables/layers_cnn_bn_sgd.csv --md results/tables/layers_cnn_bn_sgd.md

From the run files' `layers` record (one per probe step: each layer's output and the
gradient of the loss with respect to its input, taken in the step's own forward and
backward), their `losses`, and the step's parameter gradients, parameters and buffers
(`trajectory.grads`, `trajectory.params`, `trajectory.buffers`). Rows per probe step, in
the order the computation runs:

  forward   each layer's output, layers in order, each followed by the running statistics
            its train-mode forward updates (BatchNorm's buffers, as the step leaves them:
            the optimizer never touches them)
  loss      the step's loss
  backward  each layer's input gradient from the last layer to the first, then each
            parameter's gradient, parameters in reverse model order
  update    each parameter after the step, in model order

CSV columns: step, phase, layer, max_abs_diff_f32, max_abs_diff_f64 (max |torch − burn| of
that quantity at that dtype; NaN when a difference is not finite), floor (the rounding
floor of floors.py for that quantity alone, see `floor_of`), first_above_floor (true on
the first row, in table order, whose f64 difference exceeds its floor), local_f32,
local_f64, introduced_first (the local mode's), what (output, loss, input gradient,
gradient, value). Markdown: one sentence saying where the f64 difference enters (or that
nothing leaves rounding), then the table. The plot of the CSV is report/layers_plot.py's.

Parameters and buffers come in the model's order (model_specs.py); the four runs must be of
the same model, probe steps, layer names and parameter and buffer names.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.analysis.floors import ABSOLUTE_FLOOR, EPS_RATIO, SAFETY
from torch_burn_parity.analysis.gaps import (
    RUNS,
    add_run_arguments,
    load_runs,
    recorded_steps,
    run_paths,
)
from torch_burn_parity.analysis.layers_words import (
    GRAD,
    INPUT_GRAD,
    LOSS,
    OUTPUT,
    VALUE,
    e,
    local_sentence,
    sentence,
)
from torch_burn_parity.analysis.local_layers import LocalLayers
from torch_burn_parity.io.parity_io import FormatError, row_of, step_count, write_text_atomic
from torch_burn_parity.io.run_tensors import LayerValues, Tensors
from torch_burn_parity.models.model_specs import model_of

COLUMNS = [
    "step",
    "phase",
    "layer",
    "max_abs_diff_f32",
    "max_abs_diff_f64",
    "floor",
    "first_above_floor",
    "local_f32",
    "local_f64",
    "introduced_first",
    "what",
]
LOCAL = {"local_f32": "torch_f32", "local_f64": "torch_f64"}  # each against PyTorch's run
PHASES = ("forward", "loss", "backward", "update")


# ------------------------------------------------------------------------------ reading


def layer_record(block: dict, path: Path) -> list[dict]:
    """The run's `layers` record, checked: one entry per probe step, in step order."""
    if "layers" not in block:
        raise FormatError(
            f"{path}: no 'layers' record (the layer record of the probe steps; an older run file)"
        )
    record, steps = block["layers"], len(block["losses"])
    if not isinstance(record, list) or not record:
        raise FormatError(f"{path}: 'layers' must be a non-empty list, one entry per probe step")
    previous = 0
    for i, entry in enumerate(record):
        keys = ("step", "names", "outputs", "input_grads")
        if not isinstance(entry, dict) or any(k not in entry for k in keys):
            raise FormatError(f"{path}: layers[{i}] must hold {', '.join(keys)}")
        step, names = entry["step"], entry["names"]
        if not isinstance(step, int) or isinstance(step, bool) or not previous < step <= steps:
            raise FormatError(
                f"{path}: layers[{i}].step is {step!r}; probe steps must rise, from 1 to the"
                f" last step ({steps})"
            )
        previous = step
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise FormatError(f"{path}: layers[{i}].names must be a list of layer names")
        for key in ("outputs", "input_grads"):
            listed = isinstance(entry[key], list | LayerValues)
            if not listed or len(entry[key]) != len(names):
                raise FormatError(
                    f"{path}: layers[{i}] (step {step}) has {len(names)} names but"
                    f" {len(entry[key]) if listed else 'no list of'} {key}"
                )
    return record


def values(x, path: Path, what: str) -> np.ndarray:
    """A flat array of numbers, or a FormatError naming the file and the quantity."""
    try:
        array = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise FormatError(f"{path}: {what} must be a flat list of numbers") from None
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim != 1:
        raise FormatError(f"{path}: {what} must be a flat list of numbers")
    return array


def names_of(block: dict, kind: str) -> list[str]:
    """The run's parameter or buffer names ([] for a model without buffers), sorted: the
    frameworks write them in different orders."""
    return sorted((block["trajectory"].get(kind) or {}).keys())


def in_order(names: list[str], model_order: tuple[str, ...]) -> list[str]:
    """names in the model's order; any the model does not declare after them, sorted."""
    return [n for n in model_order if n in names] + [n for n in names if n not in model_order]


def quantities(
    blocks: dict[str, dict], paths: dict[str, Path], local: dict[str, LocalLayers] | None = None
) -> list[dict]:
    """Every row's identity and its numbers: {step, phase, layer, what, numbers}, the
    numbers (`numbers`) taken from its four arrays as each row is read, so that no more
    than one row's arrays are held at a time (a ResNet-18's gradients are 89 MB a run in
    f64); with ``local`` (Burn's local layers per dtype, `local_f32`/`local_f64`), a layer's
    output and input-gradient rows are also measured against Burn's local values.

    Refuses (FormatError naming the file) runs whose probe steps, layer names, parameter
    or buffer names, or quantity sizes differ from PyTorch's f64 run's.
    """
    ref_key = "torch_f64"
    records = {key: layer_record(blocks[key], paths[key]) for key in RUNS}
    steps = {key: [entry["step"] for entry in records[key]] for key in RUNS}
    models = {key: model_of(blocks[key]).name for key in RUNS}
    params = {key: names_of(blocks[key], "params") for key in RUNS}
    buffers = {key: names_of(blocks[key], "buffers") for key in RUNS}
    for key in RUNS:
        checks = (("model", models), ("probe steps", steps), ("parameters", params),
                  ("buffers", buffers))  # fmt: skip
        for what, found in checks:
            if found[key] != found[ref_key]:
                raise FormatError(
                    f"{paths[key]}: {what} {found[key]} differ from {paths[ref_key]}'s"
                    f" {found[ref_key]}"
                )
        for entry, ref in zip(records[key], records[ref_key], strict=True):
            if entry["names"] != ref["names"]:
                raise FormatError(
                    f"{paths[key]}: layer names {entry['names']} at step {entry['step']} differ"
                    f" from {paths[ref_key]}'s {ref['names']}"
                )

    for file in (local or {}).values():
        file.check(steps[ref_key], records[ref_key][0]["names"], paths[ref_key])

    def arrays(get, what: str) -> dict[str, np.ndarray]:
        found = {key: values(get(key), paths[key], what) for key in RUNS}
        found |= {key: get(key) for key in LOCAL if get(key) is not None}
        for key in found:
            if found[key].size != found[ref_key].size:
                raise FormatError(
                    f"{paths[key]}: {what} has {found[key].size} values, {paths[ref_key]}'s"
                    f" {found[ref_key].size}"
                )
        return found

    def source(key: str, i: int, what: str, name: str, k: int):
        """The raw values of one quantity of probe step i in run `key`."""
        step = steps[ref_key][i]
        if what == OUTPUT:
            return records[key][i]["outputs"][k]
        if what == INPUT_GRAD:
            return records[key][i]["input_grads"][k]
        if what == LOSS:
            return blocks[key]["losses"][step - 1]
        kind = {GRAD: "grads", VALUE: "buffers" if name in buffers[ref_key] else "params"}[what]
        series = blocks[key]["trajectory"][kind]
        inline = not isinstance(series, Tensors)  # a test's JSON lists
        held = name in series and (not inline or isinstance(series[name], list))
        recorded = recorded_steps(blocks[key])  # the probe steps are always among them
        if not held or step not in recorded:
            raise FormatError(
                f"{paths[key]}: trajectory.{kind}.{name} has no entry for step {step}"
            )
        if (count := step_count(series, name)) < len(recorded):
            raise FormatError(
                f"{paths[key]}: trajectory.{kind}.{name} holds {count} entries, not one per"
                f" recorded step ({len(recorded)})"
            )
        return row_of(series, name, recorded.index(step))

    labels = {OUTPUT: "the output of layer {}", INPUT_GRAD: "the input gradient of layer {}",
              LOSS: "the loss", GRAD: "the gradient of {}", VALUE: "{} after the step"}  # fmt: skip
    # The model's order (the run files' key order differs between the frameworks); names a
    # model does not declare follow in name order.
    model = model_of(blocks[ref_key])
    params_in_order = in_order(params[ref_key], model.param_names)
    buffers_in_order = in_order(buffers[ref_key], model.buffer_names)
    rows = []
    for i, step in enumerate(steps[ref_key]):
        layers = records[ref_key][i]["names"]
        # (phase, row name, what, layer index) in the order the step computes them
        order = []
        for k, name in enumerate(layers):
            order.append(("forward", name, OUTPUT, k))
            order += [("forward", b, VALUE, 0) for b in buffers_in_order if owner(b) == name]
        # a buffer of a layer the record does not list: after the recorded layers
        order += [("forward", b, VALUE, 0) for b in buffers_in_order if owner(b) not in layers]
        order += [("loss", "loss", LOSS, 0)]
        # A layer whose input is token ids has no input gradient (recorded empty): no row.
        grads = records[ref_key][i]["input_grads"]
        order += [("backward", layers[k], INPUT_GRAD, k) for k in reversed(range(len(layers)))
                  if np.size(grads[k]) > 0]  # fmt: skip
        order += [("backward", name, GRAD, 0) for name in reversed(params_in_order)]
        order += [("update", name, VALUE, 0) for name in params_in_order]
        for phase, name, what, k in order:
            found = {key: source(key, i, what, name, k) for key in RUNS}
            if local and what in (OUTPUT, INPUT_GRAD):
                found |= {key: local[key].values(step, what, k) for key in LOCAL}
            label = f"{labels[what].format(name)} at step {step}"
            rows.append({"step": step, "phase": phase, "layer": name, "what": what,
                         "numbers": numbers(arrays(found.get, label))})  # fmt: skip
    return rows


# ------------------------------------------------------------------------------ numbers


def owner(buffer: str) -> str:
    """The layer a buffer belongs to: `bn` of `bn.running_var`."""
    return buffer.rpartition(".")[0]


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """max |a − b|; NaN when any difference is not finite (never a reassuring number)."""
    with np.errstate(invalid="ignore"):  # inf − inf: NaN, reported as such
        diff = np.abs(a - b)
    if not np.isfinite(diff).all():
        return float("nan")
    return float(diff.max(initial=0.0))


def floor_of(arrays: dict[str, np.ndarray]) -> float:
    """The rounding floor of one quantity, as verdict.rounding_floor at one step.

    f64 rounds 2^-29 as coarsely as f32, so two f64 computations of the same quantity by
    the same arithmetic can differ by about its f32-vs-f64 noise × 2^-29, × SAFETY for the
    frameworks' different order of operations. Under that, a few f64 ulps of the quantity's
    own size: the absolute floor of verdict.py (64 ulps of 1) scaled by max|f64 value|, since
    a layer output can be far from 1 where parameters are not.
    """
    noise = np.fmax(
        max_abs_diff(arrays["torch_f32"], arrays["torch_f64"]),
        max_abs_diff(arrays["burn_f32"], arrays["burn_f64"]),
    )
    noise = np.inf if np.isnan(noise) else noise
    f64 = np.concatenate([arrays["torch_f64"], arrays["burn_f64"]])
    finite = np.abs(f64[np.isfinite(f64)])
    size = float(finite.max(initial=0.0))
    return float(max(noise * EPS_RATIO * SAFETY, ABSOLUTE_FLOOR * size))


def numbers(arrays: dict[str, np.ndarray]) -> dict[str, float]:
    """One row's numbers from its arrays: each precision's max |torch − burn|, the floor,
    and (NaN where not measured: the loss, parameters, buffers, or no local file) what
    each layer introduces, PyTorch's value against Burn's layer run on PyTorch's input."""
    found = {
        "max_abs_diff_f32": max_abs_diff(arrays["torch_f32"], arrays["burn_f32"]),
        "max_abs_diff_f64": max_abs_diff(arrays["torch_f64"], arrays["burn_f64"]),
        "floor": floor_of(arrays),
    }
    for column, ref in LOCAL.items():
        found[column] = (
            max_abs_diff(arrays[ref], arrays[column]) if column in arrays else float("nan")
        )
    return found


def layers_frame(rows: list[dict]) -> pd.DataFrame:
    """The table: COLUMNS, the CSV's, `what` (output, loss, input gradient, gradient,
    value) last."""
    frame = pd.DataFrame(
        [
            {"step": r["step"], "phase": r["phase"], "layer": r["layer"],
             **{k: r["numbers"][k] for k in ("max_abs_diff_f32", "max_abs_diff_f64", "floor")},
             "what": r["what"]}
            for r in rows
        ]
    )  # fmt: skip
    # A NaN difference counts as above the floor, as in verdict.first_step_above.
    above = ~(frame["max_abs_diff_f64"] <= frame["floor"])
    frame["first_above_floor"] = False
    if above.any():
        frame.loc[above.idxmax(), "first_above_floor"] = True
    # What each layer introduces (NaN where not measured).
    for column in LOCAL:
        frame[column] = [r["numbers"][column] for r in rows]
    measured = frame["local_f64"].notna()
    introduced = measured & ~(frame["local_f64"] <= frame["floor"])
    frame["introduced_first"] = False
    if introduced.any():
        frame.loc[introduced.idxmax(), "introduced_first"] = True
    return frame[COLUMNS]


# ------------------------------------------------------------------------------ words


HEADER = "step  phase     layer             f32 max|Δ|  f64 max|Δ|  floor     f64"
LOCAL_HEADER = "  local f64  introduced"


def render_md(frame: pd.DataFrame, title: str) -> str:
    above = ~(frame["max_abs_diff_f64"] <= frame["floor"])
    marks = np.where(frame["first_above_floor"], "above ← first", np.where(above, "above", ""))
    local = frame["local_f64"].notna().any()
    introduced = ~(frame["local_f64"] <= frame["floor"]) & frame["local_f64"].notna()
    spots = np.where(frame["introduced_first"], "yes ← first", np.where(introduced, "yes", ""))
    rows = []
    for r, mark, spot in zip(frame.itertuples(), marks, spots, strict=True):
        line = (
            f"{r.step:4d}  {r.phase:<8}  {r.layer:<16}  {e(r.max_abs_diff_f32):<10}"
            f"  {e(r.max_abs_diff_f64):<10}  {e(r.floor)}  {mark:<13}"
        )
        if local:
            shown = e(r.local_f64) if r.local_f64 == r.local_f64 else ""
            line += f"  {shown:<9}  {spot}"
        rows.append(line.rstrip())
    header = f"{HEADER:<77}{LOCAL_HEADER}" if local else HEADER
    table = "```text\n" + "\n".join([header.rstrip(), *rows]) + "\n```\n"
    words = " ".join(filter(None, [sentence(frame), local_sentence(frame)]))
    return f"### {title}\n\n{words}\n\n{table}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True, help="name shown in the title")
    add_run_arguments(parser)  # the four runs
    parser.add_argument("--csv", required=True, type=Path)
    parser.add_argument("--md", required=True, type=Path)
    for dtype in ("f32", "f64"):
        parser.add_argument(
            f"--burn-local-{dtype}", type=Path, help="Burn's layers on PyTorch's inputs"
        )
    args = parser.parse_args(argv)
    paths = run_paths(args)
    if (args.burn_local_f32 is None) != (args.burn_local_f64 is None):
        parser.error("--burn-local-f32 and --burn-local-f64 go together")
    try:
        blocks = load_runs(paths)
        local = None
        if args.burn_local_f64:
            local = {
                "local_f32": LocalLayers(args.burn_local_f32),
                "local_f64": LocalLayers(args.burn_local_f64),
            }
            # A port's local files hold no layer (its Burn layers are not run one at a
            # time, rust/src/port.rs): not measured.
            if not any(file.names for file in local.values()):
                local = None
        frame = layers_frame(quantities(blocks, paths, local))
    except FormatError as exc:
        sys.exit(f"layers_table: {exc}")
    title = f"Where the difference enters: {args.experiment}"
    csv = frame[COLUMNS].to_csv(index=False, float_format="%.17g")
    md = render_md(frame, title)
    write_text_atomic(args.csv, csv)
    write_text_atomic(args.md, md)
    print(f"{args.experiment}: {len(frame)} rows; {sentence(frame)} -> {args.csv}, {args.md}")


if __name__ == "__main__":
    main()
