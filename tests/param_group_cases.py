"""Configs with Muon and parameter groups, for the config checks' edge cases (EDGES in
test_parity_config.py takes GROUP_EDGES) and test_param_groups.py."""

from __future__ import annotations

from typing import Any

ADAMW = {"optimizer": "adamw", "lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8,
         "weight_decay": 0.01, "amsgrad": False}  # fmt: skip
MUON = {"optimizer": "muon", "lr": 0.02, "weight_decay": 0.0, "momentum": 0.95, "nesterov": True}
SGD_GROUP = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.0, "dampening": 0.0,
             "weight_decay": 0.0, "nesterov": False}  # fmt: skip
# AdamW on cnn1d with Muon on its one 2-D weight.
GROUPED = dict(ADAMW, param_groups=[dict(MUON, params="fc.weight")])
# Muon as the experiment's optimizer (on fc.weight), SGD on what it cannot take.
MUON_REST = dict(MUON, param_groups=[dict(SGD_GROUP, params=["conv.*", "fc.bias"])])


def grouped(**values: Any):
    """A change adding experiment `g` (GROUPED) with `values`."""
    return lambda c: c["experiments"].update({"g": dict(GROUPED, **values)})


def group(**values: Any):
    """A change adding `g` whose one group (Muon on fc.weight) has `values`."""
    return grouped(param_groups=[{**MUON, "params": "fc.weight", **values}])


def muon(**values: Any):
    """A change adding experiment `m` (MUON_REST) with `values`."""
    return lambda c: c["experiments"].update({"m": dict(MUON_REST, **values)})


def without(key: str):
    return lambda c: c["experiments"].update(
        {"m": {k: v for k, v in MUON_REST.items() if k != key}}
    )


GROUP_EDGES = {
    "param_groups muon on fc.weight": (grouped(), None),
    "param_groups a string": (grouped(param_groups="fc.weight"), "experiments.g.param_groups"),
    "param_groups empty": (grouped(param_groups=[]), "experiments.g.param_groups"),
    "param_groups a number in the list": (
        grouped(param_groups=[3]),
        "experiments.g.param_groups[0]",
    ),
    "param_groups without params": (
        grouped(param_groups=[{"weight_decay": 0.0}]),
        "experiments.g.param_groups[0].params",
    ),
    "param_groups params a number": (group(params=3), "experiments.g.param_groups[0].params"),
    "param_groups params a list": (group(params=["fc.weight"]), None),
    "param_groups params empty": (group(params=[]), "experiments.g.param_groups[0].params"),
    "param_groups params [3]": (group(params=[3]), "experiments.g.param_groups[0].params[0]"),
    "muon the experiment's": (muon(), None),
    "muon momentum missing": (without("momentum"), "experiments.m.momentum"),
    "muon nesterov 1": (muon(nesterov=1), "experiments.m.nesterov"),
    "muon ns_coefficients a string": (muon(ns_coefficients="abc"), "experiments.m.ns_coefficients"),
    "muon ns_coefficients two": (
        muon(ns_coefficients=[3.0, -4.0]),
        "experiments.m.ns_coefficients",
    ),
    "muon ns_coefficients four": (
        muon(ns_coefficients=[3.0, -4.0, 2.0, 1.0]),
        "experiments.m.ns_coefficients",
    ),
    "muon ns_coefficients with a string": (
        muon(ns_coefficients=[3.0, "b", 2.0]),
        "experiments.m.ns_coefficients[1]",
    ),
    "muon ns_coefficients three": (muon(ns_coefficients=[3.0, -4.0, 2.0]), None),
    "muon ns_steps 2.5": (muon(ns_steps=2.5), "experiments.m.ns_steps"),
    "muon ns_steps 0": (muon(ns_steps=0), "experiments.m.ns_steps"),
    "muon ns_steps 1": (muon(ns_steps=1), None),
    "muon ns_steps 99": (muon(ns_steps=99), None),
    "muon ns_steps 100": (muon(ns_steps=100), "experiments.m.ns_steps"),
    "muon adjust_lr_fn match_rms_adamw": (muon(adjust_lr_fn="match_rms_adamw"), None),
    "muon adjust_lr_fn spectral_unclamped": (
        muon(adjust_lr_fn="spectral_unclamped"),
        "experiments.m.adjust_lr_fn",
    ),
    "muon keep_defaults torch lr": (
        muon(keep_defaults={"torch": ["lr"]}),
        "experiments.m.keep_defaults.torch[0]",
    ),
    "muon keep_defaults burn lr": (
        muon(keep_defaults={"burn": ["lr"]}),
        "experiments.m.keep_defaults.burn[0]",
    ),
    "muon keep_defaults burn weight_decay": (muon(keep_defaults={"burn": ["weight_decay"]}), None),
}
