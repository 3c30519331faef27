"""The config check, without Snakemake: every schema bound from both sides of its edge, the
semantic checks a trainer would otherwise crash on, unknown keys with the closest known key,
one line per problem."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

import pytest
import yaml

from conftest import ADAM, ROOT, SGD
from optimizer_examples import ADAGRAD, ADAMW, RMSPROP
from param_group_cases import GROUP_EDGES
from pipeline_helpers import small_pipeline_config
from torch_burn_parity.config.check_config import (
    SCHEMA,
    check_config,
    closest_key,
    config_problems,
    describe_source,
    load_schema,
    report,
    schema_problems,
    sweep_problems,
)
from torch_burn_parity.config.parity_config import (
    HYPERPARAMETERS,
    PARAMETER_SHAPES,
    ConfigError,
    probe_problem,
)
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.config.sweeps import expand_all
from torch_burn_parity.datasets import sine

DATASET_SIZE = sine.SAMPLES  # sine's, the default data's

SCHEMA_DICT = load_schema()


def exp(name: str, **values):
    """A change setting values of one experiment of small_pipeline_config()."""
    return lambda c: c["experiments"][name].update(values)


def top(**values):
    return lambda c: c.update(values)


def drop(name: str, key: str):
    return lambda c: c["experiments"][name].pop(key)


def add(name: str, base: dict, **values):
    """A change adding experiment `name`: `base` with `values`."""
    return lambda c: c["experiments"].update({name: dict(base, **values)})


def sched(**schedule):
    """A change giving the sgd experiment (lr 0.5) a schedule."""
    return exp("sgd", schedule=schedule)


def lr_sched(lr: float, **schedule):
    return exp("sgd", lr=lr, schedule=schedule)


def rename(name: str, old: str, new: str):
    def change(c):
        c["experiments"][name][new] = c["experiments"][name].pop(old)

    return change


class Whole:
    """A change replacing the whole config with `value`."""

    def __init__(self, value):
        self.value = value

    def __call__(self, config):
        return self


def changed(change, schema=SCHEMA_DICT, check=config_problems):
    config = copy.deepcopy(small_pipeline_config())
    replaced = change(config)
    return check(replaced.value if isinstance(replaced, Whole) else config, schema)


# (change to small_pipeline_config(), the key path of the one problem it causes or None).
# Both sides of every edge: the first value refused and the last accepted, or the reverse.
EDGES = {
    # run settings
    "config a list": (Whole([]), "(top level)"),
    "steps missing": (lambda c: c.pop("steps"), "steps"),
    "batch_size missing": (lambda c: c.pop("batch_size"), "batch_size"),
    "experiments missing": (lambda c: c.pop("experiments"), "experiments"),
    "steps 0": (top(steps=0), "steps"),
    "steps 1": (top(steps=1), None),
    "steps 6.0": (top(steps=6.0), "steps"),
    "steps '6'": (top(steps="6"), "steps"),
    "batch_size 0": (top(batch_size=0), "batch_size"),
    "batch_size 1": (top(batch_size=1), None),
    "batch_size 96": (top(batch_size=DATASET_SIZE), None),
    "batch_size 97": (top(batch_size=DATASET_SIZE + 1), "batch_size"),
    "batch_size 16.0": (top(batch_size=16.0), "batch_size"),
    "threads 0": (top(threads=0), "threads"),
    "cpu_path native": (top(cpu_path="native"), None),
    "cpu_path compatible": (top(cpu_path="compatible"), None),
    "cpu_path avx3": (top(cpu_path="avx3"), "cpu_path"),
    "cpu_path 2": (top(cpu_path=2), "cpu_path"),
    "record_budget_mb 0": (top(record_budget_mb=0), "record_budget_mb"),
    "record_budget_mb 0.5": (top(record_budget_mb=0.5), None),
    "record_budget_mb '1'": (top(record_budget_mb="1"), "record_budget_mb"),
    "threads 1": (top(threads=1), None),
    "threads true": (top(threads=True), "threads"),
    "report_steps []": (top(report_steps=[]), "report_steps"),
    "report_steps [1]": (top(report_steps=[1]), None),
    "report_steps 0": (top(report_steps=[0]), "report_steps[0]"),
    "report_steps beyond steps": (top(report_steps=[1, 1000]), None),
    "report_steps a number": (top(report_steps=5), "report_steps"),
    "report_steps 2.0": (top(report_steps=[1, 2.0]), "report_steps[1]"),
    "tolerance.f32 0": (top(tolerance={"f32": 0}), "tolerance.f32"),
    "tolerance.f32 1e-300": (top(tolerance={"f32": 1e-300}), None),
    "tolerance.f64 0": (top(tolerance={"f64": 0.0}), "tolerance.f64"),
    "tolerance.f64 1e-300": (top(tolerance={"f64": 1e-300}), None),
    "tolerance.f64 a string": (top(tolerance={"f64": "tight"}), "tolerance.f64"),
    "tolerance.f64 inf": (top(tolerance={"f64": float("inf")}), "tolerance.f64"),
    "tolerance a number": (top(tolerance=1e-6), "tolerance"),
    "prove_fixes false": (top(prove_fixes=False), None),
    "prove_fixes 'yes'": (top(prove_fixes="yes"), "prove_fixes"),
    # sweeps (each point is checked like an experiment: tests/test_sweeps.py)
    "max_experiments 0": (top(max_experiments=0), "max_experiments"),
    "max_experiments 1": (top(max_experiments=1), None),
    "max_experiments 1.5": (top(max_experiments=1.5), "max_experiments"),
    "sweeps a list": (top(sweeps=[]), "sweeps"),
    "sweep name 1g": (top(sweeps={"1g": {"base": dict(ADAM), "axes": {"lr": [0.1]}}}), "sweeps.1g"),
    "sweep g": (top(sweeps={"g": {"base": dict(ADAM), "axes": {"lr": [0.1]}}}), None),
    "sweep name 1 (a YAML integer)": (
        top(sweeps={1: {"base": dict(ADAM), "axes": {"lr": [0.1]}}}),
        "sweeps[1]",
    ),
    "sweep a list": (top(sweeps={"g": []}), "sweeps.g"),
    "sweep without base": (top(sweeps={"g": {"axes": {"lr": [0.1]}}}), "sweeps.g.base"),
    "sweep base a number": (top(sweeps={"g": {"base": 1, "axes": {"lr": [0.1]}}}), "sweeps.g.base"),
    "sweep base a name": (top(sweeps={"g": {"base": "adam", "axes": {"lr": [0.1]}}}), None),
    "sweep unknown key": (
        top(sweeps={"g": {**{"base": dict(ADAM), "axes": {"lr": [0.1]}}, "axis": {}}}),
        "sweeps.g.axis",
    ),
    "sweep axes {}": (top(sweeps={"g": {"base": "adam", "axes": {}}}), "sweeps.g.axes"),
    "sweep axes a list": (top(sweeps={"g": {"base": "adam", "axes": []}}), "sweeps.g.axes"),
    "sweep axis []": (top(sweeps={"g": {"base": "adam", "axes": {"lr": []}}}), "sweeps.g.axes.lr"),
    "sweep axis a number": (
        top(sweeps={"g": {"base": "adam", "axes": {"lr": 0.1}}}),
        "sweeps.g.axes.lr",
    ),
    "tolerance.f16": (top(tolerance={"f16": 1e-3}), "tolerance.f16"),
    # experiments
    "experiments empty": (top(experiments={}), "experiments"),
    "experiments a list": (top(experiments=[]), "experiments"),
    "experiment null": (lambda c: c["experiments"].update(sgd=None), "experiments.sgd"),
    "experiment name 1st": (
        lambda c: c["experiments"].update({"1st": dict(c["experiments"]["sgd"])}),
        "experiments.1st",
    ),
    "experiment name _x": (
        lambda c: c["experiments"].update({"_x": dict(c["experiments"]["sgd"])}),
        "experiments._x",
    ),
    "experiment name 1 (a YAML integer)": (
        lambda c: c["experiments"].update({1: dict(c["experiments"]["sgd"])}),
        "experiments[1]",
    ),
    "experiment name a1_B": (
        lambda c: c["experiments"].update({"a1_B": dict(c["experiments"]["sgd"])}),
        None,
    ),
    "optimizer lion (Burn only)": (exp("sgd", optimizer="lion"), "experiments.sgd.optimizer"),
    "optimizer missing": (drop("sgd", "optimizer"), "experiments.sgd.optimizer"),
    "description a number": (exp("sgd", description=3), "experiments.sgd.description"),
    "description a string": (exp("sgd", description="plain SGD"), None),
    "experiment tolerance.f32 0": (
        exp("pitfall", tolerance={"f32": 0}),
        "experiments.pitfall.tolerance.f32",
    ),
    "experiment tolerance.f32 1e-12": (exp("pitfall", tolerance={"f32": 1e-12}), None),
    "experiment tolerance.f128": (
        exp("pitfall", tolerance={"f128": 1.0}),
        "experiments.pitfall.tolerance.f128",
    ),
    # SGD
    "sgd lr 0": (exp("sgd", lr=0), "experiments.sgd.lr"),
    "sgd lr -0.01": (exp("sgd", lr=-0.01), "experiments.sgd.lr"),
    "sgd lr 1e-12": (exp("sgd", lr=1e-12), None),
    "sgd lr 1e6 (diverges, allowed)": (exp("sgd", lr=1e6), None),
    "sgd lr 'fast'": (exp("sgd", lr="fast"), "experiments.sgd.lr"),
    "sgd lr '1e-8'": (exp("sgd", lr="1e-8"), "experiments.sgd.lr"),
    "sgd lr nan": (exp("sgd", lr=float("nan")), "experiments.sgd.lr"),
    "sgd lr inf": (exp("sgd", lr=float("inf")), "experiments.sgd.lr"),
    "sgd lr true": (exp("sgd", lr=True), "experiments.sgd.lr"),
    "sgd lr missing": (drop("sgd", "lr"), "experiments.sgd.lr"),
    "momentum -0.1": (exp("momentum", momentum=-0.1), "experiments.momentum.momentum"),
    "momentum 0": (exp("momentum", momentum=0.0), None),
    "momentum 0.999": (exp("momentum", momentum=0.999), None),
    "momentum 1.0": (exp("momentum", momentum=1.0), "experiments.momentum.momentum"),
    "momentum missing": (drop("sgd", "momentum"), "experiments.sgd.momentum"),
    "dampening -0.1": (exp("sgd", dampening=-0.1), "experiments.sgd.dampening"),
    "dampening 0": (exp("sgd", dampening=0), None),
    "dampening missing": (drop("sgd", "dampening"), "experiments.sgd.dampening"),
    "sgd weight_decay -1e-9": (exp("sgd", weight_decay=-1e-9), "experiments.sgd.weight_decay"),
    "sgd weight_decay 0": (exp("sgd", weight_decay=0), None),
    "sgd weight_decay 'none'": (exp("sgd", weight_decay="none"), "experiments.sgd.weight_decay"),
    "sgd weight_decay missing": (
        drop("sgd", "weight_decay"),
        "experiments.sgd.weight_decay",
    ),
    "nesterov 'yes'": (exp("sgd", nesterov="yes"), "experiments.sgd.nesterov"),
    "nesterov 1": (exp("sgd", nesterov=1), "experiments.sgd.nesterov"),
    "nesterov missing": (drop("sgd", "nesterov"), "experiments.sgd.nesterov"),
    "sgd with betas": (exp("sgd", betas=[0.9, 0.999]), "experiments.sgd.betas"),
    # Nesterov: PyTorch refuses it without a momentum or with a dampening.
    "nesterov, momentum 0": (exp("sgd", nesterov=True), "experiments.sgd.nesterov"),
    "nesterov, momentum 0.9, dampening 0": (
        exp("sgd", nesterov=True, momentum=0.9, dampening=0.0),
        None,
    ),
    "nesterov, dampening 0.1": (
        exp("sgd", nesterov=True, momentum=0.9, dampening=0.1),
        "experiments.sgd.nesterov",
    ),
    "nesterov, PyTorch keeps momentum 0": (
        exp("sgd", nesterov=True, momentum=0.9, keep_defaults={"torch": ["momentum"]}),
        "experiments.sgd.nesterov",
    ),
    "nesterov, PyTorch keeps dampening 0": (
        exp(
            "sgd",
            nesterov=True,
            momentum=0.9,
            dampening=0.1,
            keep_defaults={"torch": ["dampening"]},
        ),
        None,
    ),
    "nesterov, Burn keeps dampening 0.1": (
        exp("momentum", nesterov=True, dampening=0.0),  # keep_defaults: {burn: [dampening]}
        None,
    ),
    # Adam
    "adam lr 0": (exp("adam", lr=0), "experiments.adam.lr"),
    "adam lr 1e-12": (exp("adam", lr=1e-12), None),
    "betas[0] -0.1": (exp("adam", betas=[-0.1, 0.999]), "experiments.adam.betas[0]"),
    "betas[0] 0": (exp("adam", betas=[0, 0.999]), None),
    "betas[0] 0.999": (exp("adam", betas=[0.999, 0.999]), None),
    "betas[0] 1.0": (exp("adam", betas=[1.0, 0.999]), "experiments.adam.betas[0]"),
    "betas[1] -0.1": (exp("adam", betas=[0.9, -0.1]), "experiments.adam.betas[1]"),
    "betas[1] 0": (exp("adam", betas=[0.9, 0]), None),
    "betas[1] 0.999": (exp("adam", betas=[0.9, 0.999]), None),
    "betas[1] 1.0": (exp("adam", betas=[0.9, 1.0]), "experiments.adam.betas[1]"),
    "betas[1] 'x'": (exp("adam", betas=[0.9, "x"]), "experiments.adam.betas[1]"),
    "betas one": (exp("adam", betas=[0.9]), "experiments.adam.betas"),
    "betas three": (exp("adam", betas=[0.9, 0.99, 0.5]), "experiments.adam.betas"),
    "betas a number": (exp("adam", betas=0.9), "experiments.adam.betas"),
    "eps 0": (exp("adam", eps=0), "experiments.adam.eps"),
    "eps 1e-12": (exp("adam", eps=1e-12), None),
    "eps missing": (drop("adam", "eps"), "experiments.adam.eps"),
    "betas missing": (drop("adam", "betas"), "experiments.adam.betas"),
    "adam weight_decay -1e-9": (exp("adam", weight_decay=-1e-9), "experiments.adam.weight_decay"),
    "adam weight_decay 0": (exp("adam", weight_decay=0.0), None),
    "adam with momentum": (exp("adam", momentum=0.9), "experiments.adam.momentum"),
    # keep_defaults
    "keep_defaults sgd burn betas": (
        exp("sgd", keep_defaults={"burn": ["betas"]}),
        "experiments.sgd.keep_defaults.burn[0]",
    ),
    "keep_defaults sgd torch betas": (
        exp("sgd", keep_defaults={"torch": ["betas"]}),
        "experiments.sgd.keep_defaults.torch[0]",
    ),
    "keep_defaults sgd lr": (
        exp("sgd", keep_defaults={"torch": ["lr"]}),
        "experiments.sgd.keep_defaults.torch[0]",
    ),
    "keep_defaults sgd dampening": (exp("sgd", keep_defaults={"burn": ["dampening"]}), None),
    "keep_defaults adam burn momentum": (
        exp("adam", keep_defaults={"burn": ["momentum"]}),
        "experiments.adam.keep_defaults.burn[0]",
    ),
    "keep_defaults adam torch nesterov": (
        exp("adam", keep_defaults={"torch": ["nesterov"]}),
        "experiments.adam.keep_defaults.torch[0]",
    ),
    "keep_defaults adam eps, betas": (
        exp("adam", keep_defaults={"torch": ["eps", "betas"], "burn": ["weight_decay"]}),
        None,
    ),
    "keep_defaults twice": (
        exp("adam", keep_defaults={"burn": ["eps", "eps"]}),
        "experiments.adam.keep_defaults.burn",
    ),
    "keep_defaults burn not a list": (
        exp("adam", keep_defaults={"burn": "eps"}),
        "experiments.adam.keep_defaults.burn",
    ),
    "keep_defaults torch not a list": (
        exp("adam", keep_defaults={"torch": "eps"}),
        "experiments.adam.keep_defaults.torch",
    ),
    "keep_defaults torch twice": (
        exp("adam", keep_defaults={"torch": ["eps", "eps"]}),
        "experiments.adam.keep_defaults.torch",
    ),
    "keep_defaults burn a number": (
        exp("adam", keep_defaults={"burn": [3]}),
        "experiments.adam.keep_defaults.burn[0]",
    ),
    "keep_defaults torch a number": (
        exp("adam", keep_defaults={"torch": [3]}),
        "experiments.adam.keep_defaults.torch[0]",
    ),
    "keep_defaults a list": (exp("adam", keep_defaults=["eps"]), "experiments.adam.keep_defaults"),
    "keep_defaults jax": (
        exp("adam", keep_defaults={"jax": ["eps"]}),
        "experiments.adam.keep_defaults.jax",
    ),
    # probe: the schema's form, then the index against the parameter's shape
    "probe 'fc.weight(1,19)'": (exp("adam", probe="fc.weight(1,19)"), "experiments.adam.probe"),
    "probe 'lstm.weight[0]'": (exp("adam", probe="lstm.weight[0]"), "experiments.adam.probe"),
    "probe a number": (exp("adam", probe=3), "experiments.adam.probe"),
    "data unknown": (exp("adam", data="mnist"), "experiments.adam.data"),
    "label_smoothing a string": (
        exp("adam", label_smoothing="0.1"),
        "experiments.adam.label_smoothing",
    ),
    "loss l1": (exp("adam", loss="l1"), "experiments.adam.loss"),
    "dropout a string": (exp("adam", dropout="none"), "experiments.adam.dropout"),
    "probe 'fc.weight[1, 19]'": (exp("adam", probe="fc.weight[1, 19]"), None),
    "probe conv.weight[3,0,4]": (exp("adam", probe="conv.weight[3,0,4]"), None),
    "probe conv.weight[4,0,0]": (exp("adam", probe="conv.weight[4,0,0]"), "experiments.adam.probe"),
    "probe conv.weight[0,1,0]": (exp("adam", probe="conv.weight[0,1,0]"), "experiments.adam.probe"),
    "probe conv.weight[0,0,5]": (exp("adam", probe="conv.weight[0,0,5]"), "experiments.adam.probe"),
    "probe conv.weight[1,2]": (exp("adam", probe="conv.weight[1,2]"), "experiments.adam.probe"),
    "probe conv.bias[3]": (exp("adam", probe="conv.bias[3]"), None),
    "probe conv.bias[4]": (exp("adam", probe="conv.bias[4]"), "experiments.adam.probe"),
    "probe fc.weight[2,47]": (exp("adam", probe="fc.weight[2,47]"), None),
    "probe fc.weight[3,0]": (exp("adam", probe="fc.weight[3,0]"), "experiments.adam.probe"),
    "probe fc.weight[0,48]": (exp("adam", probe="fc.weight[0,48]"), "experiments.adam.probe"),
    "probe fc.weight[143] (flat)": (exp("adam", probe="fc.weight[143]"), None),
    "probe fc.weight[144] (flat)": (exp("adam", probe="fc.weight[144]"), "experiments.adam.probe"),
    "probe fc.bias[2]": (exp("adam", probe="fc.bias[2]"), None),
    "probe fc.bias[3]": (exp("adam", probe="fc.bias[3]"), "experiments.adam.probe"),
    "burn_backend flex": (exp("adam", burn_backend="flex"), None),
    "burn_backend ndarray": (exp("sgd", burn_backend="ndarray"), None),
    "burn_backend wgpu": (exp("adam", burn_backend="wgpu"), "experiments.adam.burn_backend"),
    "burn_backend null": (exp("adam", burn_backend=None), "experiments.adam.burn_backend"),
    "model cnn1d": (exp("adam", model="cnn1d"), None),
    "model cnn_bn": (exp("sgd", model="cnn_bn"), None),
    "model resnet": (exp("adam", model="resnet"), "experiments.adam.model"),
    "model null": (exp("adam", model=None), "experiments.adam.model"),
    "probe bn.weight[3] of cnn_bn": (exp("adam", model="cnn_bn", probe="bn.weight[3]"), None),
    "probe bn.weight[4] of cnn_bn": (
        exp("adam", model="cnn_bn", probe="bn.weight[4]"),
        "experiments.adam.probe",
    ),
    "probe bn.weight[0] of cnn1d": (exp("adam", probe="bn.weight[0]"), "experiments.adam.probe"),
    "probe_steps [1]": (exp("adam", probe_steps=[1]), None),
    "probe_steps [6] (the last)": (exp("adam", probe_steps=[6]), None),
    "probe_steps [7] (after the last)": (
        exp("adam", probe_steps=[2, 7]),
        "experiments.adam.probe_steps[1]",
    ),
    "probe_steps [0]": (exp("adam", probe_steps=[0]), "experiments.adam.probe_steps[0]"),
    "probe_steps []": (exp("adam", probe_steps=[]), "experiments.adam.probe_steps"),
    "probe_steps [2, 2]": (exp("adam", probe_steps=[2, 2]), "experiments.adam.probe_steps"),
    "probe_steps 2": (exp("adam", probe_steps=2), "experiments.adam.probe_steps"),
    "burn_fixes [clip_by_global_norm] with a norm": (
        exp("adam", clip_grad={"norm": 1.0}, burn_fixes=["clip_by_global_norm"]),
        None,
    ),
    "burn_fixes clip_by_global_norm (not a list)": (
        exp("adam", clip_grad={"norm": 1.0}, burn_fixes="clip_by_global_norm"),
        "experiments.adam.burn_fixes",
    ),
    "burn_fixes [clip] (unknown)": (
        exp("adam", burn_fixes=["clip"]),
        "experiments.adam.burn_fixes[0]",
    ),
    "burn_fixes twice the same": (
        exp("adam", clip_grad={"norm": 1.0}, burn_fixes=["clip_by_global_norm"] * 2),
        "experiments.adam.burn_fixes",
    ),
    "burn_fixes clip_by_global_norm without a norm": (
        exp("adam", burn_fixes=["clip_by_global_norm"]),
        "experiments.adam.burn_fixes",
    ),
    "record every 2": (exp("adam", record={"every": 2}), None),
    "record every 0": (exp("adam", record={"every": 0}), "experiments.adam.record.every"),
    "record every 2.0": (exp("adam", record={"every": 2.0}), "experiments.adam.record.every"),
    "record steps [3, 6]": (exp("adam", record={"steps": [3, 6]}), None),
    "record steps []": (exp("adam", record={"steps": []}), "experiments.adam.record.steps"),
    "record steps [0]": (exp("adam", record={"steps": [0]}), "experiments.adam.record.steps[0]"),
    "record steps [2, 2]": (exp("adam", record={"steps": [2, 2]}), "experiments.adam.record.steps"),
    "record steps [7] (after the last)": (
        exp("adam", record={"steps": [1, 7]}),
        "experiments.adam.record.steps[1]",
    ),
    "record both": (exp("adam", record={"every": 2, "steps": [3]}), "experiments.adam.record"),
    "record neither": (exp("adam", record={}), "experiments.adam.record"),
    "record a list": (exp("adam", record=[2]), "experiments.adam.record"),
    "record steps a number": (exp("adam", record={"steps": 3}), "experiments.adam.record.steps"),
    "record stride": (exp("adam", record={"stride": 2}), "experiments.adam.record.stride"),
    # unknown keys
    "top-level stepz": (top(stepz=5), "stepz"),
    "experiment momentun": (exp("sgd", momentun=0.9), "experiments.sgd.momentun"),
    "experiment learning_rate for lr": (
        rename("adam", "lr", "learning_rate"),
        "experiments.adam.learning_rate",
    ),
    # Adam's amsgrad: optional (PyTorch's default filled in)
    "adam amsgrad missing": (lambda c: None, None),
    "adam amsgrad true": (exp("adam", amsgrad=True), None),
    "adam amsgrad 1": (exp("adam", amsgrad=1), "experiments.adam.amsgrad"),
    # AdamW: every key required
    "adamw": (add("w", ADAMW), None),
    "adamw lr 0": (add("w", ADAMW, lr=0), "experiments.w.lr"),
    "adamw betas[0] 1.0": (add("w", ADAMW, betas=[1.0, 0.999]), "experiments.w.betas[0]"),
    "adamw betas[1] -0.1": (add("w", ADAMW, betas=[0.9, -0.1]), "experiments.w.betas[1]"),
    "adamw betas one": (add("w", ADAMW, betas=[0.9]), "experiments.w.betas"),
    "adamw eps 0": (add("w", ADAMW, eps=0.0), "experiments.w.eps"),
    "adamw eps 1e-12": (add("w", ADAMW, eps=1e-12), None),
    "adamw weight_decay -1e-9": (add("w", ADAMW, weight_decay=-1e-9), "experiments.w.weight_decay"),
    "adamw weight_decay 0": (add("w", ADAMW, weight_decay=0.0), None),
    "adamw amsgrad 'yes'": (add("w", ADAMW, amsgrad="yes"), "experiments.w.amsgrad"),
    "adamw amsgrad true": (add("w", ADAMW, amsgrad=True), None),
    "adamw amsgrad missing": (
        lambda c: (add("w", ADAMW)(c), c["experiments"]["w"].pop("amsgrad")),
        "experiments.w.amsgrad",
    ),
    "adamw with momentum": (add("w", ADAMW, momentum=0.9), "experiments.w.momentum"),
    # AdaGrad
    "adagrad": (add("g", ADAGRAD), None),
    "adagrad lr 0": (add("g", ADAGRAD, lr=0), "experiments.g.lr"),
    "adagrad lr_decay -1e-9": (add("g", ADAGRAD, lr_decay=-1e-9), "experiments.g.lr_decay"),
    "adagrad lr_decay 0": (add("g", ADAGRAD, lr_decay=0), None),
    "adagrad lr_decay 0.1": (add("g", ADAGRAD, lr_decay=0.1), None),
    "adagrad eps 0": (add("g", ADAGRAD, eps=0), "experiments.g.eps"),
    "adagrad eps 1e-12": (add("g", ADAGRAD, eps=1e-12), None),
    "adagrad weight_decay -1e-9": (
        add("g", ADAGRAD, weight_decay=-1e-9),
        "experiments.g.weight_decay",
    ),
    "adagrad initial_accumulator_value 0.1": (
        add("g", ADAGRAD, initial_accumulator_value=0.1),
        "experiments.g.initial_accumulator_value",
    ),
    "adagrad initial_accumulator_value -0.1": (
        add("g", ADAGRAD, initial_accumulator_value=-0.1),
        "experiments.g.initial_accumulator_value",
    ),
    "adagrad initial_accumulator_value 'none'": (
        add("g", ADAGRAD, initial_accumulator_value="none"),
        "experiments.g.initial_accumulator_value",
    ),
    "adagrad initial_accumulator_value 0": (add("g", ADAGRAD, initial_accumulator_value=0), None),
    "adagrad initial_accumulator_value missing": (
        lambda c: (add("g", ADAGRAD)(c), c["experiments"]["g"].pop("initial_accumulator_value")),
        "experiments.g.initial_accumulator_value",
    ),
    "adagrad with betas": (add("g", ADAGRAD, betas=[0.9, 0.99]), "experiments.g.betas"),
    # RMSProp
    "rmsprop": (add("r", RMSPROP), None),
    "rmsprop lr 0": (add("r", RMSPROP, lr=0), "experiments.r.lr"),
    "rmsprop alpha -0.1": (add("r", RMSPROP, alpha=-0.1), "experiments.r.alpha"),
    "rmsprop alpha 0": (add("r", RMSPROP, alpha=0.0), None),
    "rmsprop alpha 1.0": (add("r", RMSPROP, alpha=1.0), None),
    "rmsprop momentum -0.1": (add("r", RMSPROP, momentum=-0.1), "experiments.r.momentum"),
    "rmsprop momentum 0": (add("r", RMSPROP, momentum=0), None),
    "rmsprop momentum 0.999": (add("r", RMSPROP, momentum=0.999), None),
    "rmsprop momentum 1.0": (add("r", RMSPROP, momentum=1.0), "experiments.r.momentum"),
    "rmsprop eps 0": (add("r", RMSPROP, eps=0), "experiments.r.eps"),
    "rmsprop eps -1e-8": (add("r", RMSPROP, eps=-1e-8), "experiments.r.eps"),
    "rmsprop eps 1e-12": (add("r", RMSPROP, eps=1e-12), None),
    "rmsprop weight_decay -1e-9": (
        add("r", RMSPROP, weight_decay=-1e-9),
        "experiments.r.weight_decay",
    ),
    "rmsprop centered 'no'": (add("r", RMSPROP, centered="no"), "experiments.r.centered"),
    "rmsprop centered true": (add("r", RMSPROP, centered=True), None),
    "rmsprop centered missing": (
        lambda c: (add("r", RMSPROP)(c), c["experiments"]["r"].pop("centered")),
        "experiments.r.centered",
    ),
    "rmsprop with nesterov": (add("r", RMSPROP, nesterov=False), "experiments.r.nesterov"),
    # keep_defaults of the new optimizers: any hyperparameter but lr
    "keep_defaults adam amsgrad": (exp("adam", keep_defaults={"burn": ["amsgrad"]}), None),
    "keep_defaults adamw all": (
        add(
            "w",
            ADAMW,
            keep_defaults={
                f: ["betas", "eps", "weight_decay", "amsgrad"] for f in ("torch", "burn")
            },
        ),
        None,
    ),  # fmt: skip
    "keep_defaults adagrad all": (
        add(
            "g",
            ADAGRAD,
            keep_defaults={
                f: ["lr_decay", "eps", "weight_decay", "initial_accumulator_value"]
                for f in ("torch", "burn")
            },
        ),
        None,
    ),  # fmt: skip
    "keep_defaults rmsprop all": (
        add(
            "r",
            RMSPROP,
            keep_defaults={
                f: ["alpha", "eps", "weight_decay", "momentum", "centered"]
                for f in ("torch", "burn")
            },
        ),
        None,
    ),  # fmt: skip
    "keep_defaults rmsprop torch lr": (
        add("r", RMSPROP, keep_defaults={"torch": ["lr"]}),
        "experiments.r.keep_defaults.torch[0]",
    ),
    "keep_defaults adamw torch momentum": (
        add("w", ADAMW, keep_defaults={"torch": ["momentum"]}),
        "experiments.w.keep_defaults.torch[0]",
    ),
    "keep_defaults adamw burn lr": (
        add("w", ADAMW, keep_defaults={"burn": ["lr"]}),
        "experiments.w.keep_defaults.burn[0]",
    ),
    "keep_defaults adagrad burn betas": (
        add("g", ADAGRAD, keep_defaults={"burn": ["betas"]}),
        "experiments.g.keep_defaults.burn[0]",
    ),
    "keep_defaults adagrad torch alpha": (
        add("g", ADAGRAD, keep_defaults={"torch": ["alpha"]}),
        "experiments.g.keep_defaults.torch[0]",
    ),
    "keep_defaults rmsprop burn amsgrad": (
        add("r", RMSPROP, keep_defaults={"burn": ["amsgrad"]}),
        "experiments.r.keep_defaults.burn[0]",
    ),
    "keep_defaults rmsprop torch dampening": (
        add("r", RMSPROP, keep_defaults={"torch": ["dampening"]}),
        "experiments.r.keep_defaults.torch[0]",
    ),
    # schedules (sgd: lr 0.5)
    "schedule constant": (sched(kind="constant"), None),
    "schedule a string": (exp("sgd", schedule="cosine"), "experiments.sgd.schedule"),
    "schedule null": (exp("sgd", schedule=None), "experiments.sgd.schedule"),
    "schedule kind missing": (sched(num_steps=10), "experiments.sgd.schedule.kind"),
    "schedule kind cosin": (sched(kind="cosin"), "experiments.sgd.schedule.kind"),
    "schedule kind 3": (sched(kind=3), "experiments.sgd.schedule.kind"),
    "schedule constant with gamma": (
        sched(kind="constant", gamma=0.5),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule linear": (sched(kind="linear", final_lr=0.05, num_steps=10), None),
    "schedule linear final_lr -0.1": (
        sched(kind="linear", final_lr=-0.1, num_steps=10),
        "experiments.sgd.schedule.final_lr",
    ),
    "schedule linear final_lr 0": (sched(kind="linear", final_lr=0, num_steps=10), None),
    "schedule linear final_lr = lr": (sched(kind="linear", final_lr=0.5, num_steps=10), None),
    "schedule linear final_lr above lr": (
        sched(kind="linear", final_lr=0.6, num_steps=10),
        "experiments.sgd.schedule.final_lr",
    ),
    "schedule linear final_lr 'low'": (
        sched(kind="linear", final_lr="low", num_steps=10),
        "experiments.sgd.schedule.final_lr",
    ),
    "schedule linear num_steps 0": (
        sched(kind="linear", final_lr=0.05, num_steps=0),
        "experiments.sgd.schedule.num_steps",
    ),
    "schedule linear num_steps 1": (sched(kind="linear", final_lr=0.05, num_steps=1), None),
    "schedule linear num_steps 10.0": (
        sched(kind="linear", final_lr=0.05, num_steps=10.0),
        "experiments.sgd.schedule.num_steps",
    ),
    "schedule linear num_steps missing": (
        sched(kind="linear", final_lr=0.05),
        "experiments.sgd.schedule.num_steps",
    ),
    "schedule linear final_lr missing": (
        sched(kind="linear", num_steps=10),
        "experiments.sgd.schedule.final_lr",
    ),
    "schedule linear with gamma": (
        sched(kind="linear", final_lr=0.05, num_steps=10, gamma=0.5),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule cosine": (sched(kind="cosine", min_lr=0.0, num_steps=100), None),
    "schedule cosine min_lr -0.1": (
        sched(kind="cosine", min_lr=-0.1, num_steps=100),
        "experiments.sgd.schedule.min_lr",
    ),
    "schedule cosine min_lr = lr": (sched(kind="cosine", min_lr=0.5, num_steps=100), None),
    "schedule cosine min_lr above lr": (
        sched(kind="cosine", min_lr=0.6, num_steps=100),
        "experiments.sgd.schedule.min_lr",
    ),
    "schedule cosine num_steps 0": (
        sched(kind="cosine", min_lr=0.0, num_steps=0),
        "experiments.sgd.schedule.num_steps",
    ),
    "schedule cosine min_lr missing": (
        sched(kind="cosine", num_steps=10),
        "experiments.sgd.schedule.min_lr",
    ),
    "schedule cosine with final_lr": (
        sched(kind="cosine", min_lr=0.0, num_steps=10, final_lr=0.1),
        "experiments.sgd.schedule.final_lr",
    ),
    "schedule exponential": (sched(kind="exponential", gamma=0.99), None),
    "schedule exponential gamma 0": (
        sched(kind="exponential", gamma=0),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule exponential gamma 'x'": (
        sched(kind="exponential", gamma="x"),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule exponential gamma 1e-9": (sched(kind="exponential", gamma=1e-9), None),
    "schedule exponential gamma 1": (sched(kind="exponential", gamma=1.0), None),
    "schedule exponential gamma 1.5": (
        sched(kind="exponential", gamma=1.5),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule exponential gamma missing": (
        sched(kind="exponential"),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule step": (sched(kind="step", step_size=10, gamma=0.5), None),
    "schedule step step_size 0": (
        sched(kind="step", step_size=0, gamma=0.5),
        "experiments.sgd.schedule.step_size",
    ),
    "schedule step step_size 1": (sched(kind="step", step_size=1, gamma=0.5), None),
    "schedule step step_size 2.5": (
        sched(kind="step", step_size=2.5, gamma=0.5),
        "experiments.sgd.schedule.step_size",
    ),
    "schedule step gamma 0": (
        sched(kind="step", step_size=10, gamma=0),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule step gamma -0.5": (
        sched(kind="step", step_size=10, gamma=-0.5),
        "experiments.sgd.schedule.gamma",
    ),
    "schedule step gamma 2 (Burn only warns)": (sched(kind="step", step_size=10, gamma=2.0), None),
    "schedule step step_size missing": (
        sched(kind="step", gamma=0.5),
        "experiments.sgd.schedule.step_size",
    ),
    "schedule step with num_steps": (
        sched(kind="step", step_size=10, gamma=0.5, num_steps=10),
        "experiments.sgd.schedule.num_steps",
    ),
    "schedule step unknown key": (
        sched(kind="step", step_size=10, gamma=0.5, warmup=3),
        "experiments.sgd.schedule.warmup",
    ),
    # the initial lr (the optimizer's) of a schedule Burn refuses outside (0, 1]
    "lr 1.0 linear": (lr_sched(1.0, kind="linear", final_lr=0.1, num_steps=10), None),
    "lr 1.5 linear": (
        lr_sched(1.5, kind="linear", final_lr=0.1, num_steps=10),
        "experiments.sgd.lr",
    ),
    "lr 1.0 cosine": (lr_sched(1.0, kind="cosine", min_lr=0.0, num_steps=10), None),
    "lr 1.5 cosine": (lr_sched(1.5, kind="cosine", min_lr=0.0, num_steps=10), "experiments.sgd.lr"),
    "lr 1.0 exponential": (lr_sched(1.0, kind="exponential", gamma=0.9), None),
    "lr 1.5 exponential": (lr_sched(1.5, kind="exponential", gamma=0.9), "experiments.sgd.lr"),
    "lr 0 exponential": (lr_sched(0, kind="exponential", gamma=0.9), "experiments.sgd.lr"),
    "lr 1.5 step": (lr_sched(1.5, kind="step", step_size=10, gamma=0.5), None),
    "lr 1.5 constant": (lr_sched(1.5, kind="constant"), None),
    # gradient clipping
    "clip_grad null": (exp("sgd", clip_grad=None), None),
    "clip_grad norm 1.0": (exp("sgd", clip_grad={"norm": 1.0}), None),
    "clip_grad value 0.5": (exp("adam", clip_grad={"value": 0.5}), None),
    "clip_grad norm 1e-12": (exp("sgd", clip_grad={"norm": 1e-12}), None),
    "clip_grad norm 0": (exp("sgd", clip_grad={"norm": 0.0}), "experiments.sgd.clip_grad.norm"),
    "clip_grad value -1": (exp("sgd", clip_grad={"value": -1}), "experiments.sgd.clip_grad.value"),
    "clip_grad norm 'big'": (
        exp("sgd", clip_grad={"norm": "big"}),
        "experiments.sgd.clip_grad.norm",
    ),
    "clip_grad both": (
        exp("sgd", clip_grad={"norm": 1.0, "value": 0.5}),
        "experiments.sgd.clip_grad",
    ),
    "clip_grad neither": (exp("sgd", clip_grad={}), "experiments.sgd.clip_grad"),
    "clip_grad a number": (exp("sgd", clip_grad=1.0), "experiments.sgd.clip_grad"),
    "clip_grad max_norm": (
        exp("sgd", clip_grad={"max_norm": 1.0}),
        "experiments.sgd.clip_grad.max_norm",
    ),
}


EDGES.update(GROUP_EDGES)  # Muon and parameter groups (param_group_cases.py)


@pytest.mark.parametrize("case", EDGES)
def test_schema_and_semantic_edges(case):
    change, path = EDGES[case]
    problems = changed(change)
    if path is None:
        assert problems == [], [str(p) for p in problems]
    else:
        assert [str(p).split(": ")[0] for p in problems] == [path], [str(p) for p in problems]


# Schema keywords that bound a value. Each one, removed from the schema, must change what
# the schema reports for at least one case of EDGES: none is there untested.
BOUND_KEYWORDS = {
    "type", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minItems",
    "maxItems", "minProperties", "pattern", "enum", "uniqueItems", "required",
    "additionalProperties", "unevaluatedProperties", "prefixItems", "items", "propertyNames",
}  # fmt: skip


def schema_bounds(node, at=()):
    """(location, keyword) of every bound in the schema, outside the `if` conditions."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from schema_bounds(item, (*at, i))
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in BOUND_KEYWORDS and at[-1:] != ("properties",):
                yield at, key
            if key != "if":
                yield from schema_bounds(value, (*at, key))


