"""Parameter groups and Muon: refused before any job when they cannot run, resolved into
exact names, built by PyTorch with its own means, replayed on the PyTorch side."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from param_group_cases import ADAMW, GROUPED, MUON, MUON_REST, SGD_GROUP
from torch_burn_parity.analysis import replay
from torch_burn_parity.analysis.config_diff import diff_rows
from torch_burn_parity.analysis.gaps import param_matrix
from torch_burn_parity.analysis.muon_rules import MuonUpdate, burn_newton_schulz
from torch_burn_parity.config import resolve
from torch_burn_parity.config.check_config import SCHEMA, config_problems, load_schema
from torch_burn_parity.config.parity_config import ConfigError
from torch_burn_parity.models.model_specs import spec as model_spec
from torch_burn_parity.optimizers.muon import ratio
from torch_burn_parity.training.train_torch import train


def config(**experiments) -> dict:
    return {"steps": 6, "batch_size": 16, "experiments": experiments}


def lines(**experiments) -> list[str]:
    return [str(p) for p in config_problems(config(**experiments), load_schema(SCHEMA))]


AT = "experiments.g.param_groups"


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([dict(MUON, params="nope.*")],
         f"{AT}[0].params: 'nope.*' matches no parameter of cnn1d (its parameters: conv.weight,"
         " conv.bias, fc.weight, fc.bias)"),
        ([dict(MUON, params="fc.weight"), {"params": ["fc.*"], "weight_decay": 0.0}],
         f"{AT}[1].params[0]: fc.weight is already in param_groups[0]: a parameter takes one"
         " group"),
        ([dict(MUON, params="conv.weight")],
         f"{AT}[0].params: muon takes 2-D parameters only: conv.weight is [4, 1, 5]"),
        ([dict(MUON, params="fc.weight", lrr=0.1)],
         f"{AT}[0].lrr: unknown key of a parameter group (known: params, optimizer, keep_defaults,"
         " lr, weight_decay, momentum, nesterov, ns_coefficients, eps, ns_steps, adjust_lr_fn);"
         " did you mean 'lr'?"),
        ([{"params": "fc.weight", "optimizer": "muon", "lr": 0.02}],
         f"{AT}[0].weight_decay: missing hyperparameter of muon"),
        ([{"params": "*.bias", "betas": [0.8, 0.999]}],
         f"{AT}[0].betas: an adamw group takes the experiment's optimizer and betas (Burn's run"
         " records the per-step factors of those only)"),
        ([{"params": "*.bias", "weight_decay": -1.0}],
         f"{AT}[0].weight_decay: -1.0 is out of range (weight_decay ≥ 0)"),
        ([{"params": "*.bias", "keep_defaults": {"burn": ["lr"]}}],
         f"{AT}[0].keep_defaults.burn[0]: 'lr' has no burn default for adamw (it can keep: betas,"
         " eps, weight_decay, amsgrad)"),
    ],
)  # fmt: skip
def test_a_group_that_cannot_run_is_refused_in_one_line(groups, expected):
    found = lines(g=dict(ADAMW, param_groups=groups))
    assert found[0] == expected, found
    assert all("\n" not in line for line in found)


def test_muon_on_what_no_group_takes_and_a_group_lr_under_a_schedule_are_refused():
    assert lines(g=dict(MUON)) == [
        "experiments.g.optimizer: muon takes 2-D parameters only: conv.weight is [4, 1, 5],"
        " in no group (give it one)"
    ]
    cosine = {"kind": "cosine", "min_lr": 0.001, "num_steps": 6}
    assert lines(g=dict(GROUPED, schedule=cosine)) == [
        f"{AT}[0].lr: a group's own lr needs a constant schedule (the schedule scales the"
        " experiment's lr)"
    ]
    same_lr = dict(GROUPED, schedule=cosine, param_groups=[dict(MUON, lr=0.01, params="fc.*t")])
    assert lines(g=same_lr) == []
    assert lines(g=GROUPED) == lines(m=MUON_REST) == []


def test_a_group_resolves_to_exact_names_in_model_order():
    groups = [dict(SGD_GROUP, params=["fc.bias", "conv.*"])]
    spec = resolve.experiment_spec(config(m=dict(MUON_REST, param_groups=groups)), "m")
    (group,) = spec.param_groups
    assert group.params == ["conv.weight", "conv.bias", "fc.bias"]
    assert group.optimizer == "sgd" and group.requested["burn"]["lr"] == 0.1
    # the experiment's own Muon: its Newton–Schulz settings filled in, both frameworks'
    assert spec.hyperparameters["ns_coefficients"] == [3.4445, -4.775, 2.0315]
    assert spec.requested["torch"]["ns_steps"] == spec.requested["burn"]["ns_steps"] == 5
    # a group of the experiment's optimizer takes its values, overriding what it gives
    bias = {"params": "*.bias", "weight_decay": 0.0}
    spec = resolve.experiment_spec(config(g=dict(ADAMW, param_groups=[bias])), "g")
    assert spec.param_groups[0].hyperparameters == dict(
        {k: v for k, v in ADAMW.items() if k != "optimizer"}, weight_decay=0.0
    )
    assert resolve.experiment_spec(config(g=ADAMW), "g").param_groups == []


def test_a_spec_with_a_broken_group_is_refused_naming_it(tmp_path):
    spec = resolve.experiment_spec(config(g=GROUPED), "g").as_dict()
    path = tmp_path / "g.json"
    for change, message in [
        (lambda s: s["param_groups"][0].update(optimizer="lion"),
         "param_groups[0]: unknown optimizer 'lion'"),
        (lambda s: s["param_groups"][0]["hyperparameters"].pop("ns_steps"),
         "param_groups[0]: hyperparameters of muon: missing ns_steps"),
        (lambda s: s.update(param_groups={}), "param_groups must be a list of groups"),
        (lambda s: s["param_groups"][0].pop("params"), "param_groups[0]: missing params"),
    ]:  # fmt: skip
        broken = copy.deepcopy(spec)
        change(broken)
        path.write_text(json.dumps(broken))
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            resolve.read_spec(path)


@pytest.fixture(scope="module")
def muon_runs(dataset):
    """PyTorch's f64 run of GROUPED (6 steps), and a stand-in for Burn's f64 run: the same
    values, Burn's shapes of cnn1d's parameters, AdamW's bias corrections in f64."""
    from torch_burn_parity.io.parity_io import read_dataset

    arrays, _ = read_dataset(dataset)
    spec = resolve.experiment_spec(dict(config(g=GROUPED), threads=1), "g")
    torch_run = train(spec, arrays, "f64")
    burn_run = copy.deepcopy(torch_run)
    shapes = model_spec("cnn1d").param_shapes()
    burn_run["meta"]["burn_shapes"] = {
        n: [s[::-1] if len(s) == 2 else s] for n, s in shapes.items()
    }
    burn_run["burn_scalars"] = {
        "bias_correction1": [1 - 0.9**t for t in range(1, 7)],
        "bias_correction2": [1 - 0.999**t for t in range(1, 7)],
    }
    return arrays, torch_run, burn_run


