"""gaps.py on runs whose tensors are in a safetensors file (the pipeline's runs): the steps
they record, and the runs' matrices read a block of columns at a time, cut along a tensor's
first dimension when a block would be too large, equal to the whole matrix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import ADAM, small_config
from torch_burn_parity.analysis import gaps
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import decode_dataset, experiment_block, write_run
from torch_burn_parity.io.run_tensors import materialize
from torch_burn_parity.training import make_data, train_torch

STEPS = 6
RECORDED = [1, 2, 3, 5, 6]  # step 3 asked for, step 1, the last, and each one's predecessor
DEFAULT_CHUNK = gaps.CHUNK_BYTES


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """cnn_bn trained for 6 steps in f64, recording steps 1, 2, 3, 5 and 6 into its tensors
    file: the run's block, its tensors read on access."""
    torch.set_num_threads(1)
    config = small_config(STEPS, e=ADAM | {"model": "cnn_bn", "record": {"steps": [3]}})
    spec = experiment_spec(config, "e")
    arrays = decode_dataset(make_data.dataset_bytes("cnn_bn"))
    out = tmp_path_factory.mktemp("run") / "torch-f64.json"
    write_run(out, {"e": train_torch.train(spec, arrays, "f64", out)})
    return out


def whole(block: dict, kind: str) -> np.ndarray:
    """The run's matrix from its tensors read whole: each trajectory [steps, …] flattened."""
    trajectory = block["trajectory"]
    names = gaps.state_names(block, kind)
    return np.concatenate([np.asarray(trajectory[t][n]).reshape(len(RECORDED), -1)
                           for n, t in names], 1)  # fmt: skip


def test_a_tensors_file_records_the_steps_its_spec_chose(run):
    block = experiment_block(run)
    assert gaps.recorded_steps(block) == RECORDED
    assert gaps.recorded_steps(materialize(block)) == list(range(1, STEPS + 1))  # inline: all


def test_a_tensors_shape_gives_its_rows_and_the_width_of_one_step(run):
    trajectory = experiment_block(run)["trajectory"]
    params, buffers = trajectory["params"], trajectory["buffers"]
    shape = lambda series, name: (gaps._first_dim(series, name), gaps.step_width(series, name))  # noqa: E731
    assert shape(params, "conv.weight") == (4, 20)  # [4, 1, 5]: 4 rows of 5
    assert shape(buffers, "bn.running_var") == (4, 4)
    assert gaps._columns(params, "conv.weight", 1, 3).shape == (len(RECORDED), 10)
    inline = {"w": [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]] * 2}  # an inline list holds no shape
    assert (gaps._first_dim(inline, "w"), gaps.step_width(inline, "w")) == (6, 6)
    assert gaps._columns(inline, "w", 2, 4).tolist() == [[2.0, 3.0]] * 2


@pytest.mark.parametrize("kind", ["params", "grads"])
@pytest.mark.parametrize("chunk", [DEFAULT_CHUNK, 8 * len(RECORDED) * 5])
def test_the_column_blocks_put_together_are_the_whole_matrix(run, monkeypatch, kind, chunk):
    """At the default size every tensor is one block; at a block of one row of conv.weight
    (5 columns × 5 steps × 8 bytes) each tensor is cut into one block per index of its first
    dimension, and the blocks, in order and at their first column, still make the matrix."""
    monkeypatch.setattr(gaps, "CHUNK_BYTES", chunk)
    block = experiment_block(run)
    blocks = {"a": block, "b": block}
    matrix = whole(block, kind)
    parts, column = [], 0
    for name, trajectory, first, part in gaps.column_blocks(blocks, kind):
        assert first == column, name
        assert np.array_equal(part["a"], part["b"])
        parts.append((name, trajectory, part["a"].shape[1]))
        assert np.array_equal(part["a"], matrix[:, column : column + part["a"].shape[1]]), name
        column += part["a"].shape[1]
    assert column == matrix.shape[1]
    names = gaps.state_names(block, kind)
    assert list(dict.fromkeys((n, t) for n, t, _ in parts)) == names
    if chunk == DEFAULT_CHUNK:
        assert len(parts) == len(names)
    else:
        assert [w for n, _, w in parts if n == "conv.weight"] == [5, 5, 5, 5]
        assert [w for n, _, w in parts if n == "fc.weight"] == [48] * 3  # 3 classes × 48