def without(schema: dict, at: tuple, keyword: str) -> dict:
    mutated = copy.deepcopy(schema)
    node = mutated
    for part in at:
        node = node[part]
    del node[keyword]
    return mutated


BOUNDS = list(schema_bounds(SCHEMA_DICT))


def test_the_bound_list_is_complete():
    """The walk finds the bounds the issue named (betas, eps, momentum) among the others."""
    where = {f"{'/'.join(map(str, at))}:{kw}" for at, kw in BOUNDS}
    assert "$defs/fraction:exclusiveMaximum" in where
    assert "$defs/positive:exclusiveMinimum" in where
    assert "properties/batch_size:minimum" in where
    assert len(BOUNDS) > 40


@functools.cache
def schema_lines(case: str) -> list:
    return changed(EDGES[case][0], SCHEMA_DICT, schema_problems)


@pytest.mark.parametrize(
    ("at", "keyword"), BOUNDS, ids=[f"{'/'.join(map(str, at))}:{kw}" for at, kw in BOUNDS]
)
def test_every_schema_bound_is_tested(at, keyword):
    mutated = without(SCHEMA_DICT, at, keyword)
    # Cases naming a key of the bound's location first: the search stops at the first change.
    words = {w for part in at if isinstance(part, str) for w in re.split(r"\W+", part)}
    words -= {"", "defs", "properties", "then", "allOf"}
    cases = sorted(EDGES, key=lambda case: not words & set(re.split(r"\W+", case)))
    for case in cases:
        if changed(EDGES[case][0], mutated, schema_problems) != schema_lines(case):
            return
    pytest.fail(f"removing {'/'.join(map(str, at))}:{keyword} changes no case of EDGES")


