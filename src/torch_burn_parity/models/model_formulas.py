"""The models' initial values: f64 formulas of each array's flat index, at any size.

Every value is a short formula of the flat index i (sines and cosines at a phase or frequency
of their own, so that no two rows start alike), computed in f64 and rounded to f32 once, when
make_data.py packs the dataset file. Arrays are numpy f64, built without a Python loop per
element, so a 10^6-parameter model's initial values take a fraction of a second.

sin and cos are the C library's (math.sin mapped over the indices), not numpy's: numpy
dispatches f64 sin/cos to SIMD code that differs by CPU (AVX-512 takes SVML's), and the
dataset file must be the same bytes on every machine. The arithmetic around them is numpy's
elementwise f64, each operation rounded as Python's float operations are, in the same order
as the formulas read (so the default sizes give exactly the values they always had).
"""

from __future__ import annotations

import math

import numpy as np


def _libm(f, x: np.ndarray) -> np.ndarray:
    """f (math.sin or math.cos) of every element of x, as the C library computes it."""
    return np.fromiter(map(f, x.tolist()), dtype=np.float64, count=x.size)


def sin(x: np.ndarray) -> np.ndarray:
    return _libm(math.sin, x)


def cos(x: np.ndarray) -> np.ndarray:
    return _libm(math.cos, x)


def index(shape: list[int]) -> np.ndarray:
    """The flat indices 0, 1, … of an array of ``shape``, as f64 (exact below 2^53)."""
    return np.arange(math.prod(shape), dtype=np.float64)


def constant(shape: list[int], value: float) -> np.ndarray:
    return np.full(math.prod(shape), value, dtype=np.float64)


