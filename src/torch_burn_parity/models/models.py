"""The PyTorch models by name: build one from a dataset file's arrays, record its layers.

    model = build("cnn_bn", arrays, torch.float64)
    model = build("transformer", arrays, torch.float64, {"d_model": 64, "layers": 2})

The registry maps a model's name to its module (model_cnn1d.py, model_cnn_bn.py,
model_transformer.py), each of which declares SPEC (its model_specs.ModelSpec at the default
size), new(spec) (the torch.nn.Module at that spec's size, with its layer hyperparameters
passed explicitly; its stages() are the
layers in SPEC.layers order, each taking the previous one's output, and its forward runs
them), model_size(module) and layer_hyperparameters(module) (both read back from it).
Their names, shapes and initial values live in the torch-free model_specs.py, which the
scripts that need no torch import instead.

Both the trainer (train_torch.py) and the replay (replay.py) take their model from here.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
from torch import nn

from torch_burn_parity.models import (
    model_cnn1d,
    model_cnn_bn,
    model_gpt,
    model_lenet,
    model_transformer,
    port_torch,
)
from torch_burn_parity.models.losses import DEFAULT_LOSS
from torch_burn_parity.models.model_specs import ModelError, array_problem, spec

MODELS: dict[str, ModuleType] = {
    m.SPEC.name: m for m in (model_cnn1d, model_cnn_bn, model_transformer, model_lenet, model_gpt)
}

Arrays = dict[str, tuple[list[int], list]]


def module_of(name: str) -> ModuleType:
    """The model module called ``name``; ModelError naming the known ones otherwise."""
    if name not in MODELS:
        raise ModelError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    return MODELS[name]


def state(module: nn.Module) -> dict[str, torch.Tensor]:
    """The module's parameters, then its buffers, by PyTorch name, in the module's order.

    The buffers are those its state_dict() holds: a buffer registered with persistent=False
    (a causal mask, rotary frequencies) is rebuilt by the module, not state. num_batches_tracked
    is left out: Burn has no such buffer, and with a momentum set PyTorch does not use it.
    """
    tensors = dict(module.named_parameters())
    persistent = set(module.state_dict(keep_vars=True))
    for name, buffer in module.named_buffers():
        if name in persistent and not name.endswith("num_batches_tracked"):
            tensors[name] = buffer
    return tensors


def build(
    name: str, arrays: Arrays, dtype: torch.dtype, size: dict[str, int] | None = None
) -> nn.Module:
    """Model ``name`` at ``size`` (its default size for keys not given) in ``dtype``, its
    parameters and buffers loaded from a dataset's arrays.

    Refused (ModelError, one line naming the model and the array) unless the arrays other
    than x and y are exactly the module's parameters and buffers, with the same shapes. The
    f32 values are widened exactly to dtype: the same start for both precisions.
    """
    declared_spec = spec(name, size)
    if declared_spec.port is not None:  # your own module (models/port_torch.py)
        model = port_torch.new(declared_spec).to(dtype)
    else:
        model = module_of(name).new(declared_spec).to(dtype)
    tensors = state(model)
    declared = {key: list(t.shape) for key, t in tensors.items()}
    found = {key: shape for key, (shape, _) in arrays.items() if key not in ("x", "y")}
    if problem := array_problem(name, declared, found, "the PyTorch module"):
        raise ModelError(problem)
    with torch.no_grad():
        for key, tensor in tensors.items():
            shape, values = arrays[key]
            tensor.copy_(torch.as_tensor(values, dtype=torch.float32).reshape(shape).to(dtype))
    if declared_spec.port is not None:
        port_torch.check_input(model, *inputs(arrays, dtype))
    return model


def inputs(arrays: Arrays, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The dataset's inputs, f32 values widened exactly to dtype or integer token ids as
    they are, and its targets: integer labels ([N], or [N, positions] for a label per
    position), or f32 values widened exactly to dtype (an F32 ``y``: mse's targets)."""

    def tensor(shape: list[int], values: list) -> torch.Tensor:
        if values and isinstance(values[0], int):  # token ids, labels
            return torch.tensor(values, dtype=torch.int64).reshape(shape)
        return torch.tensor(values, dtype=torch.float32).reshape(shape).to(dtype)

    return tensor(*arrays["x"]), tensor(*arrays["y"])


