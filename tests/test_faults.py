"""Faults, on the real pipeline: a kill mid-training, a kill mid-write, a diverging
experiment, damaged or foreign run files (and the recovery from them), bad input to every
script, a missing Rust toolchain; and determinism of every output across two runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, SGD, python_module
from pipeline_helpers import (
    EXPECTED,
    copy_project,
    planned_jobs,
    small_pipeline_config,
    snakemake,
)
from torch_burn_parity.io.parity_io import experiment_block, read_run, write_atomic

# A learning rate at which f32 overflows within the small config's 6 steps.
BOOM = dict(SGD, lr=1e6)


def all_json_parse(results: Path) -> list[Path]:
    files = sorted(results.rglob("*.json"))
    for path in files:
        json.loads(path.read_text())  # raises on a truncated file
    return files


def outputs(results: Path) -> dict[str, Path]:
    """Every file the pipeline wrote under results/, by path, except those that vary or
    are not results (each exclusion says why)."""
    excluded = (
        "logs/",  # one log per job: timings ("6 steps in 0.03s"), Snakemake's own lines
        "benchmarks/",  # wall time and memory of each job
        # The Burn binary is a build product, not a computed result: cargo does not promise
        # the same bytes from two source directories (nor after a concurrent rebuild of the
        # shared target dir). What it computes is compared: the run files.
        "bin/",
        "snakemake_report.html",  # built by a test, not by the pipeline; holds a timestamp
    )
    # provenance.json is compared whole: both runs are on this machine, in copies outside
    # any git checkout (git commit and dirty are null), so no field of it varies.
    return {
        str(path.relative_to(results)): path
        for path in sorted(results.rglob("*"))
        if path.is_file() and not str(path.relative_to(results)).startswith(excluded)
    }


@pytest.fixture(scope="module")
def recovered(tmp_path_factory, burn_binary) -> Path:
    """A pipeline killed (SIGKILL, whole process group) during training, then rerun.

    Same config as the `pipeline` fixture, so that every output can be compared with it.
    """
    config = small_pipeline_config()
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
    assert len(list(runs.glob("*/*.json"))) < 4 * 4, "the kill came too late to test anything"
    snakemake(workdir, "--cores", "4")
    return workdir


def test_killed_pipeline_completes_on_the_next_run(recovered):
    missing = [f for f in EXPECTED if not (recovered / f).is_file()]
    assert not missing
    files = all_json_parse(recovered / "results")
    assert len(files) >= 20
    assert not list((recovered / "results").rglob("*.tmp"))  # write_atomic's .NAME.*.tmp too
    # Every output whole: byte for byte the uninterrupted run's (the next test), so no file
    # the kill cut short survived the rerun.


def test_two_runs_give_byte_identical_results(pipeline, recovered):
    """Every output of the uninterrupted run and of the killed-then-rerun one: run files,
    compare outputs, CSV and Markdown tables, PNGs, provenance.json, report.md, the HTML
    pages under results/html, verdicts.html and report.html."""
    ours, theirs = outputs(pipeline / "results"), outputs(recovered / "results")
    assert sorted(theirs) == sorted(ours)
    differ = [name for name, path in ours.items() if theirs[name].read_bytes() != path.read_bytes()]
    assert not differ, f"differ between two runs: {differ}"
    kinds = {Path(name).suffix for name in ours}
    assert {".json", ".txt", ".csv", ".md", ".png", ".html", ".safetensors"} <= kinds
    for name in ("report.md", "report.html", "provenance.json", "verdicts.html"):
        assert name in ours
    assert len(ours) >= len(EXPECTED) - 1  # all but bin/parity-train


@pytest.fixture(scope="module")
def diverged(pipeline, tmp_path_factory) -> Path:
    """The finished small pipeline with a diverging experiment added, rerun."""
    workdir = tmp_path_factory.mktemp("diverged") / "project"
    shutil.copytree(pipeline, workdir, symlinks=True)
    config = small_pipeline_config()
    config["experiments"]["boom"] = BOOM
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(workdir, "--cores", "4")
    return workdir


def test_diverging_experiment_runs_through(diverged):
    results = diverged / "results"
    burn = read_run(results / "runs/boom/burn-f32.json")["boom"]
    assert any(x != x for x in burn["params"]["fc.weight"])  # NaN survived the trip
    compare = (results / "compare/boom-f32.txt").read_text()
    assert "max|diff|=nan" in compare and compare.rstrip().endswith("MISMATCH")
    report = (results / "report.md").read_text()
    assert re.search(r"\| \[boom\]\(#[^)]*\) \|"
                     r" sgd \| diverged \| (one|both) runs? diverged [^|]* \|"
                     r" torch f32 diverged at step", report)  # fmt: skip
    assert "burn f32 diverged at step" in report


@pytest.fixture
def damaged(pipeline, tmp_path) -> Path:
    """A copy of the finished small pipeline (mtimes and Snakemake metadata kept)."""
    workdir = tmp_path / "damaged"
    shutil.copytree(pipeline, workdir, symlinks=True)
    return workdir


def truncate(run: Path) -> None:
    run.write_bytes(run.read_bytes()[:1000])


def foreign(run: Path) -> None:
    """The run file of a training on another dataset (its input checksum differs)."""
    data = json.loads(run.read_text())
    (block,) = data.values()
    block["meta"]["input_sha256"] = "0" * 64
    run.write_text(json.dumps(data))


BAD_RUN_FILES = {
    "truncated": (
        truncate,
        "results/runs/sgd/burn-f32.json",
        ["results/runs/sgd/burn-f32.json: not valid JSON"],
    ),
    "foreign": (
        foreign,
        "results/runs/adam/torch-f64.json",
        ["results/runs/adam/torch-f64.json: input checksum", "did not read the same dataset"],
    ),
}


@pytest.mark.parametrize("bad", BAD_RUN_FILES)
def test_bad_run_file_stops_naming_it_then_removing_it_recovers(pipeline, damaged, bad):
    """Stop → remove the file → the README command alone → complete, with a fresh report.

    The trap this guards against: the stop removes the failed jobs' outputs but the old
    report stays, newer than every input still there; once the bad file is gone nothing
    asks for it, so the plain rerun said "Nothing to be done" with missing tables, a
    missing run file and the old report (see tooling/stale_report.py).
    """
    damage, name, messages = BAD_RUN_FILES[bad]
    run = damaged / name
    damage(run)
    proc = snakemake(damaged, "--cores", "4", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    for message in messages:
        assert message in output
    assert "Traceback" not in output  # every failed job's log (printed) is one line
    # The stop leaves no report that looks finished over missing pieces.
    assert not (damaged / "results/report.md").exists()
    assert not (damaged / "results/pages").exists()

    run.unlink()
    snakemake(damaged, "--cores", "4")  # `uv run snakemake --cores 4`, default profile
    missing = [f for f in EXPECTED if not (damaged / f).is_file()]
    assert not missing
    experiment_block(run)  # retrained, whole
    for final in ("results/report.md", "results/report.html"):
        assert (damaged / final).stat().st_mtime_ns > run.stat().st_mtime_ns, final
    # Retrained from the same inputs: the same report as before the damage.
    assert (damaged / "results/report.md").read_bytes() == (
        pipeline / "results/report.md"
    ).read_bytes()
    assert planned_jobs(damaged) == {}


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


# A writer killed in the middle of write_atomic: a child process writes a large payload and
# is SIGKILLed as soon as bytes of it land on disk, while the write is still going on.
WRITER = """
import sys
from torch_burn_parity.io.parity_io import write_atomic
payload = b"N" * int(sys.argv[2])
print("ready", flush=True)
write_atomic(sys.argv[1], payload)
"""
OLD = b"the old, complete content\n"


def kill_while_writing(target: Path, size: int) -> bool:
    """Start a writer of `size` bytes to `target`, SIGKILL it once the write has begun.

    True if the kill landed during the write: some file of the directory then holds part of
    the payload (more than the old content, less than the payload).
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), str(size)],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            sizes = [p.stat().st_size for p in target.parent.iterdir() if p.is_file()]
            if any(n > len(OLD) for n in sizes):  # payload bytes are landing somewhere
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    sizes = [p.stat().st_size for p in target.parent.iterdir() if p.is_file()]
    return any(len(OLD) < n < size for n in sizes)


