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

import difflib
import importlib
import importlib.machinery
import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torch_burn_parity.models.layer_names import expand, is_glob, nearest
from torch_burn_parity.models.model_specs import ModelError, ModelSpec


def import_class(module: str, path: str | None) -> type:
    """The class or factory function `module` names ("package.module:Class",
    "torchvision.models:resnet18"); ModelError (one line) otherwise.

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
    # A class, or a factory function as libraries hand their models out
    # (torchvision.models:resnet18): what it builds is checked in `new`.
    if isinstance(found, type) and not issubclass(found, nn.Module):
        raise ModelError(f"torch.module {module}: not a torch.nn.Module subclass")
    if not callable(found):
        raise ModelError(f"torch.module {module}: neither a torch.nn.Module class nor a function")
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
    """The port's module, built with its keyword arguments; its `layers` (dotted names or
    globs, models/layer_names.py) expanded to its submodules, each pattern matching one at
    least. The layers it records are kept on it as `parity_layers`, in its own order."""
    port = spec.port
    cls = import_class(port.module, port.path)
    try:
        module = cls(_config(port)) if port.config is not None else cls(**port.kwargs)
    except TypeError as exc:
        raise ModelError(f"torch.module {port.module}: {exc}") from None
    if not isinstance(module, nn.Module):
        raise ModelError(f"torch.module {port.module}: built a {type(module).__name__}, not a"
                         " torch.nn.Module")  # fmt: skip
    module.register_forward_hook(_logits)
    _check_state(module, spec)
    names = [n for n, _ in module.named_modules() if n]
    layers, unmatched = expand(port.layers, names)
    if unmatched is not None:
        what = "glob" if is_glob(unmatched) else "name"
        close = ", ".join(nearest(unmatched, names)) or "none: it has no submodule"
        raise ModelError(f"layers: the {what} {unmatched!r} matches no submodule of"
                         f" {port.module} at any depth (nearest: {close})")  # fmt: skip
    module.parity_layers = tuple(layers)
    return module


def _config(port: Any) -> Any:
    """The config object `torch.config` names, built with the port's kwargs (a library's
    model class takes one: transformers' `GPT2LMHeadModel(GPT2Config(...))`). A keyword its
    default instance does not hold is refused: transformers' configs keep any keyword as an
    attribute, so a misspelt one would be silently ignored."""
    where, _, name = port.config.partition(":")
    try:
        cls = getattr(importlib.import_module(where), name)
    except ImportError as exc:
        raise ModelError(f"torch.config {port.config}: cannot import {where} ({exc})") from None
    except AttributeError:
        raise ModelError(f"torch.config {port.config}: {where} has no {name}") from None
    try:
        known = vars(cls())
        config = cls(**port.kwargs)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"torch.config {port.config}: {exc}") from None
    for key in port.kwargs:
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ModelError(f"torch.kwargs.{key}: not a setting of {port.config}{hint}")
    return config


def _logits(_module: nn.Module, _args: tuple, out: Any) -> torch.Tensor:
    """The module's output as the trainers take it, [rows, classes]: a library's output
    object's `logits` (transformers' `CausalLMOutput…`) or a tuple's first element, and a
    prediction at each position, [samples, positions, classes], as one row per position
    (the order of the labels y [samples, positions] flattened). A forward hook: the
    module's own forward runs unchanged, and a copy of the module keeps it."""
    if not isinstance(out, torch.Tensor):
        out = getattr(out, "logits", None) if hasattr(out, "logits") else out
        if isinstance(out, tuple) and out:
            out = out[0]
    if isinstance(out, torch.Tensor) and out.dim() == 3:
        out = out.reshape(-1, out.shape[-1])
    return out


