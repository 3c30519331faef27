"""The CPU path: the setting's checks and pins, what each trainer records, and the claim the
setting makes, tried on another CPU (this one emulated as a Haswell, AVX2 without AVX-512,
by `qemu-x86_64 -cpu Haswell`; skipped where Debian's qemu-user is not installed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import conftest
import golden_numbers
from conftest import ADAM, SGD, python_module, small_config, spec_of
from torch_burn_parity.analysis.gaps import param_matrix
from torch_burn_parity.config import cpu_path, machine
from torch_burn_parity.config.parity_config import ConfigError
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import DTYPES, experiment_block
from torch_burn_parity.io.run_tensors import materialize
from torch_burn_parity.report.cpu_section import cpu_section

HAS_QEMU = shutil.which("qemu-x86_64") is not None
needs_qemu = pytest.mark.skipif(not HAS_QEMU, reason="qemu-x86_64 not installed (qemu-user)")
GOLDEN = Path(__file__).parent / "golden/seed_numbers_small_config.json"
AVX512 = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"}
# ATen's capability as PyTorch reports it under each pinned setting.
PINNED_ATEN = {"avx2": "avx2", "compatible": "default"}


def test_each_setting_pins_its_variables_and_native_none():
    env: dict = {"MKL_CBWR": "AVX512"}
    cpu_path.apply("native", env)
    assert env == {"MKL_CBWR": "AVX512"}  # left as the user set it
    cpu_path.apply("avx2", env)
    assert env == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert cpu_path.pinned("avx2", env) and not cpu_path.pinned("compatible", env)


def test_a_setting_the_cpu_cannot_take_is_refused_in_one_line():
    assert cpu_path.problem("avx2", AVX512, "intel") is None
    assert cpu_path.problem("avx2", {"sse4_2", "avx"}, "intel") == (
        "avx2 needs a CPU with avx2 and fma; this one lacks avx2, fma (use native or compatible)"
    )
    assert cpu_path.problem("avx2", AVX512, "amd") == (
        "avx2 pins MKL's AVX2 branch, which MKL offers on Intel CPUs only; this one is amd"
        " (use native or compatible)"
    )
    assert cpu_path.problem("compatible", {"sse4_2"}, "amd") is None
    assert "unknown setting 'avx3'" in cpu_path.problem("avx3", AVX512, "intel")


@pytest.mark.parametrize(
    ("cpu", "vendor", "isa", "avx2_refused"),
    [("intel-avx512", "intel", "avx512", None), ("intel-avx2", "intel", "avx2", None),
     ("amd-avx2", "amd", "avx2", "Intel CPUs only"), ("amd-avx512", "amd", "avx512",
                                                       "Intel CPUs only")],
)  # fmt: skip
def test_the_host_is_read_from_its_cpuinfo(host_cpu, cpu, vendor, isa, avx2_refused):
    """Vendor and SIMD level come from the host's /proc/cpuinfo, and decide which settings
    it can take: avx2 on Intel only, compatible and native everywhere."""
    host_cpu(cpu)
    assert machine.vendor() == vendor
    assert cpu_path.isa_class(machine.cpu_flags()) == isa
    assert machine.cpu()["model"] == conftest.CPUS[cpu][1]
    why = cpu_path.problem("avx2")
    assert why is None if avx2_refused is None else avx2_refused in why
    assert cpu_path.problem("compatible") is None and cpu_path.problem("native") is None


def test_the_config_check_names_the_key(monkeypatch):
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"sse4_2"})
    monkeypatch.setattr(machine, "vendor", lambda: "intel")
    config = small_config(1, e=ADAM) | {"cpu_path": "avx2"}
    with pytest.raises(ConfigError, match=r"^cpu_path: avx2 needs a CPU with avx2 and fma"):
        experiment_spec(config, "e")


def test_the_isa_class_is_the_widest_level():
    assert cpu_path.isa_class(AVX512) == "avx512"
    assert cpu_path.isa_class(AVX512 - {"avx512bw"}) == "avx2"
    assert cpu_path.isa_class({"avx", "sse4_2"}) == "avx"
    assert cpu_path.isa_class(set()) == "baseline"


def test_describe_reads_the_kernels_each_backend_calls():
    flex = {"framework": "burn", "backend": "flex",
            "cpu_path": {"kernels": {"gemm": "fma", "matrixmultiply": "fma+avx2",
                                     "macerator": "v4"}}}  # fmt: skip
    assert cpu_path.describe(flex) == "gemm fma"
    ndarray = flex | {"backend": "ndarray"}
    assert cpu_path.describe(ndarray) == "matrixmultiply fma+avx2 · macerator v4"
    assert cpu_path.describe({"framework": "torch"}) == "unknown"  # the seed's files


def test_both_trainers_record_their_path(train, write_config):
    config = write_config(small_config(2, adam=ADAM))
    for fw in ("torch", "burn"):
        meta = experiment_block(train(fw, "adam", "f64", config)[1])["meta"]
        assert meta["cpu_path"]["setting"] == small_config()["cpu_path"]
        assert cpu_path.describe(meta) != "unknown"
    assert set(meta["cpu_path"]["kernels"]) == {"gemm", "matrixmultiply", "macerator"}


def test_a_hand_run_takes_the_configs_setting(write_config, dataset, tmp_path):
    """train_torch.py started without the setting's variables starts again with them."""
    config = write_config(small_config(1, adam=ADAM) | {"cpu_path": "compatible"})
    out = tmp_path / "t.json"
    env = {k: v for k, v in os.environ.items() if k not in cpu_path.VARIABLES}
    subprocess.run([*python_module("training.train_torch"), "--spec", spec_of(config, "adam"),
                    "--dtype", "f32", "--data", dataset, "--out", out],
                   check=True, env=env, capture_output=True)  # fmt: skip
    path = experiment_block(out)["meta"]["cpu_path"]
    assert path["kernels"]["aten"] == "default" and path["kernels"]["mkl"] == "compatible"
    assert path["environment"]["MKL_CBWR"] == "COMPATIBLE"


