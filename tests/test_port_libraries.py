"""A library's model as a port's PyTorch side, unchanged (models/port_torch.py): built from
its config class (`torch.config`), its output object's logits taken, one row per position,
a tied parameter named once, and a library's own GELU module read and given Burn's form.
Real transformers, a tiny GPT-2 (the examples' full-size ports run in test_port_examples.py).
"""

from __future__ import annotations

import os

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from torch_burn_parity.analysis import layer_settings
from torch_burn_parity.config.check_config import SCHEMA, config_problems, load_schema
from torch_burn_parity.models import models, port
from torch_burn_parity.models.model_specs import ModelError
from torch_burn_parity.models.port_torch import layer_settings as settings_of

transformers = pytest.importorskip("transformers")

KWARGS = {"vocab_size": 12, "n_positions": 8, "n_embd": 16, "n_layer": 2, "n_head": 2,
          "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "use_cache": False,
          "bos_token_id": None, "eos_token_id": None}  # fmt: skip


@pytest.fixture(autouse=True)
def own_register(monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    monkeypatch.delenv(port.ENV, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))


def reference() -> nn.Module:
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**KWARGS))


def experiment(tmp_path, weights: dict | None = None, **torch_side) -> dict:
    """A tiny GPT-2 port's experiment, its weights (named_parameters) and data written."""
    model = reference()
    if weights is None:
        weights = {n: p.detach().contiguous() for n, p in model.named_parameters()}
    save_file(weights, tmp_path / "w.safetensors")
    ids = torch.randint(0, 12, (8, 9), generator=torch.Generator().manual_seed(1))
    save_file(
        {"x": ids[:, :8].contiguous(), "y": ids[:, 1:].contiguous()}, tmp_path / "d.safetensors"
    )
    side = {"module": "transformers:GPT2LMHeadModel", "config": "transformers:GPT2Config",
            "kwargs": dict(KWARGS)} | torch_side  # fmt: skip
    return {
        "optimizer": "sgd", "lr": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
        "nesterov": False,
        "model": {"name": "tiny_gpt2", "torch": side,
                  "burn": {"crate": "examples/ports/gpt2/burn", "bin": "gpt2-parity"},
                  "init": str(tmp_path / "w.safetensors"), "data": str(tmp_path / "d.safetensors"),
                  "layers": ["transformer.wte", "transformer.h.*", "transformer.ln_f"]},
    }  # fmt: skip


def built(exp: dict, dtype=torch.float64) -> tuple[nn.Module, dict]:
    from torch_burn_parity.io.parity_io import decode_dataset
    from torch_burn_parity.training.make_data import dataset_bytes

    port.register_ports({"e": exp})
    arrays = decode_dataset(dataset_bytes("tiny_gpt2"))
    return models.build("tiny_gpt2", arrays, dtype), arrays


def test_a_model_built_from_its_config_class_gives_a_row_of_logits_per_position(tmp_path):
    model, arrays = built(experiment(tmp_path))
    assert type(model).__name__ == "GPT2LMHeadModel" and model.config.n_layer == 2
    x, y = models.inputs(arrays, torch.float64)
    out = model(x[:4])
    own = reference().to(torch.float64)
    with torch.no_grad():
        logits = own(x[:4]).logits  # the library's own output object, [4, 8, 12]
    assert out.shape == (4 * 8, 12) and torch.equal(out.detach(), logits.reshape(32, 12))
    # the loss over every position, the labels flattened in the same order
    assert models.loss(out, y[:4]).item() == pytest.approx(
        nn.functional.cross_entropy(logits.reshape(32, 12), y[:4].reshape(-1)).item(), rel=1e-12
    )


def test_a_misspelt_setting_of_the_config_class_is_refused(tmp_path):
    exp = experiment(tmp_path)
    exp["model"]["torch"]["kwargs"]["n_layers"] = exp["model"]["torch"]["kwargs"].pop("n_layer")
    with pytest.raises(ModelError, match=r"^torch.kwargs.n_layers: not a setting of"
                       r" transformers:GPT2Config; did you mean 'n_layer'\?$"):  # fmt: skip
        built(exp)


def test_a_config_that_is_not_an_import_path_is_refused_before_any_job(tmp_path):
    exp = experiment(tmp_path, config="transformers.GPT2Config")
    config = {"steps": 2, "batch_size": 4, "experiments": {"e": exp}}
    found = [str(p) for p in config_problems(config, load_schema(SCHEMA))]
    assert found == ["experiments.e.model.torch.config: 'transformers.GPT2Config': not an import"
                     " path and a config class, e.g. 'transformers:GPT2Config'"]  # fmt: skip


def test_a_tied_parameter_written_twice_is_refused_naming_both_names(tmp_path):
    model = reference()
    weights = {n: p.detach().clone() for n, p in model.state_dict().items()}  # lm_head too
    why = r"holds 'lm_head.weight', which transformers:GPT2LMHeadModel ties to 'transformer.wte"
    with pytest.raises(ModelError, match=why):
        built(experiment(tmp_path, weights=weights))


def test_a_libraries_own_gelu_is_read_and_given_burns_form(tmp_path):
    model, arrays = built(experiment(tmp_path))
    settings = settings_of(model)
    assert settings["transformer.h.0.mlp.act.approximate"] == "tanh"  # GPT-2's gelu_new
    assert settings["transformer.h.0.attn.c_attn.bias"] is True  # a Conv1D, read as a Linear
    x, _ = models.inputs(arrays, torch.float64)
    before = model(x[:2]).detach()
    layer_settings.apply(model, {"transformer.h.1.mlp.act.approximate": "none"})
    act = model.transformer.h[1].mlp.act
    assert isinstance(act, nn.GELU) and act.approximate == "none"
    assert settings_of(model)["transformer.h.0.mlp.act.approximate"] == "tanh"
    assert not torch.equal(model(x[:2]).detach(), before)


def test_an_output_without_logits_is_refused_in_one_line(tmp_path, monkeypatch):
    exp = experiment(tmp_path)
    monkeypatch.setattr(transformers.GPT2LMHeadModel, "forward", lambda self, x: {"no": x})
    with pytest.raises(ModelError, match=r"^GPT2LMHeadModel's output is a dict, with no logits"):
        built(exp)
