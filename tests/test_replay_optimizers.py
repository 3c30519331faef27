"""replay.py on short real runs of both trainers: its replay reproduces Burn's f64 run and its
counterfactual PyTorch's, for every optimizer, schedule and clipping mode; and the variants
that measure the schedule and the clipping scope feed the verdict's causes."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import ADAM, SGD, small_config
from optimizer_examples import ADAGRAD, ADAMW, RMSPROP
from torch_burn_parity.analysis import replay as rp
from torch_burn_parity.analysis.gaps import param_matrix, step_gaps
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import experiment_block, read_dataset, write_run
from torch_burn_parity.io.run_tensors import materialize
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.models import model_specs, models
from torch_burn_parity.training.train_torch import train

PARAM_NAMES = model_specs.CNN1D.param_names  # the seed model's

STEPS = 8
LINEAR = {"kind": "linear", "final_lr": 0.002, "num_steps": 6}
# Every optimizer with every option away from its default, each with a schedule and clipping
# that bites (thresholds below the gradients' norms and values at the first steps).
# betas 0.35 and alpha 0.4: 1 − β and 1 − α are not exact in f32 (Sterbenz needs ≥ 0.5).
EXPERIMENTS = {
    "adamw": dict(ADAMW, betas=[0.35, 0.99], weight_decay=0.1, amsgrad=True, schedule=LINEAR,
                  clip_grad={"norm": 0.02}),
    "adam": dict(ADAM, betas=[0.35, 0.999], weight_decay=0.01, amsgrad=True,
                 schedule={"kind": "cosine", "min_lr": 0.001, "num_steps": 5},
                 clip_grad={"value": 0.003}),
    "adagrad": dict(ADAGRAD, lr_decay=0.01, weight_decay=0.01,
                    schedule={"kind": "exponential", "gamma": 0.8}, clip_grad={"norm": 0.05}),
    "rmsprop": dict(RMSPROP, alpha=0.4, momentum=0.9, centered=True, weight_decay=0.01,
                    schedule={"kind": "step", "step_size": 2, "gamma": 0.5},
                    clip_grad={"value": 0.01}),
    # Burn keeps its RMSProp momentum (0.9) and epsilon (1e-5): a config diff.
    "rmsprop_burn_defaults": dict(RMSPROP, clip_grad={"norm": 0.02},
                                  keep_defaults={"burn": ["momentum", "eps"]}),
    "sgd": dict(SGD, lr=0.5, momentum=0.9, weight_decay=0.001, nesterov=True,
                schedule=LINEAR, clip_grad={"norm": 0.1}),
    # Only the clipping scope differs: lr and threshold exact in f32, no f32 arithmetic.
    "sgd_clip_scope": dict(SGD, clip_grad={"norm": 0.25}),
    # AdaGrad with Burn's epsilon (1e-5) far above a gradient of ~1e-6 (fc.weight[1,19]).
    "adagrad_burn_eps": dict(ADAGRAD, keep_defaults={"burn": ["eps"]}),
}  # fmt: skip
MATCHED = [e for e in EXPERIMENTS if e != "adagrad_burn_eps"]


@pytest.fixture(scope="module")
def arrays(dataset):
    torch.set_num_threads(1)
    return read_dataset(dataset)[0]


@pytest.fixture(scope="module")
def runs(train, write_config, arrays) -> dict[str, tuple[dict, dict]]:
    """(PyTorch f64 block, Burn f64 block) of each experiment: the Burn binary, and
    train_torch's train() in this process."""
    config = small_config(STEPS, **EXPERIMENTS)
    path = write_config(config)
    out = {}
    for name in EXPERIMENTS:
        _, burn = train("burn", name, "f64", path)
        torch_block = train_torch_block(config, name, arrays)
        out[name] = (torch_block, experiment_block(burn, name))
    return out


def train_torch_block(config: dict, name: str, arrays) -> dict:
    return train(experiment_spec(config, name), arrays, "f64")


def gaps(arrays, variant: rp.Variant, reference: dict, grads: dict | None = None) -> np.ndarray:
    _, params = rp.run(arrays, variant, STEPS, 16, grads)
    return step_gaps(params, param_matrix(reference))


# Bounds from f64's rounding, not from what one CPU met. On recorded gradients the replay
# recomputes each update rule in another order of operations: a few ulps of the largest
# parameter per step (5.5 seen, rmsprop, on AVX-512 and with every cpu_path; RULE_ULPS leaves
# a factor of 3). With each framework's own backward pass, the verdicts' floor under the
# floor (verdict.ABSOLUTE_FLOOR, 64 ulps of O(1) values) is the bound.
RULE_ULPS = 16


