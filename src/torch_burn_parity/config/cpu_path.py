"""The CPU path: which kernels each framework takes on this CPU, and the setting that pins them.

The same run on another x86-64 CPU can give other numbers: PyTorch dispatches its own
vectorised kernels (ATen) by the CPU's widest SIMD level, Intel MKL (its BLAS: Linear and
f64 products) picks a code branch per CPU, and oneDNN (its f32 convolutions) by the ISA;
Burn's Flex backend calls the gemm crate (FMA or scalar kernels), its NdArray backend
matrixmultiply and macerator. A sum taken 8 lanes at a time rounds differently from one
taken 4 at a time, so these choices move f32 and f64 results by rounding, and training
carries that rounding on from step to step.

The config's top-level `cpu_path` pins what PyTorch lets one pin, through the environment
variables its libraries read once, when they start:

* `native` (default): nothing pinned; every library takes the best path for this CPU.
* `avx2`: ATen's AVX2 kernels, MKL's AVX2 branch (`MKL_CBWR=AVX2`), oneDNN at most AVX2.
  On an AVX-512 machine against the same machine emulating a Haswell (`qemu-x86_64 -cpu
  Haswell`), SGD runs of cnn1d are byte-identical in f32 and f64, layer record included.
* `compatible`: ATen's scalar kernels, MKL's `COMPATIBLE` branch, oneDNN at most SSE4.1:
  the most portable forms, and the slowest.

Neither pins MKL's vector math (VML: sqrt, exp, log, tanh … of a whole tensor), which
PyTorch calls for such element-wise functions: under either branch Adam's square roots
differed in their last bit between this CPU and the emulated one (2 of 144 roots not
correctly rounded here, 0 under AVX2 emulated, 21 under COMPATIBLE emulated), so an Adam
run still moves by rounding. The emulator computes approximate instructions exactly, so it
cannot say what a real second CPU does there.

Burn has no such switch; its trainer records the kernels it took (`meta.cpu_path.kernels`).
With gemm's AVX-512 kernels compiled out (burn-flex does not enable them), Flex takes the
same FMA kernels on every CPU with FMA.

    python -m torch_burn_parity.config.cpu_path            # this CPU's path, as the runs record it
    python -m torch_burn_parity.config.cpu_path --setting avx2
"""

from __future__ import annotations

import argparse
import os
import platform

from torch_burn_parity.config import machine

# What each setting sets; `native` sets nothing and leaves the environment as it is.
PINS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "compatible": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    },
}
SETTINGS = tuple(PINS)
DEFAULT = "native"
# The variables that choose a PyTorch kernel path, whoever set them (recorded in each run).
VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA",
             "DNNL_MAX_CPU_ISA")  # fmt: skip
# CPU features each setting needs: MKL's AVX2 branch on a CPU without AVX2 would fall back
# to another branch without a word. MKL offers branches other than AUTO and COMPATIBLE on
# Intel processors only.
NEEDS = {"avx2": ("avx2", "fma")}
INTEL_ONLY = ("avx2",)


def isa_class(flags: set[str]) -> str:
    """The widest x86-64 SIMD level the CPU has, as the libraries' dispatchers see it."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    if "avx" in flags:
        return "avx"
    return "sse4_2" if "sse4_2" in flags else "baseline"


def problem(
    setting: str, flags: set[str] | None = None, cpu_vendor: str | None = None
) -> str | None:
    """Why `setting` cannot take effect on this machine (one line, for the key `cpu_path`),
    or None."""
    if setting not in PINS:
        return f"unknown setting {setting!r} (known: {', '.join(SETTINGS)})"
    if setting != "native" and platform.machine() not in ("x86_64", "AMD64"):
        return (f"{setting} pins x86-64 kernel paths; this machine is {platform.machine()} "
                "(use native)")  # fmt: skip
    flags = machine.cpu_flags() if flags is None else flags
    cpu_vendor = machine.vendor() if cpu_vendor is None else cpu_vendor
    if setting in INTEL_ONLY and cpu_vendor != "intel" and flags:
        return (f"{setting} pins MKL's {setting.upper()} branch, which MKL offers on Intel CPUs "
                f"only; this one is {cpu_vendor} (use native or compatible)")  # fmt: skip
    missing = [f for f in NEEDS.get(setting, ()) if f not in flags]
    if missing and flags:
        return (f"{setting} needs a CPU with {' and '.join(NEEDS[setting])}; this one lacks "
                f"{', '.join(missing)} (use native or compatible)")  # fmt: skip
    return None


def apply(setting: str, environ: os._Environ | dict = os.environ) -> None:
    """Set the setting's variables; must run before PyTorch starts (its libraries read them
    once). `native` leaves the environment as it is."""
    environ.update(PINS[setting])


def pinned(setting: str, environ: os._Environ | dict = os.environ) -> bool:
    """Whether the environment holds every variable the setting sets."""
    return all(environ.get(k) == v for k, v in PINS[setting].items())


def torch_path(torch_module, environ: os._Environ | dict = os.environ) -> dict:
    """PyTorch's kernel path in this process: ATen's capability as PyTorch reports it, MKL's
    and oneDNN's as the environment requests them (`auto:<vendor>-<level>` where it requests
    nothing: the libraries pick by the CPU's vendor and SIMD level)."""
    isa = f"{machine.vendor()}-{isa_class(machine.cpu_flags())}"
    return {
        "aten": torch_module.backends.cpu.get_cpu_capability().lower(),
        "mkl": environ.get("MKL_CBWR", f"auto:{isa}").lower(),
        "onednn": environ.get("ONEDNN_MAX_CPU_ISA", environ.get("DNNL_MAX_CPU_ISA",
                                                               f"auto:{isa}")).lower(),
    }  # fmt: skip


def record(setting: str, kernels: dict, environ: os._Environ | dict = os.environ) -> dict:
    """The run file's `meta.cpu_path`: the setting, the kernels taken, the variables set."""
    return {"setting": setting, "kernels": kernels, "environment": environment(environ)}


def environment(environ: os._Environ | dict = os.environ) -> dict[str, str]:
    """The kernel-path variables set in `environ`, whoever set them."""
    return {k: environ[k] for k in VARIABLES if k in environ}


def describe(meta: dict) -> str:
    """One run's CPU path in a few words, e.g. `aten avx2 · mkl avx2 · onednn avx2`, or
    `unknown` for a run file that does not record it (the seed's, or an older one)."""
    path = meta.get("cpu_path") if isinstance(meta, dict) else None
    kernels = path.get("kernels") if isinstance(path, dict) else None
    if not isinstance(kernels, dict) or not kernels:
        return "unknown"
    if meta.get("framework") == "burn":
        # Flex calls only gemm; NdArray matrixmultiply and macerator.
        names = ("matrixmultiply", "macerator") if meta.get("backend") == "ndarray" else ("gemm",)
        kernels = {k: kernels[k] for k in names if k in kernels} or kernels
    return " · ".join(f"{k} {v}" for k, v in kernels.items())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", choices=SETTINGS, default=DEFAULT)
    args = parser.parse_args(argv)
    if (why := problem(args.setting)) is not None:
        raise SystemExit(f"cpu_path: {why}")
    apply(args.setting)
    import torch

    meta = {"framework": "torch", "cpu_path": record(args.setting, torch_path(torch))}
    cpu = f"{machine.vendor()} {isa_class(machine.cpu_flags())}"
    print(f"CPU: {cpu}; setting {args.setting}: PyTorch {describe(meta)}")


if __name__ == "__main__":
    main()
