"""The optimizer registry (optimizers/) is the one list: the schema, the PyTorch trainer,
the replay and the Burn binary know exactly its optimizers, and each entry is whole."""

from __future__ import annotations

import inspect

import pytest
import torch
import yaml

from conftest import ROOT, SGD, small_config, spec_of
from torch_burn_parity.analysis.burn_rules import BurnUpdate
from torch_burn_parity.analysis.muon_rules import MuonUpdate
from torch_burn_parity.optimizers import REGISTRY

NAMES = list(REGISTRY)


def test_the_config_schema_offers_exactly_the_registered_optimizers():
    schema = yaml.safe_load((ROOT / "src/torch_burn_parity/config/config.schema.yaml").read_text())
    experiment = schema["$defs"]["experiment"]
    assert experiment["properties"]["optimizer"]["enum"] == NAMES
    # one block of required keys per optimizer, naming exactly its hyperparameters less the
    # optional ones
    blocks = {
        rule["if"]["properties"]["optimizer"]["const"]: rule["then"]["required"]
        for rule in experiment["allOf"]
        if "optimizer" in rule.get("if", {}).get("properties", {})
    }
    assert {name: set(keys) for name, keys in blocks.items()} == {
        name: set(o.hyperparameters) - set(o.optional) for name, o in REGISTRY.items()
    }


@pytest.mark.parametrize("name", NAMES)
def test_each_entry_is_whole(name):
    o = REGISTRY[name]
    assert o.hyperparameters[0] == "lr" and "lr" not in o.torch_defaults
    # every hyperparameter but lr has a default on each side, and nothing else does
    assert set(o.torch_defaults) == set(o.burn_defaults) == set(o.hyperparameters) - {"lr"}
    assert set(o.booleans) <= set(o.hyperparameters)
    assert set(o.optional) <= set(o.hyperparameters) and set(o.burn_fixed) <= set(o.hyperparameters)
    # PyTorch's class takes every hyperparameter under the same name, with the same default
    signature = inspect.signature(getattr(torch.optim, o.torch_class)).parameters
    assert set(o.hyperparameters) <= set(signature)
    for key, value in o.torch_defaults.items():
        default = signature[key].default
        if key == "adjust_lr_fn" and default is None:
            default = "original"  # Muon's _adjust_lr: None is "original"
        assert (list(default) if isinstance(default, tuple) else default) == value, key


@pytest.mark.parametrize("name", NAMES)
def test_the_replay_has_burns_rule_for_each(name):
    o = REGISTRY[name]
    hp = {"lr": 0.1, **o.torch_defaults}
    p = torch.eye(3, dtype=torch.float64) if o.matrices_only else torch.ones(3, dtype=torch.float64)
    muon = MuonUpdate(hp, "burn", "burn", {"w": [[3, 3]]}) if o.matrices_only else None
    rule = BurnUpdate(name, hp, factors=lambda t: (1.0, 1e-8), muon=muon)
    assert rule.step("w", p, torch.full_like(p, 0.5), 1, 0.1).shape == p.shape


def test_the_burn_binary_knows_exactly_the_registered_optimizers(
    burn_binary, write_config, tmp_path
):
    import subprocess

    config = write_config(small_config(1, m=SGD))
    spec = spec_of(config, "m")  # resolved, then given an optimizer no side has
    spec.write_text(spec.read_text().replace('"optimizer": "sgd"', '"optimizer": "no_such"'))
    proc = subprocess.run(
        [burn_binary, "--spec", spec_of(config, "m"), "--dtype", "f32",
         "--data", tmp_path / "unused.bin", "--out", tmp_path / "run.json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0
    assert f"(known: {', '.join(NAMES)})" in proc.stderr, proc.stderr