def rule_bound(reference: dict) -> np.ndarray:
    """RULE_ULPS ulps of the reference's largest parameter (at least 1), per step."""
    largest = np.abs(param_matrix(reference)).max(axis=1)
    return RULE_ULPS * 2.0**-52 * np.maximum(largest, 1.0)


def test_every_case_is_exercised(runs):
    """The schedules change the lr, and every clipping threshold is below what it clips."""
    for name, (torch_run, burn_run) in runs.items():
        exp = EXPERIMENTS[name]
        if "schedule" in exp:
            assert len(set(burn_run["lrs"])) > 1 and len(set(torch_run["lrs"])) > 1, name
        clip = exp.get("clip_grad")
        if not clip:
            continue
        grads = [np.asarray(torch_run["trajectory"]["grads"][n][0]) for n in PARAM_NAMES]
        if "norm" in clip:  # some tensor, hence the global norm too, is above the threshold
            assert max(np.linalg.norm(g) for g in grads) > clip["norm"], name
        else:
            assert max(np.abs(g).max() for g in grads) > clip["value"], name
        assert burn_run["meta"]["clip_scope"] == "per parameter tensor"


@pytest.mark.parametrize("name", MATCHED)
def test_replay_reproduces_burn_and_counterfactual_pytorch(runs, arrays, name):
    torch_run, burn_run = runs[name]
    chosen = rp.variants(torch_run, burn_run)
    replay, reference = chosen["replay"]
    assert reference is burn_run
    assert (gaps(arrays, replay, burn_run) <= vd.ABSOLUTE_FLOOR).all()
    counter, reference = chosen["counterfactual"]
    assert reference is torch_run
    assert (gaps(arrays, counter, torch_run) <= vd.ABSOLUTE_FLOOR).all()


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_on_recorded_gradients_the_rules_match_to_an_ulp_or_so(runs, arrays, name):
    """Fed each run's own recorded gradients (taking the two backward passes' f64 rounding
    out), the replay and the counterfactual check the update rules alone."""
    torch_run, burn_run = runs[name]
    chosen = rp.variants(torch_run, burn_run)
    burn_grads, torch_grads = burn_run["trajectory"]["grads"], torch_run["trajectory"]["grads"]
    on_burn = gaps(arrays, chosen["replay"][0], burn_run, burn_grads)
    on_torch = gaps(arrays, chosen["counterfactual"][0], torch_run, torch_grads)
    assert (on_burn <= rule_bound(burn_run)).all()
    assert (on_torch <= rule_bound(torch_run)).all()


def test_adagrads_epsilon_amplifies_the_backward_passes_rounding(runs, arrays):
    """AdaGrad with ε = 1e-5 ≫ |g| ≈ 1e-6 moves a parameter by lr·g/ε: the ~1e-18 by which
    the two frameworks' f64 gradients differ becomes ~1e-14 in the replay on PyTorch's
    gradients, and goes away on Burn's."""
    torch_run, burn_run = runs["adagrad_burn_eps"]
    replay = rp.variants(torch_run, burn_run)["replay"][0]
    on_torch_grads = gaps(arrays, replay, burn_run)
    on_burn_grads = gaps(arrays, replay, burn_run, burn_run["trajectory"]["grads"])
    assert rule_bound(burn_run)[0] < on_torch_grads[0] < 1e-12
    assert (on_burn_grads <= rule_bound(burn_run)).all()


def test_the_variants_are_those_the_experiment_needs(runs):
    assert set(rp.variants(*runs["sgd"])) == {
        "replay", "counterfactual", "held_f64", "burn_lrs", "burn_clipping"
    }  # fmt: skip
    assert set(rp.variants(*runs["sgd_clip_scope"])) == {
        "replay", "counterfactual", "held_f64", "burn_clipping"
    }  # fmt: skip
    assert set(rp.variants(*runs["adagrad_burn_eps"])) == {
        "replay", "counterfactual", "burn_value[eps]", "held_f64"
    }  # fmt: skip


