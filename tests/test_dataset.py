"""The shared dataset file: a safetensors file, exact f32 rounding, bit-exact round trip,
the same bytes every time, clear errors."""

from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np
import pytest
import safetensors
import safetensors.numpy

from torch_burn_parity.datasets import sine
from torch_burn_parity.io.parity_io import (
    DATASET_FORMAT,
    FormatError,
    decode_dataset,
    encode_dataset,
    read_dataset,
)
from torch_burn_parity.models import model_specs
from torch_burn_parity.training import make_data

# sha256 of each array's values (little-endian f32; y's i64) in the default models' dataset
# files, computed from the files make_data.py wrote in its former format (PARITYDS, before
# the files became safetensors): a regression guard that the seed's inputs and initial
# weights have not moved by one bit. That cnn1d file was byte for byte the seed pipeline's
# dataset.bin (sha256 1327c659…, the old code's at commit dbf0dff).
VALUES_SHA256 = {
    "cnn1d": {
        "x": "d8948ccfc6dcee0396822051108f60090032b362f940144960d71b812b4f1cf4",
        "y": "2a3cd8f7f7b55389ad2e2cbb1a4d5b865b765578f7b2d89b39f1377d073b24b7",
        "conv.weight": "260939e04350f1228bd010ccf47e97ad98f4f91cfc8ccfb3ad8b0eb5395add93",
        "conv.bias": "83b01fa87fba717dc4750e91ab0499a8d4c2074efaced6f22354cf59a5ecd8bf",
        "fc.weight": "a78d2746bf0015ec4cb58c37e1e6a1c200efc506493a08f6af34d80f2356d7ee",
        "fc.bias": "15ec7bf0b50732b49f8228e07d24365338f9e3ab994b00af08e5a3bffe55fd8b",
    },
    "cnn_bn": {
        "x": "d8948ccfc6dcee0396822051108f60090032b362f940144960d71b812b4f1cf4",
        "y": "2a3cd8f7f7b55389ad2e2cbb1a4d5b865b765578f7b2d89b39f1377d073b24b7",
        "conv.weight": "260939e04350f1228bd010ccf47e97ad98f4f91cfc8ccfb3ad8b0eb5395add93",
        "bn.weight": "902f9ba0a844ad384e34262b0a8c469062f109d357219253a54e1c5a07b9fe3b",
        "bn.bias": "7253d060722227bbbdceb037a8bdef09e4dda51761e9dbcb7bf0406f7d113049",
        "ln.weight": "a8d962965fcac72c9fdb9d7f716df5bfc3b827a2b212829c890ab7ffa4f86c28",
        "ln.bias": "22e0dc8e89cc35f650ff07d121dda652355e8c152d10d7b68e0b33ed1d76f283",
        "fc.weight": "a78d2746bf0015ec4cb58c37e1e6a1c200efc506493a08f6af34d80f2356d7ee",
        "fc.bias": "15ec7bf0b50732b49f8228e07d24365338f9e3ab994b00af08e5a3bffe55fd8b",
        "bn.running_mean": "374708fff7719dd5979ec875d56cd2286f6d3cf7ec317a3b25632aab28ec37bb",
        "bn.running_var": "f6bb1294da2f78cd935b01c7656280df5eaa0439e9d97bc03775825a41a508e4",
    },
    "transformer": {
        "x": "d8948ccfc6dcee0396822051108f60090032b362f940144960d71b812b4f1cf4",
        "y": "2a3cd8f7f7b55389ad2e2cbb1a4d5b865b765578f7b2d89b39f1377d073b24b7",
        "embed.weight": "69ebdd4022b7451b0c4d901466d264f8dd93cab2fd53d34408cf518053f4b015",
        "embed.bias": "c2f2b6e05d29690f65806156bd24f8a576f50d1dd6b41dc81941f7ea7fa39860",
        "enc.self_attn.in_proj_weight": (
            "9ffea3f1e5bac0166218bea63f38491b95fb44b2ccba3e17394b29a57b62ff07"
        ),
        "enc.self_attn.in_proj_bias": (
            "5c6ff49dbbc049658d244ffb02dde90367fff66f80d30e9f371f526a0e770a5c"
        ),
        "enc.self_attn.out_proj.weight": (
            "da51594c676eaaf0099c1eef5215a6b9aa65f3b51d4a108bb5249f3e6ef18699"
        ),
        "enc.self_attn.out_proj.bias": (
            "9e979901be4da8cdd79b058ee66d5fbc138feeb4c54f1c8ad45dd82d486ded74"
        ),
        "enc.linear1.weight": "6e016bc9393501608aa9be3b4f340d357026f48f1e03f283d574543fe319ff31",
        "enc.linear1.bias": "314a7f20f958cb1cea9ddf65ce870f9db271fdb52295f2c132416da39193bd53",
        "enc.linear2.weight": "f983a38c6cd954c1c2a0dd1ecec1670b60b21172dbbeab8dc90bb2b7f72de7eb",
        "enc.linear2.bias": "7ae5200355c366dc44b0709b9e6db7451c1d9fc32b78d543634a3c5fe188c896",
        "enc.norm1.weight": "880ef6ecfb6ecac144c51c75c113e40341e0951d0067b5cf387c11d413a89a47",
        "enc.norm1.bias": "0bc11256a393c13ec96fe7ef89384df44239972c6ae1fb5e6b4e68196631b381",
        "enc.norm2.weight": "3e6b5250498145009f4d40379f5351be8d2ff412af833b3e2d4d2f0311527cae",
        "enc.norm2.bias": "48cee2651fcb05341929baec8cf2057ecb15450d1ae3ab9d521b333367c25218",
        "fc.weight": "c3b21784007eef02de45f1df7e1f76d33f25946efc2743196aac271b06cef575",
        "fc.bias": "15ec7bf0b50732b49f8228e07d24365338f9e3ab994b00af08e5a3bffe55fd8b",
    },
}


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def values_sha256(name: str, values: list) -> str:
    return hashlib.sha256(np.asarray(values, dtype="<i8" if name == "y" else "<f4")).hexdigest()


