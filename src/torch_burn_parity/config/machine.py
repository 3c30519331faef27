"""The machine a run ran on: the CPU model and SIMD flags, and the project's git commit.

Recorded in each PyTorch run's `meta` (train_torch.py) and in results/provenance.json
(provenance.py); the Burn trainer writes the same fields (rust/src/provenance.rs).
"""

from __future__ import annotations

import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Where Linux describes the CPU; a module attribute so that a test can hand it another
# CPU's description (an Intel or AMD host cannot be emulated: qemu-user shows the host's).
CPUINFO = Path("/proc/cpuinfo")
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "neon", "asimd")


def cpuinfo(field: str) -> str | None:
    """A field of Linux's /proc/cpuinfo (CPUINFO), a regular expression for its name (None where
    there is none)."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        return None
    match = re.search(rf"^{field}\s*:\s*(.+)$", text, re.M)
    return match.group(1).strip() if match else None


def cpu_flags() -> set[str]:
    """The CPU's feature flags (empty where they cannot be read)."""
    return set((cpuinfo("(?:flags|Features)") or "").split())


def vendor() -> str:
    """intel, amd or other: MKL takes other branches on other vendors' CPUs."""
    name = cpuinfo("vendor_id") or ""
    return {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(name, name.lower() or "other")


def cpu() -> dict:
    """CPU model and the SIMD flags that change which kernels run."""
    model = cpuinfo("(?:model name|Model)")
    present = cpu_flags()
    if model is None and not present:
        return {"model": platform.processor() or "unknown", "simd": []}
    return {
        "model": model or platform.machine(),
        "simd": [f for f in SIMD_FLAGS if f in present],
    }


def label(meta: dict) -> str | None:
    """The CPU a run's meta records, as `model; simd flags`, or None if it records none."""
    cpu = meta.get("cpu") if isinstance(meta, dict) else None
    if not isinstance(cpu, dict) or "model" not in cpu:
        return None
    return f"{cpu['model']}; {' '.join(cpu.get('simd', []))}"


def command_output(*cmd: str, cwd: Path = ROOT) -> str | None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def git_state(root: Path = ROOT) -> dict:
    """The checkout's commit and whether a tracked file differs from it."""
    commit = command_output("git", "rev-parse", "HEAD", cwd=root)
    if commit is None:
        return {"commit": None, "dirty": None}
    # Dirty means a tracked file differs from the commit; untracked files do not count.
    changes = command_output("git", "status", "--porcelain", "--untracked-files=no", cwd=root)
    return {"commit": commit, "dirty": bool(changes)}
