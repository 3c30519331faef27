"""The verdict rule on synthetic gap series."""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch_burn_parity.judgement import verdict as v

STEPS = 50
F32_NOISE = np.linspace(2e-8, 5e-7, STEPS)  # a typical f32-vs-f64 gap series


def test_rounding_sized_gap_is_equivalent():
    f64_gap = F32_NOISE * v.EPS_RATIO * 3  # well within SAFETY × rounding
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE * 0.5)
    assert result.label == v.EQUIVALENT and result.first_above_floor is None


def test_growing_gap_above_floor_is_a_difference():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE)
    assert result.label == v.UNEXPLAINED
    assert result.first_above_floor == 1
    assert result.f64_gap == pytest.approx(3.7e-6)


def test_replay_that_closes_the_gap_explains_it():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    replay = np.full(STEPS, 2e-16)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE, replay, cause="f32 factors")
    assert result.label == v.EXPLAINED and result.cause == "f32 factors"
    assert result.replay_gap == pytest.approx(2e-16)


def test_replay_that_does_not_close_it_leaves_it_unexplained():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE, f64_gap / 2, cause="f32 factors")
    assert result.label == v.UNEXPLAINED


def test_gap_that_leaves_the_floor_late_is_located():
    f64_gap = np.full(STEPS, 1e-16)
    f64_gap[30:] = 1e-9
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE)
    assert result.first_above_floor == 31


def test_nan_gap_is_never_equivalent():
    f64_gap = np.full(STEPS, 1e-16)
    f64_gap[10] = np.nan
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE)
    assert result.label == v.UNEXPLAINED and result.first_above_floor == 11


def test_floor_never_falls():
    noise = np.array([1e-7, 1e-9, 1e-9])
    floor = v.rounding_floor(noise, noise)
    assert (np.diff(floor) >= 0).all()


def test_growth_and_first_step_above_tolerance():
    assert v.growth(np.array([1e-10, 1e-8, 1e-6])) == pytest.approx(1e4)
    assert v.first_step_above(np.array([1e-7, 5e-7, 2e-6]), 1e-6) == 3
    assert v.first_step_above(np.array([1e-7]), 1e-6) is None


def test_every_replay_must_close_the_gap():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    closes, stays = np.full(STEPS, 1e-16), f64_gap
    assert v.classify(f64_gap, F32_NOISE, F32_NOISE, [closes, closes]).label == v.EXPLAINED
    assert v.classify(f64_gap, F32_NOISE, F32_NOISE, [closes, stays]).label == v.UNEXPLAINED


ARITHMETIC = "Burn's f32 arithmetic"


def test_causes_are_shared_out_by_the_held_values_replay():
    # adam: Burn's held values alone leave 1.18e-07 of a 3.71e-06 gap (3.2 %).
    found = v.causes(3.71e-6, 1.18e-7, [], ["betas", "eps"], ARITHMETIC)
    assert [name for name, *_ in found] == [ARITHMETIC, "Burn's f32 storage of betas, eps"]
    assert [how for *_, how in found] == ["the remainder", "measured"]
    assert found[0][1] == pytest.approx(1 - 1.18e-7 / 3.71e-6)
    assert found[1][1] == pytest.approx(1.18e-7 / 3.71e-6)


def test_a_differing_config_line_that_accounts_for_the_gap_is_the_only_cause():
    row = {"hyperparameter": "eps", "torch": "1e-08", "burn": "1e-05"}
    found = v.causes(8.985446133e-3, 8.985446074e-3, [row], ["betas"], ARITHMETIC)
    name = "config diff: eps (torch 1e-08, burn 1e-05), with f32 storage of betas"
    assert found == [(name, pytest.approx(1.0), "measured")]
    assert v.cause_text(found) == f"{name} (100.0% of the gap, measured)"


def test_the_optimizer_does_not_choose_the_cause():
    # Same evidence, whatever the label of the arithmetic: values explain all of it.
    found = v.causes(1e-6, 1e-6, [], ["momentum"], "anything")
    assert found == [("Burn's f32 storage of momentum", 1.0, "measured")]


@pytest.mark.parametrize(
    ("share", "named"),
    [(v.MIN_SHARE * 0.99, 1), (v.MIN_SHARE * 1.01, 2)],
)
def test_a_cause_under_the_minimum_share_is_not_named(share, named):
    found = v.causes(1.0, 1.0 - share, [], ["eps"], ARITHMETIC)
    assert len(found) == named