def test_pytorch_builds_each_kind_once_and_records_each_group(muon_runs):
    _, torch_run, _ = muon_runs
    meta = torch_run["meta"]
    assert meta["optimizer"] == "adamw" and meta["hyperparameters"]["weight_decay"] == 0.01
    (group,) = meta["param_groups"]
    assert group["params"] == ["fc.weight"] and group["optimizer"] == "muon"
    assert group["hyperparameters"]["ns_coefficients"] == [3.4445, -4.775, 2.0315]
    assert group["hyperparameters"]["adjust_lr_fn"] == "original"


def test_the_counterfactual_reproduces_pytorchs_muon_and_burns_choices_move_it(muon_runs):
    """PyTorch's Muon replayed by the counterfactual matches its run to f64 rounding, though
    its Newton–Schulz runs in bfloat16; Burn's lr factor (fc.weight held [48, 3]: ×4) and
    Burn's orthogonalisation each move it far from PyTorch's run."""
    arrays, torch_run, burn_run = muon_runs
    chosen = replay.variants(torch_run, burn_run)
    assert list(chosen) == ["replay", "counterfactual", "held_f64", "burn_lr_adjustment",
                            "burn_newton_schulz"]  # fmt: skip
    reference = param_matrix(torch_run)

    def gap(key: str) -> float:
        _, snapshots = replay.run(arrays, chosen[key][0], 6, 16, model="cnn1d")
        return float(np.abs(snapshots - reference).max())

    assert gap("counterfactual") < 1e-15
    assert gap("burn_lr_adjustment") > 1e-3
    assert gap("burn_newton_schulz") > 1e-3


