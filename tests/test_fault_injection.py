"""An injected difference must be caught: the verdict names the step and the parameter.

The Burn trainer adds a tiny delta to one parameter after one step when PARITY_FAULT is set
(rust/src/fault.rs). Nothing in the replays knows of it, so the verdict must be
"algorithmic difference, unexplained", starting at that step, at that parameter — in an
experiment that is otherwise rounding (sgd) and in one that already has an explained
difference (adam, whose f64 gap leaves the rounding floor at step 1 for a known reason).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ADAM, ROOT, SGD
from pipeline_helpers import copy_project
from torch_burn_parity.io.parity_io import read_run

STEP, PARAMETER, INDEX, DELTA = 3, "fc.weight", 67, 1e-9
NAME = "fc.weight[1,19]"  # flat index 67 of PyTorch's [3, 48] fc.weight


@pytest.fixture(scope="module")
def faulted(tmp_path_factory, burn_binary):
    config = {"steps": 6, "batch_size": 16, "threads": 1, "report_steps": [1, 3, 6],
              "experiments": {"sgd": dict(SGD), "adam": dict(ADAM)}}  # fmt: skip
    workdir = copy_project(tmp_path_factory.mktemp("faulted"), config)
    env = dict(
        os.environ,
        CARGO_TARGET_DIR=str(ROOT / "rust" / "target"),
        PARITY_FAULT=f"{STEP}:{PARAMETER}:{INDEX}:{DELTA}",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "4"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return workdir


def verdict_row(report: str, experiment: str) -> str:
    verdicts = report.split("## Verdicts")[1].split("## What was run")[0]
    return next(line for line in verdicts.splitlines() if line.startswith(f"| [{experiment}](#"))


@pytest.mark.parametrize("experiment", ["sgd", "adam"])
def test_injected_difference_is_unexplained_at_its_step_and_parameter(faulted, experiment):
    report = (faulted / "results/report.md").read_text()
    row = verdict_row(report, experiment)
    assert "| algorithmic difference, unexplained |" in row
    assert f"leaves the rounding floor at step {STEP} (`{NAME}`)" in row


def test_the_report_warns_that_a_fault_was_injected(faulted):
    report = (faulted / "results/report.md").read_text()
    assert "Warning: faults were injected on purpose (PARITY_FAULT)" in report


def test_the_fault_is_recorded_in_burn_runs_only(faulted):
    runs = faulted / "results/runs/sgd"
    burn = read_run(runs / "burn-f64.json")["sgd"]["meta"]
    assert burn["fault"] == {"step": STEP, "parameter": PARAMETER, "index": INDEX, "delta": DELTA}
    assert "fault" not in read_run(runs / "torch-f64.json")["sgd"]["meta"]


def test_a_malformed_fault_is_refused_naming_the_variable(burn_binary, tmp_path):
    env = dict(os.environ, PARITY_FAULT="3:fc.weights:67:1e-9")
    proc = subprocess.run(
        [burn_binary, "--spec", "x", "--dtype", "f32", "--data", "y",
         "--out", tmp_path / "out.json"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and "PARITY_FAULT=3:fc.weights:67:1e-9" in proc.stderr