# The exact lines: one per problem, naming the key path.
LINES = {
    "learning_rate typo": (
        rename("adam", "lr", "learning_rate"),
        ["experiments.adam.learning_rate: unknown hyperparameter of adam; did you mean 'lr'?"],
    ),
    "batch_size 200": (
        top(batch_size=200),
        ["batch_size: 200 is larger than the dataset (96 samples)"],
    ),
    "betas [0.9, 1.0]": (
        exp("adam", betas=[0.9, 1.0]),
        ["experiments.adam.betas[1]: 1.0 is out of range (0 ≤ betas[1] < 1)"],
    ),
    "momentum 1.5": (
        exp("sgd", momentum=1.5),
        ["experiments.sgd.momentum: 1.5 is out of range (0 ≤ momentum < 1)"],
    ),
    "lr 0": (exp("sgd", lr=0), ["experiments.sgd.lr: 0 is out of range (lr > 0)"]),
    "steps 0": (top(steps=0), ["steps: 0 is out of range (steps ≥ 1)"]),
    "eps missing": (
        drop("adam", "eps"),
        ["experiments.adam.eps: missing hyperparameter of adam"],
    ),
    "unknown optimizer": (
        exp("sgd", optimizer="lion"),
        [
            "experiments.sgd.optimizer: unknown optimizer 'lion'"
            " (known: sgd, adam, adamw, adagrad, rmsprop, muon)"
        ],
    ),
    "optimizer typo": (
        exp("sgd", optimizer="rmsprob"),
        [
            "experiments.sgd.optimizer: unknown optimizer 'rmsprob'"
            " (known: sgd, adam, adamw, adagrad, rmsprop, muon); did you mean 'rmsprop'?"
        ],
    ),
    "a float YAML read as a string": (
        exp("adam", eps="1e-8"),
        [
            "experiments.adam.eps: expected a number, got '1e-8'"
            " (write floats with a dot, 1.0e-8: YAML reads 1e-8 as a string)"
        ],
    ),
    "NaN": (exp("sgd", lr=float("nan")), ["experiments.sgd.lr: nan is not a finite number"]),
    "an integer written 16.0": (
        top(batch_size=16.0),
        ["batch_size: expected an integer, got 16.0"],
    ),
    "momentun": (
        exp("sgd", momentun=0.9),
        ["experiments.sgd.momentun: unknown hyperparameter of sgd; did you mean 'momentum'?"],
    ),
    "epsilon for eps": (
        rename("adam", "eps", "epsilon"),
        ["experiments.adam.epsilon: unknown hyperparameter of adam; did you mean 'eps'?"],
    ),
    "another optimizer's hyperparameter": (
        exp("sgd", betas=[0.9, 0.999]),
        [
            "experiments.sgd.betas: unknown hyperparameter of sgd"
            " (betas is a hyperparameter of adam, adamw)"
        ],
    ),
    "stepz": (top(stepz=5), ["stepz: unknown key; did you mean 'steps'?"]),
    "f16 tolerance": (
        top(tolerance={"f16": 1e-3}),
        ["tolerance.f16: unknown dtype; did you mean 'f64'?"],
    ),
    "keep_defaults of another optimizer": (
        exp("sgd", keep_defaults={"burn": ["betas"]}),
        [
            "experiments.sgd.keep_defaults.burn[0]: 'betas' is not a hyperparameter of sgd"
            " (it can keep: momentum, dampening, weight_decay, nesterov)"
        ],
    ),
    "nesterov without momentum": (
        exp("sgd", nesterov=True),
        [
            "experiments.sgd.nesterov: true needs momentum > 0 and dampening 0, or PyTorch"
            " refuses it; momentum is 0.0"
        ],
    ),
    "probe out of range": (
        exp("adam", probe="fc.weight[3,0]"),
        ["experiments.adam.probe: 'fc.weight[3,0]' is out of range; fc.weight has shape [3, 48]"],
    ),
    "three problems": (
        lambda c: (
            top(batch_size=200)(c),
            exp("sgd", momentum=1.5)(c),
            exp("adam", betas=[0.9, 1.0])(c),
        ),
        [
            "batch_size: 200 is larger than the dataset (96 samples)",
            "experiments.sgd.momentum: 1.5 is out of range (0 ≤ momentum < 1)",
            "experiments.adam.betas[1]: 1.0 is out of range (0 ≤ betas[1] < 1)",
        ],
    ),
    # the new optimizers, schedules and clipping
    "adamw amsgrad missing": (
        lambda c: (add("w", ADAMW)(c), c["experiments"]["w"].pop("amsgrad")),
        ["experiments.w.amsgrad: missing hyperparameter of adamw"],
    ),
    "rmsprop momentum 1.0": (
        add("r", RMSPROP, momentum=1.0),
        ["experiments.r.momentum: 1.0 is out of range (0 ≤ momentum < 1)"],
    ),
    "rmsprop alpha -0.1": (
        add("r", RMSPROP, alpha=-0.1),
        ["experiments.r.alpha: -0.1 is out of range (alpha ≥ 0)"],
    ),
    "adagrad eps 0": (add("g", ADAGRAD, eps=0), ["experiments.g.eps: 0 is out of range (eps > 0)"]),
    "rho for alpha": (
        lambda c: (add("r", RMSPROP)(c), rename("r", "alpha", "rho")(c)),
        ["experiments.r.rho: unknown hyperparameter of rmsprop; did you mean 'alpha'?"],
    ),
    "initial_accumulator_value 0.1": (
        add("g", ADAGRAD, initial_accumulator_value=0.1),
        [
            "experiments.g.initial_accumulator_value: 0.1 is refused (only 0): Burn's AdaGrad"
            " has no initial accumulator value, its sum of squared gradients starts at 0"
        ],
    ),
    "keep_defaults lr": (
        add("r", RMSPROP, keep_defaults={"torch": ["lr"]}),
        [
            "experiments.r.keep_defaults.torch[0]: 'lr' has no torch default for rmsprop"
            " (it can keep: alpha, eps, weight_decay, momentum, centered)"
        ],
    ),
    "scheduler for schedule": (
        exp("sgd", scheduler={"kind": "constant"}),
        ["experiments.sgd.scheduler: unknown key; did you mean 'schedule'?"],
    ),
    "schedule num_steps missing": (
        sched(kind="linear", final_lr=0.05),
        ["experiments.sgd.schedule.num_steps: required for kind linear"],
    ),
    "schedule eta_min for min_lr": (
        sched(kind="cosine", eta_min=0.0, num_steps=10),
        ["experiments.sgd.schedule.eta_min: unknown key of kind cosine; did you mean 'min_lr'?"],
    ),
    "schedule key of another kind": (
        sched(kind="linear", final_lr=0.05, num_steps=10, gamma=0.5),
        [
            "experiments.sgd.schedule.gamma: a key of kind exponential and step, not of linear"
            " (linear takes final_lr, num_steps)"
        ],
    ),
    "schedule kind unknown": (
        sched(kind="cosin"),
        [
            "experiments.sgd.schedule.kind: unknown schedule kind 'cosin'"
            " (known: constant, linear, cosine, exponential, step); did you mean 'cosine'?"
        ],
    ),
    "schedule kind missing": (
        sched(num_steps=10),
        [
            "experiments.sgd.schedule.kind: missing"
            " (one of: constant, linear, cosine, exponential, step)"
        ],
    ),
    "cpu_path unknown": (
        top(cpu_path="AVX2"),
        ["cpu_path: unknown setting 'AVX2' (known: native, avx2, compatible)"],
    ),
    "burn_backend unknown": (
        exp("adam", burn_backend="wgpu"),
        ["experiments.adam.burn_backend: unknown Burn backend 'wgpu' (known: flex, ndarray)"],
    ),
    "burn_backend typo": (
        exp("adam", burn_backend="nd_array"),
        [
            "experiments.adam.burn_backend: unknown Burn backend 'nd_array'"
            " (known: flex, ndarray); did you mean 'ndarray'?"
        ],
    ),
    "model typo": (
        exp("adam", model="cnn_nb"),
        [
            "experiments.adam.model: unknown model 'cnn_nb' (known: cnn1d, cnn_bn, transformer,"
            " lenet, gpt); did you mean 'cnn_bn'?"
        ],
    ),
    "data a model does not take": (
        exp("adam", data="digits"),
        [
            "experiments.adam.data: model cnn1d takes 16 sequences in 3 classes;"
            " data digits gives 8×8 images in 10 classes"
        ],
    ),
    "digits with gpt": (
        exp("adam", data="digits", model="gpt"),
        [
            "experiments.adam.data: model gpt takes token ids, blocks of 32 over 84"
            " characters; data digits gives 8×8 images in 10 classes"
        ],
    ),
    "a context longer than the text": (
        exp("adam", model={"name": "gpt", "context": 400000}),
        [
            "experiments.adam.data: model gpt's context 400000 is longer than the text"
            " (383156 characters with a next one)"
        ],
    ),
    "keep_defaults of an unknown framework, then a bad key of a known one": (
        exp("adam", keep_defaults={"jax": ["eps"], "burn": ["eps", "nope"]}),
        [
            "experiments.adam.keep_defaults.jax: unknown framework (known: torch, burn)",
            "experiments.adam.keep_defaults.burn[1]: 'nope' is not a hyperparameter of adam"
            " (it can keep: betas, eps, weight_decay, amsgrad)",
        ],
    ),
    "model sizes without a name": (
        exp("adam", model={"context": 16}),
        ["experiments.adam.model: a model given with sizes needs its `name`"],
    ),
    "model size 0": (
        exp("adam", model={"name": "gpt", "layers": 0}),
        ["experiments.adam.model.layers: must be a positive integer, got 0"],
    ),
    "schedule with a typo and an unknown key": (
        sched(kind="step", step_size=2, gama=0.5, foo=1),
        [
            "experiments.sgd.schedule.gama: unknown key of kind step; did you mean 'gamma'?",
            "experiments.sgd.schedule.foo: unknown key of kind step (known: kind, step_size,"
            " gamma)",
        ],
    ),
    "constant schedule with a gamma": (
        sched(kind="constant", gamma=0.5),
        [
            "experiments.sgd.schedule.gamma: a key of kind exponential and step, not of constant"
            " (constant takes no other key)"
        ],
    ),
    "a port missing its parts": (
        exp("adam", model={"name": "port", "torch": {"module": "nope"}}),
        [
            "experiments.adam.model.torch.module: 'nope': not an import path and a class, e.g."
            " 'mypkg.net:Net'",
            "experiments.adam.model.burn: a port needs `burn` ({crate: folder, bin: binary})",
            "experiments.adam.model.init: a port needs `init` (a safetensors file of the initial"
            " weights, PyTorch's names)",
            "experiments.adam.model.data: a port needs `data` (a safetensors file of x and y)",
            "experiments.adam.model.layers: a port needs `layers` (the submodules recorded:"
            " dotted names or globs, e.g. 'blocks.*.mlp')",
        ],
    ),
    "a linear schedule's lr out of (0, 1]": (
        lr_sched(-1, kind="linear", final_lr=0.1, num_steps=4),
        [
            "experiments.sgd.lr: -1 is out of range (0 < lr ≤ 1): Burn's linear schedule"
            " refuses an initial lr outside (0, 1]"
        ],
    ),
    "label_smoothing 1.5": (
        exp("adam", label_smoothing=1.5),
        [
            "experiments.adam.label_smoothing: 1.5 is outside [0, 1) (the share of the target"
            " spread over every class: 1 would leave nothing on the label)"
        ],
    ),
    "dropout 0.1": (
        exp("adam", dropout=0.1),
        [
            "experiments.adam.dropout: 0.1: only 0 (PyTorch and Burn draw dropout masks from"
            " their own random streams, so no run could match step for step)"
        ],
    ),
    "probe_steps after the last": (
        exp("adam", probe_steps=[1, 7]),
        ["experiments.adam.probe_steps[1]: step 7 is after the last step (6)"],
    ),
    "burn_backend null": (
        exp("adam", burn_backend=None),
        ["experiments.adam.burn_backend: unknown Burn backend null (known: flex, ndarray)"],
    ),
    "schedule null": (
        exp("sgd", schedule=None),
        [
            "experiments.sgd.schedule: expected a mapping like"
            " {kind: cosine, min_lr: 0.0, num_steps: 100}, got null"
        ],
    ),
    "num_steps 0": (
        sched(kind="cosine", min_lr=0.0, num_steps=0),
        ["experiments.sgd.schedule.num_steps: 0 is out of range (num_steps ≥ 1)"],
    ),
    "step_size 0": (
        sched(kind="step", step_size=0, gamma=0.5),
        ["experiments.sgd.schedule.step_size: 0 is out of range (step_size ≥ 1)"],
    ),
    "step gamma 0": (
        sched(kind="step", step_size=3, gamma=0),
        ["experiments.sgd.schedule.gamma: 0 is out of range (gamma > 0)"],
    ),
    "exponential gamma above 1": (
        sched(kind="exponential", gamma=1.5),
        [
            "experiments.sgd.schedule.gamma: 1.5 is out of range (0 < gamma ≤ 1):"
            " Burn's exponential schedule refuses a gamma above 1"
        ],
    ),
    "final_lr above lr": (
        sched(kind="linear", final_lr=0.6, num_steps=10),
        [
            "experiments.sgd.schedule.final_lr: 0.6 is above lr (0.5): PyTorch's LinearLR"
            " refuses an end factor (final_lr / lr) above 1"
        ],
    ),
    "min_lr above lr": (
        sched(kind="cosine", min_lr=0.6, num_steps=10),
        [
            "experiments.sgd.schedule.min_lr: 0.6 is above lr (0.5):"
            " Burn's cosine schedule refuses a min_lr above the initial lr"
        ],
    ),
    "lr above 1 with cosine": (
        lr_sched(1.5, kind="cosine", min_lr=0.0, num_steps=10),
        [
            "experiments.sgd.lr: 1.5 is out of range (0 < lr ≤ 1):"
            " Burn's cosine schedule refuses an initial lr outside (0, 1]"
        ],
    ),
    "lr above 1 with linear, and a final_lr above it": (
        lr_sched(2.0, kind="linear", final_lr=3.0, num_steps=10),
        [
            "experiments.sgd.lr: 2.0 is out of range (0 < lr ≤ 1):"
            " Burn's linear schedule refuses an initial lr outside (0, 1]"
        ],
    ),
    "lr 0 with exponential": (
        lr_sched(0, kind="exponential", gamma=0.5),
        [
            "experiments.sgd.lr: 0 is out of range (0 < lr ≤ 1):"
            " Burn's exponential schedule refuses an initial lr outside (0, 1]"
        ],
    ),
    "clip_grad both": (
        exp("sgd", clip_grad={"norm": 1.0, "value": 0.5}),
        ["experiments.sgd.clip_grad: give exactly one of norm or value, not both"],
    ),
    "clip_grad neither": (
        exp("sgd", clip_grad={}),
        ["experiments.sgd.clip_grad: give exactly one of norm or value (e.g. {norm: 1.0})"],
    ),
    "clip_grad norm 0": (
        exp("sgd", clip_grad={"norm": 0}),
        ["experiments.sgd.clip_grad.norm: 0 is out of range (norm > 0)"],
    ),
    "clip_grad value -0.5": (
        exp("sgd", clip_grad={"value": -0.5}),
        ["experiments.sgd.clip_grad.value: -0.5 is out of range (value > 0)"],
    ),
    "clip_grad max_norm": (
        exp("sgd", clip_grad={"max_norm": 1.0}),
        ["experiments.sgd.clip_grad.max_norm: unknown key of clip_grad; did you mean 'norm'?"],
    ),
    "clip_grad a number": (
        exp("sgd", clip_grad=1.0),
        ["experiments.sgd.clip_grad: expected null, {norm: x} or {value: x}, got 1.0"],
    ),
    "several problems in one experiment, in the config's order": (
        lambda c: c["experiments"].update(
            adam={
                "optimizer": "adam",
                "learning_rate": 0.01,
                "betas": [1.0, 0.999],
                "eps": 0,
                "weight_decay": -1,
                "probe": "fc.bias[3]",
            }  # fmt: skip
        ),
        [
            "experiments.adam.learning_rate: unknown hyperparameter of adam; did you mean 'lr'?",
            "experiments.adam.betas[0]: 1.0 is out of range (0 ≤ betas[0] < 1)",
            "experiments.adam.eps: 0 is out of range (eps > 0)",
            "experiments.adam.weight_decay: -1 is out of range (weight_decay ≥ 0)",
            "experiments.adam.probe: 'fc.bias[3]' is out of range; fc.bias has shape [3]",
        ],
    ),
}


