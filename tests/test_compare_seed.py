"""compare.py on the seed's own files: the user's unchanged train_both.py really run, its
pt.json (params nested as `p.tolist()` writes them) compared with itself, perturbed, and
against the pipeline's flat lists."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from compare_helpers import run, write
from conftest import ROOT

# The user's original script, unchanged: prints {"sgd": ..., "adam": ...} with nested params.
SEED_SCRIPT = ROOT / "tests" / "seed" / "train_both.py"


# Real runs of the user's unchanged train_both.py (PyTorch, 2 × 100 steps, ~10-20 s).


@pytest.fixture(scope="module")
def real_seed_pt(tmp_path_factory):
    """The seed's pt.json, written by really running its train_both.py once per module."""
    out = tmp_path_factory.mktemp("seed") / "pt.json"
    with out.open("w") as f:
        proc = subprocess.run(
            [sys.executable, "-I", SEED_SCRIPT], stdout=f, stderr=subprocess.PIPE, text=True
        )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert np.shape(data["sgd"]["params"]["conv.weight"]) == (4, 1, 5)  # really nested
    assert np.shape(data["adam"]["params"]["fc.weight"]) == (3, 48)
    return out


def test_real_seed_pt_json_against_itself(real_seed_pt):
    proc = run(real_seed_pt, real_seed_pt)
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:7]] == [
        ["sgd.losses", "n=100"],
        ["sgd.final.loss", "n="],
        ["sgd.final.correct", "n="],
        ["sgd.params.conv.weight", "n="],
        ["sgd.params.conv.bias", "n="],
        ["sgd.params.fc.weight", "n=144"],
        ["sgd.params.fc.bias", "n="],
    ]
    assert "sgd.params.conv.weight   n= 20  max|diff|=0.00e+00" in lines
    assert all(line.endswith("max|diff|=0.00e+00") for line in lines[:-1])
    assert len(lines) == 15 and lines[-1] == "worst=0.00e+00 tol=1e-06 OK"


def test_real_seed_pt_json_with_one_nested_value_perturbed(real_seed_pt, tmp_path):
    data = json.loads(real_seed_pt.read_text())
    data["adam"]["params"]["fc.weight"][2][17] += 1e-3
    perturbed = write(tmp_path / "burn.json", data)
    proc = run(real_seed_pt, perturbed)
    assert proc.returncode == 0
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[:-1]}
    assert rows.pop("adam.params.fc.weight").split()[1:] == ["n=144", "max|diff|=1.00e-03"]
    assert len(rows) == 13 and all(r.endswith("max|diff|=0.00e+00") for r in rows.values())
    assert proc.stdout.splitlines()[-1] == "worst=1.00e-03 tol=1e-06 MISMATCH"


def test_real_seed_nested_params_match_the_pipelines_flat_lists(real_seed_pt, tmp_path):
    # The pipeline writes params flattened in row-major order (torch's .flatten()).
    data = json.loads(real_seed_pt.read_text())
    for block in data.values():
        block["params"] = {k: np.ravel(v).tolist() for k, v in block["params"].items()}
    flat = write(tmp_path / "flat.json", data)
    for a, b in [(real_seed_pt, flat), (flat, real_seed_pt)]:
        proc = run(a, b)
        assert proc.returncode == 0
        assert proc.stdout.splitlines()[-1] == "worst=0.00e+00 tol=1e-06 OK"