def test_the_report_warns_when_runs_took_different_paths():
    torch = {"framework": "torch", "cpu": {"model": "X"},
             "cpu_path": {"setting": "native", "kernels": {"aten": "avx512"}}}  # fmt: skip
    burn = {"framework": "burn", "backend": "flex", "cpu": {"model": "X"},
            "cpu_path": {"setting": "native", "kernels": {"gemm": "fma"}}}  # fmt: skip
    same = cpu_section([torch, burn, torch], 1e-15)
    assert "Warning" not in same and "- PyTorch: `aten avx512`" in same and "1e-15" in same
    other = torch | {"cpu_path": {"setting": "native", "kernels": {"aten": "avx2"}}}
    mixed = cpu_section([torch, burn, other], None)
    assert "**Warning: the runs did not all take one CPU path (PyTorch: `aten avx2`, " in mixed
    assert "Warning" in cpu_section([torch, burn | {"cpu": {"model": "Y"}}], None)
    assert "Warning" in cpu_section([{"framework": "torch"}, burn], None)  # a seed's file


def test_golden_numbers_refuse_a_move_beyond_rounding():
    """The bound check, mutated: a number moved by more than its bound is reported."""
    golden = json.loads(GOLDEN.read_text())["files"]
    assert golden_numbers.check(golden, golden) == []
    moved = dict(golden)
    text = moved["tables/steps_adam.csv"].splitlines()
    cells = text[3].split(",")
    cells[-1] = repr(float(cells[-1]) * 1.01)  # f64_f64 at step 3 by 1 %: far above rounding
    moved["tables/steps_adam.csv"] = "\n".join([*text[:3], ",".join(cells), *text[4:]]) + "\n"
    problems = golden_numbers.check(moved, golden)
    assert len(problems) == 1 and "f64_f64 at step 3" in problems[0]
    compare = golden["compare/sgd-f32.txt"].replace("max|diff|=8.94e-08", "max|diff|=8.94e-06")
    problems = golden_numbers.check(golden | {"compare/sgd-f32.txt": compare}, golden)
    assert len(problems) == 1 and "sgd.params.conv.weight" in problems[0]


