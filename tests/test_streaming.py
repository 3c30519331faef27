"""Analyses that stream (analysis/gaps.py): the gaps read a block of columns at a time, or a
row at a time, from the runs' tensors files give exactly what the whole matrices give."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from conftest import SGD, small_config
from torch_burn_parity.analysis import gaps
from torch_burn_parity.analysis import replay as rp
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io.parity_io import decode_dataset, experiment_block, write_run
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data, train_torch

STEPS = 5


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """cnn_bn (parameters and buffers) trained in f32 and f64 into tensors files; the four
    'runs' of the ladder are those two, crossed."""
    torch.set_num_threads(1)
    spec = experiment_spec(small_config(STEPS, e=SGD | {"model": "cnn_bn", "lr": 0.1}), "e")
    arrays = decode_dataset(make_data.dataset_bytes("cnn_bn"))
    folder = tmp_path_factory.mktemp("runs")
    blocks = {}
    for dtype in ("f32", "f64"):
        out = folder / f"torch-{dtype}.json"
        write_run(out, {"e": train_torch.train(spec, arrays, dtype, out)})
        blocks[dtype] = experiment_block(out)
    ladder = {"torch_f32": blocks["f32"], "burn_f32": blocks["f64"],
              "torch_f64": blocks["f64"], "burn_f64": blocks["f32"]}  # fmt: skip
    return ladder, arrays, spec


@pytest.mark.parametrize("chunk", [64, 1000, gaps.CHUNK_BYTES])
def test_the_ladder_read_block_by_block_is_the_whole_matrices_ladder(runs, monkeypatch, chunk):
    blocks, _, _ = runs
    monkeypatch.setattr(gaps, "CHUNK_BYTES", chunk)
    m = {key: gaps.param_matrix(b) for key, b in blocks.items()}
    streamed = gaps.ladder(blocks)
    assert np.array_equal(streamed["dparam"], gaps.step_gaps(m["torch_f32"], m["burn_f32"]))
    assert np.array_equal(streamed["f64_f64"], gaps.step_gaps(m["torch_f64"], m["burn_f64"]))
    assert streamed["dparam"].max() > 0


def test_the_blocks_cover_every_column_once_in_order(runs, monkeypatch):
    blocks, _, _ = runs
    monkeypatch.setattr(gaps, "CHUNK_BYTES", 200)
    whole = gaps.param_matrix(blocks["torch_f32"])
    columns, parts = [], []
    for _, _, column, part in gaps.column_blocks({"a": blocks["torch_f32"]}):
        columns.append(column)
        parts.append(part["a"])
    assert len(parts) > 9  # really cut
    assert np.array_equal(np.concatenate(parts, axis=1), whole)
    assert columns == list(np.cumsum([0] + [p.shape[1] for p in parts[:-1]]))


def test_a_row_is_the_matrix_row_and_a_column_is_named_as_flat_names_names_it(runs):
    blocks, _, _ = runs
    block = blocks["burn_f64"]
    for k in (0, STEPS - 1):
        assert np.array_equal(gaps.state_row(block, k), gaps.param_matrix(block)[k])
        assert np.array_equal(
            gaps.state_row(block, k, "grads"), gaps.param_matrix(block, "grads")[k]
        )
    shapes = model_specs.CNN_BN.shapes()
    names = gaps.flat_names(shapes)
    assert [gaps.flat_name(shapes, c) for c in range(len(names))] == names
    assert gaps.column_of(shapes, "fc.weight", 19) == names.index("fc.weight[0,19]")


def test_a_non_finite_value_makes_its_steps_gap_nan_and_others_keep_theirs():
    found = gaps.StepMax(3)
    a = np.array([[0.0, 1.0], [0.0, np.nan], [2.0, 0.0]])
    found.add(a, np.zeros((3, 2)), 0)
    found.add(np.array([[5.0], [1.0], [np.inf]]), np.zeros((3, 1)), 2)
    assert found.result()[0] == 5.0 and np.isnan(found.result()[1:]).all()
    assert found.column[0] == 2


def test_the_replay_compared_step_by_step_is_the_replay_compared_whole(runs):
    blocks, arrays, spec = runs
    reference = blocks["torch_f64"]
    variant = rp.variants(reference, reference)["counterfactual"][0]
    shapes = model_specs.CNN_BN.shapes()
    streamed = rp.gap_frame(
        rp.replayed(arrays, variant, STEPS, 16, model="cnn_bn"), reference, shapes
    )
    losses, snapshots = rp.run(arrays, variant, STEPS, 16, model="cnn_bn")
    assert np.array_equal(
        streamed["dparam"], gaps.step_gaps(snapshots, gaps.param_matrix(reference))
    )
    assert streamed["dloss"].tolist() == list(
        np.abs(np.asarray(losses) - np.asarray(reference["losses"]))
    )


def test_runs_that_record_some_steps_give_the_full_runs_rows_at_those_steps(runs, tmp_path):
    """record_steps [1, 2, 4, 5] of 5: the steps table, the replay's comparison and the
    layers' rows are the every-step runs' at those steps."""
    from torch_burn_parity.analysis.steps_table import steps_frame

    full, arrays, spec = runs
    kept = [1, 2, 4, 5]
    blocks = {}
    for dtype in ("f32", "f64"):
        out = tmp_path / f"torch-{dtype}.json"
        block = train_torch.train(replace(spec, record_steps=kept), arrays, dtype, out)
        write_run(out, {"e": block})
        blocks[dtype] = experiment_block(out)
    assert gaps.recorded_steps(blocks["f64"]) == kept
    strided = {"torch_f32": blocks["f32"], "burn_f32": blocks["f64"],
               "torch_f64": blocks["f64"], "burn_f64": blocks["f32"]}  # fmt: skip
    whole, part = steps_frame(full), steps_frame(strided)
    assert part["step"].tolist() == kept
    rows = whole[whole["step"].isin(kept)].reset_index(drop=True)
    assert part.equals(rows)
    # the norms are every step's
    assert len(blocks["f64"]["norms"]["grads"]["fc.weight"]) == STEPS
    variant = rp.variants(full["torch_f64"], full["torch_f64"])["counterfactual"][0]
    shapes = model_specs.CNN_BN.shapes()
    replayed = rp.replayed(arrays, variant, STEPS, 16, model="cnn_bn")
    frame = rp.gap_frame(replayed, strided["torch_f64"], shapes)
    replayed = rp.replayed(arrays, variant, STEPS, 16, model="cnn_bn")
    every = rp.gap_frame(replayed, full["torch_f64"], shapes)
    assert frame.equals(every[every["step"].isin(kept)].reset_index(drop=True))