def test_each_variant_uses_the_lrs_and_clipping_it_names(runs, arrays):
    """Burn's recorded lrs differ from PyTorch's by ulps only, too little for the gaps to
    show which a variant uses: check it directly, and the clipping by its effect."""
    torch_run, burn_run = runs["sgd"]
    assert torch_run["lrs"] != burn_run["lrs"]
    chosen = rp.variants(torch_run, burn_run)
    lrs = {key: variant.lrs for key, (variant, _) in chosen.items()}
    assert lrs == {"replay": burn_run["lrs"], "counterfactual": torch_run["lrs"],
                   "held_f64": torch_run["lrs"], "burn_lrs": burn_run["lrs"],
                   "burn_clipping": burn_run["lrs"]}  # fmt: skip
    # Clipping the same gradients: PyTorch's one norm vs Burn's norm per tensor.
    clipped = {}
    for key in ("counterfactual", "held_f64", "burn_lrs", "burn_clipping", "replay"):
        model = models.build("cnn1d", arrays, torch.float64)
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        chosen[key][0].clip(list(model.parameters()))
        clipped[key] = [p.grad.flatten()[0].item() for p in model.parameters()]
    sizes = [p.numel() for p in models.build("cnn1d", arrays, torch.float64).parameters()]
    one_norm = [0.1 / (sum(sizes) ** 0.5 + 1e-6)] * 4
    assert clipped["counterfactual"] == pytest.approx(one_norm, rel=1e-12)
    # Burn's values include its threshold, the f32 0.1 (PyTorch's scope, though).
    held = float(np.float32(0.1))
    assert clipped["held_f64"] == clipped["burn_lrs"]
    assert clipped["held_f64"] == pytest.approx([x * held / 0.1 for x in one_norm], rel=1e-12)
    assert clipped["burn_clipping"] == pytest.approx([held / n**0.5 for n in sizes], rel=1e-12)
    assert clipped["replay"] == clipped["burn_clipping"]


def test_the_tables_have_a_column_per_measured_variant(runs, dataset, tmp_path):
    for name, values, extra in (("sgd", [], ["dparam_burn_lrs", "dparam_burn_clipping"]),
                                ("adagrad_burn_eps", ["dparam_burn_value[eps]"], [])):  # fmt: skip
        files = {}
        for side, block in zip(("torch", "burn"), runs[name], strict=True):
            files[side] = tmp_path / f"{name}-{side}.json"
            write_block(files[side], name, block, dataset)
        out = {k: tmp_path / f"{name}-{k}" for k in ("r.csv", "r.md", "c.csv", "c.md")}
        rp.main(["--experiment", name, "--data", str(dataset),
                 "--torch-f64", str(files["torch"]), "--burn-f64", str(files["burn"]),
                 "--replay-csv", str(out["r.csv"]), "--replay-md", str(out["r.md"]),
                 "--counterfactual-csv", str(out["c.csv"]),
                 "--counterfactual-md", str(out["c.md"])])  # fmt: skip
        replay = pd.read_csv(out["r.csv"])
        counter = pd.read_csv(out["c.csv"])
        assert list(replay.columns) == ["step", "dloss", "dparam", "where"]
        assert list(counter.columns) == ["step", "dloss", "dparam", "where", *values,
                                         "dparam_held_f64", *extra]  # fmt: skip
        assert (replay["dparam"] <= 1e-13).all() and (counter["dparam"] <= 1e-14).all()


def write_block(path, name: str, block: dict, dataset) -> None:
    """A run block as a run file (the in-process PyTorch run lacks the input checksum)."""
    block = materialize(block)  # its tensors inline: the file stands alone
    block["meta"] = dict(block["meta"])
    block["meta"].setdefault("input_sha256", read_dataset(dataset)[1])
    block["meta"].setdefault("threads", 1)
    write_run(path, {name: block})


def measured(runs, arrays, name: str) -> tuple[float, float, list[tuple[str, float]]]:
    """(f64 gap, held-values gap, further causes) of one experiment, as the report reads
    them from replay.py's tables."""
    torch_run, burn_run = runs[name]
    f64_gap = float(np.max(step_gaps(param_matrix(torch_run), param_matrix(burn_run))))
    chosen = rp.variants(torch_run, burn_run)
    columns = {
        f"dparam_{key}": gaps(arrays, chosen[key][0], torch_run)
        for key in ("held_f64", "burn_lrs", "burn_clipping")
        if key in chosen
    }
    further = vd.further_causes(columns, torch_run, burn_run)
    return f64_gap, float(np.max(columns["dparam_held_f64"])), further


def test_the_clipping_scope_is_named_when_it_is_the_only_difference(runs, arrays):
    f64_gap, held_gap, further = measured(runs, arrays, "sgd_clip_scope")
    assert f64_gap > 1e-6 and held_gap == 0.0
    found = vd.causes(f64_gap, held_gap, [], [], "Burn's f32 arithmetic in its update", further)
    name, share, how = found[0]
    assert name == (
        "the clipping scope: Burn clips each parameter tensor by its own norm, PyTorch all"
        " parameters by one norm (plus 1e-6)"
    )
    assert share > 0.99 and how == "measured" and len(found) == 1


