"""A run's tensors in safetensors (io/run_tensors.py): the writer's file is safetensors as the
`safetensors` package reads it, the PyTorch trainer writes the same values it keeps inline,
and a tensors file that is missing, cut or from another run is refused with one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from conftest import ADAM, small_config
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.io import run_tensors
from torch_burn_parity.io.parity_io import (
    FormatError,
    decode_dataset,
    experiment_block,
    write_run,
)
from torch_burn_parity.io.run_tensors import RunRecorder, TensorWriter, tensors_path
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data, train_torch


def test_the_writer_writes_safetensors_row_by_row_with_late_tensors(tmp_path):
    path = tmp_path / "a.safetensors"
    w = TensorWriter(path, {"params/w": [2, 3], "trajectory/params/w": [4, 2, 3]}, "f64",
                     late=["layers/1/outputs/0"])  # fmt: skip
    for row in (3, 0, 2, 1):  # any order
        w.write("trajectory/params/w", np.full(6, row + 0.25), row=row)
    w.write("params/w", np.arange(6.0))
    w.add("layers/1/outputs/0", [1.5, -2.0])
    size = w.close()
    assert size == path.stat().st_size and not list(tmp_path.glob(".*tmp"))
    tensors = load_file(path)
    assert tensors["trajectory/params/w"].dtype == np.float64
    assert tensors["trajectory/params/w"][:, 0, 0].tolist() == [0.25, 1.25, 2.25, 3.25]
    assert tensors["params/w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert tensors["layers/1/outputs/0"].tolist() == [1.5, -2.0]
    header = path.read_bytes()[8 : 8 + int.from_bytes(path.read_bytes()[:8], "little")]
    assert json.loads(header)["__metadata__"]["format"] == "torch-burn-parity run tensors"


def test_a_late_tensor_never_added_leaves_no_file(tmp_path):
    w = TensorWriter(tmp_path / "a.safetensors", {"params/w": [2]}, "f32", late=["layers/1/x"])
    w.write("params/w", [1.0, 2.0])
    with pytest.raises(ValueError, match="late tensors never added"):
        w.close()
    assert list(tmp_path.iterdir()) == []


def test_a_row_of_the_wrong_size_is_refused(tmp_path):
    w = TensorWriter(tmp_path / "a.safetensors", {"trajectory/params/w": [3, 2]}, "f32")
    with pytest.raises(ValueError, match="3 values do not fill 8 bytes"):
        w.write("trajectory/params/w", [1.0, 2.0, 3.0], row=0)
    w.abort()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """cnn_bn (parameters and buffers) trained for 4 steps in f32, probe steps 1 and 3: once
    into a tensors file, once inline."""
    torch.set_num_threads(1)
    config = small_config(4, e=ADAM | {"model": "cnn_bn", "probe_steps": [3]})
    spec = experiment_spec(config, "e")
    arrays = decode_dataset(make_data.dataset_bytes("cnn_bn"))
    out = tmp_path_factory.mktemp("run") / "torch-f32.json"
    block = train_torch.train(spec, arrays, "f32", out)
    write_run(out, {"e": block})
    return out, train_torch.train(spec, arrays, "f32")


def test_the_torch_trainer_writes_its_tensors_beside_the_run_file(runs):
    out, inline = runs
    saved = json.loads(out.read_text())["e"]
    assert "trajectory" not in saved and "params" not in saved
    assert saved["tensors"]["file"] == "torch-f32.safetensors"
    assert saved["tensors"]["steps"] == [1, 2, 3, 4]
    assert saved["layers"] == [{"step": s, "names": ["conv", "bn", "gelu", "ln", "fc"]}
                               for s in (1, 3)]  # fmt: skip
    tensors = load_file(tensors_path(out))
    assert tensors["trajectory/params/conv.weight"].shape == (4, 4, 1, 5)
    assert tensors["trajectory/grads/fc.weight"].dtype == np.float32
    assert tensors["buffers/bn.running_var"].shape == (4,)


def test_the_tensors_read_back_as_the_inline_values(runs):
    out, inline = runs
    block = experiment_block(out)
    spec = model_specs.CNN_BN
    assert tuple(block["params"]) == spec.param_names  # the model's order, not sorted
    assert tuple(block["trajectory"]["buffers"]) == spec.buffer_names
    for kind in ("params", "grads"):
        for name in spec.param_names:
            assert block["trajectory"][kind][name].tolist() == inline["trajectory"][kind][name]
    for name in spec.buffer_names:
        assert block["buffers"][name].tolist() == inline["buffers"][name]
    for got, want in zip(block["layers"], inline["layers"], strict=True):
        assert [v.tolist() for v in got["input_grads"]] == want["input_grads"]
        assert got["outputs"][-1].tolist() == want["outputs"][-1]


def test_reading_a_run_file_and_asking_what_it_holds_reads_no_tensor(runs, monkeypatch):
    """experiment_block checks that every trajectory is there (`name in series`): at 10^6
    parameters a check that read the tensors would read the whole run, once per script."""
    out, _ = runs
    reads = []
    read = run_tensors.TensorFile._read
    monkeypatch.setattr(
        run_tensors.TensorFile, "_read", lambda self, *a: reads.append(a) or read(self, *a)
    )
    block = experiment_block(out)
    params = block["trajectory"]["params"]
    assert "conv.weight" in params and "no.such" not in params and "bn.running_var" not in params
    assert reads == []
    assert params["conv.weight"].shape == (4, 20)  # read on access, and only then
    assert len(reads) == 1


def test_a_tensors_file_that_is_not_the_runs_is_refused(runs, tmp_path):
    out, _ = runs
    copy = tmp_path / "torch-f32.json"
    copy.write_text(out.read_text())
    with pytest.raises(FormatError, match="torch-f32.safetensors: tensors file not found"):
        experiment_block(copy)
    blob = tensors_path(out).read_bytes()
    tensors_path(copy).write_bytes(blob[:-4])
    with pytest.raises(FormatError, match=r"bytes, its run file says \d+ \(a tensors file"):
        experiment_block(copy)
    tensors_path(copy).write_bytes(b"\x00" * len(blob))
    with pytest.raises(FormatError, match="not a safetensors file"):
        experiment_block(copy)


def test_a_five_dimensional_trajectory_round_trips(tmp_path):
    """A Conv2d weight's trajectory is [steps, out, in, k, k]."""
    shape = [100, 64, 32, 3, 3]
    w = TensorWriter(tmp_path / "a.safetensors", {"trajectory/params/c": shape}, "f32")
    w.write("trajectory/params/c", np.ones(int(np.prod(shape[1:]))), row=99)
    w.close()
    assert load_file(tmp_path / "a.safetensors")["trajectory/params/c"][99].min() == 1