def _check_state(module: nn.Module, spec: ModelSpec) -> None:
    """Refuse (ModelError, one line) a module whose state the weights file does not hold as
    the spec reads it (models/port.py): each persistent buffer a BatchNorm's running
    statistic with a momentum set (Burn's BatchNorm has no cumulative average), each one and
    each parameter in the file, nothing else in it."""
    port = spec.port
    kept = set(module.state_dict(keep_vars=True))
    norms = {name: layer for name, layer in module.named_modules() if isinstance(layer, _NORM)}
    for name, _ in module.named_buffers():
        layer, _, stat = name.rpartition(".")
        if name not in kept or stat == "num_batches_tracked":
            continue
        if layer not in norms or stat not in ("running_mean", "running_var"):
            raise ModelError(f"torch.module {port.module}: buffer {name!r} is not a BatchNorm's"
                             " running statistic: the only buffers a port can carry are"
                             " running_mean and running_var (register others with"
                             " persistent=False if the module rebuilds them)")  # fmt: skip
        if norms[layer].momentum is None:
            raise ModelError(f"torch.module {port.module}: {layer} has momentum=None (a"
                             " cumulative average of the batch statistics); Burn's BatchNorm"
                             " has only the exponential one: set a momentum")  # fmt: skip
    module_names = [n for n, _ in module.named_parameters()] + [
        n for n, _ in module.named_buffers() if n in kept and not n.endswith("num_batches_tracked")
    ]
    for name in module_names:
        if name not in spec.state_shapes:
            what = "buffer" if name not in dict(module.named_parameters()) else "parameter"
            raise ModelError(f"init: {port.init} has no {name!r}, a {what} of {port.module}"
                             " (save the module's state_dict(), which holds its running"
                             " statistics too)")  # fmt: skip
    aliases = _tied(module)
    for name in spec.state_names:
        if name in aliases:
            raise ModelError(f"init: {port.init} holds {name!r}, which {port.module} ties to"
                             f" {aliases[name]!r} (one parameter, two names): save it once, as"
                             " named_parameters() names it")  # fmt: skip
        if name not in module_names:
            raise ModelError(f"init: {port.init} holds {name!r}, which {port.module} does not"
                             " have")  # fmt: skip


_NORM = nn.modules.batchnorm._BatchNorm
# transformers/activations.py's GELU modules, by class name, as nn.GELU's `approximate`:
# NewGELUActivation (GPT-2's `gelu_new`) and GELUTanh compute the tanh approximation,
# GELUActivation calls nn.functional.gelu (erf).
GELU_FORMS = {"NewGELUActivation": "tanh", "GELUTanh": "tanh", "PytorchGELUTanh": "tanh",
              "GELUActivation": "none"}  # fmt: skip


def _tied(module: nn.Module) -> dict[str, str]:
    """Each second name of a parameter the module holds under two (a language model's
    output layer tied to its embedding: GPT-2's lm_head.weight), to the name
    named_parameters() gives it."""
    first = {id(p): n for n, p in module.named_parameters()}
    return {n: first[id(p)] for n, p in module.named_parameters(remove_duplicate=False)
            if first[id(p)] != n}  # fmt: skip


def layer_settings(model: nn.Module) -> dict[str, Any]:
    """Each layer's settings as the module holds them, by its name, in the terms the Burn
    side records its own (rust/src/port/settings.rs): Linear's `bias`; a convolution's
    `stride`, `dilation`, `groups`, `padding` (a list per dimension, or "same"); a norm's
    `eps` (BatchNorm's `momentum`, and the variance its running variance is updated with:
    PyTorch's documented one, unbiased); LayerNorm's `bias`; GELU's `approximate`;
    dropout's `p`."""
    settings: dict[str, Any] = {}
    for name, layer in model.named_modules():
        if name:
            settings |= {f"{name}.{k}": v for k, v in _settings_of(layer).items()}
    return settings