# --------------------------------------------------------------------------- more edges


def test_unexplained_verdict_names_no_cause():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    result = v.classify(f64_gap, F32_NOISE, F32_NOISE, f64_gap / 2, cause="f32 factors")
    assert result.cause is None and result.replay_gap == pytest.approx(3.7e-6 / 2)
    assert v.classify(f64_gap, F32_NOISE, F32_NOISE, cause="f32 factors").cause is None


# f32 noise large enough that the floor rises step by step (above the absolute floor).
RISING = np.geomspace(1e-6, 1e-4, STEPS)


def test_verdict_reports_the_floor_at_the_worst_step():
    noise = RISING
    f64_gap = np.full(STEPS, 1e-16)
    f64_gap[7] = 1e-15
    result = v.classify(f64_gap, noise, noise)
    assert result.f64_gap == 1e-15
    floor = v.rounding_floor(noise, noise)
    assert floor[0] < floor[7] < floor[8] and result.floor == floor[7]


def test_a_diverged_f64_run_reports_nan_at_the_first_steps_floor():
    noise = RISING
    result = v.classify(np.full(STEPS, np.nan), noise, noise)
    assert result.label == v.UNEXPLAINED and result.first_above_floor == 1
    floor = v.rounding_floor(noise, noise)
    assert math.isnan(result.f64_gap) and result.floor == floor[0] < floor[1]
    partly = np.full(STEPS, 1e-16)
    partly[[3, 9]] = [1e-14, np.nan]
    result = v.classify(partly, noise, noise)
    assert math.isnan(result.f64_gap) and result.first_above_floor == 10
    assert result.floor == floor[3]  # at the worst finite step


def test_growth_is_last_step_over_first():
    assert v.growth([1e-10, 0.0, 1e-8]) == pytest.approx(100.0)  # zero in between is fine
    assert v.growth([2e-9, 1e-9]) == pytest.approx(0.5)
    assert v.growth([0.0, 0.0, 0.0]) == 1.0  # equal at step 1 and still equal
    assert v.growth([0.0, 0.5, 0.0]) == 1.0
    assert v.growth([0.0, 0.0, 1e-300]) == np.inf  # equal at step 1, apart at the end


def test_the_values_share_is_capped_at_the_whole_gap():
    # The held-values replay can end up further from PyTorch than Burn does.
    found = v.causes(1e-6, 3e-6, [], ["eps"], ARITHMETIC)
    assert found == [("Burn's f32 storage of eps", 1.0, "measured")]


def test_no_gap_is_no_share_of_anything_measured():
    assert v.causes(0.0, 0.0, [], ["eps"], ARITHMETIC) == [(ARITHMETIC, 1.0, "the remainder")]


def test_causes_largest_share_first_with_their_full_names():
    rows = [{"hyperparameter": "eps", "torch": "1e-08", "burn": "1e-05"},
            {"hyperparameter": "lr", "torch": "0.01", "burn": "0.02"}]  # fmt: skip
    found = v.causes(1.0, 0.75, rows, [], ARITHMETIC)
    name = "config diff: eps (torch 1e-08, burn 1e-05); lr (torch 0.01, burn 0.02)"
    assert found == [(name, 0.75, "measured"), (ARITHMETIC, 0.25, "the remainder")]
    assert v.cause_text(found) == (
        f"{name} (75.0% of the gap, measured); {ARITHMETIC} (25.0% of the gap, the remainder)"
    )


def test_held_values_without_f32_storage_are_named_as_such():
    found = v.causes(1.0, 0.5, [], [], ARITHMETIC)
    assert [name for name, *_ in found] == ["Burn's held hyperparameters", ARITHMETIC]


def test_a_replay_that_went_non_finite_leaves_an_unknown_gap():
    f64_gap = np.geomspace(2e-10, 3.7e-6, STEPS)
    nan_replay = np.full(STEPS, np.nan)
    one_nan = np.where(np.arange(STEPS) == 3, np.nan, 1e-16)
    for replay in (nan_replay, one_nan):
        result = v.classify(f64_gap, F32_NOISE, F32_NOISE, [replay])
        assert result.label == v.UNEXPLAINED and np.isnan(result.replay_gap)
    closes = v.classify(f64_gap, F32_NOISE, F32_NOISE, [np.full(STEPS, 1e-16)])
    assert closes.replay_gap == 1e-16


# --------------------------------------------------------------- schedule and clipping