def test_an_older_run_file_is_removed_before_its_new_tensors_take_its_place(tmp_path):
    run = tmp_path / "torch-f64.json"
    run.write_text("{}")
    recorder = RunRecorder(run, "f64", {"w": [2]}, {}, [1], [], 0)
    recorder.row("params", "w", 0, [1.0, 2.0])
    recorder.row("grads", "w", 0, [0.5, 0.5])
    fields = recorder.finish({"w": np.array([1.0, 2.0])}, {})
    assert not run.exists() and tensors_path(run).is_file()
    assert fields["tensors"]["bytes"] == tensors_path(run).stat().st_size


def test_a_header_that_outgrows_its_room_is_refused_not_written_over_the_data(tmp_path):
    w = TensorWriter(tmp_path / "a.safetensors", {"params/w": [2]}, "f32")
    w.write("params/w", [1.0, 2.0])
    w.reserved = 8  # as if the room had been reserved too small
    with pytest.raises(ValueError, match="header overflows its room"):
        w.close()
    assert list(tmp_path.iterdir()) == []


def test_only_the_recorded_steps_are_rows_and_the_json_names_them(tmp_path):
    run = tmp_path / "torch-f64.json"
    recorder = RunRecorder(run, "f64", {"w": [2]}, {}, [1, 3], [], 0)
    for step in range(4):
        if recorder.records(step):
            recorder.row("params", "w", step, [step, step])
            recorder.row("grads", "w", step, [0.0, 0.0])
    fields = recorder.finish({"w": np.array([9.0, 9.0])}, {})
    assert fields["tensors"]["steps"] == [1, 3]
    assert load_file(tensors_path(run))["trajectory/params/w"].tolist() == [[0, 0], [2, 2]]