def _settings_of(layer: nn.Module) -> dict[str, Any]:
    if isinstance(layer, nn.Linear) or type(layer).__name__ == "Conv1D":
        # transformers' Conv1D (GPT-2's projections) is a Linear holding its weight [in, out]
        return {"bias": getattr(layer, "bias", None) is not None}
    if isinstance(layer, nn.Conv1d | nn.Conv2d):
        dims = 1 if isinstance(layer, nn.Conv1d) else 2
        padding = layer.padding
        if padding == "valid":
            padding = (0,) * dims
        return {"stride": list(layer.stride), "dilation": list(layer.dilation),
                "groups": layer.groups,
                "padding": padding if isinstance(padding, str) else list(padding)}  # fmt: skip
    if isinstance(layer, _NORM) and layer.track_running_stats:
        return {"eps": layer.eps, "momentum": layer.momentum, "running_var_estimator": "unbiased"}
    if isinstance(layer, nn.LayerNorm):
        return {"eps": layer.eps, "bias": layer.bias is not None}
    if isinstance(layer, nn.RMSNorm) or type(layer).__name__.endswith("RMSNorm"):
        eps = getattr(layer, "variance_epsilon", getattr(layer, "eps", None))
        if eps is None:  # nn.RMSNorm's default: the machine epsilon of the input's dtype
            eps = torch.finfo(next(layer.parameters()).dtype).eps
        return {"eps": eps}
    if isinstance(layer, nn.GELU):
        return {"approximate": layer.approximate}
    if type(layer).__name__ in GELU_FORMS:  # a library's own GELU module (transformers')
        return {"approximate": GELU_FORMS[type(layer).__name__]}
    if isinstance(layer, nn.Dropout):
        return {"p": layer.p}
    return {}


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
    if not isinstance(out, torch.Tensor):
        raise ModelError(f"{type(model).__name__}'s output is a {type(out).__name__}, with no"
                         " logits: the trainers take a tensor [rows, classes], an output"
                         " object's `logits` or a tuple's first element")  # fmt: skip
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
def hooked(model: nn.Module, outputs: list, inputs: list, called: list):
    """Hooks on the listed submodules for one forward: each call's output, input and name
    in `outputs`, `inputs` and `called`, in the order the layers run (which may differ from
    the module's own order, that of `parity_layers`). A layer's input is its first tensor
    argument, positional or keyword; its output, or a tuple's first element (a transformer
    block's, an attention's)."""
    handles = []

    def keep_input(module: nn.Module, args: tuple, kwargs: dict) -> None:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if not tensors:
            raise ModelError(f"layers: {names[module]!r} is called without a tensor argument:"
                             " PyTorch's forward pre-hook sees no input to record"
                             " (record its parent or child instead)")  # fmt: skip
        inputs.append(tensors[0])
        seen.append((names[module], "input", tensors[0], tensors[0]._version))

    def keep_output(module: nn.Module, _args: tuple, out) -> None:
        if isinstance(out, tuple) and out and isinstance(out[0], torch.Tensor):
            out = out[0]
        if not isinstance(out, torch.Tensor):
            raise ModelError(f"layers: {names[module]!r} returns {type(out).__name__}, not a"
                             " tensor: its output cannot be recorded")  # fmt: skip
        outputs.append(out)
        called.append(names[module])
        seen.append((names[module], "output", out, out._version))

    names = {model.get_submodule(name): name for name in model.parity_layers}
    seen: list[tuple[str, str, torch.Tensor, int]] = []
    for sub in names:
        handles.append(sub.register_forward_pre_hook(keep_input, with_kwargs=True))
        handles.append(sub.register_forward_hook(keep_output))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
    # A value changed in place after its hook saw it (a ReLU(inplace=True) after the layer,
    # or the layer on its own input) would be recorded as it is at the end, not as the
    # layer took or gave it: refused, as a wrong record would be worse than none.
    for name, what, tensor, version in seen:
        if tensor._version != version:
            raise ModelError(f"layers: {name!r}'s {what} is changed in place later in the"
                             " forward (an in-place operation such as ReLU(inplace=True)):"
                             " its recorded value would not be the one the layer"
                             f" {'took' if what == 'input' else 'gave'}; record the layer"
                             " around it instead")  # fmt: skip


def hooked_forward(
    model: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, list[str], list[torch.Tensor], list[torch.Tensor]]:
    """A port's forward on batch ``x`` (already a leaf, or token ids), its listed layers
    seen by hooks: (output, layer names in the order they ran, each layer's output, each
    layer's input), every input but the batch and every output keeping its .grad
    (models.recorded_forward records them)."""
    outputs: list[torch.Tensor] = []
    inputs: list[torch.Tensor] = []
    called: list[str] = []
    with hooked(model, outputs, inputs, called):
        out = model(x)
    if sorted(called) != sorted(model.parity_layers):
        runs = {n: called.count(n) for n in model.parity_layers if called.count(n) != 1}
        shown = ", ".join(f"{n} {k}×" for n, k in runs.items())
        raise ModelError(f"layers: each listed layer must run once per forward; here {shown}")
    for t in inputs:
        if t is not x and t.requires_grad:
            t.retain_grad()
    for t in outputs:  # the gradient at each layer's output: the Burn side's local mode
        if t.requires_grad:
            t.retain_grad()
    return out, called, outputs, inputs