@pytest.mark.parametrize("case", LINES)
def test_one_line_per_problem(case):
    change, lines = LINES[case]
    assert [str(p) for p in changed(change)] == lines


@pytest.mark.parametrize(
    ("key", "known", "expected"),
    [
        ("learning_rate", ["optimizer", "lr", "eps"], "lr"),
        ("LR", ["optimizer", "lr", "eps"], "lr"),
        ("epsilon", ["lr", "betas", "eps"], "eps"),
        ("beta_2", ["lr", "betas", "eps"], "betas"),
        ("momentun", ["lr", "momentum", "dampening"], "momentum"),
        ("weight-decay", ["lr", "weight_decay"], "weight_decay"),
        ("wd", ["lr", "weight_decay"], "weight_decay"),
        ("penalty", ["lr", "weight_decay"], "weight_decay"),  # Burn's WeightDecayConfig
        ("decay", ["lr", "dampening", "weight_decay"], "weight_decay"),
        ("stepz", ["steps", "batch_size", "threads"], "steps"),
        ("colour", ["steps", "batch_size", "threads"], None),
    ],
)
def test_closest_key(key, known, expected):
    assert closest_key(key, known) == expected


def test_no_suggestion_lists_the_known_keys():
    [problem] = changed(top(colour="blue"))
    assert str(problem).startswith("colour: unknown key (known: steps, batch_size, threads")