def cnn1d(shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """The seed's deterministic init, in PyTorch's names and layouts ([out, in, k], [out, in])."""
    return {
        "conv.weight": 0.4 * sin(index(shapes["conv.weight"]) + 1),
        "conv.bias": 0.02 * index(shapes["conv.bias"]) - 0.03,
        "fc.weight": 0.15 * cos(index(shapes["fc.weight"]) + 1),
        "fc.bias": constant(shapes["fc.bias"], 0.0),
    }


def cnn_bn(shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """cnn1d's conv weight and fc values (the conv has no bias); affine norms near 1
    (weights) and 0 (biases), each its own formula so that no two channels start alike;
    running stats as PyTorch and Burn start."""
    return {
        "conv.weight": 0.4 * sin(index(shapes["conv.weight"]) + 1),
        "fc.weight": 0.15 * cos(index(shapes["fc.weight"]) + 1),
        "fc.bias": constant(shapes["fc.bias"], 0.0),
        "bn.weight": 1 + 0.1 * sin(index(shapes["bn.weight"]) + 1),
        "bn.bias": 0.05 * cos(index(shapes["bn.bias"]) + 1),
        "ln.weight": 1 + 0.05 * cos(index(shapes["ln.weight"]) + 1),
        "ln.bias": 0.02 * sin(index(shapes["ln.bias"]) + 1),
        "bn.running_mean": constant(shapes["bn.running_mean"], 0.0),
        "bn.running_var": constant(shapes["bn.running_var"], 1.0),
    }


def near_constant(shape: list[int], base: float, scale: float, f, phase: float) -> np.ndarray:
    """base + scale·f(i + phase): a norm's weights near 1, biases near 0 (base 0: no add)."""
    values = scale * f(index(shape) + phase)
    return values if base == 0 else base + values


# Each encoder layer after the first shifts every phase by this much, so that no two layers
# start alike (the first layer's values are the one-layer model's).
LAYER_PHASE = 7.0


def transformer(shapes: dict[str, list[int]], prefixes: list[str]) -> dict[str, np.ndarray]:
    """Small sines and cosines of the flat index, scaled by 1/sqrt(fan_in), a different phase
    or frequency per array so that no two rows (the query, key and value blocks of the packed
    in_proj_weight included) start alike; norms near 1 (weights) and 0 (biases)."""

    def weight(name: str, scale: float, f, phase: float) -> np.ndarray:
        shape = shapes[name]
        return scale * f(index(shape) + phase) / math.sqrt(shape[1])

    def near(name: str, base: float, scale: float, f, phase: float) -> np.ndarray:
        return near_constant(shapes[name], base, scale, f, phase)

    values = {
        "embed.weight": 0.8 * sin(index(shapes["embed.weight"]) + 1),
        "embed.bias": 0.1 * cos(index(shapes["embed.bias"]) + 1),
    }
    for layer, p in enumerate(prefixes):
        s = LAYER_PHASE * layer  # 0 for the first layer: its phases are the one-layer model's
        own = {
            "self_attn.in_proj_weight": (weight, 0.9, sin, 1),
            "self_attn.in_proj_bias": (near, 0.0, 0.05, cos, 1),
            "self_attn.out_proj.weight": (weight, 0.6, cos, 2),
            "self_attn.out_proj.bias": (near, 0.0, 0.02, sin, 2),
            "linear1.weight": (weight, 0.9, sin, 3),
            "linear2.weight": (weight, 0.6, cos, 3),
            "linear2.bias": (near, 0.0, 0.02, cos, 3),
            "norm1.weight": (near, 1.0, 0.05, cos, 1),
            "norm1.bias": (near, 0.0, 0.02, sin, 1),
            "norm2.weight": (near, 1.0, 0.05, sin, 1),
            "norm2.bias": (near, 0.0, 0.02, cos, 1),
        }
        for suffix, (make, *args, phase) in own.items():
            values[f"{p}.{suffix}"] = make(f"{p}.{suffix}", *args, phase + s)
        bias = f"{p}.linear1.bias"
        values[bias] = 0.05 * sin(0.5 * index(shapes[bias]) + (1 + s))
    values |= {
        "fc.weight": weight("fc.weight", 1.2, cos, 1),
        "fc.bias": constant(shapes["fc.bias"], 0.0),
    }
    return values


def _fan_in_weight(shape: list[int], scale: float, f, phase: float) -> np.ndarray:
    """scale·f(i + phase)/sqrt(fan_in), fan_in = the product of the shape after its first
    dimension (a Linear's inputs, a convolution's input channels × kernel)."""
    return scale * f(index(shape) + phase) / math.sqrt(math.prod(shape[1:]))


def lenet(shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Sines and cosines scaled by 1/sqrt(fan_in), a phase per array; small biases."""
    return {
        "conv1.weight": _fan_in_weight(shapes["conv1.weight"], 1.5, sin, 1),
        "conv1.bias": 0.05 * cos(index(shapes["conv1.bias"]) + 1),
        "conv2.weight": _fan_in_weight(shapes["conv2.weight"], 1.5, cos, 2),
        "conv2.bias": 0.05 * sin(index(shapes["conv2.bias"]) + 2),
        "fc1.weight": _fan_in_weight(shapes["fc1.weight"], 1.5, sin, 3),
        "fc1.bias": 0.05 * cos(index(shapes["fc1.bias"]) + 3),
        "fc2.weight": _fan_in_weight(shapes["fc2.weight"], 1.0, cos, 4),
        "fc2.bias": constant(shapes["fc2.bias"], 0.0),
    }


def gpt(shapes: dict[str, list[int]], prefixes: list[str]) -> dict[str, np.ndarray]:
    """Embeddings of ±0.5; the blocks' weights as the transformer's (1/sqrt(fan_in), a phase
    per array, shifted by LAYER_PHASE per block); norms near 1 (weights) and 0 (biases)."""

    def near(name: str, base: float, scale: float, f, phase: float) -> np.ndarray:
        return near_constant(shapes[name], base, scale, f, phase)

    values = {
        "tok_emb.weight": 0.5 * sin(0.7 * index(shapes["tok_emb.weight"]) + 1),
        "pos_emb.weight": 0.2 * cos(0.3 * index(shapes["pos_emb.weight"]) + 1),
    }
    for block, p in enumerate(prefixes):
        s = LAYER_PHASE * block
        own = {
            "ln1.weight": (near, 1.0, 0.05, cos, 1),
            "ln1.bias": (near, 0.0, 0.02, sin, 1),
            "attn.in_proj_weight": (None, 0.9, sin, 1),
            "attn.in_proj_bias": (near, 0.0, 0.05, cos, 1),
            "attn.out_proj.weight": (None, 0.6, cos, 2),
            "attn.out_proj.bias": (near, 0.0, 0.02, sin, 2),
            "ln2.weight": (near, 1.0, 0.05, sin, 1),
            "ln2.bias": (near, 0.0, 0.02, cos, 1),
            "fc1.weight": (None, 0.9, sin, 3),
            "fc1.bias": (near, 0.0, 0.05, sin, 3),
            "fc2.weight": (None, 0.6, cos, 3),
            "fc2.bias": (near, 0.0, 0.02, cos, 3),
        }
        for suffix, (make, *args, phase) in own.items():
            name = f"{p}.{suffix}"
            if make is None:  # a weight matrix
                values[name] = _fan_in_weight(shapes[name], *args, phase + s)
            else:
                values[name] = make(name, *args, phase + s)
    values |= {
        "ln_f.weight": near("ln_f.weight", 1.0, 0.05, cos, 2),
        "ln_f.bias": near("ln_f.bias", 0.0, 0.02, sin, 2),
        "head.weight": _fan_in_weight(shapes["head.weight"], 1.2, cos, 1),
        "head.bias": constant(shapes["head.bias"], 0.0),
    }
    return values
