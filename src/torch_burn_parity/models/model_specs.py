"""The models both trainers build, without torch: names, shapes, layers, initial values, at
the sizes a config asks for.

This is the torch-free half of the model registry. parity_io (imported by every script),
make_data, gaps and the analyses read a model's parameter and buffer names from here and
never pay for `import torch` (about 2 s). The PyTorch modules are in model_cnn1d.py,
model_cnn_bn.py and model_transformer.py, gathered by models.py, which take their names and
values from here.

A config's `model` is a name (the model at its default size, the constants below) or a
mapping `{name: transformer, d_model: 256, heads: 4, layers: 4, d_ff: 1024}`; each model
declares its size keys and their defaults (SIZES). `spec(name, size)` is the model at that
size: its *state* is its parameters, then its buffers, each in the model's order with
PyTorch's names and layouts: the order of the dataset file (after x and y), of the run
files' trajectories and of every parameter matrix (gaps.param_matrix).

Initial values are f64 formulas of the flat index (model_formulas.py), rounded to f32 once,
when make_data.py packs them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from torch_burn_parity.datasets import digits
from torch_burn_parity.models import model_formulas as formulas
from torch_burn_parity.models import port
from torch_burn_parity.models.model_spec import (
    CLASSES,
    DATA_KEYS,
    DEFAULT_MODEL,
    LENGTH,
    SIZES,
    ModelError,
    ModelSpec,
)
from torch_burn_parity.suggest import closest_key


def _cnn1d(channels: int, kernel: int) -> ModelSpec:
    positions = LENGTH - kernel + 1
    shapes = {
        "conv.weight": [channels, 1, kernel],
        "conv.bias": [channels],
        "fc.weight": [CLASSES, channels * positions],
        "fc.bias": [CLASSES],
    }
    return ModelSpec(
        name="cnn1d",
        size={"channels": channels, "kernel": kernel},
        param_names=tuple(shapes),
        buffer_names=(),
        layers=("conv", "relu", "fc"),  # flatten is a reshape, not a layer
        state_shapes=shapes,
        formulas=lambda: formulas.cnn1d(shapes),
    )


def _cnn_bn(channels: int, kernel: int) -> ModelSpec:
    positions = LENGTH - kernel + 1
    # The conv has no bias, as usual before a BatchNorm: the normalization removes any
    # per-channel constant, so a bias there gets a gradient of pure rounding noise (~1e-17
    # in f64), which Adam turns into steps of about ±lr that differ between frameworks.
    params = {
        "conv.weight": [channels, 1, kernel],
        "bn.weight": [channels],
        "bn.bias": [channels],
        "ln.weight": [positions],
        "ln.bias": [positions],
        "fc.weight": [CLASSES, channels * positions],
        "fc.bias": [CLASSES],
    }
    # num_batches_tracked is not state here: Burn has none, and with a momentum set PyTorch
    # does not use it.
    buffers = {"bn.running_mean": [channels], "bn.running_var": [channels]}
    shapes = params | buffers
    return ModelSpec(
        name="cnn_bn",
        size={"channels": channels, "kernel": kernel},
        param_names=tuple(params),
        buffer_names=tuple(buffers),
        layers=("conv", "bn", "gelu", "ln", "fc"),
        state_shapes=shapes,
        formulas=lambda: formulas.cnn_bn(shapes),
        hyperparameters={
            "bn.momentum": 0.1,
            "bn.eps": 1e-5,
            "ln.eps": 1e-5,
            "gelu.approximate": "none",
        },  # fmt: skip
    )


def encoder_prefixes(layers: int) -> list[str]:
    """The name prefix of each encoder layer: nn.TransformerEncoderLayer's own names for one
    layer (`enc.self_attn…`), nn.TransformerEncoder's for a stack (`enc.layers.0.self_attn…`)."""
    return ["enc"] if layers == 1 else [f"enc.layers.{i}" for i in range(layers)]


def encoder_stage_names(layers: int) -> list[str]:
    """The recorded stages of the encoder layers: attn, norm1, ff, norm2 for one layer; the
    same with the layer's index (`attn.0`, …) for a stack."""
    stages = ("attn", "norm1", "ff", "norm2")
    if layers == 1:
        return list(stages)
    return [f"{stage}.{i}" for i in range(layers) for stage in stages]


