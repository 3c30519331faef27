"""Faults, on the real pipeline: a kill mid-training, a diverging experiment, damaged run
files, a missing Rust toolchain; and determinism across two independent runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SGD
from parity_io import read_run
from pipeline_helpers import EXPECTED, copy_project, small_pipeline_config, snakemake

# A learning rate at which f32 overflows within the small config's 6 steps.
BOOM = dict(SGD, lr=1e6)


def all_json_parse(results: Path) -> list[Path]:
    files = sorted(results.rglob("*.json"))
    for path in files:
        json.loads(path.read_text())  # raises on a truncated file
    return files


@pytest.fixture(scope="module")
def recovered(tmp_path_factory, burn_binary) -> Path:
    """A pipeline killed (SIGKILL, whole process group) during training, then rerun.

    Its config adds a diverging experiment to the small config.
    """
    config = small_pipeline_config()
    config["experiments"]["boom"] = BOOM
    workdir = copy_project(tmp_path_factory.mktemp("recovered"), config)
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "rust" / "target"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "4"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    runs = workdir / "results" / "runs"
    deadline = time.monotonic() + 300
    # Kill once PyTorch trainings are under way: some run files written, others not yet.
    while not list(runs.glob("*/torch-*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(list(runs.glob("*/*.json"))) < 5 * 4, "the kill came too late to test anything"
    snakemake(workdir, "--cores", "4")
    return workdir


def test_killed_pipeline_completes_on_the_next_run(recovered):
    missing = [f for f in EXPECTED if not (recovered / f).is_file()]
    assert not missing
    files = all_json_parse(recovered / "results")
    assert len(files) >= 20
    assert not list((recovered / "results").rglob("*.tmp"))


def test_two_runs_give_byte_identical_results(pipeline, recovered):
    compared = 0
    for pattern in ("runs/*/*.json", "compare/*.txt", "tables/*.csv"):
        for path in sorted((pipeline / "results").glob(pattern)):
            # bias_correction.csv too: the extra diverging experiment is SGD, not Adam.
            twin = recovered / "results" / path.relative_to(pipeline / "results")
            assert twin.read_bytes() == path.read_bytes(), path.relative_to(pipeline)
            compared += 1
    assert compared >= 4 * (4 + 2 + 5)


def test_diverging_experiment_runs_through(recovered):
    results = recovered / "results"
    burn = read_run(results / "runs/boom/burn-f32.json")["boom"]
    assert any(x != x for x in burn["params"]["fc.weight"])  # NaN survived the trip
    compare = (results / "compare/boom-f32.txt").read_text()
    assert "max|diff|=nan" in compare and compare.rstrip().endswith("MISMATCH")
    report = (results / "report.md").read_text()
    assert "| boom | sgd | diverged | torch f32 diverged at step" in report
    assert "burn f32 diverged at step" in report


@pytest.fixture
def damaged(pipeline, tmp_path) -> Path:
    """A copy of the finished small pipeline (mtimes and Snakemake metadata kept)."""
    workdir = tmp_path / "damaged"
    shutil.copytree(pipeline, workdir, symlinks=True)
    return workdir


def test_truncated_run_file_is_named(damaged):
    run = damaged / "results/runs/sgd/burn-f32.json"
    run.write_bytes(run.read_bytes()[:1000])
    proc = snakemake(damaged, "--cores", "2", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "results/runs/sgd/burn-f32.json: not valid JSON" in output


def test_run_file_with_other_inputs_is_named(damaged):
    run = damaged / "results/runs/adam/torch-f64.json"
    data = json.loads(run.read_text())
    data["adam"]["meta"]["input_sha256"] = "0" * 64
    run.write_text(json.dumps(data))
    proc = snakemake(damaged, "--cores", "2", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "results/runs/adam/torch-f64.json: input checksum" in output
    assert "did not read the same dataset" in output


def test_missing_cargo_is_one_clear_line(damaged):
    python_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in [python_bin, "/usr/bin", "/bin"] if p)
    assert shutil.which("cargo", path=path) is None, "cargo is in /usr/bin: cannot hide it"
    env = dict(os.environ, PATH=path)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-f", "results/bin/parity-train"],
        cwd=damaged,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "cargo not found on PATH; install a Rust toolchain" in proc.stdout + proc.stderr
