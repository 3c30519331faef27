"""Verdicts: is a torch ↔ burn gap rounding, or a real difference in the arithmetic?

The rule, in one place:

* Each framework's own f32-vs-f64 gap (the `torch_f64` and `burn_f64` columns) measures
  how far f32 rounding moves the parameters by step t. The same computation in f64 rounds
  ~2^29 ≈ 5.4e8 times more finely, so f64 rounding alone can move two implementations of
  the same arithmetic apart by about that noise × 2^-29. The *rounding floor* at step t is
  that product times SAFETY, taken as a running maximum (rounding does not un-happen).
* `equivalent up to rounding`: the f64-f64 gap never exceeds the floor.
* `algorithmic difference, explained`: it does, and a replay with the suspected cause
  removed brings the gap back under the floor.
* `algorithmic difference, unexplained`: it does, and nothing closes it.
* `diverged`: a run went non-finite; gaps between overflowing numbers say nothing about
  the arithmetic, so no other verdict is given (the report names the step instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from torch_burn_parity.analysis import layer_settings

# The floor rule, measured in analysis/ and judged by here (vd.ABSOLUTE_FLOOR, …).
from torch_burn_parity.analysis.floors import ABSOLUTE_FLOOR as ABSOLUTE_FLOOR
from torch_burn_parity.analysis.floors import EPS_RATIO as EPS_RATIO
from torch_burn_parity.analysis.floors import SAFETY as SAFETY
from torch_burn_parity.analysis.floors import rounding_floor as rounding_floor
from torch_burn_parity.config import burn_fixes
from torch_burn_parity.io.run_file import smoothing_of
from torch_burn_parity.models.model_specs import model_of
from torch_burn_parity.optimizers.muon import ratio

EQUIVALENT = "equivalent up to rounding"
EXPLAINED = "algorithmic difference, explained"
UNEXPLAINED = "algorithmic difference, unexplained"
DIVERGED = "diverged"


def first_step_above(
    gaps: np.ndarray, limit: np.ndarray | float, steps: np.ndarray | None = None
) -> int | None:
    """1-based first step whose gap exceeds limit (a NaN gap counts as exceeding). steps:
    the step of each entry, when the series holds the recorded steps only (config/record.py;
    absent: entry i is step i + 1)."""
    gaps = np.asarray(gaps, float)
    above = ~(gaps <= limit)
    if not above.any():
        return None
    position = int(np.argmax(above))
    return int(np.asarray(steps)[position]) if steps is not None else position + 1


def growth(gaps: np.ndarray) -> float:
    """Gap at the last step over gap at step 1 (inf if step 1 was exactly equal)."""
    gaps = np.asarray(gaps, float)
    if gaps[0] == 0:
        return np.inf if gaps[-1] > 0 else 1.0
    return float(gaps[-1] / gaps[0])


# Which part of a model's state a gap is in. Training moves the parameters (a train-mode
# forward uses each batch's own statistics); the buffers (BatchNorm's running mean and
# variance) are updated alongside but only an eval-mode forward reads them.
TRAINING = "training"
EVALUATION = "evaluation state"


@dataclass
class StateSplit:
    """The f64-f64 gap of the parameters and of the buffers apart, against the floor."""

    params_gap: float  # largest f64 parameter gap over all steps
    params_first: int | None  # 1-based step where it leaves the floor
    buffers_gap: float
    buffers_first: int | None

    @property
    def scope(self) -> str | None:
        """TRAINING when the parameters leave the floor, EVALUATION when only the buffers
        do, None when neither does."""
        if self.params_first is not None:
            return TRAINING
        if self.buffers_first is not None:
            return EVALUATION
        return None


def split_state(
    params: np.ndarray, buffers: np.ndarray, floor: np.ndarray, steps: np.ndarray | None = None
) -> StateSplit:
    """The parameter and buffer gap series (f64 torch vs burn, per recorded step: ``steps``)
    against the floor of the whole state (rounding_floor of the steps table, which covers
    both)."""
    params, buffers = np.asarray(params, float), np.asarray(buffers, float)

    def worst(gaps: np.ndarray) -> float:
        return float("nan") if np.isnan(gaps).any() else float(np.max(gaps, initial=0.0))

    return StateSplit(
        worst(params),
        first_step_above(params, floor, steps),
        worst(buffers),
        first_step_above(buffers, floor, steps),
    )


@dataclass
class Verdict:
    label: str
    f64_gap: float  # largest f64-f64 gap over all steps
    floor: float  # rounding floor at that step
    first_above_floor: int | None  # 1-based step where the f64 gap leaves the floor
    replay_gap: float | None = None  # largest gap left by the replay, if one was run
    cause: str | None = None
    split: StateSplit | None = None  # parameters and buffers apart (models with buffers)

    @property
    def scope(self) -> str | None:
        """Where a difference is: TRAINING, EVALUATION (the buffers only), or None (no
        difference, or a model without buffers, whose whole state is trained)."""
        if self.first_above_floor is None:
            return None
        return self.split.scope if self.split else TRAINING


def classify(
    f64_f64: np.ndarray,
    torch_f64: np.ndarray,
    burn_f64: np.ndarray,
    replay_gaps: np.ndarray | list[np.ndarray] | None = None,
    cause: str | None = None,
    steps: np.ndarray | None = None,
) -> Verdict:
    """Classify one experiment from its gap series (one entry per recorded step: ``steps``,
    absent: every step).

    replay_gaps: the gap series left by the replays (each against the run it reproduces);
    the difference counts as explained only if every one of them stays under the floor.
    """
    f64_f64 = np.asarray(f64_f64, float)
    floor = rounding_floor(torch_f64, burn_f64)
    worst = int(np.nanargmax(f64_f64)) if np.isfinite(f64_f64).any() else 0
    first = first_step_above(f64_f64, floor, steps)
    verdict = Verdict(
        EQUIVALENT, float(np.nanmax(f64_f64, initial=0.0)), float(floor[worst]), first
    )
    if np.isnan(f64_f64).any():
        verdict.f64_gap = float("nan")
    closes = False
    if replay_gaps is not None:
        series = np.atleast_2d(np.asarray(replay_gaps, float))
        # A non-finite replay step leaves an unknown gap: NaN, never a reassuring 0.
        verdict.replay_gap = (
            float("nan") if np.isnan(series).any() else float(np.max(series, initial=0.0))
        )
        closes = all(first_step_above(s, floor) is None for s in series)
    if first is None:
        return verdict
    verdict.label = EXPLAINED if closes else UNEXPLAINED
    verdict.cause = cause if closes else None
    return verdict


# A candidate cause that accounts for less than this share of the f64 gap is not named,
# except a config-diff value measured on its own (values_apart in causes()) that moves the
# run at all: a porter passes each differing value, however little it moves the largest gap
# (RMSProp's eps 1e-5 is all of step 1's gap and under 1% of the largest).
MIN_SHARE = 0.01


# Config-diff rows that are not hyperparameter values: the schedule, the clipping scope and
# the running-variance estimator are measured by variants of their own (see further_causes),
# not by the held-values replay.
MEASURED_APART = {"schedule", "bn.running_var_estimator", "Newton–Schulz dtype",
                  "Muon lr adjustment"}  # fmt: skip


def measured_apart(row: dict) -> bool:
    name = str(row["hyperparameter"])
    if name.startswith("param_groups["):  # a group's row: param_groups[0].<name>
        name = name.split(".", 1)[1]
    # a port's BatchNorms are named by their own layers: layer1.0.bn1.running_var_estimator
    estimator = name.endswith(".running_var_estimator")
    # a layer's eps, momentum or GELU form: a link of the chain of its own (burn_layer[K])
    layer = layer_settings.applicable(name)
    return name in MEASURED_APART or estimator or layer or name.endswith(" scope")


def causes(
    f64_gap: float,
    held_gap: float,
    differing: list[dict],
    f32_stored: list[str],
    arithmetic: str,
    further: Sequence[tuple[str, float]] = (),
    values_apart: Sequence[tuple[str, float]] = (),
) -> list[tuple[str, float, str]]:
    """The candidate causes of an f64 gap with the share each accounts for, largest first.

    The evidence is the replay's `held_f64` variant: Burn's rule with the values Burn held,
    every scalar in f64. Its distance from PyTorch's f64 run (held_gap) is what the values
    alone do — differing config lines if any, else their f32 storage. `further` continues
    that chain (see further_causes): (name, distance from PyTorch's f64 run) of variants that
    each add one more of Burn's choices to the previous one — its lr sequence, its clipping —
    and each is given the increase of the distance (at least 0) as its share. The only thing
    separating the last variant from the replay that reproduces Burn is Burn's f32
    arithmetic, so that takes the rest of the gap. Shares are of the largest per-step gap,
    capped at the whole gap; each cause comes with how its share was found ("measured" or
    "the remainder").

    `values_apart` (see value_gaps) splits the values: (hyperparameter, distance) of the
    variants before held_f64 that add Burn's differing values one at a time; each such
    config-diff line is then a cause of its own, and held_f64 adds what is left (the f32
    storage of the others).
    """

    def share_of(gap: float) -> float:
        return min(gap / f64_gap, 1.0) if f64_gap > 0 else 0.0

    stored = "f32 storage of " + ", ".join(f32_stored) if f32_stored else ""
    differing = [r for r in differing if not measured_apart(r)]
    found, reached = [], 0.0  # reached: the share of the gap the chain has reached so far
    kept = set()  # the values measured apart that move the run: named whatever their share
    for key, gap in values_apart:
        row = next((r for r in differing if r["hyperparameter"] == key), None)
        if row is None:  # a value the config diff does not call different: with the rest
            continue
        differing.remove(row)
        share = max(share_of(gap) - reached, 0.0)
        found.append((value_line(row, "config diff: "), share, "measured"))
        kept |= {found[-1][0]} if share > 0 else set()
        reached = max(reached, share_of(gap))
    if differing:
        lines = [value_line(r) for r in differing]
        values = "config diff: " + "; ".join(lines) + (f", with {stored}" if stored else "")
    else:
        values = "Burn's " + (stored or "held hyperparameters")
    found.append((values, max(share_of(held_gap) - reached, 0.0), "measured"))
    reached = max(reached, share_of(held_gap))
    for name, gap in further:
        found.append((name, max(share_of(gap) - reached, 0.0), "measured"))
        reached = max(reached, share_of(gap))
    found.append((arithmetic, 1.0 - reached, "the remainder"))
    named = (c for c in found if c[1] >= MIN_SHARE or c[0] in kept)
    return sorted(named, key=lambda c: -c[1])


def value_line(row: dict, prefix: str = "") -> str:
    """'eps (torch 1e-08, burn 1e-05)': one config-diff row."""
    return f"{prefix}{row['hyperparameter']} (torch {row['torch']}, burn {row['burn']})"


def cause_text(found: list[tuple[str, float, str]], of: str = "the gap") -> str:
    """'config diff: eps (torch 1e-08, burn 1e-05) (100.0% of the gap, measured)'."""
    return "; ".join(f"{name} ({share:.1%} of {of}, {how})" for name, share, how in found)


# How Burn 0.22 computes each schedule kind (burn-optim src/lr_scheduler/*.rs); PyTorch's
# schedulers (torch.optim.lr_scheduler) all scale the previous lr, recursively.
BURN_SCHEDULE_FORM = {
    "linear": "closed form",
    "cosine": "closed form",
    "step": "closed form",
    "exponential": "recursion seeded with initial/γ",
}


def lr_difference(torch_lrs, burn_lrs) -> float:
    """The largest relative difference between the two lr sequences, step by step."""
    t, b = np.asarray(torch_lrs, float), np.asarray(burn_lrs, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(t == b, 0.0, np.abs(t - b) / np.maximum(np.abs(t), np.abs(b)))
    return float(np.max(rel, initial=0.0))


def schedule_cause(torch_run: dict, burn_run: dict) -> str:
    """'the schedule: PyTorch's recursive LinearLR vs Burn's closed form differ by up to …'."""
    schedule = torch_run["meta"].get("schedule") or {}
    kind = schedule.get("kind") or (burn_run["meta"].get("schedule") or {}).get("kind", "")
    name = schedule.get("class") or f"{kind} schedule"
    burn = f"Burn's {BURN_SCHEDULE_FORM.get(kind, 'schedule')}"
    if burn_fixes.SCHEDULE in (burn_run["meta"].get("burn_fixes") or []):
        burn = "its copy written by hand for Burn"  # rust/src/by_hand.rs: TorchSchedule
    rel = lr_difference(torch_run["lrs"], burn_run["lrs"])
    if rel == 0:
        return f"the schedule: PyTorch's recursive {name} and {burn} give the same lrs"
    return f"the schedule: PyTorch's recursive {name} vs {burn} differ by up to {rel:.2g} relative"


def clipping_cause(torch_run: dict, burn_run: dict) -> str:
    """The clipping as the two frameworks apply it, by its mode."""
    clip = torch_run["meta"].get("clip_grad") or burn_run["meta"].get("clip_grad") or {}
    if "norm" in clip:
        return (
            "the clipping scope: Burn clips each parameter tensor by its own norm, PyTorch all"
            " parameters by one norm (plus 1e-6)"
        )
    return "the clipping: both clamp each gradient element"


def running_stats_cause(torch_run: dict, burn_run: dict) -> str:
    """'the running-variance estimator (Burn biased, PyTorch unbiased)', from the estimators
    the runs record (`meta.layer_hyperparameters`)."""

    def estimator(run: dict) -> str:  # one word, or several where a port's layers differ
        held = run["meta"].get("layer_hyperparameters") or {}
        found = {v for k, v in held.items() if k.endswith("running_var_estimator")}
        return "/".join(sorted(found)) or "?"

    held = [estimator(run) for run in (torch_run, burn_run)]
    if held[0] == held[1]:
        return f"the running-statistics update (both {held[0]} variance)"
    return f"the running-variance estimator (Burn {held[1]}, PyTorch {held[0]})"


def muon_parameters(run: dict) -> list[str]:
    """The parameters a run trains with Muon (its groups', or all when it is the experiment's)."""
    meta = run["meta"]
    if meta["optimizer"] == "muon":
        grouped = {n for g in meta.get("param_groups") or [] for n in g["params"]}
        return [n for n in model_of(run).param_names if n not in grouped]
    groups = meta.get("param_groups") or []
    return [n for g in groups if g["optimizer"] == "muon" for n in g["params"]]


def lr_adjustment_cause(torch_run: dict, burn_run: dict) -> str:
    """Muon's lr factor read from each framework's shape of its parameters: how many it
    differs for, and the one it differs most for."""
    shapes = model_of(torch_run).param_shapes()
    burn = burn_run["meta"].get("burn_shapes") or {}
    fn = muon_hyperparameters(burn_run)["adjust_lr_fn"]
    names = muon_parameters(burn_run)
    # With the trainer's own lr per Muon tensor (`meta.lr_scales`), Burn's factor × its scale.
    scales = burn_run["meta"].get("lr_scales") or {}
    held = {n: (burn.get(n) or [shapes[n]])[0] for n in names}
    factors = {n: (ratio(fn, shapes[n]), ratio(fn, held[n]) * scales.get(n, [1])[0]) for n in names}
    differ = {n: f for n, f in factors.items() if f[0] != f[1]}
    if not differ:
        return "Muon's lr adjustment (the same factor in both)"
    name = max(differ, key=lambda n: max(differ[n]) / min(differ[n]))
    t, b = differ[name]
    burn_shape = (burn.get(name) or [shapes[name]])[0]
    return (
        f"Muon's lr adjustment reads the shape each framework holds (Burn's Linear weight is"
        f" [in, out]): its factor differs for {len(differ)} of {len(names)} Muon parameters,"
        f" most for {name} (PyTorch {list(shapes[name])} ×{t:.3g}, Burn {list(burn_shape)}"
        f" ×{b:.3g})"
    )


def loss_cause(torch_run: dict, burn_run: dict) -> str:
    """Burn's smoothed cross-entropy target weights, computed in f32."""
    eps = smoothing_of(burn_run["meta"])
    return (
        f"Burn's smoothed targets: label smoothing {eps:.7g} with its weights 1 − ε and ε/C"
        " computed in f32, which do not add up to 1 over the classes"
    )


def muon_hyperparameters(run: dict) -> dict | None:
    """The hyperparameters of the run's (first) Muon group, or its own if it is Muon's."""
    meta = run["meta"]
    if meta["optimizer"] == "muon":
        return meta["hyperparameters"]
    groups = [g for g in meta.get("param_groups") or [] if g["optimizer"] == "muon"]
    return groups[0]["hyperparameters"] if groups else None


def newton_schulz_cause(torch_run: dict, burn_run: dict) -> str:
    """Where each framework orthogonalises Muon's update."""
    dtype = burn_run["meta"]["dtype"]
    return (
        "Muon's Newton–Schulz: PyTorch's in bfloat16 (on its averaged momentum), Burn's in"
        f" the tensor's dtype ({dtype}, on its summed momentum)"
    )


# The counterfactual table's columns of replay.py's chain variants after the held values, in
# the chain's order, and what names each one's cause (from the two f64 run blocks).
RUNNING_STATS_COLUMN = "dparam_burn_running_stats"
LAYER_COLUMN = "dparam_burn_layer["  # replay.layer_link: one column per layer setting
CHAIN = (
    ("dparam_burn_loss", loss_cause),
    ("dparam_burn_lrs", schedule_cause),
    ("dparam_burn_clipping", clipping_cause),
    (RUNNING_STATS_COLUMN, running_stats_cause),
    ("dparam_burn_lr_adjustment", lr_adjustment_cause),
    ("dparam_burn_newton_schulz", newton_schulz_cause),
)


VALUE_COLUMN = "dparam_burn_value["  # replay's burn_value[K]: one column per differing value


def column_gap(counterfactual, column: str) -> float:
    """The largest distance of one chain column (NaN when the variant went non-finite)."""
    gaps = np.asarray(counterfactual[column], float)
    return float("nan") if np.isnan(gaps).any() else float(np.max(gaps, initial=0.0))


def value_gaps(counterfactual) -> list[tuple[str, float]]:
    """(hyperparameter, gap) of the replay's variants that add Burn's differing values one
    at a time (analysis/held_values.py), in the chain's order: causes()' values_apart."""
    return [
        (column[len(VALUE_COLUMN) : -1], column_gap(counterfactual, column))
        for column in counterfactual
        if column.startswith(VALUE_COLUMN) and column.endswith("]")
    ]


def further_causes(counterfactual, torch_run: dict, burn_run: dict) -> list[tuple[str, float]]:
    """The causes replay.py measured after the values, as (name, gap) for causes(): its
    counterfactual table's `dparam_burn_lrs` (with a schedule), `dparam_burn_clipping`
    (with clipping) and `dparam_burn_running_stats` (a model with running statistics)
    columns, the largest distances from PyTorch's f64 run of its variants with Burn's values
    and Burn's lrs, then also Burn's clipping, then also Burn's running-variance estimator;
    the names come from the two f64 run blocks (`meta.schedule`, `lrs`, `meta.clip_grad`,
    `meta.layer_hyperparameters`)."""
    found = []
    torch_held = torch_run["meta"].get("layer_hyperparameters") or {}
    burn_held = burn_run["meta"].get("layer_hyperparameters") or {}
    for column in list(counterfactual):  # Burn's layer settings first, one at a time
        if column.startswith(LAYER_COLUMN) and column.endswith("]"):
            key = column[len(LAYER_COLUMN) : -1]
            cause = layer_settings.cause(key, torch_held.get(key), burn_held.get(key))
            found.append((cause, column_gap(counterfactual, column)))
    for column, name in CHAIN:
        if column in counterfactual:
            found.append((name(torch_run, burn_run), column_gap(counterfactual, column)))
    return found