SCHEDULE = "the schedule: PyTorch's recursive LinearLR vs Burn's closed form differ by up to 2e-14 relative"  # noqa: E501
SCOPE = ("the clipping scope: Burn clips each parameter tensor by its own norm, PyTorch all"
         " parameters by one norm (plus 1e-6)")  # fmt: skip


def run_block(lrs, schedule=None, clip=None) -> dict:
    return {"lrs": lrs, "meta": {"schedule": schedule or {"kind": "constant"}, "clip_grad": clip}}


def test_the_schedule_is_named_when_it_is_the_only_difference():
    # Burn's values change nothing (held gap 0); Burn's lrs account for the whole gap.
    found = v.causes(2e-15, 0.0, [], [], ARITHMETIC, [(SCHEDULE, 2e-15)])
    assert found == [(SCHEDULE, 1.0, "measured")]
    assert v.cause_text(found) == f"{SCHEDULE} (100.0% of the gap, measured)"


def test_the_clipping_scope_is_named_when_it_is_the_only_difference():
    found = v.causes(0.15, 0.0, [], [], ARITHMETIC, [(SCHEDULE, 1e-18), (SCOPE, 0.15)])
    assert found == [(SCOPE, 1.0, "measured")]


def test_further_causes_take_what_each_adds_to_the_chain():
    # Distances from PyTorch of: Burn's values (0.2), + its lrs (0.2: nothing added),
    # + its clipping (0.9); the replay reaches 1.0, the rest is Burn's arithmetic.
    found = v.causes(1.0, 0.2, [], ["eps"], ARITHMETIC, [(SCHEDULE, 0.2), (SCOPE, 0.9)])
    assert found == [
        (SCOPE, pytest.approx(0.7), "measured"),
        ("Burn's f32 storage of eps", 0.2, "measured"),
        (ARITHMETIC, pytest.approx(0.1), "the remainder"),
    ]


def test_a_step_of_the_chain_that_moves_closer_to_pytorch_gets_no_share():
    found = v.causes(1.0, 0.5, [], ["eps"], ARITHMETIC, [(SCHEDULE, 0.3), (SCOPE, 0.8)])
    assert found == [
        ("Burn's f32 storage of eps", 0.5, "measured"),
        (SCOPE, pytest.approx(0.3), "measured"),
        (ARITHMETIC, pytest.approx(0.2), "the remainder"),
    ]
    # Capped at the whole gap: nothing is left for the arithmetic.
    found = v.causes(1.0, 0.5, [], ["eps"], ARITHMETIC, [(SCOPE, 3.0)])
    assert found == [("Burn's f32 storage of eps", 0.5, "measured"), (SCOPE, 0.5, "measured")]


def test_schedule_and_scope_rows_are_not_named_as_config_diff_values():
    rows = [{"hyperparameter": "clip_grad.norm scope", "torch": "one norm", "burn": "each"},
            {"hyperparameter": "schedule", "torch": "LinearLR", "burn": "Linear"},
            {"hyperparameter": "eps", "torch": "1e-08", "burn": "1e-05"}]  # fmt: skip
    found = v.causes(1.0, 1.0, rows, [], ARITHMETIC, [(SCOPE, 1.0)])
    assert found == [("config diff: eps (torch 1e-08, burn 1e-05)", 1.0, "measured")]
    found = v.causes(1.0, 0.0, rows[:2], ["clip_grad.norm"], ARITHMETIC, [(SCOPE, 1.0)])
    assert found == [(SCOPE, 1.0, "measured")]


def test_the_schedule_cause_says_how_far_the_lr_sequences_differ():
    schedule = {"kind": "linear", "class": "LinearLR", "start_factor": 1.0}
    torch_run = run_block([0.5, 0.29, 0.05], schedule)
    burn_run = run_block([0.5, 0.29000000000000004, 0.05], {"kind": "linear"})
    rel = (0.29000000000000004 - 0.29) / 0.29000000000000004
    assert v.lr_difference(torch_run["lrs"], burn_run["lrs"]) == pytest.approx(rel)
    assert v.schedule_cause(torch_run, burn_run) == (
        "the schedule: PyTorch's recursive LinearLR vs Burn's closed form differ by up to"
        f" {rel:.2g} relative"
    )
    exponential = {"kind": "exponential", "class": "ExponentialLR"}
    same = run_block([0.01, 0.009], exponential)
    assert v.schedule_cause(same, same) == (
        "the schedule: PyTorch's recursive ExponentialLR and Burn's recursion seeded with"
        " initial/γ give the same lrs"
    )