def header(blob: bytes) -> dict:
    return json.loads(blob[8 : 8 + int.from_bytes(blob[:8], "little")])


def test_round_trip_is_bit_exact(dataset):
    arrays, _ = read_dataset(dataset)
    xs, ys = sine.arrays()
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


@pytest.mark.parametrize("model", list(VALUES_SHA256))
def test_the_default_models_values_are_the_old_ones(model):
    arrays = decode_dataset(make_data.dataset_bytes(model), model)
    assert list(arrays) == list(VALUES_SHA256[model])  # x, y, then the model's order
    assert {n: values_sha256(n, v) for n, (_, v) in arrays.items()} == VALUES_SHA256[model]
    assert make_data.dataset_bytes() == make_data.dataset_bytes("cnn1d")  # the default


def test_same_bytes_every_time(dataset):
    """The fixture's file was written by another process: safetensors writes the metadata's
    keys in a random order, which make_data sorts."""
    assert dataset.read_bytes() == make_data.dataset_bytes()


def test_the_file_is_safetensors_with_the_models_tag(tmp_path):
    tag = "transformer-d_model16-heads2-layers2-d_ff32"
    path = tmp_path / f"{tag}.safetensors"
    make_data.main(["--model", tag, "--out", str(path)])
    spec = model_specs.parse_tag(tag)
    with safetensors.safe_open(path, framework="numpy") as f:
        assert f.metadata() == {"format": DATASET_FORMAT, "model": tag}
        assert sorted(f.keys()) == sorted(["x", "y", *spec.state_names])
        assert f.get_tensor("x").dtype == np.float32 and f.get_tensor("x").shape == (96, 1, 16)
        assert f.get_tensor("y").dtype == np.int64 and f.get_tensor("y").shape == (96,)
        for name, shape in spec.shapes().items():
            tensor = f.get_tensor(name)
            assert (tensor.dtype, list(tensor.shape)) == (np.float32, shape), name
    blob = path.read_bytes()
    assert list(header(blob))[0] == "__metadata__"
    assert '"__metadata__":{"format":' in blob[8:200].decode()  # its keys sorted