def test_the_step_max_over_blocks_keeps_each_steps_largest_and_its_column():
    """Two blocks of two columns: a tie keeps the earlier column, a NaN makes its step NaN
    (its column the NaN's until a larger number comes), an infinity is the largest."""
    nan, inf = float("nan"), float("inf")
    step_max = gaps.StepMax(3)
    assert step_max.column.tolist() == [-1, -1, -1]
    step_max.add(np.array([[1.0, 3.0], [nan, 2.0], [0.0, 0.0]]), np.zeros((3, 2)), 0)
    assert step_max.column.tolist() == [1, 0, -1]  # step 3: nothing above 0 yet
    step_max.add(np.zeros((3, 0)), np.zeros((3, 0)), 2)  # an empty block changes nothing
    step_max.add(np.array([[2.0, 6.0], [5.0, inf], [0.0, 1e-9]]), np.array([[-1.0, 3.0],
                 [0.0, 0.0], [0.0, 0.0]]), 2)  # fmt: skip
    result = step_max.result()
    assert result[0] == 3.0 and np.isnan(result[1]) and result[2] == 1e-9
    assert step_max.column.tolist() == [1, 3, 3]  # 3 = 3 at column 3 is a tie: column 1 kept
    assert step_max.finite.tolist() == [True, False, True]
    assert step_max.gaps[1] == inf  # the largest number, NaN set only in the result


def test_a_column_and_its_name_are_found_from_the_shapes_either_way():
    shapes = {"w": [2, 3], "s": [], "b": [4]}
    names = gaps.flat_names(shapes)
    assert names == ["w[0,0]", "w[0,1]", "w[0,2]", "w[1,0]", "w[1,1]", "w[1,2]", "s[]",
                     "b[0]", "b[1]", "b[2]", "b[3]"]  # fmt: skip
    assert [gaps.flat_name(shapes, c) for c in range(len(names))] == names
    assert [gaps.column_of(shapes, "b", i) for i in range(4)] == [7, 8, 9, 10]
    assert gaps.column_of(shapes, "w", 5) == 5 and gaps.column_of(shapes, "s", 0) == 6
    with pytest.raises(IndexError, match=r"column 0 is past the last of \['w', 's', 'b'\]"):
        gaps.flat_name(shapes, 11)
    with pytest.raises(KeyError, match="'x'"):
        gaps.column_of(shapes, "x", 0)


def test_a_state_row_is_one_recorded_step_of_the_matrix(run):
    block = experiment_block(run)
    for kind in ("params", "grads"):
        matrix = whole(block, kind)
        assert np.array_equal(gaps.state_row(block, 3, kind), matrix[3])  # step 5, the 4th row
    assert gaps.state_row(block, 0).shape == (whole(block, "params").shape[1],)


def test_runs_recording_other_steps_are_refused_naming_both(run, tmp_path):
    import json

    paths = {}
    for key, steps in (("torch_f64", RECORDED), ("burn_f64", [1, 2, 3, 4, 6])):
        data = json.loads(run.read_text())
        data["e"]["meta"]["input_sha256"] = "ab" * 32
        data["e"]["tensors"]["steps"] = steps
        paths[key] = tmp_path / key / run.name
        paths[key].parent.mkdir()
        paths[key].write_text(json.dumps(data))
        tensors = data["e"]["tensors"]["file"]
        (paths[key].parent / tensors).write_bytes((run.parent / tensors).read_bytes())
    with pytest.raises(gaps.FormatError) as error:
        gaps.load_runs(paths)
    assert str(error.value) == (
        f"{paths['burn_f64']}: records other steps than {paths['torch_f64']} (their runs were"
        " made from different specs)"
    )
