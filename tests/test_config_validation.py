"""A bad config.yaml stops the real Snakemake before any job: one line per problem naming its
key, no traceback, no schema dump, no results/. Every bound and message is unit-tested in
test_parity_config.py; these few cases check what a user running Snakemake sees."""

from __future__ import annotations

import copy

import pytest

from pipeline_helpers import copy_project, small_pipeline_config, snakemake


def broken(change) -> dict:
    config = copy.deepcopy(small_pipeline_config())
    change(config)
    return config


def typo(config):
    adam = config["experiments"]["adam"]
    adam["learning_rate"] = adam.pop("lr")


def three_problems(config):
    config["batch_size"] = 200
    config["experiments"]["sgd"]["momentum"] = 1.5
    config["experiments"]["adam"]["betas"] = [0.9, 1.0]


CASES = {
    "learning_rate typo": (
        typo,
        ["experiments.adam.learning_rate: unknown hyperparameter of adam; did you mean 'lr'?"],
    ),
    # train_torch.py would divide by zero batches mid-run.
    "batch_size 200": (
        lambda c: c.update(batch_size=200),
        ["batch_size: 200 is larger than the dataset (96 samples)"],
    ),
    "three problems": (
        three_problems,
        [
            "batch_size: 200 is larger than the dataset (96 samples)",
            "experiments.sgd.momentum: 1.5 is out of range (0 ≤ momentum < 1)",
            "experiments.adam.betas[1]: 1.0 is out of range (0 ≤ betas[1] < 1)",
        ],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_config_is_refused_before_any_job(tmp_path, case):
    change, lines = CASES[case]
    workdir = copy_project(tmp_path, broken(change), trainer_built=False)
    proc = snakemake(workdir, "--cores", "1", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    n = len(lines)
    head = f"config.yaml: {n} problem{'s' if n > 1 else ''}, nothing was run:"
    assert "\n".join([head, *lines]) + "\n" in output, output
    assert "Traceback" not in output and "File " not in output, output
    assert "$defs" not in output and "schema" not in output.lower(), output
    assert len(output.splitlines()) < 15, output
    assert not (workdir / "results").exists()


def test_schema_defaults_still_reach_the_jobs(tmp_path):
    """threads and report_steps left out: the schema's defaults are filled in, as
    snakemake.utils.validate did, and the jobs get them."""
    config = small_pipeline_config()
    del config["threads"], config["report_steps"]
    workdir = copy_project(tmp_path, config, trainer_built=False)
    proc = snakemake(workdir, "--dry-run", "--printshellcmds", "--cores", "1")
    assert "--report-steps 1 2 5 10 20 30 40 50 60 70 80 90 100 " in proc.stdout
    assert not (workdir / "results").exists()
