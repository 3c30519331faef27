"""The config checks of an experiment's data and loss: `data`, `loss`, `label_smoothing`,
`dropout`.

    data_problems(("experiments", "lenet"), exp, batch_size)  # [(path, message), ...]

A model fits a dataset when the two declare the same input (datasets/registry.py): `data:
digits` with `model: gpt` is refused, naming both; so is a text context longer than the
corpus, and a batch larger than the dataset. A loss must fit the data's `y`: cross_entropy
takes I64 class labels (every built-in dataset's), mse F32 targets (a port's own data file
only); label smoothing is cross_entropy's alone. Dropout is refused at any p but 0: PyTorch and
Burn draw their masks from their own random streams, so no two runs could match.
"""

from __future__ import annotations

from typing import Any

from torch_burn_parity.datasets import sine
from torch_burn_parity.datasets.registry import (
    DATA_NAMES,
    DEFAULT_DATA,
    data_of,
    default_data,
    fit_problem,
)
from torch_burn_parity.models.losses import DEFAULT_LOSS, TARGET_DTYPE
from torch_burn_parity.models.model_specs import valid_spec
from torch_burn_parity.models.port import header, is_port

Path = tuple[str | int, ...]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def experiment_data(exp: Any) -> str:
    """The data an experiment trains on: its `data`, or the one its model takes (sine when
    the model is not a valid one: its own check names it)."""
    if not isinstance(exp, dict):
        return DEFAULT_DATA
    if is_port(exp.get("model")):
        return "file"  # the port's own (models/port.py)
    model = valid_spec(exp.get("model"))
    return exp.get("data") or (default_data(model) if model else DEFAULT_DATA)


def batch_problems(config: dict[str, Any]) -> list[tuple[Path, str]]:
    """A top-level batch_size larger than sine's 96 samples when an experiment trains on
    sine (the other datasets' sizes are checked per experiment, data_problems)."""
    batch, experiments = config.get("batch_size"), config.get("experiments")
    on_sine = not isinstance(experiments, dict) or any(
        experiment_data(e) == DEFAULT_DATA for e in experiments.values()
    )
    if isinstance(batch, int) and not isinstance(batch, bool) and batch > sine.SAMPLES and on_sine:
        return [(("batch_size",), f"{batch} is larger than the dataset ({sine.SAMPLES} samples)")]
    return []


def data_problems(at: Path, exp: dict[str, Any], batch_size: Any) -> list[tuple[Path, str]]:
    """(path, message) for each problem of the experiment's data, loss and dropout."""
    problems: list[tuple[Path, str]] = []
    smoothing = exp.get("label_smoothing", 0.0)
    kind = exp.get("loss", DEFAULT_LOSS)
    if kind != DEFAULT_LOSS and _number(smoothing) and smoothing:
        problems.append(((*at, "label_smoothing"), f"a cross_entropy option; loss is {kind}"))
    if kind in TARGET_DTYPE and kind != DEFAULT_LOSS and not is_port(exp.get("model")):
        problems.append(
            ((*at, "loss"), f"{kind} needs F32 targets y, which only a port's own data file"
             " (model.data) holds: the built-in datasets' y are class labels")
        )  # fmt: skip
    if _number(smoothing) and not 0 <= smoothing < 1:
        problems.append(
            ((*at, "label_smoothing"), f"{smoothing} is outside [0, 1) (the share of the"
             " target spread over every class: 1 would leave nothing on the label)")
        )  # fmt: skip
    dropout = exp.get("dropout", 0.0)
    if _number(dropout) and dropout != 0:
        problems.append(
            ((*at, "dropout"), f"{dropout}: only 0 (PyTorch and Burn draw dropout masks from"
             " their own random streams, so no run could match step for step)")
        )  # fmt: skip
    if is_port(exp.get("model")):
        return problems + port_data_problems(at, exp, batch_size)
    model = valid_spec(exp.get("model"))
    if model is None:
        return problems  # the model's own check names it
    data = exp.get("data") or default_data(model)
    if data not in DATA_NAMES:
        return problems  # the schema names it
    if problem := fit_problem(data, model):
        return [*problems, ((*at, "data"), problem)]
    samples = data_of(data, model).samples
    # sine's size is the config's batch_size check (parity_config.run_problems)
    if data != DEFAULT_DATA and isinstance(batch_size, int) and batch_size > samples:
        problems.append(
            ((*at, "data"), f"{data} has {samples} samples, fewer than batch_size {batch_size}")
        )
    return problems


def port_data_problems(at: Path, exp: dict[str, Any], batch_size: Any) -> list[tuple[Path, str]]:
    """A port trains on its own data file (`model.data`): no `data` beside it, and a batch
    no larger than the file's samples."""
    if "data" in exp:
        return [((*at, "data"), "a port trains on its own data: give the file as `model.data`")]
    value = exp["model"]
    try:
        arrays = header(value["data"])
        samples = arrays["x"]["shape"][0]
        y = arrays["y"]
    except (KeyError, TypeError, ValueError, IndexError):
        return []  # the port's own check names it
    kind = exp.get("loss", DEFAULT_LOSS)
    if kind in TARGET_DTYPE and y["dtype"] != TARGET_DTYPE[kind]:
        what = {"I64": "class labels", "F32": "float targets"}.get(y["dtype"], y["dtype"])
        return [((*at, "loss"), f"{kind} needs {TARGET_DTYPE[kind]} y, but {value['data']}'s y"
                 f" is {y['dtype']} {y['shape']} ({what})")]  # fmt: skip
    if isinstance(batch_size, int) and batch_size > samples:
        return [((*at, "model", "data"), f"{value['data']} has {samples} samples, fewer than"
                 f" batch_size {batch_size}")]  # fmt: skip
    return []