def test_burns_newton_schulz_orthogonalises_in_the_tensors_dtype():
    g = torch.tensor([[1.0, 0.5, 0.1], [0.2, 1.0, 0.3]], dtype=torch.float64)
    hp = dict(MUON, ns_coefficients=[3.4445, -4.775, 2.0315], eps=1e-7, ns_steps=5)
    done = burn_newton_schulz(g, hp)
    assert done.dtype == torch.float64 and done.shape == g.shape
    # the quintic pushes the singular values towards ~1 (into about [0.7, 1.2])
    singular = torch.linalg.svdvals(done)
    assert ((singular > 0.6) & (singular < 1.3)).all(), singular
    # the tall orientation is the wide one transposed (to f64 rounding)
    assert (burn_newton_schulz(g.T.contiguous(), hp) - done.T).abs().max() < 1e-14
    # PyTorch's runs in bfloat16: apart from Burn's f64 by far more than f64 rounding
    update = MuonUpdate(dict(hp, adjust_lr_fn="original"), "torch", "torch", {})
    torchs = update.direction({}, "w", g)
    assert torchs.dtype == torch.bfloat16
    assert 1e-4 < (torchs.double() - done).abs().max() < 0.1


@pytest.mark.parametrize(
    ("fn", "shape", "factor"),
    [("original", [3, 48], 1.0), ("original", [48, 3], 4.0), ("original", [8, 8], 1.0),
     ("match_rms_adamw", [3, 48], 0.2 * 48**0.5), ("match_rms_adamw", [48, 3], 0.2 * 48**0.5)],
)  # fmt: skip
def test_the_lr_factor_reads_the_shape(fn, shape, factor):
    assert ratio(fn, shape) == pytest.approx(factor, rel=1e-15)


def test_the_config_diff_names_each_groups_rows_and_burns_lr_factor():
    spec = resolve.experiment_spec(config(g=GROUPED), "g")
    rows = diff_rows(spec, burn_shapes={"fc.weight": [[48, 3]]})
    names = [r["hyperparameter"] for r in rows]
    assert names[names.index("param_groups[0].params") + 1] == "param_groups[0].lr"
    by_name = {r["hyperparameter"]: r for r in rows}
    adjust = by_name["param_groups[0].Muon lr adjustment"]
    assert (adjust["torch"], adjust["burn"], adjust["status"]) == (
        "fc.weight [3, 48]: ×1", "[48, 3]: ×4", "differs")  # fmt: skip
    assert by_name["param_groups[0].Newton–Schulz dtype"]["torch"] == "bfloat16"
    assert by_name["param_groups[0].momentum"]["status"] == "f32 storage"


def muon_meta(optimizer: str = "adamw", groups=None, shapes=None) -> dict:
    """A transformer run's meta with Muon in a group (or as its own optimizer)."""
    if groups is None:
        groups = [{"params": ["enc.linear1.weight", "fc.weight"], "optimizer": "muon",
                   "hyperparameters": {"adjust_lr_fn": "original"}}]  # fmt: skip
    shapes = shapes or {"enc.linear1.weight": [[8, 16]], "fc.weight": [[128, 3]],
                        "embed.weight": [[1, 8]]}  # fmt: skip
    return {"meta": {"model": "transformer", "optimizer": optimizer, "param_groups": groups,
                     "hyperparameters": {"adjust_lr_fn": "match_rms_adamw"},
                     "burn_shapes": shapes, "dtype": "f64"}}  # fmt: skip


