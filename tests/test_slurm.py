"""The pipeline through SLURM (`--workflow-profile profiles/slurm`) computes what it computes
locally, in as many SLURM jobs as the profile's grouping says.

Needs a running SLURM cluster: `sudo bash ci/slurm-up.sh` starts a one-node one on this
machine. Without one the test is skipped, saying why; with REQUIRE_SLURM=1 (set by
ci/pipeline.sh, which starts the cluster first) that is a failure instead.
"""

from __future__ import annotations

import json
import math
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

from conftest import ROOT
from pipeline_helpers import copy_project, small_pipeline_config
from torch_burn_parity.tooling.slurm_cores import largest_node_cpus

pytestmark = pytest.mark.slurm

EXPERIMENTS = ("sgd", "adam", "pitfall")
PROFILE = "profiles/slurm"
TIMEOUT = 900  # seconds for each run: CI must never hang on a stuck cluster
# Each test run's SLURM jobs are named <prefix>_<uuid>, so that exactly they can be
# cancelled when the run fails or times out.
JOB_PREFIX = f"parity_test_{os.getpid()}"
# The only outputs that differ between two runs of the same config: the trainers' logs
# state their wall time ("6 steps in 0.25s") and the benchmarks hold wall time and memory.
# The run files hold no host, time or thread count of their own (meta.threads is the
# configured one), so they and every other output must be identical.
MAY_DIFFER = ("logs", "benchmarks")