def test_further_causes_come_from_the_counterfactual_tables_columns():
    torch_run = run_block([0.5, 0.25], {"kind": "step", "class": "StepLR"}, {"norm": 1.0})
    burn_run = run_block([0.5, 0.25], {"kind": "step"}, {"norm": 1.0})
    table = {"dparam_burn_lrs": [1e-16, 2e-16], "dparam_burn_clipping": [0.1, 0.3]}
    assert v.further_causes(table, torch_run, burn_run) == [
        ("the schedule: PyTorch's recursive StepLR and Burn's closed form give the same lrs",
         2e-16),
        (SCOPE, 0.3),
    ]  # fmt: skip
    value = run_block([0.5, 0.5], clip={"value": 0.01})
    assert v.further_causes({"dparam_burn_clipping": [0.0, 0.0]}, value, value) == [
        ("the clipping: both clamp each gradient element", 0.0)
    ]
    assert v.further_causes({"dparam_held_f64": [1.0]}, value, value) == []
    nan = v.further_causes({"dparam_burn_clipping": [0.1, float("nan")]}, value, value)
    assert math.isnan(nan[0][1])


def test_each_layer_setting_column_is_a_cause_named_from_both_runs_settings_first():
    torch_run = run_block([0.5, 0.5])
    burn_run = run_block([0.5, 0.5])
    torch_run["meta"]["layer_hyperparameters"] = {"norm.eps": 0.001, "act.approximate": "tanh"}
    burn_run["meta"]["layer_hyperparameters"] = {"norm.eps": 1e-05, "act.approximate": "none"}
    table = {"dparam_held_f64": [0.0, 0.0], "dparam_burn_value[eps]": [5.0, 5.0],
             "dparam_burn_layer[norm.eps]": [1e-9, 3e-9],
             "dparam_burn_layer[act.approximate]": [2e-9, 1e-9],
             "dparam_burn_clipping": [0.0, 0.0]}  # fmt: skip
    assert v.further_causes(table, torch_run, burn_run) == [
        ("the layer setting norm.eps (torch 0.001, burn 1e-05)", 3e-9),
        ("the layer setting act.approximate (torch tanh, burn none)", 2e-9),
        ("the clipping: both clamp each gradient element", 0.0),  # the chain after them
    ]
    # a run that records no layer settings names the value as unknown
    del burn_run["meta"]["layer_hyperparameters"]
    assert v.further_causes({"dparam_burn_layer[norm.eps]": [1e-9]}, torch_run, burn_run) == [
        ("the layer setting norm.eps (torch 0.001, burn None)", 1e-9)
    ]


def test_the_smoothed_targets_cause_names_burns_label_smoothing():
    burn_run = run_block([0.5])
    burn_run["meta"]["loss"] = {"label_smoothing": 0.1}
    assert v.further_causes({"dparam_burn_loss": [2e-9]}, run_block([0.5]), burn_run) == [
        ("Burn's smoothed targets: label smoothing 0.1 with its weights 1 − ε and ε/C computed"
         " in f32, which do not add up to 1 over the classes", 2e-9)
    ]  # fmt: skip
    assert v.loss_cause({}, run_block([0.5])).startswith(
        "Burn's smoothed targets: label smoothing 0 with"
    )


def test_the_schedule_by_hand_and_a_kind_burn_alone_records_are_named():
    torch_run = run_block([0.5, 0.25], {"kind": "step", "class": "StepLR"})
    by_hand = run_block([0.5, 0.25], {"kind": "step"})
    by_hand["meta"]["burn_fixes"] = ["pytorch_schedule"]
    assert v.schedule_cause(torch_run, by_hand) == (
        "the schedule: PyTorch's recursive StepLR and its copy written by hand for Burn give"
        " the same lrs"
    )
    # PyTorch's run records no schedule: Burn's kind names it; an unknown kind, generically
    unrecorded = run_block([0.5, 0.25])
    unrecorded["meta"]["schedule"] = None
    assert v.schedule_cause(unrecorded, run_block([0.5, 0.25], {"kind": "step"})) == (
        "the schedule: PyTorch's recursive step schedule and Burn's closed form give the same lrs"
    )
    odd = run_block([0.5], {"kind": "warmup"})
    assert v.schedule_cause(odd, odd) == (
        "the schedule: PyTorch's recursive warmup schedule and Burn's schedule give the same lrs"
    )