def test_the_lr_adjustment_cause_names_how_many_differ_and_the_largest():
    from torch_burn_parity.judgement.verdict import lr_adjustment_cause, muon_parameters

    run = muon_meta()
    assert muon_parameters(run) == ["enc.linear1.weight", "fc.weight"]
    assert lr_adjustment_cause(run, run) == (
        "Muon's lr adjustment reads the shape each framework holds (Burn's Linear weight is"
        " [in, out]): its factor differs for 2 of 2 Muon parameters, most for fc.weight"
        " (PyTorch [3, 128] ×1, Burn [128, 3] ×6.53)"
    )
    # match_rms_adamw is symmetric in the two dimensions: the same factor in both
    rms = {"adjust_lr_fn": "match_rms_adamw"}
    symmetric = muon_meta(groups=[{"params": ["fc.weight"], "optimizer": "muon",
                                   "hyperparameters": rms}])  # fmt: skip
    assert lr_adjustment_cause(symmetric, symmetric) == (
        "Muon's lr adjustment (the same factor in both)"
    )


def test_muon_as_the_experiments_optimizer_covers_what_no_group_takes():
    from torch_burn_parity.judgement.verdict import (
        muon_hyperparameters,
        muon_parameters,
        newton_schulz_cause,
    )

    rest = [{"params": ["conv.weight", "conv.bias", "fc.bias"], "optimizer": "sgd",
             "hyperparameters": {}}]  # fmt: skip
    run = muon_meta("muon", groups=rest)
    run["meta"]["model"] = "cnn1d"
    assert muon_parameters(run) == ["fc.weight"]
    assert muon_hyperparameters(run) == {"adjust_lr_fn": "match_rms_adamw"}
    assert muon_hyperparameters(muon_meta()) == {"adjust_lr_fn": "original"}
    assert muon_hyperparameters(muon_meta(groups=[])) is None
    assert newton_schulz_cause(run, run) == (
        "Muon's Newton–Schulz: PyTorch's in bfloat16 (on its averaged momentum), Burn's in the"
        " tensor's dtype (f64, on its summed momentum)"
    )


# ------------------------------------------------------------------ each check, one by one


def test_a_groups_own_optimizer_is_checked_like_an_experiments():
    nesterov = dict(SGD_GROUP, params="conv.*", nesterov=True)  # without momentum
    accumulator = {"params": "fc.bias", "optimizer": "adagrad", "lr": 0.1, "lr_decay": 0.0,
                   "eps": 1e-10, "weight_decay": 0.0, "initial_accumulator_value": 0.1}  # fmt: skip
    found = lines(g=dict(GROUPED, param_groups=[3, dict(MUON, params="fc.weight"), nesterov,
                                                 accumulator]))  # fmt: skip
    assert [line.split(": ")[0] for line in found] == [
        f"{AT}[0]",
        f"{AT}[2].nesterov",
        f"{AT}[3].initial_accumulator_value",
    ], found
    # the experiment's keep_defaults, inherited, are not checked again at the group
    kept = dict(GROUPED, keep_defaults={"burn": ["eps"]},
                param_groups=[{"params": "*.bias", "weight_decay": 0.0}])  # fmt: skip
    assert lines(g=kept) == []
    spec = resolve.experiment_spec(config(g=kept), "g")
    assert spec.param_groups[0].keep_defaults == {"torch": [], "burn": ["eps"]}