def test_a_typo_does_not_also_report_the_key_it_replaces():
    """'learning_rate' for 'lr': one line, not also "lr: missing"."""
    problems = changed(rename("adam", "lr", "learning_rate"))
    assert [p.path for p in problems] == [("experiments", "adam", "learning_rate")]


def test_many_problems_stay_one_line_each():
    def wreck(c):
        c.update(steps=0, batch_size=500, threads="two", stepz=1, report_steps=[])
        c["tolerance"].update(f32=-1, f16=1)
        c["experiments"]["sgd"].update(optimizer="lion", lr=-1)
        c["experiments"]["adam"].update(betas=[2, 2], eps=float("inf"), learning_rate=1)
        c["experiments"]["momentum"].update(nesterov=True, dampening=0.5)
        c["experiments"]["pitfall"].update(probe="conv.weight[9,9,9]", keep_defaults={"x": []})

    problems = changed(wreck)
    text = report(problems, "config.yaml")
    lines = text.splitlines()
    assert lines[0] == f"config.yaml: {len(problems)} problems, nothing was run:"
    assert len(lines) == len(problems) + 1 == 16
    assert len({p.path for p in problems}) == len(problems)  # one line per key path
    for line in lines[1:]:
        assert line.split(": ")[0].split(".")[0].split("[")[0] in (
            "steps", "batch_size", "threads", "stepz", "report_steps", "tolerance", "experiments",
        )  # fmt: skip
        assert len(line) < 160 and "$defs" not in line and "{" not in line


