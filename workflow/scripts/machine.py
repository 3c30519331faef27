"""The machine a run ran on: the CPU model and SIMD flags, and the project's git commit.

Recorded in each PyTorch run's `meta` (train_torch.py) and in results/provenance.json
(provenance.py); the Burn trainer writes the same fields (rust/src/lib.rs).
"""

from __future__ import annotations

import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "neon", "asimd")


def cpu() -> dict:
    """CPU model and the SIMD flags that change which f32 kernels run (Linux /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {"model": platform.processor() or "unknown", "simd": []}
    model = re.search(r"^(?:model name|Model)\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^(?:flags|Features)\s*:\s*(.+)$", text, re.M)
    present = set(flags.group(1).split()) if flags else set()
    return {
        "model": model.group(1).strip() if model else platform.machine(),
        "simd": [f for f in SIMD_FLAGS if f in present],
    }


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
