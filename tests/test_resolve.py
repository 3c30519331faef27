"""config/resolve.py: one experiment resolved into the spec both trainers run, and read back."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from conftest import ADAM, SGD
from torch_burn_parity.config import resolve
from torch_burn_parity.config.parity_config import ConfigError
from torch_burn_parity.config.spec import Group, Spec


def config(**experiments) -> dict:
    return {"steps": 3, "batch_size": 16, "experiments": experiments or {"e": ADAM}}


def refused(cfg: dict, name: str = "e") -> str:
    with pytest.raises(ConfigError) as error:
        resolve.experiment_spec(cfg, name)
    return str(error.value)


def test_a_resolved_spec_holds_every_key_with_the_defaults_filled_in():
    spec = resolve.experiment_spec(config(e=dict(ADAM, keep_defaults={"burn": ["eps"]})), "e")
    # every field, in the order the JSON file holds them (no burn_fixes, no port here)
    assert list(spec.as_dict()) == [f.name for f in fields(Spec)][:-2]
    assert spec.hyperparameters == {**{k: v for k, v in ADAM.items() if k != "optimizer"},
                                       "amsgrad": False}  # fmt: skip
    assert spec.keep_defaults == {"torch": [], "burn": ["eps"]}
    assert spec.requested["torch"]["eps"] == 1e-8 and spec.requested["burn"]["eps"] == 1e-5
    assert (spec.cpu_path, spec.threads, spec.probe_steps) == ("native", 1, [1])
    assert spec.schedule == {"kind": "constant"} and spec.clip_grad is None
    assert resolve.experiment_spec(dict(config(), cpu_path="compatible"), "e").cpu_path == (
        "compatible"
    )


def test_each_optional_key_given_lands_in_the_spec():
    """Every key the experiment or the run gives reaches its field (none falls back to the
    default because the wrong key was read)."""
    exp = dict(SGD, model="lenet", label_smoothing=0.1, burn_fixes=["smoothed_targets_in_dtype"],
               record={"every": 4}, burn_backend="ndarray", probe_steps=[5])  # fmt: skip
    cfg = dict(config(e=exp), steps=9, threads=2, record_budget_mb=64, cpu_path="compatible")
    spec = resolve.experiment_spec(cfg, "e")
    assert (spec.model, spec.data, spec.loss) == ("lenet", "digits", "cross_entropy")
    assert spec.label_smoothing == 0.1 and spec.burn_fixes == ["smoothed_targets_in_dtype"]
    # every 4th, the probe steps (1 always) and the last, each with its predecessor
    assert spec.probe_steps == [1, 5] and spec.record_steps == [1, 3, 4, 5, 7, 8, 9]
    assert (spec.threads, spec.cpu_path, spec.burn_backend) == (2, "compatible", "ndarray")
    assert (spec.steps, spec.batch_size) == (9, 16)
    # A budget too small for every step: the record thins out to fit it.
    thin = dict(config(e=dict(SGD, model="lenet")), steps=9, record_budget_mb=0.001)
    assert resolve.experiment_spec(thin, "e").record_steps == [1, 8, 9]
    assert "burn_fixes" not in resolve.experiment_spec(config(e=SGD), "e").as_dict()


@pytest.mark.parametrize("cpu", ["intel-avx512", "intel-avx2", "amd-avx2", "amd-avx512"])
def test_cpu_path_avx2_is_resolved_on_intel_and_refused_on_amd(host_cpu, cpu):
    """MKL offers its AVX2 branch on Intel CPUs only: the same config resolves on an Intel
    host and is refused, naming the key, on an AMD one (each host's /proc/cpuinfo)."""
    host_cpu(cpu)
    cfg = dict(config(), cpu_path="avx2")
    if cpu.startswith("intel"):
        assert resolve.experiment_spec(cfg, "e").cpu_path == "avx2"
    else:
        assert refused(cfg) == (
            "cpu_path: avx2 pins MKL's AVX2 branch, which MKL offers on Intel CPUs only; this"
            " one is amd (use native or compatible)"
        )


def test_a_one_step_run_is_a_run():
    assert resolve.experiment_spec(dict(config(), steps=1), "e").steps == 1
    assert refused(dict(config(), steps=0)).startswith("steps: must be a positive integer")


@pytest.mark.parametrize(
    ("experiments", "name", "message"),
    [
        ({"e": ADAM}, "x", "unknown experiment 'x' (config has ['e'])"),
        ({"e": dict(ADAM, optimizer="lion")}, "e",
         "experiments.e.optimizer: unknown optimizer 'lion' (known: sgd, adam, adamw, adagrad,"
         " rmsprop, muon)"),
        ({"e": dict(SGD, nesterov=1)}, "e",
         "experiments.e.nesterov: expected true or false, got 1"),
        ({"e": dict(SGD, lr=True)}, "e", "experiments.e.lr: expected a number, got True"),
        ({"e": dict(ADAM, keep_defaults={"jax": ["eps"]})}, "e",
         "experiments.e.keep_defaults: unknown framework 'jax'"),
        ({"e": dict(ADAM, probe_steps=[4])}, "e", "experiments.e.probe_steps"),
    ],
)  # fmt: skip
def test_what_cannot_be_resolved_is_named(experiments, name, message):
    assert refused(config(**experiments), name).startswith(message)


def given(**fields):
    """A change to a spec file's text: these fields set to these values."""
    return lambda text: json.dumps({**json.loads(text), **fields})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda text: text[:-3], "not a spec ("),
        (lambda text: json.dumps({"name": "e"}), "not a resolved spec (missing optimizer,"),
        (lambda text: text.replace('"optimizer": "adam"', '"optimizer": "lion"'),
         "unknown optimizer 'lion' (known: sgd, adam, adamw, adagrad, rmsprop, muon)"),
        (lambda text: text.replace('"eps": 1e-08,', ""), "hyperparameters of adam: missing eps"),
        (lambda text: text.replace('"eps": 1e-08,', "").replace('"lr": 0.01,', ""),
         "hyperparameters of adam: missing lr, eps"),
        (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "name"}),
         "not a resolved spec (missing name); write one with python -m"
         " torch_burn_parity.config.resolve CONFIG EXPERIMENT"),
        # each field of the wrong kind, named before a reader takes it
        (given(steps="3"), "steps must be an integer, got '3'"),
        (given(threads=True), "threads must be an integer, got True"),
        (given(label_smoothing="none"), "label_smoothing must be a number, got 'none'"),
        (given(clip_grad=0.5), "clip_grad must be a mapping or null, got 0.5"),
        (given(probe_steps=1), "probe_steps must be a list, got 1"),
        (given(loss=2), "loss must be a string, got 2"),
        (given(schedule=[]), "schedule must be a mapping, got []"),
        (given(port="tiny_mlp"), "port must be a mapping or null, got 'tiny_mlp'"),
        (given(port={"name": "tiny_mlp", "params": []}), "port: missing buffers, layers"),
    ],
)  # fmt: skip
def test_read_spec_names_the_file_and_the_problem(tmp_path, change, message):
    path = tmp_path / "e.json"
    path.write_text(change(json.dumps(resolve.experiment_spec(config(), "e").as_dict())))
    with pytest.raises(ConfigError) as error:
        resolve.read_spec(path)
    assert str(error.value).startswith(f"{path}: {message}")
    with pytest.raises(ConfigError, match="spec file not found"):
        resolve.read_spec(tmp_path / "absent.json")