def test_defaults_are_filled_in_as_snakemake_validate_did():
    config = small_pipeline_config()
    del config["threads"], config["report_steps"]
    assert config_problems(config, SCHEMA_DICT) == []
    defaults = SCHEMA_DICT["properties"]
    assert config["threads"] == defaults["threads"]["default"] == 1
    assert config["report_steps"] == defaults["report_steps"]["default"]
    config["report_steps"].append(1000)  # the config's own copy, not the schema's list
    assert 1000 not in defaults["report_steps"]["default"]


def test_given_values_are_not_replaced_by_defaults():
    config = small_pipeline_config(threads=2, report_steps=[3])
    assert config_problems(config, SCHEMA_DICT) == []
    assert (config["threads"], config["report_steps"]) == (2, [3])


def test_the_project_config_is_accepted():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert config_problems(config, SCHEMA_DICT) == []


def test_check_config_stops_with_the_lines_and_no_traceback():
    config = small_pipeline_config(batch_size=200)
    with pytest.raises(SystemExit) as stop:
        check_config(config, SCHEMA, "config.yaml")
    assert stop.value.code == (
        "config.yaml: 1 problem, nothing was run:\n"
        "batch_size: 200 is larger than the dataset (96 samples)"
    )
    check_config(small_pipeline_config(), SCHEMA, "config.yaml")  # a good config: no stop