def loss(
    out: torch.Tensor, y: torch.Tensor, label_smoothing: float = 0.0, kind: str = DEFAULT_LOSS
) -> torch.Tensor:
    """The loss of ``out`` [rows, outputs] against ``y``, the mean over every row.

    cross_entropy: a row is a sample's, or a position's of a model that predicts at each
    (its labels ``y`` flattened to match); PyTorch's label smoothing is (1 − ε)·(−log p_y)
    + ε·mean over classes of (−log p_c). mse: mean over every element of (out − y)², ``y``
    [N, outputs] (or [N] for one output) reshaped to ``out``'s shape."""
    if kind == "mse":
        return nn.functional.mse_loss(out, y.reshape(out.shape))
    return nn.functional.cross_entropy(out, y.reshape(-1), label_smoothing=label_smoothing)


def model_size(name: str, model: nn.Module) -> dict[str, int]:
    """The model's size keys as the module holds them ({} for a port: it has none)."""
    return {} if port_torch.is_port_module(model) else module_of(name).model_size(model)


def layer_hyperparameters(name: str, model: nn.Module) -> dict[str, Any]:
    """The model's layer hyperparameters as the module holds them ({} for cnn1d); for a
    port, every known layer's settings (port_torch.layer_settings). Each exact GELU's
    `{layer}.backward` follows its `approximate`: autograd differentiates the erf GELU
    exactly (the Burn run records its backend's, rust/src/config.rs `gelu_backward`)."""
    if port_torch.is_port_module(model):
        found = port_torch.layer_settings(model)
    else:
        found = module_of(name).layer_hyperparameters(model)
    settings: dict[str, Any] = {}
    for key, value in found.items():
        settings[key] = value
        if key.endswith(".approximate") and value == "none":
            settings[key.removesuffix("approximate") + "backward"] = "none"
    return settings


def flat(t: torch.Tensor) -> list[float]:
    return t.detach().flatten().tolist()


def recorded_forward(
    model: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, Callable[[int], dict[str, Any]]]:
    """The model's output on batch x, and a function that, after backward, returns the
    layer record of that step: each layer's output and dLoss/d(its input); for a port also
    each layer's input and dLoss/d(its output), which are not the neighbours' where its
    layers do not run one after the other (a residual, a branch).

    Nothing is added to the computation: the batch is a leaf that requires grad and each
    layer's output (the next one's input) keeps its .grad (retain_grad), so every value
    and every parameter gradient is what an unrecorded step computes. A batch of token ids
    has no gradient: the first layer's input gradient is then recorded as empty.
    """
    tokens = not torch.is_floating_point(x)
    x = x.detach() if tokens else x.detach().requires_grad_()
    port = port_torch.is_port_module(model)
    if port:  # your own module: its layers seen by hooks
        h, names, outputs, layer_inputs = port_torch.hooked_forward(model, x)
    else:
        names, outputs, layer_inputs = [], [], [x]
        h = x
        for name, stage in model.stages():
            h = stage(h)
            names.append(name)
            outputs.append(h)
            layer_inputs.append(h)
        layer_inputs.pop()  # the model's output is no layer's input
        for t in layer_inputs[1:]:
            t.retain_grad()

    def grad(t: torch.Tensor | None) -> list[float]:  # none: a value no loss depends on
        return [] if t is None or t.grad is None else flat(t.grad)

    def record(step: int) -> dict[str, Any]:
        found = {
            "step": step,
            "names": names,
            "outputs": [flat(o) for o in outputs],
            "input_grads": [
                [] if tokens and k == 0 else grad(t) for k, t in enumerate(layer_inputs)
            ],
        }
        if port:  # each layer's own input and output gradient: what Burn's local mode takes
            found["inputs"] = [[] if tokens and k == 0 else flat(t)
                               for k, t in enumerate(layer_inputs)]  # fmt: skip
            found["output_grads"] = [grad(o) for o in outputs]
        return found

    return h, record


def running_stat_layers(model: nn.Module) -> dict[str, nn.modules.batchnorm._BatchNorm]:
    """The layers that keep running statistics, by name ({} for cnn1d)."""
    return {
        name: layer
        for name, layer in model.named_modules()
        if isinstance(layer, nn.modules.batchnorm._BatchNorm) and layer.track_running_stats
    }
