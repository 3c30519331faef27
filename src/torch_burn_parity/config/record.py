"""Which steps a run records: the experiment's `record:` setting, resolved to a list of steps.

Both trainers record the parameters, gradients and buffers after the steps of the resolved
spec's `record_steps` (the rows of the run's trajectories); losses, lrs and per-tensor norms
after every step regardless. A config chooses them with

    record: {every: 10}          # steps 10, 20, …, and the last
    record: {steps: [1, 50, 100]}

or leaves it out: every step while a run's tensors stay under `record_budget_mb` (a
top-level key, 256 by default), else the smallest stride that fits. Whatever is chosen, the
list always holds step 1, the probe steps, the last step and, for each recorded step, the
step before it (so that the replay can check each recorded update from the state it started
from).
"""

from __future__ import annotations

import math
from typing import Any

from torch_burn_parity.models.model_specs import ModelSpec

DEFAULT_BUDGET_MB = 256
MB = 2**20


def run_bytes(model: ModelSpec, rows: int) -> int:
    """The bytes of an f64 run's trajectories with ``rows`` recorded steps (parameters and
    their gradients, and buffers), the larger of a run's two precisions."""
    params = sum(math.prod(model.state_shapes[n]) for n in model.param_names)
    buffers = sum(math.prod(model.state_shapes[n]) for n in model.buffer_names)
    return 8 * rows * (2 * params + buffers)


def with_needed(chosen: set[int], steps: int, probe_steps: list[int]) -> list[int]:
    """The chosen steps with step 1, the probe steps, the last step and each one's
    predecessor."""
    kept = {s for s in chosen | {1, steps, *probe_steps} if 1 <= s <= steps}
    return sorted(kept | {s - 1 for s in kept if s > 1})


def record_steps(
    steps: int,
    probe_steps: list[int],
    record: dict[str, Any] | None,
    model: ModelSpec,
    budget_mb: float = DEFAULT_BUDGET_MB,
) -> tuple[list[int], str]:
    """The steps a run records, and how they were chosen, in words for the report."""
    if record and "steps" in record:
        return with_needed(set(record["steps"]), steps, probe_steps), "the steps the config lists"
    if record and "every" in record:
        every = record["every"]
        chosen = with_needed(set(range(every, steps + 1, every)), steps, probe_steps)
        return chosen, f"every {every} steps (the config's)" if every > 1 else "every step"
    budget = budget_mb * MB
    for every in range(1, steps + 1):
        chosen = with_needed(set(range(every, steps + 1, every)), steps, probe_steps)
        if run_bytes(model, len(chosen)) <= budget:
            if every == 1:
                return chosen, "every step"
            size = run_bytes(model, steps) / MB
            return chosen, (
                f"every {every} steps: every step would make an f64 run's tensors"
                f" {size:,.0f} MB, over the budget of {budget_mb:g} MB (record_budget_mb)"
            )
    chosen = with_needed(set(), steps, probe_steps)
    return chosen, (
        f"the first, probe and last steps only: no stride fits the budget of {budget_mb:g} MB"
        " (record_budget_mb)"
    )


def record_problems(at: tuple, exp: dict[str, Any], steps: Any) -> list[tuple[tuple, str]]:
    """(key path, message) for a `record` that gives both `every` and `steps` or neither, or
    a step after the last step (the schema checks the rest: the keys, positive integers)."""
    record = exp.get("record")
    if not isinstance(record, dict) or set(record) - {"every", "steps"}:
        return []
    if len(record) != 1:
        return [((*at, "record"), "give one of `every: k` and `steps: [...]`")]
    listed = record.get("steps")
    if not isinstance(steps, int):
        return []
    if not isinstance(listed, list):
        return []
    return [
        ((*at, "record", "steps", i), f"step {s} is after the last step ({steps})")
        for i, s in enumerate(listed)
        if isinstance(s, int) and s > steps
    ][:1]