@pytest.mark.parametrize("before", ["old file", "no file"])
def test_a_kill_during_write_leaves_no_half_written_file(tmp_path, before):
    target = tmp_path / "out" / "run.json"
    target.parent.mkdir()
    size = 64 << 20
    for _ in range(5):  # a bigger payload if the write finished before the kill landed
        if before == "old file":
            target.write_bytes(OLD)
        if kill_while_writing(target, size):
            break
        for leftover in target.parent.iterdir():
            leftover.unlink()
        size *= 2
    else:
        pytest.fail("could not kill the writer in the middle of its write")
    # The target is the old, complete file, or absent: never part of the new one.
    if before == "old file":
        assert target.read_bytes() == OLD, "the killed write left a half-written target"
    else:
        assert not target.exists(), "the killed write left a half-written target"
    (stale,) = [p for p in target.parent.iterdir() if p != target]  # the killed write's
    assert stale.name.startswith(f".{target.name}.") and stale.name.endswith(".tmp")
    # The next write replaces the target whole and removes the stale temporary file.
    write_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert list(target.parent.iterdir()) == [target]


# Bad input to every script that reads pipeline files: one line `script: path: problem`,
# a non-zero exit, never a traceback. Each script's command line, and its input files
# (under results/) of which one at a time is damaged.
FRAMEWORKS, DTYPES = ("torch", "burn"), ("f32", "f64")
RUNS = "--torch-f32 {torch_f32} --burn-f32 {burn_f32} --torch-f64 {torch_f64} --burn-f64 {burn_f64}"
SCRIPT_ARGV = {
    "compare": "{torch} {burn} --tol 1e-6 --out {out}/c.txt",
    "steps_table": f"--experiment sgd {RUNS} --report-steps 1 2 --csv {{out}}/s.csv"
    " --md {out}/s.md",
    "probe": f"--experiment sgd --data {{data}} {RUNS} --csv {{out}}/p.csv --md {{out}}/p.md",
    "replay": "--experiment sgd --data {data} --torch-f64 {torch_f64} --burn-f64 {burn_f64}"
    " --report-steps 1 2 --replay-csv {out}/r.csv --replay-md {out}/r.md"
    " --counterfactual-csv {out}/c.csv --counterfactual-md {out}/c.md",
    "bias_correction": "{run} --report-steps 1 2 --csv {out}/b.csv --md {out}/b.md",
    "plots": "--experiment sgd --steps {steps} --tol 1e-6 --tol-f64 1e-12"
    " --gaps {out}/g.png --losses {out}/l.png",
    "provenance": "--config {config} --runs {run} --out {out}/p.json",
    "render_html": "--report {report} --out {out}/r.html --records {records}"
    " --verdicts {out}/v.html --tables {table} --tables-out {out}/t.html",
    "config_diff": "--spec {spec} --csv {out}/d.csv --md {out}/d.md",
    "train_torch": "--spec {spec} --dtype f32 --data {data} --out {out}/t.json",
    # report.py reads a results directory, judge.py folders of it: the bad file is put
    # inside a copy of it.
    "report": "--config {config} --results {results} --data {data} --out {out}/report.md",
    "judge": "--experiment sgd --tables {results}/tables --runs {results}/runs/sgd"
    " --tol-f32 1e-6 --out {out}/v.json",
}
IN_A_COPY = ("report", "judge")
# The package module of each script above.
MODULE_OF = {
    "compare": "analysis.compare",
    "steps_table": "analysis.steps_table",
    "probe": "analysis.probe",
    "replay": "analysis.replay",
    "bias_correction": "analysis.bias_correction",
    "plots": "report.plots",
    "provenance": "report.provenance",
    "render_html": "report.render_html",
    "config_diff": "analysis.config_diff",
    "train_torch": "training.train_torch",
    "report": "report.report",
    "judge": "judgement.judge",
}
SGD_RUNS = {f"{fw}_{dt}": f"runs/sgd/{fw}-{dt}.json" for fw in FRAMEWORKS for dt in DTYPES}
SCRIPT_INPUTS = {
    "compare": {"torch": "runs/sgd/torch-f32.json", "burn": "runs/sgd/burn-f32.json"},
    "steps_table": SGD_RUNS,
    "probe": {"data": "data/cnn1d.safetensors", **SGD_RUNS},
    "replay": {
        "data": "data/cnn1d.safetensors",
        "torch_f64": "runs/sgd/torch-f64.json",
        "burn_f64": "runs/sgd/burn-f64.json",
    },
    "bias_correction": {"run": "runs/adam/burn-f32.json"},
    "plots": {"steps": "tables/steps_sgd.csv"},
    "provenance": {"config": "specs/report/config.json", "run": "runs/sgd/burn-f32.json"},
    "render_html": {
        "report": "report.md",
        "records": "verdicts.json",
        "table": "tables/steps_sgd.csv",
    },
    "config_diff": {"spec": "specs/sgd.json"},
    "train_torch": {"spec": "specs/sgd.json", "data": "data/cnn1d.safetensors"},
    "report": {
        "config": "specs/report/config.json",
        "run": "runs/sgd/burn-f32.json",
        "provenance": "provenance.json",
        "verdicts": "verdicts.json",
        "table": "tables/probe_adam.csv",
        "data": "data/cnn1d.safetensors",
    },
    "judge": {
        "steps": "tables/steps_sgd.csv",
        "counterfactual": "tables/counterfactual_sgd.csv",
        "run": "runs/sgd/burn-f64.json",
    },
}