def _transformer(d_model: int, heads: int, layers: int, d_ff: int) -> ModelSpec:
    # PyTorch's names and layouts (nn.TransformerEncoderLayer's): in_proj_weight packs the
    # query, key and value projections as rows 0..d, d..2d, 2d..3d ([out, in] each), and
    # in_proj_bias their biases; Burn holds them as three Linear layers.
    # The key bias (in_proj_bias[d:2d]) adds q·b_k to every score of a row, which softmax
    # removes: its gradient is zero but for rounding (~1e-18 in f64), as cnn_bn's conv bias
    # would be. nn.MultiheadAttention cannot drop it alone (bias=False drops every attention
    # bias); under Adam that noise moves it by ~lr·1e-10 per step, differently in each
    # framework (a replay gap of ~1e-9 on in_proj_bias[8:16] after 100 steps, nothing else).
    d, ff = d_model, d_ff
    shapes: dict[str, list[int]] = {"embed.weight": [d, 1], "embed.bias": [d]}
    packed = {}
    for p in encoder_prefixes(layers):
        shapes |= {
            f"{p}.self_attn.in_proj_weight": [3 * d, d],
            f"{p}.self_attn.in_proj_bias": [3 * d],
            f"{p}.self_attn.out_proj.weight": [d, d],
            f"{p}.self_attn.out_proj.bias": [d],
            f"{p}.linear1.weight": [ff, d],
            f"{p}.linear1.bias": [ff],
            f"{p}.linear2.weight": [d, ff],
            f"{p}.linear2.bias": [d],
            f"{p}.norm1.weight": [d],
            f"{p}.norm1.bias": [d],
            f"{p}.norm2.weight": [d],
            f"{p}.norm2.bias": [d],
        }
        packed |= {f"{p}.self_attn.in_proj_weight": 3, f"{p}.self_attn.in_proj_bias": 3}
    shapes |= {"fc.weight": [CLASSES, LENGTH * d], "fc.bias": [CLASSES]}
    return ModelSpec(
        name="transformer",
        size={"d_model": d_model, "heads": heads, "layers": layers, "d_ff": d_ff},
        param_names=tuple(shapes),
        buffer_names=(),
        # attn and ff are each sublayer with its residual connection (x + sublayer(x)): the
        # stages form a chain, each taking the previous one's output, on both sides.
        layers=("embed", *encoder_stage_names(layers), "fc"),
        state_shapes=shapes,
        formulas=lambda: formulas.transformer(shapes, encoder_prefixes(layers)),
        burn_parts=packed,
        hyperparameters={
            "enc.d_model": d_model,
            "enc.nhead": heads,
            "enc.dim_feedforward": d_ff,
            "enc.dropout": 0.0,
            "enc.norm_first": False,
            "enc.activation": "gelu",
            "enc.layer_norm_eps": 1e-5,
        },  # fmt: skip
    )