def test_the_estimator_cause_says_both_when_the_runs_hold_the_same():
    same = run_block([0.5])
    same["meta"]["layer_hyperparameters"] = {"bn.running_var_estimator": "biased",
                                             "bn2.running_var_estimator": "unbiased"}  # fmt: skip
    assert v.running_stats_cause(same, same) == (
        "the running-statistics update (both biased/unbiased variance)"
    )
    assert v.running_stats_cause(run_block([0.5]), same) == (
        "the running-variance estimator (Burn biased/unbiased, PyTorch ?)"
    )


def test_the_state_split_names_recorded_steps_not_positions():
    """Runs that record steps 1, 2, 4 and 8 only: a gap leaving the floor at the third
    entry left it at step 4."""
    floor = np.full(4, 1e-14)
    split = v.split_state([0, 0, 1e-9, 1e-9], [0, 1e-9, 1e-9, 2e-9], floor, np.array([1, 2, 4, 8]))
    assert (split.params_first, split.buffers_first) == (4, 2)
    assert (split.params_gap, split.buffers_gap) == (1e-9, 2e-9)
    nan = v.split_state([0, float("nan"), 0, 0], [0, 0, 0, 0], floor, np.array([1, 2, 4, 8]))
    assert math.isnan(nan.params_gap) and nan.params_first == 2 and nan.buffers_gap == 0.0
    verdict = v.classify([0, 0, 1e-9, 1e-9], floor, floor, steps=np.array([1, 2, 4, 8]))
    assert verdict.first_above_floor == 4
    replayed = v.classify([0, 0, 1e-9, 1e-9], floor, floor, [[0, 0, float("nan"), 0]])
    assert math.isnan(replayed.replay_gap)


# --------------------------------------------------------------- parameters and buffers

FLOOR = np.full(STEPS, 1e-14)


def test_a_gap_in_the_buffers_alone_is_in_the_evaluation_state():
    split = v.split_state(np.full(STEPS, 3e-16), np.full(STEPS, 2e-3), FLOOR)
    assert split.scope == v.EVALUATION
    assert (split.params_first, split.buffers_first) == (None, 1)
    assert (split.params_gap, split.buffers_gap) == (3e-16, 2e-3)


def test_a_gap_in_the_parameters_is_in_training_whatever_the_buffers_do():
    late = np.where(np.arange(STEPS) >= 4, 1e-9, 1e-16)
    split = v.split_state(late, np.full(STEPS, 2e-3), FLOOR)
    assert split.scope == v.TRAINING and split.params_first == 5
    assert v.split_state(late, np.zeros(STEPS), FLOOR).scope == v.TRAINING
    assert v.split_state(np.zeros(STEPS), np.zeros(STEPS), FLOOR).scope is None
    nan = v.split_state(np.full(STEPS, np.nan), np.zeros(STEPS), FLOOR)
    assert nan.scope == v.TRAINING and math.isnan(nan.params_gap)


def test_the_verdicts_scope_needs_a_difference_and_defaults_to_training():
    within = v.classify(np.full(STEPS, 1e-16), F32_NOISE, F32_NOISE)
    within.split = v.split_state(np.zeros(STEPS), np.zeros(STEPS), FLOOR)
    assert within.scope is None
    apart = v.classify(np.full(STEPS, 2e-3), F32_NOISE, F32_NOISE)
    assert apart.scope == v.TRAINING  # a model without buffers: its whole state is trained
    apart.split = v.split_state(np.zeros(STEPS), np.full(STEPS, 2e-3), FLOOR)
    assert apart.scope == v.EVALUATION


def layer_block(estimator: str) -> dict:
    return {"meta": {"layer_hyperparameters": {"bn.running_var_estimator": estimator}}}


def test_the_running_variance_estimator_is_named_from_the_runs():
    torch_run, burn_run = layer_block("unbiased"), layer_block("biased")
    assert v.running_stats_cause(torch_run, burn_run) == (
        "the running-variance estimator (Burn biased, PyTorch unbiased)"
    )
    assert v.running_stats_cause(torch_run, torch_run) == (
        "the running-statistics update (both unbiased variance)"
    )


