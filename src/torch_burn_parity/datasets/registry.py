"""The datasets by name, what each gives, and whether a model fits one.

    data = dataset("digits")          # DataSpec: samples, one sample's shape, classes
    fit_problem(data, model_spec)     # None, or why the model cannot take this data

Each dataset declares its input: one sample's shape, whether it holds values (f32) or token
ids (i64), how many classes its labels take and how many labels a sample has (1 for a
classifier, one per position for next-character prediction). A model declares the same
(models/model_specs.py: `sample`, `tokens`, `classes`); a pair fits when they agree, and a
config whose pair does not is refused before any job. The text's sample is `context`
characters: its shape follows the model's size.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_burn_parity.datasets import digits, sine, text

DEFAULT_DATA = "sine"  # the seed's data: its files keep their names (dataset_stem)
DATA_NAMES = ("sine", "digits", "text")


@dataclass(frozen=True)
class DataSpec:
    """One dataset as both trainers read it: x [samples, *sample], y [samples] or
    [samples, positions]."""

    name: str
    samples: int
    sample: tuple[int, ...]
    tokens: bool  # x holds token ids (i64) rather than values (f32)
    classes: int
    positions: int  # labels per sample

    @property
    def x_shape(self) -> list[int]:
        return [self.samples, *self.sample]

    @property
    def y_shape(self) -> list[int]:
        return [self.samples] if self.positions == 1 else [self.samples, self.positions]

    def describe(self) -> str:
        """What the data gives, for refusals: e.g. `8×8 images in 10 classes`."""
        return describe(self.sample, self.tokens, self.classes)


def describe(sample: tuple[int, ...], tokens: bool, classes: int) -> str:
    """An input in words, a dataset's or a model's: `8×8 images in 10 classes`, `16
    sequences in 3 classes`, `token ids, blocks of 32 over 84 characters`."""
    if tokens:
        return f"token ids, blocks of {sample[0]} over {classes} characters"
    if len(sample) == 1:  # a vector of features (your own data, models/port.py)
        return f"{sample[0]} features in {classes} classes"
    shape = "×".join(map(str, sample[1:]))
    kind = "images" if len(sample) == 3 else "sequences"
    return f"{shape} {kind} in {classes} classes"


class DataError(ValueError):
    """An unknown dataset, or one a model does not fit."""


def dataset(name: str, context: int | None = None) -> DataSpec:
    """Dataset ``name``; the text's sample is ``context`` characters (needed for text)."""
    if name == "sine":
        return DataSpec("sine", sine.SAMPLES, (1, sine.LENGTH), False, sine.CLASSES, 1)
    if name == "digits":
        side = digits.SIDE
        return DataSpec("digits", digits.SAMPLES, (1, side, side), False, digits.CLASSES, 1)
    if name == "text":
        if context is None:
            raise DataError("data text: its samples are a model's context, none given")
        n = text.samples(context)
        return DataSpec("text", n, (context,), True, len(text.vocabulary()), context)
    raise DataError(f"unknown data {name!r} (known: {', '.join(DATA_NAMES)})")


def data_of(name: str, model) -> DataSpec:
    """Dataset ``name`` as model ``model`` (a ModelSpec) would read it: the text cut into
    blocks of the model's context."""
    return dataset(name, model.size.get("context"))


def fit_problem(name: str, model) -> str | None:
    """Why ``model`` (a ModelSpec) cannot train on dataset ``name``, or None when it fits."""
    if name == "text" and "context" not in model.size:
        return (
            f"model {model.name} takes {_takes(model)}; data text gives token ids"
            " (a model with a context, e.g. gpt)"
        )
    data = data_of(name, model)
    if name == "text" and data.samples < 1:
        return (
            f"model {model.name}'s context {model.size['context']} is longer than the text"
            f" ({len(text.corpus()) - 1} characters with a next one)"
        )
    if (data.sample, data.tokens, data.classes) != (model.sample, model.tokens, model.classes):
        return f"model {model.name} takes {_takes(model)}; data {name} gives {data.describe()}"
    return None


def _takes(model) -> str:
    return describe(model.sample, model.tokens, model.classes)


def default_data(model) -> str:
    """The data an experiment without `data` trains on: the first dataset ``model`` (a
    ModelSpec) fits — sine for cnn1d, cnn_bn and transformer, digits for lenet, text for
    gpt (text even when its context does not fit: fit_problem then says why)."""
    fits = (name for name in DATA_NAMES if fit_problem(name, model) is None)
    return next(fits, "text" if model.tokens else DEFAULT_DATA)


def dataset_stem(data: str, model) -> str:
    """The dataset file's name without its suffix: the model's tag on the data the model
    takes by default (`cnn1d`, `transformer-d_model256-…`, `lenet`: the names the sine
    files always had), `{data}-{tag}` on any other."""
    if model.port is not None:  # a port's data is its own file (models/port.py)
        return model.tag
    return model.tag if data == default_data(model) else f"{data}-{model.tag}"


def parse_stem(stem: str):
    """(data, ModelSpec) of a `dataset_stem`; ModelError or DataError otherwise."""
    from torch_burn_parity.models.model_specs import parse_tag

    data, _, rest = stem.partition("-")
    if data in DATA_NAMES and rest:
        return data, parse_tag(rest)
    model = parse_tag(stem)
    return ("file" if model.port is not None else default_data(model)), model


def input_arrays(data: DataSpec) -> dict[str, tuple[list[int], list]]:
    """x and y of ``data`` as {name: (shape, flat values)} (x f64 values or int token ids)."""
    if data.name == "sine":
        xs, ys = sine.arrays()
    elif data.name == "digits":
        xs, ys = digits.arrays()
    else:
        xs, ys = text.arrays(data.sample[0])
    return {"x": (data.x_shape, xs), "y": (data.y_shape, ys)}
