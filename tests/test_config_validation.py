"""A bad config.yaml stops the pipeline before any job runs, naming the key."""

from __future__ import annotations

import copy

import pytest

from pipeline_helpers import copy_project, small_pipeline_config, snakemake


def broken(change) -> dict:
    config = copy.deepcopy(small_pipeline_config())
    change(config)
    return config


CASES = {
    "wrong type": (lambda c: c["experiments"]["sgd"].update(lr="fast"), "lr"),
    "negative lr": (lambda c: c["experiments"]["adam"].update(lr=-0.01), "lr"),
    "zero lr": (lambda c: c["experiments"]["sgd"].update(lr=0), "lr"),
    "zero steps": (lambda c: c.update(steps=0), "steps"),
    "unknown optimizer": (lambda c: c["experiments"]["sgd"].update(optimizer="rmsprop"), "rmsprop"),
    "missing hyperparameter": (lambda c: c["experiments"]["adam"].pop("eps"), "eps"),
    "tolerance not positive": (lambda c: c["tolerance"].update(f32=0), "f32"),
    "tolerance not a number": (lambda c: c["tolerance"].update(f64="tight"), "f64"),
    "unknown top-level key": (lambda c: c.update(stepz=5), "stepz"),
    "unknown experiment key": (lambda c: c["experiments"]["sgd"].update(momentun=0.9), "momentun"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_config_is_refused_before_any_job(tmp_path, case):
    change, key = CASES[case]
    workdir = copy_project(tmp_path, broken(change))
    proc = snakemake(workdir, "--cores", "1", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "Error validating config file" in output
    assert key in output
    assert not (workdir / "results").exists()
