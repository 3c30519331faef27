"""compare.py: the seed's output format, the seed's own files, non-finite values."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

import compare
from conftest import SCRIPTS


def seed_block(shift: float = 0.0, loss_shift: float = 0.0) -> dict:
    return {
        "losses": [1.0 + loss_shift * (i == 3) for i in range(100)],
        "final": {"loss": 0.06, "correct": 96},
        "params": {
            "conv.weight": [0.1 + shift] * 20,
            "conv.bias": [0.0] * 4,
            "fc.weight": [0.2] * 144,
            "fc.bias": [0.0] * 3,
        },
    }


def write(path, data):
    path.write_text(json.dumps(data))
    return path


def run(*args) -> subprocess.CompletedProcess:
    cmd = [sys.executable, SCRIPTS / "compare.py", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_seed_files_in_the_seed_format(tmp_path):
    # The seed's pt.json / burn.json shape: {"sgd": {...}, "adam": {...}}, nothing else.
    pt = write(tmp_path / "pt.json", {"sgd": seed_block(), "adam": seed_block()})
    burn = write(
        tmp_path / "burn.json",
        {"sgd": seed_block(7.15e-07, 1.79e-07), "adam": seed_block(3.52e-06)},
    )
    proc = run(pt, burn, "--tol", "1e-6")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == "sgd.losses               n=100  max|diff|=1.79e-07"
    assert lines[2] == "sgd.final.correct        n=  1  max|diff|=0.00e+00"
    assert lines[3] == "sgd.params.conv.weight   n= 20  max|diff|=7.15e-07"
    assert lines[10] == "adam.params.conv.weight  n= 20  max|diff|=3.52e-06"
    assert lines[-1] == "worst=3.52e-06 tol=1e-06 MISMATCH"
    assert len(lines) == 15


def test_within_tolerance_is_ok_and_strict_fails_only_on_mismatch(tmp_path):
    a = write(tmp_path / "a.json", {"sgd": seed_block()})
    b = write(tmp_path / "b.json", {"sgd": seed_block(1e-7)})
    ok = run(a, b, "--tol", "1e-6", "--strict")
    assert ok.returncode == 0 and ok.stdout.splitlines()[-1] == "worst=1.00e-07 tol=1e-06 OK"
    assert run(a, b, "--tol", "1e-8", "--strict").returncode == 1


def test_nan_is_never_a_match():
    a, b = seed_block(), seed_block()
    a["params"]["fc.bias"][0] = b["params"]["fc.bias"][0] = math.nan
    text = compare.render(compare.compare({"e": a}, {"e": b}, "a", "b"), 1e-6)
    assert "e.params.fc.bias      n=  3  max|diff|=nan" in text
    assert text.splitlines()[-1] == "worst=nan tol=1e-06 MISMATCH"


def test_non_finite_strings_in_run_files_are_read(tmp_path):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    broken = seed_block()
    broken["losses"][5] = "Infinity"
    b = write(tmp_path / "b.json", {"e": broken})
    assert run(a, b).stdout.splitlines()[0].split() == ["e.losses", "n=100", "max|diff|=nan"]


@pytest.mark.parametrize(
    ("content", "message"),
    [("{", "not valid JSON"), ('{"other": {}}', "no experiment 'e'"), ("[]", "JSON object")],
)
def test_bad_run_file_is_named(tmp_path, content, message):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = run(a, bad)
    assert proc.returncode == 2
    assert "bad.json" in proc.stderr and message in proc.stderr


def test_tolerance_must_be_positive(tmp_path):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    proc = run(a, a, "--tol", "0")
    assert proc.returncode != 0 and "--tol must be a positive number" in proc.stderr
