"""The shared dataset file: exact f32 rounding, bit-exact round trip, clear errors."""

from __future__ import annotations

import math
import struct

import pytest

from torch_burn_parity.io.parity_io import (
    DTYPE_F32,
    DTYPE_I64,
    FormatError,
    decode_dataset,
    encode_dataset,
    read_dataset,
)
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def test_round_trip_is_bit_exact(dataset):
    arrays, _ = read_dataset(dataset)
    xs, ys = make_data.inputs()
    # Every stored value is the f64 formula rounded to f32 once, bit for bit.
    assert arrays["x"][0] == [96, 1, 16]
    assert [struct.pack("<f", v) for v in arrays["x"][1]] == [struct.pack("<f", x) for x in xs]
    assert arrays["y"][1] == ys
    for name, (shape, values) in make_data.initial_weights().items():
        assert arrays[name][0] == shape
        assert arrays[name][1] == [f32(v) for v in values]
    # Rounding really happened: the f64 values are not all representable in f32.
    assert any(f32(x) != x for x in xs)


def test_seed_init_formulas():
    weights = make_data.initial_weights()
    assert weights["conv.weight"][1][0] == 0.4 * math.sin(1)
    assert weights["conv.bias"][1].tolist() == [0.02 * o - 0.03 for o in range(4)]
    assert weights["fc.weight"][0] == [3, 48]


def test_same_bytes_every_time(dataset):
    assert dataset.read_bytes() == make_data.dataset_bytes()


@pytest.mark.parametrize("cut", [1, 100, 7000])
def test_truncated_file_is_refused(dataset, cut):
    blob = dataset.read_bytes()
    with pytest.raises(FormatError, match="truncated|missing"):
        decode_dataset(blob[: len(blob) - cut], "cut.bin")


def test_foreign_file_is_refused():
    with pytest.raises(FormatError, match="bad magic"):
        decode_dataset(b"{}", "foreign.bin")


def test_each_model_has_its_dataset_file(tmp_path):
    out = tmp_path / "cnn_bn.bin"
    make_data.main(["--model", "cnn_bn", "--out", str(out)])
    arrays, _ = read_dataset(out)
    assert list(arrays)[:2] == ["x", "y"]
    assert list(arrays)[2:] == list(model_specs.CNN_BN.state_names)
    for name, (shape, values) in model_specs.CNN_BN.initial_arrays().items():
        assert arrays[name] == (shape, [f32(v) for v in values])
    with pytest.raises(SystemExit):
        make_data.main(["--model", "resnet", "--out", str(tmp_path / "x.bin")])


def test_only_x_and_y_are_required_of_a_dataset_file(dataset):
    arrays, _ = read_dataset(dataset)
    minimal = {"x": (arrays["x"][0], DTYPE_F32, arrays["x"][1]),
               "y": (arrays["y"][0], DTYPE_I64, arrays["y"][1])}  # fmt: skip
    assert list(decode_dataset(encode_dataset(minimal))) == ["x", "y"]
    with pytest.raises(FormatError, match=r"missing arrays \['y'\]"):
        decode_dataset(encode_dataset({"x": minimal["x"]}), "no-y.bin")