def test_a_group_check_goes_on_past_a_group_the_schema_refuses():
    from torch_burn_parity.config.param_groups import group_problems, members

    broken = {"params": "fc.weight", "optimizer": "lion"}
    exp = dict(ADAMW, param_groups=[broken, {"params": "nope"}])
    assert [m for _, m in group_problems("e", exp)] == [
        "'nope' matches no parameter of cnn1d (its parameters: conv.weight, conv.bias,"
        " fc.weight, fc.bias)"
    ]
    assert group_problems("e", dict(ADAMW, param_groups="fc.weight")) == []
    assert group_problems("e", dict(ADAMW, model=3, param_groups=[{"params": "x"}])) == []
    no_kind = dict(GROUPED, schedule={})  # the schema names the missing kind
    assert group_problems("e", no_kind) == []
    unknown = group_problems("e", dict(ADAMW, param_groups=[{"params": "*.bias", "zzz": 1}]))
    assert unknown[0][1].endswith("lr, betas, eps, weight_decay, amsgrad)")
    adam = group_problems("e", dict(ADAMW, param_groups=[dict(params="*.bias", optimizer="adam",
                                                              lr=0.1)]))  # fmt: skip
    assert adam[0][0][-1] == "optimizer"
    groups = [{"params": ["enc.linear?.weight", "fc.*"]}]
    exp = dict(ADAMW, model="transformer", param_groups=groups)
    assert members(exp) == [["enc.linear1.weight", "enc.linear2.weight", "fc.weight", "fc.bias"]]


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([{"params": "fc.weight", "optimizer": "lion", "lr": 0.1}],
         "experiments.e.param_groups[0].optimizer: unknown optimizer 'lion' (known: sgd, adam,"
         " adamw, adagrad, rmsprop, muon)"),
        ([{"params": "nope"}, {"params": "nope2"}],
         "experiments.e.param_groups[0].params: 'nope' matches no parameter of cnn1d"),
        ([{"params": "fc.weight", "optimizer": "muon", "lr": 0.02, "weight_decay": 0.0,
           "momentum": 0.95, "nesterov": True, "eps": "small"}],
         "experiments.e.param_groups[0].eps: expected a number, got 'small'"),
        ([{"params": "fc.weight", "optimizer": "muon", "lr": 0.02, "weight_decay": 0.0,
           "nesterov": True}],
         "experiments.e.param_groups[0].momentum: missing hyperparameter for muon"),
    ],
)  # fmt: skip
def test_resolving_a_broken_group_names_it(groups, message):
    with pytest.raises(ConfigError) as error:
        resolve.experiment_spec(config(e=dict(ADAMW, param_groups=groups)), "e")
    assert str(error.value).startswith(message), str(error.value)


def test_group_rows_are_measured_apart_like_the_experiments():
    from torch_burn_parity.judgement.verdict import measured_apart

    for name, apart in [("param_groups[0].Newton–Schulz dtype", True), ("Muon lr adjustment", True),
                        ("param_groups[1].Muon lr adjustment", True), ("param_groups[0].lr", False),
                        ("param_groups[0].schedule", True), ("lr", False),
                        ("param_groups[0].bn.running_var_estimator", True)]:  # fmt: skip
        assert measured_apart({"hyperparameter": name}) is apart, name


def run_file(path, framework: str, shapes: dict | None = None, model: str = "cnn1d") -> None:
    """A run file of no steps: only the meta the config diff reads."""
    names = model_spec(model).param_names
    buffers = {n: [] for n in model_spec(model).buffer_names}
    meta = {"model": model, "layer_hyperparameters": {}}
    if shapes is not None:
        meta["burn_shapes"] = shapes
    block = {"losses": [], "final": {}, "params": {},
             "trajectory": {"params": {n: [] for n in names}, "grads": {n: [] for n in names},
                            "buffers": buffers}, "meta": meta}  # fmt: skip
    path.write_text(json.dumps({"g": block}))