def slurm_unavailable() -> str | None:
    """Why this machine cannot run SLURM jobs now, or None when a node is idle."""
    missing = [tool for tool in ("sinfo", "sbatch", "squeue", "srun") if not shutil.which(tool)]
    if missing:
        return f"SLURM client tools not found: {', '.join(missing)}"
    try:
        proc = subprocess.run(
            ["sinfo", "--noheader", "--format=%n %T"], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20 s (is slurmctld running?)"
    if proc.returncode != 0:
        last_line = ((proc.stderr or proc.stdout).strip().splitlines() or ["no output"])[-1]
        return f"sinfo failed ({last_line})"
    nodes = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
    if not any(state in ("idle", "mixed") for state in nodes.values()):
        return f"no idle SLURM node (sinfo: {nodes or 'no nodes'})"
    return None


@pytest.fixture(scope="module")
def slurm_cluster() -> None:
    reason = slurm_unavailable()
    if reason:
        hint = f"{reason}; `sudo bash ci/slurm-up.sh` starts a one-node cluster on this machine"
        if os.environ.get("REQUIRE_SLURM") == "1":
            pytest.fail(f"REQUIRE_SLURM=1, but SLURM cannot run jobs: {hint}")
        pytest.skip(hint)


def cancel_our_jobs() -> None:
    """Cancel the SLURM jobs this test submitted that are still queued or running."""
    proc = subprocess.run(
        ["squeue", "--noheader", "--format=%i %j"], capture_output=True, text=True, timeout=20
    )
    ids = [
        line.split()[0]
        for line in proc.stdout.splitlines()
        if len(line.split()) == 2 and line.split()[1].startswith(f"{JOB_PREFIX}_")
    ]
    if ids:
        subprocess.run(["scancel", *ids], timeout=20, check=False)


def run_snakemake(workdir: Path, *args: str) -> tuple[str, float]:
    """Run Snakemake in `workdir` within TIMEOUT; return its output and wall time."""
    # The jobs, also those inside SLURM (sbatch --export=ALL), find this environment's
    # python first, and share the project's cargo target dir.
    env = dict(
        os.environ,
        CARGO_TARGET_DIR=str(ROOT / "rust" / "target"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, to stop all of it on a timeout
    )
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # Snakemake then cancels its SLURM jobs
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        pytest.fail(f"snakemake {' '.join(args)} did not finish in {TIMEOUT} s:\n{out[-6000:]}")
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, f"snakemake {' '.join(args)} failed:\n{out[-10000:]}"
    return out, elapsed


def outputs(workdir: Path) -> dict[str, Path]:
    results = workdir / "results"
    return {
        str(path.relative_to(results)): path
        for path in sorted(results.rglob("*"))
        if path.is_file() and path.relative_to(results).parts[0] not in MAY_DIFFER
    }


def first_difference(a, b, where: str = "") -> str | None:
    """The first key path at which two parsed JSON documents differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where or '.'}: keys {sorted(a.keys() ^ b.keys())} in only one run"
        for key in a:
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b and type(a) is type(b) else f"{where}: {a!r} (local) vs {b!r} (SLURM)"


@pytest.mark.pipeline
def test_slurm_run_matches_local_run(slurm_cluster, tmp_path, capsys):
    config = small_pipeline_config()  # steps: 6
    config["experiments"] = {name: config["experiments"][name] for name in EXPERIMENTS}
    (tmp_path / "slurm").mkdir()
    (tmp_path / "local").mkdir()
    # One's own experiments beside the project's config.yaml, as a user runs them: its 6
    # steps would be refused by the default experiments' probe steps if every job did not
    # read the same config, `mine.yaml` alone.
    # The SLURM run builds the trainer as a cluster job of its own: the build is tested too.
    on_slurm = copy_project(tmp_path / "slurm", config, "mine.yaml", trainer_built=False)
    local = copy_project(tmp_path / "local", config, "mine.yaml")

    try:
        # No --slurm-no-account on a real cluster that wants an account: there, set
        # slurm_account under default-resources. The local cluster has no accounting.
        slurm_out, slurm_seconds = run_snakemake(
            on_slurm,
            "--workflow-profile",
            PROFILE,
            "--slurm-no-account",
            "--slurm-jobname-prefix",
            JOB_PREFIX,
            "--configfile",
            "mine.yaml",
            # the local habit: more cores than this cluster's node has (2); group jobs
            # asking for 4 would wait in the queue forever
            "--cores",
            "4",
            "--verbose",  # prints each sbatch call, with the CPUs it asks for
        )
    finally:
        cancel_our_jobs()
    _, local_seconds = run_snakemake(local, "--cores", "all", "--configfile", "mine.yaml")
    with capsys.disabled():
        print(
            f"\n[slurm] {len(EXPERIMENTS)} experiments, {config['steps']} steps:"
            f" through SLURM {slurm_seconds:.0f} s, locally {local_seconds:.0f} s"
        )

    node_cpus = largest_node_cpus()
    if node_cpus is not None and node_cpus < 4:
        assert f"--cores 4: no SLURM node has more than {node_cpus} CPUs (sinfo)" in slurm_out
        requested = [int(n) for n in re.findall(r"--cpus-per-task=(\d+)", slurm_out)]
        assert requested and max(requested) <= node_cpus, requested

    # One SLURM job per group job, not per rule job: the Burn build, the dataset, one per
    # `group-components` experiments, and the report stage.
    profile = yaml.safe_load((ROOT / PROFILE / "config.yaml").read_text())
    per_job = profile["group-components"]["experiment"]
    expected_jobs = 2 + math.ceil(len(EXPERIMENTS) / per_job) + 1
    submitted = slurm_out.count("has been submitted with SLURM jobid")
    assert submitted == expected_jobs, f"{submitted} SLURM jobs, expected {expected_jobs}"
    slurm_logs = on_slurm / ".snakemake" / "slurm_logs"
    experiment_jobs = list(slurm_logs.glob("group_experiment*/*.log"))
    assert len(experiment_jobs) == math.ceil(len(EXPERIMENTS) / per_job), experiment_jobs

    # The same files, and the run files (losses, params, trajectories, meta) equal.
    slurm_files, local_files = outputs(on_slurm), outputs(local)
    # Only the SLURM run built the trainer, so only it has the build script's code digest.
    assert slurm_files.pop("code/build_burn.sha256", None), "the build's code digest"
    assert slurm_files.keys() == local_files.keys()
    runs = [name for name in local_files if name.startswith("runs/") and name.endswith(".json")]
    assert len(runs) == 4 * len(EXPERIMENTS), runs
    # each run's tensors file beside it, and Burn's layers on PyTorch's inputs per dtype
    # (burn-local-*), compared byte for byte below
    tensors = [n for n in local_files if n.startswith("runs/") and n.endswith(".safetensors")]
    layers = [n for n in tensors if "/burn-local-" in n]
    assert len(tensors) - len(layers) == 4 * len(EXPERIMENTS), tensors
    assert len(layers) == 2 * len(EXPERIMENTS), layers
    for name in runs:
        difference = first_difference(
            json.loads(local_files[name].read_text()), json.loads(slurm_files[name].read_text())
        )
        assert difference is None, f"{name} differs at {difference}"
    # Every other output byte for byte: data, binary, compare, tables, plots, reports.
    differing = [
        name
        for name in local_files
        if local_files[name].read_bytes() != slurm_files[name].read_bytes()
    ]
    assert not differing, f"outputs differ between the local and the SLURM run: {differing}"


def test_every_rule_but_the_builds_and_the_data_joins_a_group_in_the_profile():
    """A rule outside the profile's groups would be a SLURM job of its own per instance
    (the builds, the trainer's and a port's, are one job each, with two CPUs; a port's check
    is one job per port, before every training of the port; the code digests are local
    rules, hashed on the submit host)."""
    rules = set()
    for path in (ROOT / "workflow/rules").glob("*.smk"):
        rules |= set(re.findall(r"^rule (\w+):", path.read_text(), flags=re.M))
    groups = yaml.safe_load((ROOT / PROFILE / "config.yaml").read_text())["groups"]
    assert rules - set(groups) == {
        "build_burn",
        "build_port",
        "check_port",
        "make_data",
        "code_digest",
    }
    assert set(groups) <= rules
