"""The Burn crate's own tests (cargo test), so that one command runs every test."""

from __future__ import annotations

import re
import subprocess

from conftest import ROOT


def test_cargo_test_passes():
    proc = subprocess.run(
        ["cargo", "test", "--release", "--locked"],
        cwd=ROOT / "rust",
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", proc.stdout))
    assert passed >= 8, proc.stdout