def test_the_config_diff_takes_burns_shapes_from_its_run(tmp_path):
    from torch_burn_parity.analysis import config_diff

    spec = tmp_path / "g.json"
    spec.write_text(json.dumps(resolve.experiment_spec(config(g=GROUPED), "g").as_dict()))
    run_file(tmp_path / "torch.json", "torch")
    run_file(tmp_path / "burn.json", "burn", {"fc.weight": [[48, 3]]})
    out = tmp_path / "diff.csv"
    config_diff.main(["--spec", str(spec), "--torch-run", str(tmp_path / "torch.json"),
                      "--burn-run", str(tmp_path / "burn.json"), "--csv", str(out),
                      "--md", str(tmp_path / "diff.md")])  # fmt: skip
    text = out.read_text()
    assert (
        'param_groups[0].Muon lr adjustment,"fc.weight [3, 48]: ×1","[48, 3]: ×4",differs' in text
    )
    assert "param_groups[0].params,fc.weight,fc.weight,same,optimizer muon" in text
    layers, shapes = config_diff.recorded((tmp_path / "torch.json", tmp_path / "burn.json"),
                                          "cnn1d")  # fmt: skip
    assert (layers, shapes) == (({}, {}), {"fc.weight": [[48, 3]]})
    # without Burn's run the lr factor is not guessed
    rows = diff_rows(resolve.experiment_spec(config(g=GROUPED), "g"))
    assert not [r for r in rows if r["hyperparameter"].endswith("Muon lr adjustment")]


def test_the_causes_name_the_parameter_its_factor_differs_most_for_and_the_dtype():
    from torch_burn_parity.judgement.verdict import lr_adjustment_cause, newton_schulz_cause

    groups = [{"params": ["embed.weight", "enc.linear2.weight"], "optimizer": "muon",
               "hyperparameters": {"adjust_lr_fn": "original"}}]  # fmt: skip
    run = muon_meta(groups=groups, shapes={"embed.weight": [[1, 8]],
                                           "enc.linear2.weight": [[16, 8]]})  # fmt: skip
    # embed.weight: ×2.83 in PyTorch [8, 1], ×1 in Burn; enc.linear2.weight: ×1 vs ×1.41
    assert lr_adjustment_cause(run, run).endswith(
        "differs for 2 of 2 Muon parameters, most for embed.weight (PyTorch [8, 1] ×2.83,"
        " Burn [1, 8] ×1)"
    )
    run["meta"]["dtype"] = "f32"
    assert "Burn's in the tensor's dtype (f32," in newton_schulz_cause(run, run)


def test_the_lr_factor_rows_cover_each_muon_parameter_burns_run_shows():
    groups = [{"params": ["enc.self_attn.out_proj.weight", "fc.weight"], "optimizer": "muon",
               "lr": 0.02, "weight_decay": 0.0, "momentum": 0.95, "nesterov": True}]  # fmt: skip
    spec = resolve.experiment_spec(config(t=dict(ADAMW, model="transformer",
                                                 param_groups=groups)), "t")  # fmt: skip
    rows = [r for r in diff_rows(spec, burn_shapes={"fc.weight": [[128, 3]]})
            if r["hyperparameter"].endswith("Muon lr adjustment")]  # fmt: skip
    assert [(r["torch"], r["status"]) for r in rows] == [("fc.weight [3, 128]: ×1", "differs")]
    assert rows[0]["note"] == (
        "original: lr × factor of the shape each framework holds; measured apart by the replay"
    )
    square = {"enc.self_attn.out_proj.weight": [[8, 8]], "fc.weight": [[128, 3]]}
    rows = [r for r in diff_rows(spec, burn_shapes=square)
            if r["hyperparameter"].endswith("Muon lr adjustment")]  # fmt: skip
    assert [r["status"] for r in rows] == ["same", "differs"]


def test_runs_the_config_diff_cannot_use_are_named(tmp_path):
    from torch_burn_parity.analysis import config_diff
    from torch_burn_parity.io.parity_io import FormatError

    run_file(tmp_path / "torch.json", "torch", model="cnn_bn")
    run_file(tmp_path / "burn.json", "burn")
    paths = (tmp_path / "torch.json", tmp_path / "burn.json")
    with pytest.raises(FormatError) as error:
        config_diff.recorded(paths, "transformer")
    assert str(error.value) == f"{paths[0]}: a run of model cnn_bn, the spec's is transformer"
    run_file(tmp_path / "torch.json", "torch")
    block = json.loads(paths[1].read_text())
    block["g"]["meta"]["layer_hyperparameters"] = [1]
    paths[1].write_text(json.dumps(block))
    with pytest.raises(FormatError) as error:
        config_diff.recorded(paths, "cnn1d")
    assert str(error.value) == f"{paths[1]}: meta.layer_hyperparameters must be an object"


