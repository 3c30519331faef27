"""Shared fixtures: the real Burn binary, the real dataset, small configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from torch_burn_parity.config import cpu_path, machine

ROOT = Path(__file__).resolve().parents[1]
BURN_BINARY = ROOT / "rust" / "target" / "release" / "parity-train"
# The modules the tests start may cache compiled bytecode, like the pipeline's jobs do.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# The CPU path the whole suite runs on (config/cpu_path.py): PARITY_TEST_CPU_PATH=
# native (default), avx2 or compatible. Set here, before PyTorch starts in this process or
# any process the tests start; tests/golden files compare byte for byte only on their path.
TEST_CPU_PATH = os.environ.get("PARITY_TEST_CPU_PATH", cpu_path.DEFAULT)
if (_why := cpu_path.problem(TEST_CPU_PATH)) is not None:
    raise pytest.UsageError(f"PARITY_TEST_CPU_PATH: {_why}")
cpu_path.apply(TEST_CPU_PATH)

SGD = {"optimizer": "sgd", "lr": 0.5, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
       "nesterov": False}  # fmt: skip
ADAM = {"optimizer": "adam", "lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}


# Tests that run the real trainers or the real pipeline: through these fixtures (directly
# or through another fixture), or marked by hand. `uv run pytest -m "not pipeline"` runs the
# rest, the fast unit tests, in about a minute.
REAL_RUN_FIXTURES = {"burn_binary", "dataset", "train", "pipeline"}


# The longest test files, longest first (`--durations` of the whole suite on 2 workers,
# 2026-12-04: the ResNet-18 port 275 s, the language-model ports 165 s, the default config
# 146 s, cargo test 89 s, …): collected first, so that pytest-xdist's workers start on them
# and the short files fill in around them, instead of one long file running alone at the
# end.
LONGEST_FIRST = [
    "test_port_resnet18",
    "test_default_config",
    "test_port_language_models",
    "test_port_pipeline",
    "test_rust",
    "test_port_architectures",
    "test_cpu_path",
    "test_faults",
    "test_caching",
    "test_warm",
    "test_model_agreement",
    "test_introduced",
    "test_browser",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if REAL_RUN_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.pipeline)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: files stay whole


# Other hosts' /proc/cpuinfo, as Linux writes them (the fields the project reads): vendor
# and SIMD level decide which cpu_path settings a host can take.
CPUS = {
    "intel-avx512": ("GenuineIntel", "Intel(R) Xeon(R) Platinum 8375C",
                     "sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512dq"),
    "intel-avx2": ("GenuineIntel", "Intel(R) Core(TM) i7-4770", "sse4_2 avx avx2 fma"),
    "amd-avx2": ("AuthenticAMD", "AMD EPYC 7B12", "sse4_2 avx avx2 fma"),
    "amd-avx512": ("AuthenticAMD", "AMD EPYC 9R14",
                   "sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512dq"),
}  # fmt: skip


@pytest.fixture
def host_cpu(monkeypatch, tmp_path):
    """host_cpu("amd-avx2"): this process reads that CPU's /proc/cpuinfo from now on."""

    def use(name: str) -> None:
        vendor_id, model, flags = CPUS[name]
        info = tmp_path / f"cpuinfo-{name}"
        info.write_text(f"processor\t: 0\nvendor_id\t: {vendor_id}\nmodel name\t: {model}\n"
                        f"flags\t\t: fpu {flags}\n\n")  # fmt: skip
        monkeypatch.setattr(machine, "CPUINFO", info)

    return use


def python_module(name: str) -> list[str]:
    """The command that runs one of the package's modules: `python -m torch_burn_parity.NAME`."""
    return [sys.executable, "-m", f"torch_burn_parity.{name}"]


def small_config(steps: int = 3, **experiments: dict) -> dict:
    return {"steps": steps, "batch_size": 16, "threads": 1, "cpu_path": TEST_CPU_PATH,
            "experiments": experiments or {"sgd": SGD, "adam": ADAM}}  # fmt: skip


@pytest.fixture(scope="session")
def burn_binary() -> Path:
    """Build the Burn trainer once per session (a no-op when it is up to date)."""
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--quiet"], cwd=ROOT / "rust", check=True
    )
    return BURN_BINARY


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "dataset.bin"
    subprocess.run([*python_module("training.make_data"), "--out", path], check=True)
    return path


@pytest.fixture(scope="session")
def write_config(tmp_path_factory):
    """Write a config, and each experiment of it resolved (specs/{name}.json beside it, as
    the pipeline writes results/specs/): what the trainers read. An experiment the resolver
    refuses gets no spec."""
    from torch_burn_parity.config.parity_config import ConfigError
    from torch_burn_parity.config.resolve import experiment_spec

    def write(config: dict) -> Path:
        path = tmp_path_factory.mktemp("config") / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        (path.parent / "specs").mkdir()
        for name in config["experiments"]:
            try:
                spec = experiment_spec(config, name)
            except ConfigError:
                continue
            spec_of(path, name).write_text(json.dumps(spec.as_dict(), indent=2) + "\n")
        return path

    return write


def spec_of(config: Path, experiment: str) -> Path:
    """The resolved spec of one experiment of a config written by write_config."""
    return config.parent / "specs" / f"{experiment}.json"


@pytest.fixture(scope="session")
def train(burn_binary, dataset, tmp_path_factory):
    """Run one real trainer; return the completed process and the run file path."""

    def run(framework: str, experiment: str, dtype: str, config: Path, check: bool = True):
        out = config.parent / "runs" / experiment / f"{framework}-{dtype}.json"
        cmd = python_module("training.train_torch") if framework == "torch" else [burn_binary]
        cmd += ["--spec", spec_of(config, experiment), "--dtype", dtype,
                "--data", dataset, "--out", out]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"{framework} trainer failed:\n{proc.stderr}")
        return proc, out

    return run


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory, burn_binary) -> Path:
    """A project copy (small config) on which the whole pipeline has run once."""
    from pipeline_helpers import copy_project, small_pipeline_config, snakemake

    workdir = copy_project(tmp_path_factory.mktemp("pipeline"), small_pipeline_config())
    snakemake(workdir, "--cores", "4")
    return workdir
