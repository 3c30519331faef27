"""A port's buffers (models/port.py, models/port_torch.py): BatchNorm's running statistics
told from the parameters by name in the weights file, the I64 batch counter left out, and
the module checked against that split before any training — a buffer missing from the
file, a buffer other than a running statistic, a cumulative average — one line each."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import save_file

from torch_burn_parity.models import models, port
from torch_burn_parity.models.model_specs import ModelError, port_spec, spec
from torch_burn_parity.models.port_torch import layer_settings, new

MODULE = """
import torch
from torch import nn


class BnNet(nn.Module):
    def __init__(self, momentum=0.1, mask=False, persistent=True):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.block = nn.Sequential(nn.BatchNorm1d(8, momentum=momentum, eps=1e-3), nn.GELU())
        self.head = nn.Linear(8, 3)
        if mask:
            self.register_buffer("mask", torch.ones(8), persistent=persistent)

    def forward(self, x):
        return self.head(self.block(self.fc(x)))
"""


@pytest.fixture
def bn_port(tmp_path, monkeypatch):
    """Register port `bn_net` (kwargs given) over a weights file of the module's
    state_dict() (less `drop`, or with `state` from other kwargs); returns a builder."""
    (tmp_path / "port_buffers_net.py").write_text(MODULE)
    monkeypatch.delenv(port.ENV, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.syspath_prepend(str(tmp_path))
    from port_buffers_net import BnNet

    save_arrays({"x": np.ones((8, 6), np.float32), "y": np.zeros(8, np.int64)},
                tmp_path / "data.safetensors")  # fmt: skip

    def register(drop: str | None = None, saved: dict | None = None, **kwargs) -> port.Port:
        torch.manual_seed(0)
        state = BnNet(**(saved if saved is not None else kwargs)).state_dict()
        state.pop(drop, None)
        save_file(state, tmp_path / "weights.safetensors")
        found = port.Port(name="bn_net", module="port_buffers_net:BnNet", path=None,
                          kwargs=kwargs, crate="unused", bin="unused",
                          init=str(tmp_path / "weights.safetensors"),
                          data=str(tmp_path / "data.safetensors"),
                          layers=("fc", "block.0", "head"))  # fmt: skip
        port.register([found])
        return found

    yield register
    sys.modules.pop("port_buffers_net", None)


def files_problems(found: port.Port) -> list[str]:
    """The config's problems with the port's weights and data files (its crate is none)."""
    problems = port.port_problems((), found.as_config(), ())
    return [why for at, why in problems if at[-1] in ("init", "data")]


def test_running_statistics_are_buffers_and_the_batch_counter_is_left_out(bn_port):
    found = bn_port()
    # The file holds the I64 counter: accepted, not part of the state.
    assert port.header(found.init)["block.0.num_batches_tracked"]["dtype"] == "I64"
    assert files_problems(found) == []
    model = port_spec(found)
    assert model.param_names == ("block.0.bias", "block.0.weight", "fc.bias", "fc.weight",
                                 "head.bias", "head.weight")  # fmt: skip
    assert model.buffer_names == ("block.0.running_mean", "block.0.running_var")
    assert model.state_shapes["block.0.running_var"] == [8]
    assert "block.0.num_batches_tracked" not in model.state_shapes


def test_another_integer_tensor_in_the_weights_file_is_refused(bn_port, tmp_path):
    found = bn_port()
    arrays = port.read_arrays(found.init)
    arrays["fc.steps"] = np.zeros(1, np.int64)
    save_arrays(arrays, tmp_path / "weights.safetensors")
    (problem,) = files_problems(found)
    assert problem == (f"{found.init}: tensor 'fc.steps' is I64; the initial weights are"
                          " read as F32")  # fmt: skip


def test_the_module_loads_its_running_statistics_from_the_file(bn_port):
    from torch_burn_parity.io.parity_io import decode_dataset
    from torch_burn_parity.training.make_data import dataset_bytes

    bn_port()
    arrays = decode_dataset(dataset_bytes("bn_net"))
    assert {"block.0.running_mean", "block.0.running_var"} <= set(arrays)
    arrays["block.0.running_var"] = (
        [8],
        [2.0] * 8,
    )  # a value the module's own initialisation (ones) does not have
    model = models.build("bn_net", arrays, torch.float64)
    assert torch.equal(model.block[0].running_var, torch.full((8,), 2.0, dtype=torch.float64))
    assert list(models.state(model))[-2:] == ["block.0.running_mean", "block.0.running_var"]
    assert layer_settings(model) == {
        "fc.bias": True,
        "block.0.eps": 1e-3, "block.0.momentum": 0.1, "block.0.running_var_estimator": "unbiased",
        "block.1.approximate": "none",
        "head.bias": True,
    }  # fmt: skip


def test_a_running_statistic_missing_from_the_weights_file_is_refused(bn_port):
    found = bn_port(drop="block.0.running_var")
    with pytest.raises(ModelError) as refused:
        new(spec("bn_net"))
    assert str(refused.value) == (
        f"init: {found.init} has no 'block.0.running_var', a buffer of port_buffers_net:BnNet"
        " (save the module's state_dict(), which holds its running statistics too)"
    )


def test_a_cumulative_average_is_refused(bn_port):
    bn_port(momentum=None)
    with pytest.raises(ModelError, match=r"block\.0 has momentum=None \(a cumulative average"):
        new(spec("bn_net"))


def test_a_persistent_buffer_other_than_a_running_statistic_is_refused(bn_port):
    bn_port(mask=True)
    with pytest.raises(ModelError, match=r"buffer 'mask' is not a BatchNorm's running statistic"):
        new(spec("bn_net"))


def test_a_buffer_the_module_rebuilds_is_no_state(bn_port):
    """persistent=False (a causal mask, rotary frequencies): not in state_dict(), not in
    the weights file, not loaded or recorded."""
    bn_port(mask=True, persistent=False, saved={})
    model = new(spec("bn_net"))
    assert "mask" in dict(model.named_buffers()) and "mask" not in models.state(model)