def test_by_hand(tmp_path, capsys):
    from torch_burn_parity.config.check_config import main

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(small_pipeline_config()))
    main([str(good)])
    assert capsys.readouterr().out == f"{good}: OK\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(small_pipeline_config(steps=0)))
    with pytest.raises(SystemExit) as stop:
        main([str(bad)])
    assert stop.value.code.splitlines()[1:] == ["steps: 0 is out of range (steps ≥ 1)"]


def test_describe_source():
    assert describe_source(["config.yaml"]) == "config.yaml"
    assert describe_source([Path.cwd() / "other.yaml"], {"steps": 3}) == "other.yaml, --config"
    assert describe_source([]) == "config"


def test_dataset_size_and_shapes_come_from_the_data_and_model():
    assert DATASET_SIZE == 96
    assert PARAMETER_SHAPES == {
        "conv.weight": [4, 1, 5],
        "conv.bias": [4],
        "fc.weight": [3, 48],
        "fc.bias": [3],
    }


@pytest.mark.parametrize(
    ("probe", "problem"),
    [
        ("fc.weight[1,19]", None),
        ("fc.weight[1, 19]", None),
        ("conv.bias[0]", None),
        ("fc.weight[1,48]", "'fc.weight[1,48]' is out of range; fc.weight has shape [3, 48]"),
        ("fc.bias[0,0]", "'fc.bias[0,0]' has 2 indices; fc.bias has shape [3]"),
        ("fc.gamma[0]", "'fc.gamma[0]' names no parameter of cnn1d (known: conv.weight, conv.bias, "
                        "fc.weight, fc.bias)"),
        ("fc.weight", "'fc.weight' is not a parameter index like 'fc.weight[1,19]'"),
    ],
)  # fmt: skip
def test_probe_problem(probe, problem):
    assert probe_problem(probe) == problem


def test_trainer_spec_refuses_a_batch_larger_than_the_dataset():
    """Run by hand, train_torch.py would otherwise divide by zero batches."""
    config = small_pipeline_config(batch_size=DATASET_SIZE + 1)
    with pytest.raises(ConfigError, match=r"^batch_size: 97 is larger than the dataset"):
        experiment_spec(config, "sgd")
    assert experiment_spec(small_pipeline_config(batch_size=DATASET_SIZE), "sgd")


def test_trainer_spec_refuses_nesterov_pytorch_refuses():
    config = small_pipeline_config()
    config["experiments"]["sgd"]["nesterov"] = True
    with pytest.raises(ConfigError, match=r"^experiments\.sgd\.nesterov: "):
        experiment_spec(config, "sgd")


@pytest.mark.parametrize(
    ("exp", "message"),
    [
        ({**SGD, "nesterov": 1}, "experiments.e.nesterov: expected true or false, got 1"),
        ({**SGD, "lr": True}, "experiments.e.lr: expected a number, got True"),
        ({**ADAM, "betas": [0.9]}, "experiments.e.betas: expected two numbers, got [0.9]"),
        (
            {k: v for k, v in ADAM.items() if k != "eps"},
            "experiments.e.eps: missing hyperparameter for adam",
        ),
    ],
)
def test_experiment_spec_names_the_key(exp, message):
    with pytest.raises(ConfigError) as err:
        experiment_spec({"steps": 3, "batch_size": 16, "experiments": {"e": exp}}, "e")
    assert str(err.value) == message


@pytest.mark.parametrize(("key", "value"), [("steps", 0), ("batch_size", -1), ("steps", 3.0)])
def test_experiment_spec_refuses_run_settings(key, value):
    config = {"steps": 3, "batch_size": 16, "experiments": {"e": dict(ADAM)}, key: value}
    with pytest.raises(ConfigError, match=f"^{key}: must be a positive integer, got {value}$"):
        experiment_spec(config, "e")


def test_experiment_spec_returns_the_run_settings():
    config = {"steps": 3, "batch_size": 16, "experiments": {"e": dict(ADAM)}}
    spec = experiment_spec(config, "e")
    assert (spec.name, spec.steps, spec.batch_size, spec.threads) == ("e", 3, 16, 1)
    assert experiment_spec({**config, "threads": 4}, "e").threads == 4


# --- the new optimizers, schedules and clipping in the trainers' spec ----------------------


def spec_config(**exp) -> dict:
    return {"steps": 3, "batch_size": 16, "experiments": {"e": exp}}


def test_spec_fills_in_amsgrad_schedule_and_clipping():
    spec = experiment_spec(spec_config(**ADAM), "e")
    assert list(spec.hyperparameters) == ["lr", "betas", "eps", "weight_decay", "amsgrad"]
    assert spec.hyperparameters["amsgrad"] is False  # PyTorch's default, explicit
    assert spec.schedule == {"kind": "constant"}
    assert spec.clip_grad is None
    assert experiment_spec(spec_config(**ADAM, clip_grad=None), "e").clip_grad is None
    assert spec.burn_backend == "flex"  # Burn's default backend, explicit


def test_spec_carries_the_burn_backend_and_refuses_an_unknown_one():
    assert experiment_spec(spec_config(**ADAM, burn_backend="ndarray"), "e").burn_backend == (
        "ndarray"
    )
    with pytest.raises(ConfigError) as err:
        experiment_spec(spec_config(**SGD, burn_backend="tch"), "e")
    assert str(err.value) == (
        "experiments.e.burn_backend: unknown Burn backend 'tch' (known: flex, ndarray)"
    )


