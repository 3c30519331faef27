"""The shared dataset file: exact f32 rounding, bit-exact round trip, clear errors."""

from __future__ import annotations

import math
import struct

import pytest

import make_data
from parity_io import FormatError, decode_dataset, read_dataset


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
    assert weights["conv.bias"][1] == [0.02 * o - 0.03 for o in range(4)]
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
