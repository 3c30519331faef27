"""Muon's update as each framework computes it, on f64 PyTorch tensors, for the replay.

PyTorch 2.15 (torch/optim/_muon.py `_single_tensor_muon`): the momentum buffer is an average,
`buf.lerp_(g, 1 − μ)`; the update `g.lerp(buf, μ)` (Nesterov) or `buf`; orthogonalised by
`_zeropower_via_newtonschulz` in bfloat16 whatever the parameter's dtype; then
`p ·= 1 − lr·wd` and `p += −lr·ratio(shape)·update`, with the shape PyTorch holds ([out, in]
for a Linear weight). Replayed here by PyTorch's own functions, in its order.

Burn 0.22.1 (burn-optim muon.rs, momentum.rs): the momentum is a sum, `v = μ·v + g` (the
first v is g), the update `μ·v + g` (Nesterov) or v; Newton–Schulz in the tensor's dtype on
each tensor Burn holds (a packed parameter is several; a Linear weight is [in, out]), the
coefficients and ε f32 values; `p · (1 − lr·wd)` only with a weight decay, then
`p − update·lr·ratio(Burn's shape)`.

The two momentum forms are a factor (1 − μ) apart and Newton–Schulz starts by dividing by the
Frobenius norm, so they give the same direction up to rounding — which bfloat16 makes large.
"""

from __future__ import annotations

import torch
from torch.optim._muon import _zeropower_via_newtonschulz

from torch_burn_parity.optimizers.muon import ratio


def burn_newton_schulz(x: torch.Tensor, hp: dict) -> torch.Tensor:
    """Burn's `zeropower_via_newtonschulz` in x's dtype (muon.rs): the wide orientation,
    x / max(‖x‖_F, ε), then `steps` times A = x·xᵀ, B = b·A + c·A², x = a·x + B·x."""
    a, b, c = hp["ns_coefficients"]
    transpose = x.shape[0] > x.shape[1]
    if transpose:
        x = x.T
    x = x / x.pow(2.0).sum().sqrt().clamp(min=hp["eps"])
    for _ in range(hp["ns_steps"]):
        gram = x @ x.T
        x = x * a + (gram * b + (gram @ gram) * c) @ x
    return x.T if transpose else x


class MuonUpdate:
    """Muon's update of one parameter, each choice from one framework or the other.

    newton_schulz "torch": PyTorch's average momentum and bfloat16 orthogonalisation of the
    whole parameter; "burn": Burn's summed momentum and orthogonalisation in the tensor's
    dtype of each tensor Burn holds. shapes "torch" / "burn": whose shape the lr adjustment
    reads. burn_shapes: the Burn run's `meta.burn_shapes` (each part's shape in Burn's
    layout), for Burn's choices. lr_scales: the Burn run's `meta.lr_scales` (a trainer that
    gives each Muon tensor its own lr, rust/src/by_hand.rs): with Burn's shapes, the lr each
    parameter steps and decays with is scaled by its first tensor's.
    """

    def __init__(
        self, hp: dict, newton_schulz: str, shapes: str, burn_shapes: dict,
        lr_scales: dict | None = None,
    ) -> None:  # fmt: skip
        self.hp, self.newton_schulz, self.shapes = hp, newton_schulz, shapes
        self.burn_shapes, self.lr_scales = burn_shapes, lr_scales or {}

    def factor(self, name: str, p: torch.Tensor) -> float:
        shape = self.burn_shapes[name][0] if self.shapes == "burn" else list(p.shape)
        return ratio(self.hp["adjust_lr_fn"], shape)

    def direction(self, s: dict, name: str, g: torch.Tensor) -> torch.Tensor:
        hp, mu = self.hp, self.hp["momentum"]
        if self.newton_schulz == "torch":
            if "buf" not in s:
                s["buf"] = torch.zeros_like(g)
            s["buf"].lerp_(g, 1 - mu)
            update = g.lerp(s["buf"], mu) if hp["nesterov"] else s["buf"]
            coefficients = tuple(hp["ns_coefficients"])
            return _zeropower_via_newtonschulz(update, coefficients, hp["ns_steps"], hp["eps"])
        s["v"] = g if "v" not in s else g * 1.0 + s["v"] * mu  # momentum.rs, dampening 0
        update = s["v"] * mu + g if hp["nesterov"] else s["v"]
        shapes = self.burn_shapes[name]
        out = []
        for block, shape in zip(update.chunk(len(shapes), dim=0), shapes, strict=True):
            transposed = list(block.shape) != shape
            held = block.T if transposed else block  # in Burn's layout
            done = burn_newton_schulz(held, hp)
            out.append(done.T if transposed else done)
        return torch.cat(out, dim=0)

    def step(self, s: dict, name: str, p: torch.Tensor, g: torch.Tensor, lr: float):
        update = self.direction(s, name, g)
        if self.shapes == "burn" and name in self.lr_scales:
            lr = lr * self.lr_scales[name][0]
        adjusted = lr * self.factor(name, p)
        wd = self.hp["weight_decay"]
        if self.newton_schulz == "torch":  # PyTorch's in-place order
            p.mul_(1 - lr * wd)
            return p.add_(update, alpha=-adjusted)
        decayed = p * (1.0 - lr * wd) if wd else p
        return decayed - update * adjusted
