"""gaps.py: the per-step parameter gaps every table and verdict starts from."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from torch_burn_parity.analysis import gaps
from torch_burn_parity.io.parity_io import (
    FormatError,
    encode_dataset,
    experiment_block,
    write_atomic,
    write_run,
)
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data

PARAM_NAMES = model_specs.CNN1D.param_names  # the seed model's

# Small stand-in parameters (the trajectory is flat per parameter): 3 + 1 + 2 + 1 columns.
SIZES = {"conv.weight": 3, "conv.bias": 1, "fc.weight": 2, "fc.bias": 1}
SHA = "a1" * 32


def block(params: np.ndarray, grads: np.ndarray | None = None, sha: str = SHA) -> dict:
    """A run file's experiment block whose trajectory is params ([steps, 7])."""
    grads = np.zeros_like(params) if grads is None else grads

    def split(matrix):
        bounds = np.cumsum([0, *SIZES.values()])
        return {
            n: matrix[:, a:b].tolist() for n, a, b in zip(SIZES, bounds, bounds[1:], strict=False)
        }

    return {
        "losses": [1.0] * len(params),
        "final": {"loss": 1.0, "correct": 0},
        "params": split(params[-1:]),
        "trajectory": {"params": split(params), "grads": split(grads)},
        "meta": {"input_sha256": sha},
    }


BASE = np.arange(21.0).reshape(3, 7) / 10  # 3 steps, 7 parameters


def test_param_matrix_concatenates_in_parameter_order():
    grads = -BASE
    assert np.array_equal(gaps.param_matrix(block(BASE, grads)), BASE)
    assert np.array_equal(gaps.param_matrix(block(BASE, grads), "grads"), grads)
    # The order is PARAM_NAMES', not the run file's.
    reordered = block(BASE)
    reordered["trajectory"]["params"] = dict(reversed(reordered["trajectory"]["params"].items()))
    assert np.array_equal(gaps.param_matrix(reordered), BASE)
    assert gaps.param_matrix(block(BASE)).dtype == np.float64


def test_step_gaps_is_the_largest_difference_per_step():
    a = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    b = np.array([[1.5, 2.0, 2.75], [1.0, -2.0, 3.0]])
    assert gaps.step_gaps(a, b).tolist() == [0.5, 4.0]


@pytest.mark.parametrize(
    ("a", "b"),
    [(np.nan, 1.0), (1.0, np.nan), (np.inf, 1.0), (1.0, -np.inf), (np.inf, np.inf)],
)
def test_a_non_finite_value_makes_its_step_nan(a, b):
    # inf − inf would be NaN, inf − 1 inf: both are "not finite", and a diverged step
    # must never look like a match (or like a merely large gap).
    x = np.array([[0.0, 0.0], [0.0, a], [0.0, 0.0]])
    y = np.array([[0.0, 1e-7], [5.0, b], [0.0, 0.0]])
    with np.errstate(invalid="ignore"):  # inf − inf
        result = gaps.step_gaps(x, y)
    assert result[0] == 1e-7 and math.isnan(result[1]) and result[2] == 0.0


def test_ladder_pairs_the_right_runs():
    torch64 = BASE
    burn64 = BASE.copy()
    burn64[:, 2] += [1e-15, 2e-15, 4e-15]  # f64 vs f64
    torch32 = BASE.copy()
    torch32[:, 0] += [1e-8, 2e-8, 3e-8]  # PyTorch's f32 rounding
    burn32 = BASE.copy()
    burn32[:, 6] += [-4e-8, -5e-8, -6e-8]  # Burn's f32 rounding
    blocks = {
        "torch_f32": block(torch32),
        "burn_f32": block(burn32),
        "torch_f64": block(torch64),
        "burn_f64": block(burn64),
    }
    ladder = gaps.ladder(blocks)
    assert list(ladder) == ["dparam", "torch_f64", "burn_f64", "f64_f64"]
    np.testing.assert_allclose(ladder["torch_f64"], [1e-8, 2e-8, 3e-8], rtol=1e-6)
    np.testing.assert_allclose(ladder["burn_f64"], [4e-8, 5e-8, 6e-8], rtol=1e-6)
    np.testing.assert_allclose(ladder["dparam"], [4e-8, 5e-8, 6e-8], rtol=1e-6)
    np.testing.assert_allclose(ladder["f64_f64"], [1e-15, 2e-15, 4e-15], rtol=1e-2)