@pytest.mark.parametrize("cut", [1, 100, 7000])
def test_truncated_file_is_refused(dataset, cut):
    blob = dataset.read_bytes()
    with pytest.raises(FormatError, match="truncated") as err:
        decode_dataset(blob[: len(blob) - cut], "cut.safetensors")
    assert str(err.value).startswith("cut.safetensors: ") and "\n" not in str(err.value)


@pytest.mark.parametrize("blob", [b"{}", b"PARITYDS" + bytes(8), b"\x89PNG\r\n\x1a\n" + bytes(64)])
def test_foreign_file_is_refused(blob):
    with pytest.raises(FormatError, match="foreign.bin: not a safetensors file") as err:
        decode_dataset(blob, "foreign.bin")
    assert "\n" not in str(err.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(FormatError, match="absent.safetensors: dataset file not found"):
        read_dataset(tmp_path / "absent.safetensors")


def test_each_model_has_its_dataset_file(tmp_path):
    out = tmp_path / "cnn_bn.safetensors"
    make_data.main(["--model", "cnn_bn", "--out", str(out)])
    arrays, sha256 = read_dataset(out)
    assert sha256 == hashlib.sha256(out.read_bytes()).hexdigest()
    assert list(arrays)[:2] == ["x", "y"]
    assert list(arrays)[2:] == list(model_specs.CNN_BN.state_names)
    for name, (shape, values) in model_specs.CNN_BN.initial_arrays().items():
        assert arrays[name] == (shape, [f32(v) for v in values])
    with pytest.raises(SystemExit):
        make_data.main(["--model", "resnet", "--out", str(tmp_path / "x.safetensors")])


def test_a_safetensors_file_without_x_and_y_is_refused():
    empty = b"\x02" + bytes(7) + b"{}"  # a safetensors file with no tensor
    with pytest.raises(FormatError, match=r"^e.safetensors: missing arrays \['x', 'y'\]$"):
        decode_dataset(empty, "e.safetensors")


def test_only_x_and_y_are_required_of_a_dataset_file(dataset):
    arrays, _ = read_dataset(dataset)
    minimal = {"x": arrays["x"], "y": arrays["y"]}
    assert decode_dataset(encode_dataset(minimal, "cnn1d")) == minimal
    with pytest.raises(FormatError, match=r"no-y.safetensors: missing arrays \['y'\]"):
        decode_dataset(encode_dataset({"x": minimal["x"]}, "cnn1d"), "no-y.safetensors")


def test_an_array_of_another_dtype_is_refused(dataset):
    arrays = {
        n: np.asarray(v, dtype=np.int64 if n == "y" else np.float32).reshape(s)
        for n, (s, v) in read_dataset(dataset)[0].items()
    }
    assert decode_dataset(safetensors.numpy.save(arrays)).keys() == arrays.keys()
    for name, dtype, found, want in [
        ("x", np.float64, "F64", "F32"),
        ("y", np.int32, "I32", "I64"),
        ("fc.weight", np.float16, "F16", "F32"),
        ("conv.bias", np.int64, "I64", "F32"),
    ]:
        blob = safetensors.numpy.save(arrays | {name: arrays[name].astype(dtype)})
        with pytest.raises(FormatError) as err:
            decode_dataset(blob, "d.safetensors")
        assert str(err.value) == f"d.safetensors: array '{name}' is {found}, expected {want}"


def test_arrays_come_back_in_the_models_order_else_the_files():
    arrays = decode_dataset(make_data.dataset_bytes("cnn_bn"))
    # Without a model's tag in the metadata: x, y, then the file's order (by dtype, name).
    untagged = decode_dataset(encode_dataset(arrays, "no_such_model"))
    assert untagged == arrays
    assert list(untagged) == ["x", "y", *sorted(model_specs.CNN_BN.state_names)]
    assert list(decode_dataset(encode_dataset(untagged, "cnn_bn"))) == list(arrays)
    with pytest.raises(ValueError, match=r"fc.bias: shape \[4\] does not hold 3 values"):
        encode_dataset(arrays | {"fc.bias": ([4], [0.0] * 3)}, "cnn_bn")