def test_the_running_statistics_are_the_last_link_of_the_chain():
    torch_run = {**run_block([0.1, 0.1]), **layer_block("unbiased")}
    burn_run = {**run_block([0.1, 0.1]), **layer_block("biased")}
    burn_run["meta"] |= {"schedule": {"kind": "constant"}, "clip_grad": None}
    torch_run["meta"] |= {"schedule": {"kind": "constant"}, "clip_grad": None}
    table = {"dparam_held_f64": [1e-16, 1e-16], "dparam_burn_running_stats": [2e-3, 2.1e-3]}
    further = v.further_causes(table, torch_run, burn_run)
    name = "the running-variance estimator (Burn biased, PyTorch unbiased)"
    assert further == [(name, 2.1e-3)]
    # Burn's values move nothing; the estimator is the whole gap, the arithmetic none of it.
    found = v.causes(2.1e-3, 1e-16, [], [], ARITHMETIC, further)
    assert found == [(name, pytest.approx(1.0), "measured")]


def test_the_estimator_row_is_measured_by_its_own_variant_not_as_a_held_value():
    rows = [{"hyperparameter": "bn.running_var_estimator", "torch": "unbiased", "burn": "biased"}]
    assert v.measured_apart(rows[0])
    found = v.causes(1.0, 0.0, rows, [], ARITHMETIC, [("the estimator", 1.0)])
    assert found == [("the estimator", 1.0, "measured")]


def test_the_schedule_is_named_from_either_run_and_the_lrs_compared_at_every_step():
    # PyTorch's run names its class and kind; Burn's run records its kind only
    step = {"kind": "step", "class": "StepLR"}
    assert v.schedule_cause(run_block([0.5, 0.25], step), {"lrs": [0.5, 0.25], "meta": {}}) == (
        "the schedule: PyTorch's recursive StepLR and Burn's closed form give the same lrs"
    )
    # a PyTorch run that records no schedule: the kind comes from Burn's
    unnamed = {"lrs": [0.5, 0.25], "meta": {"schedule": None}}
    assert v.schedule_cause(unnamed, run_block([0.5, 0.25], {"kind": "exponential"})) == (
        "the schedule: PyTorch's recursive exponential schedule and Burn's recursion seeded"
        " with initial/γ give the same lrs"
    )
    # lrs equal but for one step, and a step where both are 0 (no division by 0)
    assert v.lr_difference([0.0, 0.5, 0.25], [0.0, 0.5, 0.2]) == pytest.approx(0.2)
    assert v.lr_difference([0.0], [0.0]) == 0.0 and v.lr_difference([], []) == 0.0


def test_the_clipping_is_named_from_whichever_run_records_it():
    norm, value = {"norm": 1.0}, {"value": 0.5}
    scope = v.clipping_cause(run_block([0.1], clip=norm), run_block([0.1]))
    assert scope.startswith("the clipping scope: Burn clips each parameter tensor by its own norm")
    assert v.clipping_cause(run_block([0.1]), run_block([0.1], clip=norm)) == scope
    assert v.clipping_cause(run_block([0.1], clip=value), run_block([0.1], clip=value)) == (
        "the clipping: both clamp each gradient element"
    )


def test_values_measured_apart_each_get_their_share():
    """The chain's value links (replay's burn_value[K]) split the held values: eps moves the
    run 0.005 of a gap of 1.0, then momentum to 0.99, then held_f64 (alpha's f32 storage)
    to 0.995. eps is named although under MIN_SHARE; a value that moves nothing is not."""
    rows = [{"hyperparameter": "eps", "torch": "1e-08", "burn": "1e-05"},
            {"hyperparameter": "momentum", "torch": "0.0", "burn": "0.9"},
            {"hyperparameter": "centered", "torch": "false", "burn": "true"}]  # fmt: skip
    apart = [("eps", 0.005), ("momentum", 0.99), ("centered", 0.99)]
    found = v.causes(1.0, 0.995, rows, ["alpha"], ARITHMETIC, (), apart)
    assert found == [
        ("config diff: momentum (torch 0.0, burn 0.9)", pytest.approx(0.985), "measured"),
        ("config diff: eps (torch 1e-08, burn 1e-05)", pytest.approx(0.005), "measured"),
    ]
    # A differing row without a link of its own stays with the held values.
    found = v.causes(1.0, 1.0, rows, ["alpha"], ARITHMETIC, (), apart[:1])
    assert [name for name, *_ in found] == [
        "config diff: momentum (torch 0.0, burn 0.9); centered (torch false, burn true), with"
        " f32 storage of alpha",
        "config diff: eps (torch 1e-08, burn 1e-05)",
    ]