# --------------------------------------------------------------------------- load_runs


def write_runs(tmp_path, **blocks) -> dict[str, Path]:
    paths = {}
    for key, b in blocks.items():
        paths[key] = tmp_path / f"{key}.json"
        write_run(paths[key], {"e": b})
    return paths


def test_load_runs_reads_the_runs_of_one_experiment(tmp_path):
    paths = write_runs(tmp_path, torch_f64=block(BASE), burn_f64=block(BASE + 1))
    blocks = gaps.load_runs(paths)
    assert list(blocks) == ["torch_f64", "burn_f64"]
    assert np.array_equal(gaps.param_matrix(blocks["burn_f64"]), BASE + 1)


def test_runs_on_another_dataset_are_refused_naming_both_files(tmp_path):
    other = "b2" * 32
    paths = write_runs(tmp_path, torch_f32=block(BASE), burn_f32=block(BASE, sha=other))
    with pytest.raises(FormatError) as err:
        gaps.load_runs(paths)
    assert str(err.value) == (
        f"{paths['burn_f32']}: input checksum b2b2b2b2b2b2… differs from {paths['torch_f32']}"
        " (a1a1a1a1a1a1…): the runs did not read the same dataset"
    )


def test_runs_of_different_lengths_are_refused(tmp_path):
    paths = write_runs(tmp_path, torch_f32=block(BASE), burn_f32=block(BASE[:2]))
    with pytest.raises(FormatError) as err:
        gaps.load_runs(paths)
    assert str(err.value) == f"{paths['burn_f32']}: 2 steps, but {paths['torch_f32']} has 3"


# --------------------------------------------------------------------------- names and shapes

SHAPES = {"conv.weight": [4, 1, 5], "conv.bias": [4], "fc.weight": [3, 48], "fc.bias": [3]}


def test_flat_names_follow_pytorch_indices_in_row_major_order():
    names = gaps.flat_names(SHAPES)
    assert len(names) == 20 + 4 + 144 + 3
    assert names[:2] == ["conv.weight[0,0,0]", "conv.weight[0,0,1]"]
    assert names[5] == "conv.weight[1,0,0]" and names[20] == "conv.bias[0]"
    assert names[24 + 48 + 19] == "fc.weight[1,19]" and names[-1] == "fc.bias[2]"


def test_dataset_shapes_reads_the_parameter_shapes(tmp_path):
    arrays = {"x": ([2, 16], [0.0] * 32), "y": ([2], [0, 1])}
    arrays |= {n: (s, [0.5] * math.prod(s)) for n, s in SHAPES.items()}
    path = tmp_path / "dataset.safetensors"
    write_atomic(path, encode_dataset(arrays, "cnn1d"))
    assert gaps.dataset_shapes(path) == SHAPES
    assert list(gaps.dataset_shapes(str(path))) == list(PARAM_NAMES)


def test_report_steps_are_the_configured_ones_and_the_last():
    steps = pd.Series(range(1, 13))
    shown = gaps.report_steps_of(steps, [1, 2, 5, 10, 20])
    assert steps[shown].tolist() == [1, 2, 5, 10, 12]
    assert steps[gaps.report_steps_of(steps, [])].tolist() == [12]
    assert steps[gaps.report_steps_of(steps, [12, 13])].tolist() == [12]


def test_run_arguments_are_required_paths():
    parser = argparse.ArgumentParser()
    gaps.add_run_arguments(parser)
    argv = [
        "--torch-f32",
        "a.json",
        "--burn-f32",
        "b.json",
        "--torch-f64",
        "c.json",
        "--burn-f64",
        "d.json",
    ]
    assert gaps.run_paths(parser.parse_args(argv)) == {
        "torch_f32": Path("a.json"),
        "burn_f32": Path("b.json"),
        "torch_f64": Path("c.json"),
        "burn_f64": Path("d.json"),
    }
    with pytest.raises(SystemExit):
        parser.parse_args(argv[:-2])