# The inputs damaged, one at a time (one run file stands for its siblings).
DAMAGED = {
    "compare": ["burn"],
    "steps_table": ["burn_f32"],
    "probe": ["burn_f64", "data"],
    "replay": ["burn_f64", "data"],
    "bias_correction": ["run"],
    "plots": ["steps"],
    "provenance": ["config", "run"],
    "render_html": ["report", "records", "table"],
    "config_diff": ["spec"],
    "train_torch": ["spec", "data"],
    "report": ["config", "run", "provenance", "verdicts", "table", "data"],
    "judge": ["steps", "counterfactual", "run"],
}


def damage_kinds(script: str, name: str) -> tuple[str, ...]:
    if script == "render_html" and name == "report":
        # Any text is Markdown: a cut report.md cannot be told apart; bytes that are not
        # text can.
        return ("missing", "not text")
    return ("missing", "truncated")


BAD_INPUT_CASES = [
    pytest.param(script, name, kind, id=f"{script}-{name}-{kind.replace(' ', '_')}")
    for script, names in DAMAGED.items()
    for name in names
    for kind in damage_kinds(script, name)
]  # fmt: skip


@pytest.mark.parametrize(("script", "name", "kind"), BAD_INPUT_CASES)
def test_a_script_answers_bad_input_with_one_line(pipeline, tmp_path, script, name, kind):
    source = pipeline / "results"
    if script in IN_A_COPY:
        results = tmp_path / "results"
        shutil.copytree(source, results, ignore=shutil.ignore_patterns("logs", "html", "bin"))
        source = results
    else:
        results = source
    inputs = {key: source / rel for key, rel in SCRIPT_INPUTS[script].items()}
    bad = inputs[name] if script in IN_A_COPY else tmp_path / "bad" / Path(inputs[name]).name
    bad.parent.mkdir(exist_ok=True)
    blob = inputs[name].read_bytes()
    if kind == "missing":
        bad.unlink(missing_ok=True)
    elif kind == "truncated":
        bad.write_bytes(blob[: len(blob) // 2])
    else:
        bad.write_bytes(b"\xff\xfe\x00 not text \x80" + blob[:100])
    inputs[name] = bad
    out = tmp_path / "out"
    out.mkdir()
    argv = SCRIPT_ARGV[script].format(out=out, results=results, **inputs).split()
    proc = subprocess.run(
        [*python_module(MODULE_OF[script]), *argv], capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"{script}: ") and str(bad) in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0, proc.stderr  # one line