@needs_qemu
def test_burn_takes_the_same_kernels_on_an_avx2_cpu(train, write_config, burn_binary, dataset,
                                                    tmp_path):  # fmt: skip
    """Flex on this CPU and on a Haswell: byte-identical runs. Without FMA (a Nehalem) gemm
    takes its scalar kernels, and says so."""
    config = write_config(small_config(6, adam=ADAM))
    native = experiment_block(train("burn", "adam", "f32", config)[1])
    for cpu, gemm in (("Haswell", "fma"), ("Nehalem", "scalar")):
        out = tmp_path / f"{cpu}.json"
        subprocess.run(["qemu-x86_64", "-cpu", cpu, burn_binary, "--spec", spec_of(config, "adam"),
                        "--dtype", "f32", "--data", dataset, "--out", out],
                       check=True, capture_output=True)  # fmt: skip
        emulated = experiment_block(out)
        assert emulated["meta"]["cpu_path"]["kernels"]["gemm"] == gemm
        same = np.array_equal(param_matrix(emulated), param_matrix(native))
        assert same == (gemm == "fma"), cpu


# The PyTorch trainer's command line, once per dtype in one process: PyTorch is imported
# once per machine, which under the emulator takes most of the run.
BOTH_DTYPES = """
import sys
from torch_burn_parity.training import train_torch
spec, data, out = sys.argv[1:]
for dtype in ("f32", "f64"):
    train_torch.main(["--spec", spec, "--dtype", dtype, "--data", data,
                      "--out", out.replace("DTYPE", dtype)])
"""


def both_dtypes(prefix: list[str], spec: Path, dataset: Path, env: dict, out: Path) -> dict:
    """The SGD run of each dtype, from one process (under ``prefix``, the emulator or
    nothing): {dtype: run block}; ``out`` names the run files with DTYPE in place."""
    subprocess.run([*prefix, sys.executable, "-c", BOTH_DTYPES, spec, dataset, out],
                   check=True, env=env, capture_output=True)  # fmt: skip
    return {dt: materialize(experiment_block(str(out).replace("DTYPE", dt))) for dt in DTYPES}


@pytest.fixture(scope="module")
def pinned_runs(tmp_path_factory, write_config, dataset):
    """pinned_runs(setting): the SGD run of each dtype under that cpu_path setting, on this
    CPU and on an emulated Haswell (AVX2 only): {(machine, dtype): run block}."""
    found = {}

    def runs(setting: str) -> dict:
        if setting in found:
            return found[setting]
        config = write_config(small_config(6, sgd=SGD) | {"cpu_path": setting})
        # The variables set beforehand: a re-exec would leave the emulator (no binfmt here).
        env = {k: v for k, v in os.environ.items() if k not in cpu_path.VARIABLES}
        cpu_path.apply(setting, env)
        folder = tmp_path_factory.mktemp(f"pinned-{setting}")
        found[setting] = {}
        for name, prefix in (("pinned", []), ("haswell", ["qemu-x86_64", "-cpu", "Haswell"])):
            blocks = both_dtypes(prefix, spec_of(config, "sgd"), dataset, env,
                                 folder / f"{name}-DTYPE.json")  # fmt: skip
            found[setting] |= {(name, dt): block for dt, block in blocks.items()}
        return found[setting]

    return runs


@needs_qemu
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("setting", ["avx2", "compatible"])
def test_pytorch_pinned_trains_sgd_as_an_avx2_cpu(pinned_runs, setting, dtype):
    """A pinned path gives the same SGD run on this CPU as on a Haswell (AVX2 only), layer
    record included: convolution, Linear, cross-entropy, forward and backward. (Adam's square
    root goes through MKL's vector math, which MKL_CBWR does not make the same: docs/cpu.md.)
    `avx2` is tried where this host can take it (an Intel CPU with AVX2); `compatible` on
    every x86-64 host."""
    if (why := cpu_path.problem(setting)) is not None:
        pytest.skip(f"cpu_path: {why}")
    blocks = pinned_runs(setting)
    assert blocks["haswell", dtype]["meta"]["cpu_path"]["kernels"]["aten"] == PINNED_ATEN[setting]
    assert blocks["haswell", dtype]["meta"]["dtype"] == dtype
    for key in ("losses", "trajectory", "layers"):
        assert blocks["pinned", dtype][key] == blocks["haswell", dtype][key], key
