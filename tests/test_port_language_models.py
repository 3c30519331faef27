"""transformers' GPT-2 and Llama from examples/ports, as its config runs them: each library's
model unchanged on the PyTorch side (built from its config class), its Burn port in its own
crate. Real transformers, real cargo builds, real Snakemake."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from port_projects import examples_run, verdicts

pytestmark = pytest.mark.pipeline

EXPERIMENTS = ("gpt2_adamw", "llama_adamw")


@pytest.fixture(scope="module")
def language_models(tmp_path_factory, burn_binary) -> Path:
    """A copy of the project with examples/ports, its language models' files written and
    their two experiments of examples/ports/config.yaml run."""
    make = ["examples/ports/make_language_model_files.py"]
    return examples_run(tmp_path_factory.mktemp("ports"), lambda k: k in EXPERIMENTS, make)


def settings(workdir: Path, experiment: str) -> dict[str, tuple[str, str, str]]:
    diff = pd.read_csv(workdir / f"results/tables/config_diff_{experiment}.csv", dtype=str)
    return {r.hyperparameter: (r.torch, r.burn, r.status) for r in diff.itertuples()}


def test_gpt2_trains_the_same_but_for_burns_f32_adam_factors(language_models):
    """Its tied head, Conv1D layout and packed qkv ported: every layer, run on PyTorch's
    input, within its f64 floor; the gap is AdamW's f32 factors."""
    found = verdicts(language_models)["gpt2_adamw"]
    assert found["verdict"] == "algorithmic difference, explained"
    assert [c["cause"] for c in found["causes"]] == [
        "Burn's f32 evaluation of its per-step Adam factors"
    ]
    layers = pd.read_csv(language_models / "results/tables/layers_gpt2_adamw.csv")
    recorded = layers[layers["phase"].isin(["forward", "backward"]) & layers["local_f64"].notna()]
    assert set(recorded["layer"]) == {
        "transformer.wte", "transformer.h.0", "transformer.h.1", "transformer.ln_f",
    }  # fmt: skip
    assert (recorded["local_f64"] <= recorded["floor"]).all()
    rows = settings(language_models, "gpt2_adamw")
    assert rows["transformer.h.1.mlp.act.approximate"] == ("tanh", "tanh", "same")  # gelu_new
    assert rows["transformer.h.0.ln_1.eps"][2] == "same"


def test_llamas_f32_intermediates_part_its_f64_runs_at_the_first_block(language_models):
    """Both frameworks compute parts of Llama in f32 inside an f64 run: transformers'
    LlamaRMSNorm normalises in f32 and its rotary embedding takes cos and sin in f32, Burn's
    RmsNorm takes the mean square in f32 (burn-nn norm/rms.rs line 82). Each rounds in its
    own way, so the f64 runs part at f32's size where the first block runs, which the
    verdict leaves unexplained and the local mode pins on `model.layers.0`."""
    found = verdicts(language_models)["llama_adamw"]
    assert found["verdict"] == "algorithmic difference, unexplained"
    assert found["entry"] == {
        "layer": "model.layers.0", "phase": "forward", "step": 1, "introduced": True,
    }  # fmt: skip
    layers = pd.read_csv(language_models / "results/tables/layers_llama_adamw.csv")
    first = layers[(layers["step"] == 1) & (layers["phase"] == "forward")].set_index("layer")
    assert first.loc["model.embed_tokens", "max_abs_diff_f64"] == 0.0
    assert 1e-9 < first.loc["model.layers.0", "local_f64"] < 1e-6  # f32's size, not f64's
    rows = settings(language_models, "llama_adamw")
    assert rows["model.layers.0.input_layernorm.eps"] == ("1e-06", "1e-06", "same")
    # gate_proj and up_proj are the two Linears of Burn's SwiGlu
    assert rows["model.layers.1.mlp.gate_proj.bias"] == ("false", "false", "same")
