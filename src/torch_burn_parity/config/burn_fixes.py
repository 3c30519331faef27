"""`burn_fixes`: what the Burn trainer writes by hand where Burn 0.22.1 has no setting for
PyTorch's behaviour (rust/src/by_hand.rs), and which of them an experiment's proving run
needs (config/proving.py).

- `clip_by_global_norm`: Burn clips each parameter tensor by its own norm; the fix clips all
  gradients by one norm before Burn's step, as `clip_grad_norm_` does. It needs
  `clip_grad: {norm: x}` (a clipping by value is the same in both).
- `muon_lr_per_parameter`: Burn's Muon scales the lr by the shape of each tensor it holds
  ([in, out] for a Linear weight, several blocks for a packed one); the fix gives each Muon
  tensor the lr that makes Burn's lr × factor PyTorch's. It needs a Muon optimizer, the
  experiment's or a group's.
- `smoothed_targets_in_dtype`: Burn's label smoothing weighs the targets with f32 roundings
  of 1 − ε and ε/C; the fix computes the smoothed cross-entropy itself, its targets in the
  run's dtype. It needs `label_smoothing` above 0.
- `pytorch_schedule`: Burn computes linear, cosine and step schedules in closed form and
  seeds the exponential one with initial/γ, PyTorch scales the previous lr, so the lrs part
  by ulps; the fix is PyTorch's recursion written as a Burn `LrScheduler`, its lr of each
  step passed to Burn's step. It needs a schedule other than constant.
"""

from __future__ import annotations

from typing import Any

CLIP = "clip_by_global_norm"
MUON_LR = "muon_lr_per_parameter"
SMOOTH = "smoothed_targets_in_dtype"
SCHEDULE = "pytorch_schedule"
FIXES = (CLIP, MUON_LR, SMOOTH, SCHEDULE)


def clips_by_norm(exp: dict[str, Any]) -> bool:
    clip = exp.get("clip_grad")
    return isinstance(clip, dict) and "norm" in clip


def has_muon(exp: dict[str, Any]) -> bool:
    groups = exp.get("param_groups")
    groups = [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []
    return "muon" in [exp.get("optimizer")] + [g.get("optimizer") for g in groups]


def smooths(exp: dict[str, Any]) -> bool:
    smoothing = exp.get("label_smoothing")
    return isinstance(smoothing, int | float) and smoothing > 0


def scheduled(exp: dict[str, Any]) -> bool:
    schedule = exp.get("schedule")
    return isinstance(schedule, dict) and schedule.get("kind", "constant") != "constant"


def needed(exp: dict[str, Any]) -> list[str]:
    """The fixes a proving run of `exp` applies: one per cause of its kind the experiment
    has, in FIXES order."""
    needs = ((CLIP, clips_by_norm), (MUON_LR, has_muon), (SMOOTH, smooths), (SCHEDULE, scheduled))
    return [fix for fix, has in needs if has(exp)]


def problems(at: tuple, exp: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(path, message) of each fix the experiment cannot apply (the schema checks the names)."""
    fixes, where = exp.get("burn_fixes"), (*at, "burn_fixes")
    if not isinstance(fixes, list):
        return []
    found = []
    if CLIP in fixes and not clips_by_norm(exp):
        found.append((where, f"{CLIP} needs clip_grad: {{norm: x}} (got {exp.get('clip_grad')!r})"))
    if MUON_LR in fixes and not has_muon(exp):
        found.append((where, f"{MUON_LR} needs a Muon optimizer, the experiment's or a group's"))
    if SMOOTH in fixes and not smooths(exp):
        found.append((where, f"{SMOOTH} needs label_smoothing above 0"))
    if SCHEDULE in fixes and not scheduled(exp):
        found.append((where, f"{SCHEDULE} needs a schedule other than constant"))
    return found
