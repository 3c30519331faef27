"""Which steps a run records (config/record.py): `record: {every}`, `{steps}`, the budget
that picks a stride for a large model, and the steps always added."""

from __future__ import annotations

from conftest import SGD, small_config
from torch_burn_parity.config.parity_config import semantic_problems
from torch_burn_parity.config.record import record_steps, run_bytes
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.models.model_specs import spec

SMALL = spec("cnn1d")  # 171 parameters
BIG = spec("transformer", {"d_model": 256, "heads": 4, "d_ff": 1024})  # 802,563


def test_every_step_while_it_fits_the_budget():
    steps, how = record_steps(100, [1], None, SMALL)
    assert steps == list(range(1, 101)) and how == "every step"


def test_a_stride_with_the_first_probe_and_last_steps_and_each_ones_predecessor():
    steps, how = record_steps(20, [1, 7], {"every": 10}, SMALL)
    assert steps == [1, 6, 7, 9, 10, 19, 20]
    assert how == "every 10 steps (the config's)"


def test_listed_steps_get_their_predecessors_and_the_last_step():
    steps, how = record_steps(50, [1], {"steps": [30]}, SMALL)
    assert steps == [1, 29, 30, 49, 50] and how == "the steps the config lists"


def test_a_large_model_gets_the_smallest_stride_that_fits_the_budget():
    every_step = run_bytes(BIG, 100)
    assert every_step == 8 * 100 * 2 * 802_563  # 1.28 GB: over the 256 MB default
    steps, how = record_steps(100, [1, 100], None, BIG)
    assert run_bytes(BIG, len(steps)) <= 256 * 2**20
    assert how.startswith("every 11 steps: every step would make an f64 run's tensors 1,225 MB")
    # the next smaller stride would not fit
    assert run_bytes(BIG, len(record_steps(100, [1, 100], {"every": 10}, BIG)[0])) > 256 * 2**20
    assert record_steps(100, [1], None, BIG, budget_mb=2000)[0] == list(range(1, 101))


def test_the_resolved_spec_holds_the_recorded_steps():
    config = small_config(6, e=SGD | {"record": {"every": 3}})
    assert experiment_spec(config, "e").record_steps == [1, 2, 3, 5, 6]
    assert experiment_spec(small_config(6, e=SGD), "e").record_steps == [1, 2, 3, 4, 5, 6]


def test_a_record_step_after_the_last_and_two_rules_at_once_are_refused():
    config = small_config(6, e=SGD | {"record": {"steps": [2, 9]}})
    assert [str(p) for p in semantic_problems(config)] == [
        "experiments.e.record.steps[1]: step 9 is after the last step (6)"
    ]
    both = small_config(6, e=SGD | {"record": {"steps": [2], "every": 2}})
    assert [str(p) for p in semantic_problems(both)] == [
        "experiments.e.record: give one of `every: k` and `steps: [...]`"
    ]


def test_the_verdict_names_the_step_of_a_recorded_row_not_its_position():
    import numpy as np

    from torch_burn_parity.judgement import verdict as vd
    from torch_burn_parity.report import plots

    assert vd.first_step_above([0.0, 0.0, 5.0], 1.0, [1, 10, 20]) == 20
    assert vd.first_step_above([0.0, 0.0, 5.0], 1.0) == 3
    f64, floor = np.array([0.0, 2.0, 0.0, 2.0, 0.0]), np.ones(5)
    assert plots.back_within(f64, floor, np.array([1, 10, 20, 30, 40])) == (
        ", back within it from step 40 (above it at 2 of 5 recorded steps)"
    )