def test_values_then_clipping_share_the_gap_and_leave_no_remainder(runs, arrays):
    """Burn's momentum 0.9 (PyTorch: 0) and its clipping scope both move the run: the values
    measured first, the clipping with Burn's values in place takes the rest (RMSProp's f32
    1 − α at 0.99 is exact, so Burn's arithmetic adds nothing)."""
    f64_gap, held_gap, further = measured(runs, arrays, "rmsprop_burn_defaults")
    row = {"hyperparameter": "momentum", "torch": "0.0", "burn": "0.9"}
    scope = {"hyperparameter": "clip_grad.norm scope", "torch": "one norm", "burn": "each"}
    found = vd.causes(f64_gap, held_gap, [row, scope], ["alpha"], "arithmetic", further)
    assert [name for name, *_ in found] == [
        "config diff: momentum (torch 0.0, burn 0.9), with f32 storage of alpha",
        "the clipping scope: Burn clips each parameter tensor by its own norm, PyTorch all"
        " parameters by one norm (plus 1e-6)",
    ]
    assert found[0][1] == pytest.approx(held_gap / f64_gap)
    assert found[0][1] + found[1][1] == pytest.approx(1.0, abs=1e-3)


def test_the_schedule_is_named_with_how_far_the_lrs_differ(runs, arrays):
    _, held_gap, further = measured(runs, arrays, "sgd")
    (schedule, gap), (clipping, _) = further
    pattern = (
        r"the schedule: PyTorch's recursive LinearLR vs Burn's closed form differ by up to"
        r" (\S+) relative"
    )
    rel = float(re.fullmatch(pattern, schedule).group(1))
    torch_run, burn_run = runs["sgd"]
    assert rel == pytest.approx(vd.lr_difference(torch_run["lrs"], burn_run["lrs"]), rel=0.01)
    assert 0 < rel < 1e-13  # ulps: recursive vs closed form
    assert abs(gap - held_gap) < 1e-13  # what Burn's lrs add to Burn's values: ulps too
    assert clipping.startswith("the clipping scope")


def test_burns_differing_values_are_added_one_at_a_time(runs, arrays):
    """Burn keeps RMSProp's eps 1e-5 and momentum 0.9 (PyTorch: 1e-8 and 0). The chain adds
    eps, then momentum, then every value as Burn holds it (held_f64, adding alpha's f32
    storage); each value is named with its own share. At step 1 momentum has nothing to
    carry yet, so eps alone is all of that step's gap."""
    torch_run, burn_run = runs["rmsprop_burn_defaults"]
    chosen = rp.variants(torch_run, burn_run)
    links = [key for key in chosen if key.startswith("burn_value[")]
    assert links == ["burn_value[eps]", "burn_value[momentum]"]
    assert list(chosen).index("burn_value[momentum]") < list(chosen).index("held_f64")
    assert not [key for key in rp.variants(*runs["rmsprop"]) if key.startswith("burn_value[")]
    columns = {f"dparam_{key}": gaps(arrays, chosen[key][0], torch_run) for key in (*links,
               "held_f64")}  # fmt: skip
    eps, both, held = columns.values()
    assert eps[0] > 1e-6 and both[0] == pytest.approx(eps[0], rel=1e-9)
    assert both.max() > 5 * eps.max() and held.max() == pytest.approx(both.max(), rel=1e-3)
    rows = [{"hyperparameter": "eps", "torch": "1e-08", "burn": "1e-05"},
            {"hyperparameter": "momentum", "torch": "0.0", "burn": "0.9"}]  # fmt: skip
    found = vd.causes(float(held.max()), float(held.max()), rows, ["alpha"], "arithmetic", (),
                      vd.value_gaps(pd.DataFrame(columns)))  # fmt: skip
    names = {name: share for name, share, _ in found}
    eps_share = names.pop("config diff: eps (torch 1e-08, burn 1e-05)")
    momentum_share = names.pop("config diff: momentum (torch 0.0, burn 0.9)")
    assert eps_share == pytest.approx(eps.max() / held.max())
    assert momentum_share == pytest.approx((both.max() - eps.max()) / held.max())
    assert all(share < vd.MIN_SHARE for share in names.values())  # alpha's storage, if named