def _lenet(conv1: int, conv2: int, hidden: int) -> ModelSpec:
    # Conv2d(3×3, padding 1) keeps 8×8; MaxPool2d(2) → 4×4; Conv2d keeps 4×4; AvgPool2d(2) →
    # 2×2: fc1 takes conv2·2·2 values (channel-major, as flatten(1) lays them out).
    shapes = {
        "conv1.weight": [conv1, 1, 3, 3],
        "conv1.bias": [conv1],
        "conv2.weight": [conv2, conv1, 3, 3],
        "conv2.bias": [conv2],
        "fc1.weight": [hidden, conv2 * 4],
        "fc1.bias": [hidden],
        "fc2.weight": [digits.CLASSES, hidden],
        "fc2.bias": [digits.CLASSES],
    }
    return ModelSpec(
        name="lenet",
        size={"conv1": conv1, "conv2": conv2, "hidden": hidden},
        param_names=tuple(shapes),
        buffer_names=(),
        layers=("conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "fc1", "relu3", "fc2"),
        state_shapes=shapes,
        formulas=lambda: formulas.lenet(shapes),
        hyperparameters={
            "conv.kernel": 3,
            "conv.padding": 1,
            "pool1": "max",
            "pool2": "avg",
            "pool.kernel": 2,
            "pool.stride": 2,
        },  # fmt: skip
        sample=(1, digits.SIDE, digits.SIDE),
        classes=digits.CLASSES,
    )


def gpt_prefixes(layers: int) -> list[str]:
    """The name prefix of each block: `blocks.0`, `blocks.1`, …"""
    return [f"blocks.{i}" for i in range(layers)]


def _gpt(d_model: int, heads: int, layers: int, d_ff: int, context: int, vocab: int) -> ModelSpec:
    # A porter's PyTorch GPT: token and learned position embeddings, pre-norm blocks of
    # nn.MultiheadAttention (causal mask) and a GELU feed-forward, a final LayerNorm and a
    # Linear head. in_proj_weight/in_proj_bias pack the query, key and value projections as
    # the transformer's do; Burn holds them as three Linear layers.
    d, ff = d_model, d_ff
    shapes: dict[str, list[int]] = {"tok_emb.weight": [vocab, d], "pos_emb.weight": [context, d]}
    packed = {}
    for p in gpt_prefixes(layers):
        shapes |= {
            f"{p}.ln1.weight": [d],
            f"{p}.ln1.bias": [d],
            f"{p}.attn.in_proj_weight": [3 * d, d],
            f"{p}.attn.in_proj_bias": [3 * d],
            f"{p}.attn.out_proj.weight": [d, d],
            f"{p}.attn.out_proj.bias": [d],
            f"{p}.ln2.weight": [d],
            f"{p}.ln2.bias": [d],
            f"{p}.fc1.weight": [ff, d],
            f"{p}.fc1.bias": [ff],
            f"{p}.fc2.weight": [d, ff],
            f"{p}.fc2.bias": [d],
        }
        packed |= {f"{p}.attn.in_proj_weight": 3, f"{p}.attn.in_proj_bias": 3}
    shapes |= {
        "ln_f.weight": [d],
        "ln_f.bias": [d],
        "head.weight": [vocab, d],
        "head.bias": [vocab],
    }
    blocks = [f"{stage}.{i}" for i in range(layers) for stage in ("attn", "ff")]
    return ModelSpec(
        name="gpt",
        size={
            "d_model": d_model,
            "heads": heads,
            "layers": layers,
            "d_ff": d_ff,
            "context": context,
            "vocab": vocab,
        },  # fmt: skip
        param_names=tuple(shapes),
        buffer_names=(),
        # embed: token + position embeddings; attn.i: x + attn(ln1(x)); ff.i: x +
        # fc2(gelu(fc1(ln2(x)))); head: the logits of every position, [B·context, vocab].
        layers=("embed", *blocks, "ln_f", "head"),
        state_shapes=shapes,
        formulas=lambda: formulas.gpt(shapes, gpt_prefixes(layers)),
        burn_parts=packed,
        hyperparameters={
            "attn.heads": heads,
            "attn.dropout": 0.0,
            "attn.causal": True,
            "ln.eps": 1e-5,
            "gelu.approximate": "none",
        },  # fmt: skip
        sample=(context,),
        tokens=True,
        classes=vocab,
    )


BUILDERS: dict[str, Callable[..., ModelSpec]] = {
    "cnn1d": _cnn1d,
    "cnn_bn": _cnn_bn,
    "transformer": _transformer,
    "lenet": _lenet,
    "gpt": _gpt,
}


def size_problems(name: str, size: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) for each size value model ``name`` cannot be built with: an unknown
    key, a value that is not a positive integer, a kernel longer than the input, heads that
    do not divide d_model. Only the given keys are checked (the others take defaults)."""
    known = SIZES[name]
    problems = []
    for key, value in size.items():
        if key in DATA_KEYS and key in known:
            if value != known[key]:
                problems.append((key, f"set by the data ({DATA_KEYS[key]}: {known[key]})"))
        elif key not in known:
            close = closest_key(key, list(known))
            hint = f"; did you mean {close!r}?" if close else ""
            problems.append((key, f"unknown size key of {name} (known: {', '.join(known)}){hint}"))
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append((key, f"must be a positive integer, got {value!r}"))
    if problems:
        return problems
    full = known | dict(size)
    if "kernel" in full and full["kernel"] > LENGTH:
        problems.append(("kernel", f"{full['kernel']} is longer than the input ({LENGTH})"))
    if "heads" in full and full["d_model"] % full["heads"]:
        key = "heads" if "heads" in size else "d_model"
        problems.append((key, f"heads {full['heads']} does not divide d_model {full['d_model']}"))
    return problems


def full_size(name: str, size: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Every size key of model ``name``, the given values over the defaults; ModelError
    naming the first problem."""
    if name not in SIZES:
        raise ModelError(f"unknown model {name!r} (known: {', '.join(SIZES)})")
    size = dict(size or {})
    if problems := size_problems(name, size):
        key, message = problems[0]
        raise ModelError(f"model {name}: {key}: {message}")
    return SIZES[name] | size


@cache
def _spec(name: str, size: tuple[tuple[str, int], ...]) -> ModelSpec:
    return BUILDERS[name](**dict(size))


_PORT_SPECS: dict[str, ModelSpec] = {}


def port_spec(found: port.Port) -> ModelSpec:
    """A port's ModelSpec (models/port.py), read from its files once per process and
    settings."""
    key = json.dumps(found.as_config(), sort_keys=True)
    if key not in _PORT_SPECS:
        _PORT_SPECS[key] = ModelSpec(**port.spec_fields(found))
    return _PORT_SPECS[key]


def spec(name: str, size: Mapping[str, Any] | None = None) -> ModelSpec:
    """Model ``name`` at ``size`` (its defaults for the keys not given), or the port
    registered as ``name`` (models/port.py); ModelError naming the known models or the
    wrong size otherwise."""
    if name not in SIZES and (found := port.registered().get(name)) is not None:
        return port_spec(found)
    full = full_size(name, size)
    return _spec(name, tuple(full.items()))


SPECS = {name: spec(name) for name in SIZES}  # every model at its default size
CNN1D, CNN_BN, TRANSFORMER = SPECS["cnn1d"], SPECS["cnn_bn"], SPECS["transformer"]


def config_model(value: Any) -> tuple[str, dict[str, Any]]:
    """A config's `model` value as (name, the size keys it gives): a name, or a mapping with
    `name` and size keys. Absent (None) means the default model."""
    if value is None:
        return DEFAULT_MODEL, {}
    if isinstance(value, Mapping):
        return value.get("name"), {k: v for k, v in value.items() if k != "name"}
    return value, {}


def spec_of_config(value: Any) -> ModelSpec:
    """The model a config's `model` value names, at its size; a port's (models/port.py)."""
    if port.is_port(value):
        return port_spec(port.Port.of(value))
    return spec(*config_model(value))


def valid_spec(value: Any) -> ModelSpec | None:
    """The model a config's `model` value names, or None when it names none (the config
    check says why)."""
    try:
        if port.is_port(value):
            return spec_of_config(value)
        name, size = config_model(value)
        return spec(name, size) if isinstance(name, str) else None
    except (ModelError, TypeError, KeyError, ValueError):
        return None


def parse_tag(tag: str) -> ModelSpec:
    """The model a `model_tag` names; ModelError otherwise."""
    name, *parts = tag.split("-")
    size = {}
    for part in parts:
        match = re.fullmatch(r"([a-z_]+)(\d+)", part)
        if not match:
            raise ModelError(f"model tag {tag!r}: {part!r} is not a size key and value")
        size[match[1]] = int(match[2])
    return spec(name, size)


def model_of(block: dict[str, Any]) -> ModelSpec:
    """The model of a run file's experiment block (`meta.model` at `meta.model_size`; absent
    means cnn1d at its default size)."""
    meta = block.get("meta", {})
    return spec(meta.get("model", DEFAULT_MODEL), meta.get("model_size"))


def array_problem(
    model: str, declared: dict[str, list[int]], found: dict[str, list[int]], holder: str
) -> str | None:
    """What keeps a dataset's arrays from being exactly a module's parameters and buffers.

    declared: the module's {name: shape} (``holder`` names it, e.g. "the PyTorch module");
    found: the dataset's {name: shape} without x and y. None when they match exactly (names
    and shapes; order is not checked: each side loads by name).
    """
    for name, shape in declared.items():
        if name not in found:
            return (
                f"model {model}: the dataset has no array {name!r}"
                f" ({holder} needs it, shape {list(shape)})"
            )
        if list(found[name]) != list(shape):
            return (
                f"model {model}: array {name!r} has shape {list(found[name])} in the dataset,"
                f" {holder}'s is {list(shape)}"
            )
    for name in found:
        if name not in declared:
            return f"model {model}: the dataset holds {name!r}, which {holder} does not have"
    return None
