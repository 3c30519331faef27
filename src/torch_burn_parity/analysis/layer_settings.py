"""The layers' settings that differ between the two runs, and the PyTorch module given
Burn's: the counterfactual for the model, as replay.py's chain is for the optimizer.

Both runs record each layer's settings in PyTorch's terms under PyTorch's layer name
(`meta.layer_hyperparameters`: `norm.eps`, `act.approximate`, `bn.momentum`; PyTorch's
read from the module by models/port_torch.py `layer_settings` or a built-in model's module,
Burn's from its module's display by rust/src/port/settings.rs or a built-in model's code).
Those a module reads at every forward, and which can be set on it without changing its
shapes — a norm's epsilon, BatchNorm's momentum, GELU's form, and the form a backend's GELU
backward differentiates (burn_gelu.py: NdArray's, which no setting reaches) — are
*applicable*: replay.py
runs PyTorch's model with Burn's value of each, one at a time, and the distance each adds
to PyTorch's run is that setting's share. A setting that changes the shapes (a bias, a
stride, a padding) is shown in the config diff and not measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch-free: the verdict reads the keys, only the replay applies them
    from torch import nn

# The applicable settings, by the last segment of their key.
APPLICABLE = ("eps", "momentum", "approximate", "backward", "sqrt_d_k")


def applicable(key: str) -> bool:
    """Whether a recorded layer setting (`norm.eps`) can be given to the PyTorch module."""
    layer, _, setting = key.rpartition(".")
    return bool(layer) and setting in APPLICABLE


def differing(torch_held: dict[str, Any], burn_held: dict[str, Any]) -> dict[str, Any]:
    """Burn's value of each applicable setting both runs record with different values, in
    PyTorch's order: {key: Burn's value}."""
    return {
        key: burn_held[key]
        for key, value in torch_held.items()
        if applicable(key) and key in burn_held and burn_held[key] != value
    }


def apply(module: nn.Module, settings: dict[str, Any]) -> None:
    """Give the module's layers these settings ({`layer.setting`: value}), in place: an
    epsilon as the layer holds it (`eps`, or `variance_epsilon` for Hugging Face's
    RMSNorms), a momentum, GELU's `approximate` (a library's own GELU module replaced by
    nn.GELU of that form), an exact GELU's `backward` (the form its derivative is of: the
    module replaced by burn_gelu.BurnGelu; both runs record `backward` for an exact GELU
    only, so it differs only where `approximate` does not), attention's `sqrt_d_k` (the
    square root its scores are divided by: burn_attention.py)."""
    for key, value in settings.items():
        name, _, setting = key.rpartition(".")
        for layer_name in _named(module, name):
            _apply_one(module, layer_name, setting, value)


def _named(module: nn.Module, name: str) -> list[str]:
    """The submodule `name`, or (a built-in model's key for each block's layer: gpt's
    `gelu`) every submodule whose last name it is."""
    names = [n for n, _ in module.named_modules()]
    if name in names:
        return [name]
    last = "." + name.rpartition(".")[2]  # transformer's `enc.self_attn`: each layer's
    return [n for n in names if n.endswith("." + name) or n.endswith(last)] or [name]


def _apply_one(module: nn.Module, name: str, setting: str, value: Any) -> None:
    layer = module.get_submodule(name)
    if setting == "backward":  # the backend's GELU derivative (burn_gelu.py), in its place
        from torch_burn_parity.analysis.burn_gelu import BurnGelu

        parent, _, child = name.rpartition(".")
        setattr(module.get_submodule(parent), child, BurnGelu(value))
        return
    if setting == "sqrt_d_k":  # Burn's f32 square root (burn_attention.py), by hooks
        from torch_burn_parity.analysis.burn_attention import divide_scores_by

        divide_scores_by(layer, value)
    elif setting == "eps" and hasattr(layer, "variance_epsilon"):
        layer.variance_epsilon = value
    elif setting == "approximate" and not hasattr(layer, setting):
        # a library's own GELU module (transformers' NewGELUActivation): in its place,
        # PyTorch's GELU of that form
        from torch import nn

        parent, _, child = name.rpartition(".")
        setattr(module.get_submodule(parent), child, nn.GELU(approximate=value))
    elif hasattr(layer, setting):
        setattr(layer, setting, value)
    else:
        raise AttributeError(f"{type(layer).__name__} {name} has no setting {setting!r}")


def cause(key: str, torch_value: Any, burn_value: Any) -> str:
    """'the layer setting norm.eps (torch 0.001, burn 1e-05)'."""
    return f"the layer setting {key} (torch {torch_value}, burn {burn_value})"
