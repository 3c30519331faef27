"""The Burn crate's own tests (cargo test), so that one command runs every test."""

from __future__ import annotations

import re
import subprocess

from conftest import ROOT

RESULT = re.compile(r"test result: ok\. (\d+) passed; (\d+) failed; (\d+) ignored")


def cargo_test(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["cargo", "test", "--release", "--locked", *args], cwd=ROOT / "rust",
                          capture_output=True, text=True)  # fmt: skip


def test_cargo_test_passes_every_test_cargo_lists():
    """Every test cargo lists (unit, integration and doc tests) ran and passed: none ignored,
    none left out, so a test that stops being compiled or run is noticed."""
    listed = cargo_test("--", "--list", "--format", "terse")
    assert listed.returncode == 0, listed.stderr
    names = [line for line in listed.stdout.splitlines() if line.endswith(": test")]
    proc = cargo_test()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = [tuple(map(int, m)) for m in RESULT.findall(proc.stdout)]
    passed, failed, ignored = (sum(c[i] for c in counts) for i in range(3))
    assert (failed, ignored) == (0, 0), proc.stdout
    assert passed == len(names) > 0, proc.stdout