def test_run_arguments_for_a_subset_of_runs():
    parser = argparse.ArgumentParser()
    runs = ("torch_f64", "burn_f64")
    gaps.add_run_arguments(parser, runs)
    args = parser.parse_args(["--torch-f64", "t", "--burn-f64", "b"])
    assert gaps.run_paths(args, runs) == {"torch_f64": Path("t"), "burn_f64": Path("b")}


# --------------------------------------------------------------------------- models with buffers

BN_PARAMS = ("conv.weight", "bn.weight", "bn.bias", "ln.weight", "ln.bias",
             "fc.weight", "fc.bias")  # fmt: skip
BN_BUFFERS = ("bn.running_mean", "bn.running_var")


def bn_block(steps: int = 2, offset: float = 0.0) -> dict:
    """A cnn_bn run block: each parameter and buffer its size in columns (199 + 8)."""
    shapes = model_specs.CNN_BN.shapes()
    series = {
        name: [[offset + 1000 * t + k for k in range(math.prod(shapes[name]))]
               for t in range(steps)]
        for name in shapes
    }  # fmt: skip
    params = {n: series[n] for n in BN_PARAMS}
    return {
        "losses": [1.0] * steps,
        "final": {"loss": 1.0, "correct": 0},
        "params": {n: s[-1] for n, s in params.items()},
        "buffers": {n: series[n][-1] for n in BN_BUFFERS},
        "trajectory": {
            "params": params,
            "grads": params,
            "buffers": {n: series[n] for n in BN_BUFFERS},
        },  # fmt: skip
        "meta": {"input_sha256": SHA, "model": "cnn_bn"},
    }


def test_a_cnn_bn_matrix_has_the_parameters_then_the_buffers():
    b = bn_block()
    matrix = gaps.param_matrix(b)
    assert matrix.shape == (2, 199 + 8)
    assert gaps.param_matrix(b, "grads").shape == (2, 199)  # gradients: parameters only
    columns = gaps.buffer_columns(b)
    assert (columns.start, columns.stop) == (199, 207)
    assert matrix[1, columns].tolist() == [1000.0 + k for k in (0, 1, 2, 3, 0, 1, 2, 3)]
    names = gaps.flat_names(model_specs.CNN_BN.shapes())
    assert len(names) == 207 and names[columns][0] == "bn.running_mean[0]"
    assert names[199 - 3 - 144] == "fc.weight[0,0]" and names[-1] == "bn.running_var[3]"
    # A cnn1d block has no buffer columns.
    assert gaps.buffer_columns(block(BASE)) == slice(171, 171)  # cnn1d: 171 parameters


def test_the_buffers_count_in_the_gaps(tmp_path):
    a, b = bn_block(), bn_block()
    b["trajectory"]["buffers"]["bn.running_var"][1][2] += 0.5
    assert gaps.step_gaps(gaps.param_matrix(a), gaps.param_matrix(b)).tolist() == [0.0, 0.5]


def test_a_cnn_bn_run_without_its_buffer_trajectory_is_refused(tmp_path):
    b = bn_block()
    del b["trajectory"]["buffers"]["bn.running_var"]
    write_run(tmp_path / "r.json", {"e": b})
    with pytest.raises(FormatError, match=r"trajectory\.buffers\.bn\.running_var must hold"):
        experiment_block(tmp_path / "r.json")
    b = bn_block()
    b["meta"]["model"] = "resnet"
    write_run(tmp_path / "r.json", {"e": b})
    with pytest.raises(FormatError, match="unknown model 'resnet'"):
        experiment_block(tmp_path / "r.json")


def test_runs_of_different_models_are_refused(tmp_path):
    cnn1d = block(np.zeros((2, 7)))
    paths = write_runs(tmp_path, torch_f64=bn_block(), burn_f64=cnn1d)
    with pytest.raises(FormatError) as err:
        gaps.load_runs(paths)
    assert str(err.value) == (
        f"{paths['burn_f64']}: model cnn1d, but {paths['torch_f64']} trained cnn_bn"
    )


def test_dataset_shapes_of_a_cnn_bn_file_in_the_models_order(tmp_path):
    path = tmp_path / "cnn_bn.safetensors"
    write_atomic(path, make_data.dataset_bytes("cnn_bn"))
    assert gaps.dataset_shapes(path) == model_specs.CNN_BN.shapes()
    assert list(gaps.dataset_shapes(path)) == [*BN_PARAMS, *BN_BUFFERS]
