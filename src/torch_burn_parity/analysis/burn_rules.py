"""Burn 0.22's update rule of each optimizer, on f64 PyTorch tensors, with the scalars it is
given: what the replay (replay.py) runs in place of PyTorch's optimizer.

Each rule follows burn-optim 0.22.1 (sgd.rs, momentum.rs, adam.rs, adamw.rs, adagrad.rs,
rmsprop.rs, decay.rs), cited line by line (Muon's, and PyTorch's beside it: muon_rules.py);
the per-step factors Burn evaluates in f32 come either from Burn's run (recorded) or from the
same formula in f64.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from torch_burn_parity.analysis.muon_rules import MuonUpdate
from torch_burn_parity.io.parity_io import FormatError

Factors = Callable[[int], tuple[float, float]]


def f32(x: float) -> float:
    return float(np.float32(x))


def f32_complement(x: float) -> float:
    """`1.0 - x` with x an f32 field: an f32 subtraction (exact for 0.5 ≤ x ≤ 1, Sterbenz)."""
    return f32(np.float32(1) - np.float32(x))


class BurnUpdate:
    """Burn 0.22's update of one optimizer on f64 tensors, with the given scalar values.

    factors(t): the per-step scalars Burn evaluates — Adam: (combined_factor,
    epsilon·bias_correction2_sqrt); AdamW: (1 − β₁^t, 1 − β₂^t). Unused by the others.
    f32_one_minus: compute 1 − β₁, 1 − β₂ (Adam, AdamW) and 1 − α (RMSProp) in f32, as Burn
    does with its f32 fields.
    """

    def __init__(
        self,
        optimizer: str,
        hp: dict,
        factors: Factors | None = None,
        f32_one_minus=False,
        muon: MuonUpdate | None = None,
    ) -> None:
        self.optimizer, self.hp, self.factors = optimizer, hp, factors
        self.state: dict[str, dict] = {}
        self.muon = muon
        one_minus = f32_complement if f32_one_minus else (lambda b: 1.0 - b)
        if optimizer in ("adam", "adamw"):
            # Burn's `1.0 - self.beta_1` is an f32 subtraction of f32 values (exact for
            # 0.5 ≤ β ≤ 1 by Sterbenz's lemma, but done the same way here regardless).
            self.one_minus = tuple(one_minus(b) for b in hp["betas"])
        elif optimizer == "rmsprop":
            self.one_minus_alpha = one_minus(hp["alpha"])  # rmsprop.rs:168, :172, :212
        rules = {"sgd": self._sgd, "adam": self._adam, "adamw": self._adamw,
                 "adagrad": self._adagrad, "rmsprop": self._rmsprop}  # fmt: skip
        if optimizer == "muon" and muon is None:
            raise FormatError("Muon's replay needs its choices (muon_rules.MuonUpdate)")
        if optimizer not in rules and optimizer != "muon":
            raise FormatError(f"no replay of Burn's '{optimizer}' optimizer")
        self._step = rules.get(optimizer)

    def step(self, name: str, p: torch.Tensor, g: torch.Tensor, t: int, lr: float) -> torch.Tensor:
        """The parameter after step t (1-based) with learning rate lr."""
        if self.muon is not None:
            return self.muon.step(self.state.setdefault(name, {}), name, p, g, lr)
        return self._step(self.state.setdefault(name, {}), p, g, t, lr)

    def _l2(self, p: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        if self.hp["weight_decay"]:
            return p * self.hp["weight_decay"] + g  # decay.rs: L2 penalty added to the gradient
        return g

    def _moments(self, s: dict, g: torch.Tensor) -> torch.Tensor:
        """Adam's and AdamW's moments (adam.rs / adamw.rs transform); the v the step uses."""
        b1, b2 = self.hp["betas"]
        a1, a2 = self.one_minus
        if "m" not in s:  # first step: moments start from the gradient
            s["m"], s["v"] = g * a1, g.square() * a2
            if self.hp.get("amsgrad"):
                s["v_max"] = s["v"]
        else:
            s["m"], s["v"] = s["m"] * b1 + g * a1, s["v"] * b2 + g.square() * a2
            if self.hp.get("amsgrad"):  # the max over the raw second moments
                s["v_max"] = torch.maximum(s["v_max"], s["v"])
        return s["v_max"] if self.hp.get("amsgrad") else s["v"]

    def _adam(self, s: dict, p, g, t: int, lr: float) -> torch.Tensor:
        v = self._moments(s, self._l2(p, g))
        c, e = self.factors(t)
        return p - (s["m"] * c / (v.sqrt() + e)) * lr

    def _adamw(self, s: dict, p, g, t: int, lr: float) -> torch.Tensor:
        v = self._moments(s, g)
        bc1, bc2 = self.factors(t)
        delta = (s["m"] / bc1) / ((v / bc2).sqrt() + self.hp["eps"])  # adamw.rs:206–224
        decay_rate = lr * self.hp["weight_decay"]  # f64 (adamw.rs:83)
        decayed = p if decay_rate == 0.0 else p * (1.0 - decay_rate)
        return decayed - delta * lr

    def _adagrad(self, s: dict, p, g, t: int, lr: float) -> torch.Tensor:
        g = self._l2(p, g)
        if "sum" not in s:  # Burn: the sum starts at the first g² (adagrad.rs:131)
            initial = self.hp.get("initial_accumulator_value", 0.0)
            s["sum"] = g.square() + initial if initial else g.square()
        else:
            s["sum"] = s["sum"] + g.square()
        clr = lr / (1.0 + (t - 1.0) * self.hp["lr_decay"])  # f64 (adagrad.rs:134)
        return p - (g / (s["sum"].sqrt() + self.hp["eps"])) * clr

    def _rmsprop(self, s: dict, p, g, t: int, lr: float) -> torch.Tensor:
        hp, alpha, a = self.hp, self.hp["alpha"], self.one_minus_alpha
        g = self._l2(p, g)
        first = "square_avg" not in s
        s["square_avg"] = g.square() * a if first else s["square_avg"] * alpha + g.square() * a
        avg = s["square_avg"]
        if hp["centered"]:
            s["grad_avg"] = g * a if first else s["grad_avg"] * alpha + g * a
            avg = avg - s["grad_avg"].square()
        step = g / (avg.sqrt() + hp["eps"])
        if hp["momentum"] > 0:  # rmsprop.rs:280: the first buffer is the step itself
            s["buf"] = step if first else s["buf"] * hp["momentum"] + step
            step = s["buf"]
        return p - step * lr

    def _sgd(self, s: dict, p, g, t: int, lr: float) -> torch.Tensor:
        hp = self.hp
        g = self._l2(p, g)
        if hp["momentum"]:
            if "velocity" not in s:
                velocity = g
            else:
                velocity = g * (1.0 - hp["dampening"]) + s["velocity"] * hp["momentum"]
            s["velocity"] = velocity
            g = velocity * hp["momentum"] + g if hp["nesterov"] else velocity
        return p - g * lr


def f64_factors(hp: dict) -> Factors:
    b1, b2 = hp["betas"]

    def factors(t: int) -> tuple[float, float]:
        bc2 = math.sqrt(1.0 - b2**t)
        return bc2 / (1.0 - b1**t), hp["eps"] * bc2

    return factors


def f64_corrections(hp: dict) -> Factors:
    """AdamW's bias corrections (1 − β₁^t, 1 − β₂^t) in f64, as PyTorch's Python floats."""
    b1, b2 = hp["betas"]
    return lambda t: (1.0 - b1**t, 1.0 - b2**t)


def recorded_factors(block: dict) -> Factors:
    rec = block["adam_factors"]
    c, e = rec["combined_factor"], rec["epsilon_bias_correction2_sqrt"]
    return lambda t: (c[t - 1], e[t - 1])


def recorded_corrections(block: dict) -> Factors:
    rec = block["burn_scalars"]
    bc1, bc2 = rec["bias_correction1"], rec["bias_correction2"]
    return lambda t: (bc1[t - 1], bc2[t - 1])


def scalar_sources(optimizer: str) -> tuple[Callable, Callable]:
    """(from Burn's run, in f64 from values) for the optimizer's per-step factors."""
    if optimizer == "adam":
        return recorded_factors, f64_factors
    if optimizer == "adamw":
        return recorded_corrections, f64_corrections
    return (lambda block: None), (lambda hp: None)


class GroupedUpdate:
    """Each parameter's update by its group's rule (an experiment's param_groups), the
    experiment's own for parameters in no group. A group's `lr` (under a constant schedule,
    where both frameworks give each group its own) replaces the step's lr."""

    def __init__(
        self, rest: BurnUpdate, groups: list[tuple[list[str], BurnUpdate, float | None]]
    ) -> None:
        self.rest = rest
        self.by_name = {name: (update, lr) for names, update, lr in groups for name in names}
        self.state = _States([rest, *(update for _, update, _ in groups)])

    def step(self, name: str, p: torch.Tensor, g: torch.Tensor, t: int, lr: float) -> torch.Tensor:
        update, own_lr = self.by_name.get(name, (self.rest, None))
        return update.step(name, p, g, t, lr if own_lr is None else own_lr)


class _States:
    """The optimizer states of several updates, cleared together."""

    def __init__(self, updates: list[BurnUpdate]) -> None:
        self.updates = updates

    def clear(self) -> None:
        for update in self.updates:
            update.state.clear()


# ---------------------------------------------------------------- clipping
