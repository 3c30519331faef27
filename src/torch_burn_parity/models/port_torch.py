"""The PyTorch side of your own port (models/port.py): your module imported by its path,
built with your keyword arguments, and its layer record taken by hooks on the submodules
you list — your module's own forward, nothing rewritten.

A layer's record is its output and the gradient of the loss with respect to its input, as
the built-in models' stages give them (models.recorded_forward): a forward hook keeps each
listed submodule's output (retain_grad), a forward pre-hook its input (the batch itself, a
leaf, for the first). The hooks add nothing to the computation, so every value and gradient
is the unrecorded step's.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from torch_burn_parity.models.model_specs import ModelError, ModelSpec


def import_class(module: str, path: str | None) -> type:
    """The class `module` names ("package.module:Class"); ModelError (one line) otherwise.

    Its top-level package or module is looked up in `path` (a folder, relative to the working
    directory) when that folder is not on sys.path, without adding it: the pipeline's jobs
    have it on PYTHONPATH already (register_ports), so that your module's own imports of its
    neighbours work there too."""
    where, _, name = module.partition(":")
    try:
        if path is not None and str(Path(path).resolve()) not in sys.path:
            _import_top_level(where.partition(".")[0], Path(path).resolve())
        found = getattr(importlib.import_module(where), name)
    except ImportError as exc:
        raise ModelError(f"torch.module {module}: cannot import {where} ({exc})") from None
    except AttributeError:
        raise ModelError(f"torch.module {module}: {where} has no {name}") from None
    if not (isinstance(found, type) and issubclass(found, nn.Module)):
        raise ModelError(f"torch.module {module}: not a torch.nn.Module subclass")
    return found


def _import_top_level(top: str, folder: Path) -> None:
    """Import package or module `top` from `folder` into sys.modules (its submodules then
    import through the package's own path)."""
    if top in sys.modules:
        return
    spec = importlib.machinery.PathFinder.find_spec(top, [str(folder)])
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {top!r} in {folder}")
    found = importlib.util.module_from_spec(spec)
    sys.modules[top] = found
    try:
        spec.loader.exec_module(found)
    except BaseException:
        del sys.modules[top]
        raise


def new(spec: ModelSpec) -> nn.Module:
    """The port's module, built with its keyword arguments; its layers checked to be
    submodules. The layers it records are kept on it as `parity_layers`."""
    port = spec.port
    cls = import_class(port.module, port.path)
    try:
        module = cls(**port.kwargs)
    except TypeError as exc:
        raise ModelError(f"torch.module {port.module}: {exc}") from None
    buffers = [n for n, _ in module.named_buffers() if not n.endswith("num_batches_tracked")]
    if buffers:
        raise ModelError(f"torch.module {port.module}: buffers ({', '.join(buffers)}) are not"
                         " supported for your own port yet: a module without running"
                         " statistics (e.g. LayerNorm rather than BatchNorm)")  # fmt: skip
    names = dict(module.named_modules())
    for layer in port.layers:
        if layer not in names:
            known = ", ".join(n for n in names if n) or "none"
            raise ModelError(f"layers: {layer!r} is not a submodule of {port.module} (its"
                             f" submodules: {known})")  # fmt: skip
    module.parity_layers = tuple(port.layers)
    return module


def check_input(model: nn.Module, x: torch.Tensor, y: torch.Tensor | None = None) -> None:
    """Refuse (ModelError, one line) data whose x the module cannot take: its forward on
    one sample, before any step; and float targets ``y`` (mse's) that are not one
    sample's output's shape."""
    mode = model.training
    try:
        with torch.no_grad():
            out = model.eval()(x[:1])
    except (RuntimeError, ValueError, IndexError, TypeError) as exc:
        reason = str(exc).splitlines()[0]
        raise ModelError(f"data: x {list(x.shape)} does not fit {type(model).__name__}'s"
                         f" input ({reason})") from None  # fmt: skip
    finally:
        model.train(mode)
    if out.dim() != 2:
        raise ModelError(f"{type(model).__name__}'s output is {list(out.shape)} on one sample;"
                         " the trainers take [rows, classes] (logits)")  # fmt: skip
    if y is not None and y.is_floating_point() and y[:1].numel() != out.numel():
        raise ModelError(f"data: y {list(y.shape)} (mse's targets) does not fit"
                         f" {type(model).__name__}'s output {list(out.shape)} on one"
                         " sample")  # fmt: skip


def is_port_module(model: nn.Module) -> bool:
    return hasattr(model, "parity_layers")


def layer_count(model: nn.Module) -> int:
    """How many layers the model records: a port's listed submodules, else its stages."""
    return len(model.parity_layers) if is_port_module(model) else len(list(model.stages()))


@contextmanager
def hooked(model: nn.Module, outputs: list, inputs: list):
    """Hooks on the listed submodules for one forward: each call's output and input in
    `outputs` and `inputs`, in the order the layers run."""
    handles = []

    def keep_input(_module: nn.Module, args: tuple) -> None:
        inputs.append(args[0])

    def keep_output(_module: nn.Module, _args: tuple, out: torch.Tensor) -> None:
        outputs.append(out)

    for name in model.parity_layers:
        sub = model.get_submodule(name)
        handles.append(sub.register_forward_pre_hook(keep_input))
        handles.append(sub.register_forward_hook(keep_output))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def hooked_forward(
    model: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, list[str], list[torch.Tensor], list[torch.Tensor]]:
    """A port's forward on batch ``x`` (already a leaf, or token ids), its listed layers
    seen by hooks: (output, layer names, each layer's output, each layer's input), every
    input but the batch keeping its .grad (models.recorded_forward records them)."""
    names = list(model.parity_layers)
    outputs: list[torch.Tensor] = []
    inputs: list[torch.Tensor] = []
    with hooked(model, outputs, inputs):
        out = model(x)
    if len(outputs) != len(names):
        raise ModelError(f"layers: the forward called {len(outputs)} of the listed layers"
                         f" {names} (each must run once per forward)")  # fmt: skip
    for t in inputs:
        if t is not x and t.requires_grad:
            t.retain_grad()
    return out, names, outputs, inputs