def test_main_writes_the_spec_to_a_file_or_standard_output(tmp_path, capsys):
    source = tmp_path / "config.json"
    source.write_text(json.dumps(config()))
    out = tmp_path / "specs" / "e.json"
    resolve.main([str(source), "e", "--out", str(out)])
    assert resolve.read_spec(out) == resolve.experiment_spec(config(), "e")
    assert out.read_text().startswith('{\n  "name": "e",\n  "optimizer": "adam",\n')  # readable
    resolve.main([str(source), "e"])
    assert json.loads(capsys.readouterr().out) == resolve.experiment_spec(config(), "e").as_dict()
    with pytest.raises(SystemExit) as stop:
        resolve.main([str(source), "x"])
    assert str(stop.value) == "resolve: unknown experiment 'x' (config has ['e'])"


def test_groups_resolve_in_order_each_with_its_own_values_and_a_bad_one_is_named():
    from param_group_cases import GROUPED, MUON

    groups = resolve.resolved_groups("g", dict(GROUPED, model="cnn1d"))
    assert [(g.params, g.optimizer) for g in groups] == [(["fc.weight"], "muon")]
    assert groups[0].hyperparameters["lr"] == MUON["lr"]
    assert groups[0].requested["burn"]["momentum"] == MUON["momentum"]
    bad = dict(GROUPED, param_groups=[dict(MUON, params="nothing.*")])
    with pytest.raises(ConfigError) as error:
        resolve.resolved_groups("g", bad)
    assert str(error.value).startswith("experiments.g.param_groups[0].params: ")


def test_a_spec_reads_back_as_the_same_typed_value(tmp_path):
    """Written and read again, a spec with groups, fixes and a clip is the value resolved:
    every field typed, the groups as Group values, nothing filled in a second time."""
    from param_group_cases import GROUPED

    exp = dict(GROUPED, model="cnn1d", clip_grad={"norm": 1.0}, label_smoothing=0.1,
               burn_fixes=["clip_by_global_norm"])  # fmt: skip
    spec = resolve.experiment_spec(config(g=exp), "g")
    path = tmp_path / "g.json"
    path.write_text(json.dumps(spec.as_dict()))
    read = resolve.read_spec(path)
    assert read == spec and isinstance(read.param_groups[0], Group)
    assert (read.label_smoothing, read.clip_grad, read.burn_fixes) == (
        0.1, {"norm": 1.0}, ["clip_by_global_norm"])  # fmt: skip
