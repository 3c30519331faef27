"""The datasets an experiment trains on (`data:`): what each gives, byte for byte where it
must be, and which model takes which."""

from __future__ import annotations

import numpy as np
import pytest

from torch_burn_parity.datasets import digits, registry, sine, text
from torch_burn_parity.datasets.registry import (
    DataError,
    data_of,
    dataset,
    dataset_stem,
    default_data,
    fit_problem,
    parse_stem,
)
from torch_burn_parity.io.parity_io import decode_dataset
from torch_burn_parity.models.model_specs import SPECS, spec
from torch_burn_parity.training import make_data


def test_digits_are_scikit_learns_images_scaled_exactly_by_a_sixteenth():
    from sklearn.datasets import load_digits

    xs, ys = digits.arrays()
    pixels = np.asarray(xs).reshape(digits.SAMPLES, 8, 8)
    assert np.array_equal(pixels * 16, load_digits().images)  # no rounding: x·16 is exact
    assert np.array_equal(np.float32(pixels), pixels)  # every value an exact f32
    assert ys == list(load_digits().target)
    arrays = decode_dataset(make_data.dataset_bytes("lenet"), "lenet")
    assert arrays["x"][0] == [1797, 1, 8, 8] and arrays["y"][0] == [1797]
    assert arrays["x"][1] == xs  # f32 in the file, the same values


def test_the_text_is_the_corpus_in_blocks_each_labelled_with_the_next_characters():
    corpus, vocabulary = text.corpus(), text.vocabulary()
    assert len(corpus) >= 100_000 and len(vocabulary) == 84
    assert corpus.startswith(" " * 12 + "The Internet Wiretap 1st Online Edition of")
    assert "A Public Domain Text, Copyright Expired" in corpus
    xs, ys = text.arrays(32)
    n = text.samples(32)
    assert n == (len(corpus) - 1) // 32 and len(xs) == len(ys) == n * 32
    assert "".join(vocabulary[i] for i in xs[:64]) == corpus[:64]
    assert ys[:-1] == xs[1:]  # y is x one character on
    arrays = decode_dataset(make_data.dataset_bytes("gpt"), "gpt")
    assert arrays["x"][0] == arrays["y"][0] == [n, 32]
    assert arrays["x"][1] == xs and all(isinstance(v, int) for v in arrays["x"][1][:5])


def test_sine_is_the_seeds_problem():
    xs, ys = sine.arrays()
    assert len(xs) == 96 * 16 and ys[:4] == [0, 1, 2, 0]
    assert dataset("sine").x_shape == [96, 1, 16]


@pytest.mark.parametrize(
    ("model", "data"),
    [("cnn1d", "sine"), ("cnn_bn", "sine"), ("transformer", "sine"), ("lenet", "digits"),
     ("gpt", "text")],
)  # fmt: skip
def test_each_model_takes_exactly_its_data(model, data):
    model_spec = SPECS[model]
    assert default_data(model_spec) == data
    assert fit_problem(data, model_spec) is None
    others = [d for d in registry.DATA_NAMES if d != data]
    assert all(fit_problem(d, model_spec) for d in others)


def test_a_model_that_does_not_take_the_data_is_refused_naming_both():
    assert fit_problem("digits", SPECS["gpt"]) == (
        "model gpt takes token ids, blocks of 32 over 84 characters; data digits gives 8×8"
        " images in 10 classes"
    )
    assert fit_problem("text", SPECS["cnn1d"]) == (
        "model cnn1d takes 16 sequences in 3 classes; data text gives token ids (a model with"
        " a context, e.g. gpt)"
    )
    long = spec("gpt", {"context": len(text.corpus())})
    assert "is longer than the text" in fit_problem("text", long)
    with pytest.raises(DataError, match="unknown data 'mnist'"):
        dataset("mnist")
    with pytest.raises(DataError, match="model gpt takes token ids"):
        make_data.dataset_bytes(SPECS["gpt"], "digits")


def test_a_dataset_file_is_named_by_the_models_tag_on_its_own_data():
    assert dataset_stem("sine", SPECS["cnn1d"]) == "cnn1d"
    assert dataset_stem("digits", SPECS["lenet"]) == "lenet"
    wide = spec("gpt", {"context": 64})
    assert (
        dataset_stem("text", wide)
        == wide.tag
        == "gpt-d_model32-heads2-layers2-d_ff128-context64-vocab84"
    )
    assert dataset_stem("sine", SPECS["lenet"]) == "sine-lenet"  # another dataset: named
    for stem in ("cnn1d", "lenet", wide.tag, "sine-lenet"):
        data, model = parse_stem(stem)
        assert dataset_stem(data, model) == stem
    assert data_of("text", wide).sample == (64,)