def test_spec_carries_the_schedule_and_clipping_given():
    given = {"num_steps": 10, "min_lr": 0.001, "kind": "cosine"}
    spec = experiment_spec(spec_config(**ADAMW, schedule=given, clip_grad={"value": 0.5}), "e")
    assert spec.schedule == given and list(spec.schedule) == ["kind", "min_lr", "num_steps"]
    assert spec.clip_grad == {"value": 0.5}
    assert spec.hyperparameters["amsgrad"] is False  # AdamW's is given


@pytest.mark.parametrize(
    "exp",
    [dict(ADAMW), dict(ADAGRAD), dict(RMSPROP)],
    ids=["adamw", "adagrad", "rmsprop"],
)
def test_spec_of_each_new_optimizer_holds_every_hyperparameter(exp):
    spec = experiment_spec(spec_config(**exp), "e")
    assert spec.optimizer == exp["optimizer"]
    assert list(spec.hyperparameters) == list(HYPERPARAMETERS[exp["optimizer"]])
    assert spec.hyperparameters == {k: v for k, v in exp.items() if k != "optimizer"}


@pytest.mark.parametrize(
    ("exp", "message"),
    [
        (
            {k: v for k, v in ADAMW.items() if k != "amsgrad"},
            "experiments.e.amsgrad: missing hyperparameter for adamw",
        ),
        ({**RMSPROP, "centered": 0}, "experiments.e.centered: expected true or false, got 0"),
        ({**ADAM, "amsgrad": "no"}, "experiments.e.amsgrad: expected true or false, got 'no'"),
        ({**ADAGRAD, "lr_decay": None}, "experiments.e.lr_decay: expected a number, got None"),
        (
            {**ADAGRAD, "initial_accumulator_value": 0.1},
            "experiments.e.initial_accumulator_value: 0.1 is refused (only 0): Burn's AdaGrad"
            " has no initial accumulator value, its sum of squared gradients starts at 0",
        ),
        (
            {**SGD, "schedule": {"kind": "linear", "final_lr": 0.1}},
            "experiments.e.schedule.num_steps: required for kind linear",
        ),
        (
            {**SGD, "schedule": {"kind": "warmup"}},
            "experiments.e.schedule.kind: unknown schedule kind 'warmup'"
            " (known: constant, linear, cosine, exponential, step)",
        ),
        (
            {**ADAM, "lr": 2.0, "schedule": {"kind": "exponential", "gamma": 0.9}},
            "experiments.e.lr: 2.0 is out of range (0 < lr ≤ 1):"
            " Burn's exponential schedule refuses an initial lr outside (0, 1]",
        ),
        (
            {**SGD, "clip_grad": {"norm": 1.0, "value": 1.0}},
            "experiments.e.clip_grad: give exactly one of norm or value, not both",
        ),
        (
            {**SGD, "keep_defaults": {"torch": ["alpha"]}},
            "experiments.e.keep_defaults.torch: 'alpha' has no torch default for sgd",
        ),
    ],
)
def test_trainer_spec_refuses_naming_the_key(exp, message):
    """A trainer run by hand, on a config the pipeline's check never saw."""
    with pytest.raises(ConfigError) as err:
        experiment_spec(spec_config(**exp), "e")
    assert str(err.value) == message


# --- sweeps: each point is checked, a schedule or clipping is not an axis -------------------


def sweep_lines(sweep: dict, **experiments) -> list[str]:
    config = small_pipeline_config(sweeps={"g": sweep})
    config["experiments"].update(experiments)
    return [str(p) for p in sweep_problems(config, SCHEMA_DICT)]


@pytest.mark.parametrize("key", ["schedule", "clip_grad"])
def test_a_schedule_or_clipping_axis_is_refused(key):
    values = [{"kind": "constant"}] if key == "schedule" else [None, {"norm": 1.0}]
    assert sweep_lines({"base": "adam", "axes": {"lr": [0.1], key: values}}) == [
        f"sweeps.g.axes.{key}: {key} cannot be an axis (axes vary the optimizer's"
        " hyperparameters, keep_defaults and burn_backend): set it in the base, or write one"
        " sweep per value"
    ]


def test_a_swept_lr_is_checked_against_the_base_schedule():
    base = dict(SGD, schedule={"kind": "cosine", "min_lr": 0.0, "num_steps": 10})
    assert sweep_lines({"base": base, "axes": {"lr": [0.5, 1.0]}}) == []
    assert sweep_lines({"base": base, "axes": {"lr": [0.5, 2.0]}}) == [
        "sweeps.g.axes.lr: 2.0 is out of range (0 < lr ≤ 1): Burn's cosine schedule refuses"
        " an initial lr outside (0, 1] (at point g__lr_2)"
    ]


def test_a_base_schedule_is_checked_at_every_point():
    base = dict(SGD, schedule={"kind": "step", "step_size": 0, "gamma": 0.5})
    assert sweep_lines({"base": base, "axes": {"momentum": [0.0, 0.5]}}) == [
        "sweeps.g.base.schedule.step_size: 0 is out of range (step_size ≥ 1) (at point g__mom_0)"
    ]
    named = dict(ADAM, clip_grad={"norm": 1.0, "value": 1.0})
    assert sweep_lines({"base": "clipped", "axes": {"lr": [0.1]}}, clipped=named)[-1] == (
        "sweeps.g.base.clip_grad: give exactly one of norm or value, not both (at point g__lr_0p1)"
    )


def test_the_burn_backend_is_a_sweep_axis_with_readable_names():
    sweep = {"base": "adam", "axes": {"burn_backend": ["flex", "ndarray"]}}
    assert sweep_lines(sweep) == []
    config = small_pipeline_config(sweeps={"g": sweep})
    points = expand_all(config, HYPERPARAMETERS)["g"]
    assert [(name, exp["burn_backend"]) for name, exp, _ in points] == [
        ("g__burn_backend_flex", "flex"),
        ("g__burn_backend_ndarray", "ndarray"),
    ]
    assert sweep_lines({"base": "adam", "axes": {"burn_backend": ["flex", "wgpu"]}}) == [
        "sweeps.g.axes.burn_backend: unknown Burn backend 'wgpu' (known: flex, ndarray)"
        " (at point g__burn_backend_wgpu)"
    ]


def test_new_hyperparameters_are_sweepable():
    assert sweep_lines({"base": dict(ADAM), "axes": {"amsgrad": [False, True]}}) == []
    base = dict(RMSPROP, schedule={"kind": "exponential", "gamma": 0.9}, clip_grad={"value": 1.0})
    assert sweep_lines({"base": base, "axes": {"centered": [False, True], "alpha": [0.9]}}) == []
    assert sweep_lines(
        {"base": dict(ADAGRAD), "axes": {"initial_accumulator_value": [0.0, 0.5]}}
    ) == [
        "sweeps.g.axes.initial_accumulator_value: 0.5 is refused (only 0): Burn's AdaGrad has"
        " no initial accumulator value, its sum of squared gradients starts at 0"
        " (at point g__initial_accumulator_value_0p5)"
    ]


@pytest.mark.parametrize(
    ("value", "low", "high", "message"),
    [
        (0, ">0", "", "0 is out of range (k > 0)"),
        (0.0, ">=0", "", None),
        (-1e-300, ">=0", "", "-1e-300 is out of range (k ≥ 0)"),
        (0, ">=1", "", "0 is out of range (k ≥ 1)"),
        (1, ">=1", "", None),
        (1.5, ">=1", "", "expected an integer, got 1.5"),
        ("x", ">0", "", "expected a number, got 'x'"),
        (float("inf"), ">0", "", "expected a number, got inf"),
        (True, ">0", "", "expected a number, got true"),
        (1, ">0", "<=1", None),
        (1.0000000000000002, ">0", "<=1", "1.0000000000000002 is out of range (0 < k ≤ 1)"),
        (0.5, ">=0", "<=1", None),
        (-0.5, ">=0", "<=1", "-0.5 is out of range (0 ≤ k ≤ 1)"),
        (2, ">=1", "<=1", "2 is out of range (1 ≤ k ≤ 1)"),
    ],
)
def test_a_bound_is_checked_on_both_sides_of_its_edge_and_named(value, low, high, message):
    from torch_burn_parity.config.problems import bound_problem as _bound_problem

    problem = _bound_problem(("s",), "k", value, low, high)
    assert (None if problem is None else str(problem)) == (message and f"s.k: {message}")


def test_nesterov_without_momentum_or_with_dampening_names_both_and_a_kept_default():
    from torch_burn_parity.config.parity_config import nesterov_problems

    sgd = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "dampening": 0.0,
           "weight_decay": 0.0, "nesterov": True}  # fmt: skip
    needs = "true needs momentum > 0 and dampening 0, or PyTorch refuses it; "
    said = lambda e: [str(p) for p in nesterov_problems(("experiments", "e"), e)]  # noqa: E731
    assert said(dict(sgd, momentum=0.0, dampening=0.1)) == [
        f"experiments.e.nesterov: {needs}momentum is 0.0 and dampening is 0.1"
    ]
    assert said(dict(sgd, keep_defaults={"torch": ["momentum"]})) == [
        f"experiments.e.nesterov: {needs}momentum is 0.0 (PyTorch's default, kept)"
    ]
    # PyTorch's kept dampening is 0: no problem; nor with a value the schema names
    assert said(dict(sgd, keep_defaults={"torch": ["dampening"]}, dampening=0.5)) == []
    assert said(dict(sgd, momentum="x")) == [] and said(dict(sgd, nesterov=False)) == []


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("c.json", '{"steps": ', "not valid JSON ("),
        ("c.yaml", "steps: [1", "not valid YAML ("),
        ("c.yaml", "- 1\n- 2\n", "expected a mapping at the top level"),
    ],
)
def test_a_config_file_that_cannot_be_read_is_named(tmp_path, name, text, message):
    from torch_burn_parity.config.parity_config import load_config

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value).startswith(f"{path}: {message}")
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path / "absent.yaml")
    assert str(error.value) == f"{tmp_path / 'absent.yaml'}: config file not found"