def test_each_groups_rows_follow_the_last_groups():
    groups = [
        dict(MUON, params="fc.weight"),
        {"params": ["conv.bias", "fc.bias"], "weight_decay": 0.0},
    ]
    spec = resolve.experiment_spec(config(g=dict(ADAMW, param_groups=groups)), "g")
    by_name = {r["hyperparameter"]: r for r in diff_rows(spec)}
    assert by_name["param_groups[0].params"]["torch"] == "fc.weight"
    assert by_name["param_groups[1].params"]["burn"] == "conv.bias, fc.bias"
    assert by_name["param_groups[1].weight_decay"]["torch"] == "0.0"


def test_burns_lr_per_muon_tensor_by_hand_makes_the_factor_the_same():
    """burn_fixes [muon_lr_per_parameter]: the row says Burn's lr is scaled by PyTorch's
    factor ÷ Burn's and is the same; a tensor Burn holds as PyTorch does needs no scaling."""
    from torch_burn_parity.analysis import config_diff

    exp = dict(GROUPED, burn_fixes=["muon_lr_per_parameter"])
    spec = resolve.experiment_spec(config(g=exp), "g")
    shapes = {"fc.weight": [[48, 3]]}
    (row,) = [
        r for r in diff_rows(spec, burn_shapes=shapes) if "lr adjustment" in r["hyperparameter"]
    ]
    assert (row["torch"], row["burn"], row["status"]) == (
        "fc.weight [3, 48]: ×1", "[48, 3]: ×4, its lr × 0.25 by hand", "same")  # fmt: skip
    assert row["note"].startswith("burn_fixes: muon_lr_per_parameter; original: lr × factor")
    (held,) = [r for r in diff_rows(spec, burn_shapes={"fc.weight": [[3, 48]]})
               if "lr adjustment" in r["hyperparameter"]]  # fmt: skip
    assert held["burn"] == "[3, 48]: ×1" and not held["note"].startswith("burn_fixes")
    plain = config_diff.lr_adjustment_rows(spec.param_groups[0], {"fc.weight": [3, 48]}, shapes)
    assert plain[0]["status"] == "differs" and "by hand" not in plain[0]["burn"]


def test_the_lr_scales_burns_trainer_applies_enter_its_factors():
    """With `meta.lr_scales` (burn_fixes [muon_lr_per_parameter]) Burn's factor is its own
    times the scale: named by the largest ratio of the two factors, or the same in both."""
    from torch_burn_parity.judgement.verdict import lr_adjustment_cause

    groups = [{"params": ["embed.weight", "enc.linear2.weight"], "optimizer": "muon",
               "hyperparameters": {"adjust_lr_fn": "original"}}]  # fmt: skip
    run = muon_meta(groups=groups, shapes={"embed.weight": [[1, 8]],
                                           "enc.linear2.weight": [[16, 8]]})  # fmt: skip
    # embed.weight: ×2.83 vs ×1·2 (ratio 1.41, product 5.66); enc.linear2.weight: ×1 vs
    # ×1.41·1.5 (ratio 2.12, product 2.12): the larger ratio is named
    run["meta"]["lr_scales"] = {"embed.weight": [2.0], "enc.linear2.weight": [1.5]}
    assert lr_adjustment_cause(run, run).endswith(
        "most for enc.linear2.weight (PyTorch [8, 16] ×1, Burn [16, 8] ×2.12)"
    )
    one = muon_meta(groups=[{**groups[0], "params": ["embed.weight"]}],
                    shapes={"embed.weight": [[1, 8]]})  # fmt: skip
    one["meta"]["lr_scales"] = {"embed.weight": [8**0.5]}
    assert lr_adjustment_cause(one, one) == "Muon's lr adjustment (the same factor in both)"
