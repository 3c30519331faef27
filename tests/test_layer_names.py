"""Layers at any depth (models/layer_names.py, models/port_torch.py): dotted names and
globs matched segment by segment, expanded in the module's order, recorded by PyTorch's
hooks in the order they run; a name or glob that matches nothing is refused with the
nearest names, a layer whose input or output the hooks cannot see is named with why."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import save_file

from torch_burn_parity.models import layer_names, port
from torch_burn_parity.models.model_specs import ModelError, spec
from torch_burn_parity.models.port_torch import hooked_forward, new

NESTED = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(self.norm(x))


class Attention(nn.Module):
    """Returns a tuple, as transformers' attention modules do."""

    def forward(self, x):
        return x * 2, None


class Bias(nn.Module):
    """Called without arguments: a forward pre-hook sees no input."""

    def __init__(self, width):
        super().__init__()
        self.b = nn.Parameter(torch.zeros(width))

    def forward(self):
        return self.b


class Nested(nn.Module):
    def __init__(self, width=4, keyword_only=False):
        super().__init__()
        # registered in another order than the forward calls them
        self.head = nn.Linear(width, 3)
        self.blocks = nn.ModuleList([Block(width) for _ in range(2)])
        self.attn = Attention()
        self.bias = Bias(width)
        self.keyword_only = keyword_only

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        x = (self.attn(x=x) if self.keyword_only else self.attn(x))[0]
        return self.head(x + self.bias())
'''

NAMES = ["head", "blocks", "blocks.0", "blocks.0.norm", "blocks.0.fc", "blocks.1",
         "blocks.1.norm", "blocks.1.fc", "attn", "bias"]  # fmt: skip


@pytest.fixture
def nested(tmp_path, monkeypatch):
    """Register the port `nested` with these layers (and kwargs); its module built."""
    (tmp_path / "layer_names_net.py").write_text(NESTED)
    monkeypatch.delenv(port.ENV, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.syspath_prepend(str(tmp_path))

    from layer_names_net import Nested

    save_file(Nested().state_dict(), tmp_path / "weights.safetensors")
    save_arrays({"x": np.zeros((8, 4), np.float32), "y": np.zeros(8, np.int64)},
                tmp_path / "data.safetensors")  # fmt: skip

    def build(layers: list[str], **kwargs) -> torch.nn.Module:
        port.register([port.Port(name="nested", module="layer_names_net:Nested", path=None,
                                 kwargs=kwargs, crate="unused", bin="unused",
                                 init=str(tmp_path / "weights.safetensors"),
                                 data=str(tmp_path / "data.safetensors"),
                                 layers=tuple(layers))])  # fmt: skip
        return new(spec("nested"))

    yield build
    sys.modules.pop("layer_names_net", None)  # a later test's module of that name is its own


def test_globs_match_segment_by_segment():
    assert layer_names.matches("transformer.h.3", "transformer.h.*")
    assert not layer_names.matches("transformer.h.3.mlp", "transformer.h.*")
    assert layer_names.matches("layer1.0.bn1", "layer*.*.bn?")
    assert not layer_names.matches("layer1.0.bn12", "layer*.*.bn?")
    assert layer_names.matches("layer2.0.bn2", "layer[12].0.bn[0-9]")
    assert not layer_names.matches("layer3.0.bn2", "layer[12].0.bn[0-9]")
    assert layer_names.matches("fc", "fc") and not layer_names.matches("fc1", "fc")


def test_patterns_expand_in_the_modules_order_each_name_once():
    assert layer_names.expand(["blocks.*.fc", "head"], NAMES) == (
        ["blocks.0.fc", "blocks.1.fc", "head"], None)  # fmt: skip
    assert layer_names.expand(["blocks.?", "blocks.0"], NAMES) == (["blocks.0", "blocks.1"], None)
    assert layer_names.expand(["head", "blocks.*.mlp"], NAMES) == (["head"], "blocks.*.mlp")
    # the names at the pattern's place, closest first
    assert layer_names.nearest("blocks.0.fcc", NAMES)[0] == "blocks.0.fc"
    assert set(layer_names.nearest("blocks.*.mlp", NAMES)) <= {
        "blocks.0.norm",
        "blocks.0.fc",
        "blocks.1.norm",
        "blocks.1.fc",
    }
    assert layer_names.nearest("haed", NAMES)[0] == "head"
    assert layer_names.syntax_problem("blocks..fc").startswith("'blocks..fc': an empty name")
    assert "unclosed" in layer_names.syntax_problem("layer[12.fc")
    assert layer_names.syntax_problem("layer[12].*.bn?") is None


def test_a_nested_port_records_its_layers_by_dotted_name_in_the_order_they_run(nested):
    model = nested(["blocks.*.fc", "attn", "head"])
    assert model.parity_layers == ("blocks.0.fc", "blocks.1.fc", "attn", "head")
    x = torch.randn(5, 4)
    with torch.no_grad():
        out, names, outputs, inputs = hooked_forward(model, x)
    assert names == ["blocks.0.fc", "blocks.1.fc", "attn", "head"]
    assert torch.equal(outputs[2], inputs[3]) and torch.equal(outputs[-1], out)
    # registered head first, called last: the record follows the calls
    assert nested(["head", "blocks.0"]).parity_layers == ("head", "blocks.0")
    with torch.no_grad():
        assert hooked_forward(nested(["head", "blocks.0"]), x)[1] == ["blocks.0", "head"]


def test_a_name_or_glob_that_matches_nothing_is_refused_with_the_nearest_names(nested):
    inside = r"blocks\.[01]\.(norm|fc)"
    with pytest.raises(ModelError, match=r"^layers: the glob 'blocks\.\*\.mlp' matches no"
                       r" submodule of layer_names_net:Nested at any depth \(nearest: "
                       f"{inside}, {inside}, {inside}\\)$"):  # fmt: skip
        nested(["blocks.*.mlp"])
    with pytest.raises(ModelError, match=r"^layers: the name 'blocks\.2' matches no submodule.*"
                       r"\(nearest: blocks\.[01], blocks\.[01]\)$"):  # fmt: skip
        nested(["blocks.2"])


def test_a_layer_called_with_keywords_only_is_seen_and_one_without_a_tensor_is_named(nested):
    model = nested(["attn"], keyword_only=True)
    with torch.no_grad():
        assert hooked_forward(model, torch.randn(2, 4))[1] == ["attn"]
    with pytest.raises(ModelError, match=r"^layers: 'bias' is called without a tensor"):
        hooked_forward(nested(["bias"]), torch.randn(2, 4))
    with pytest.raises(ModelError, match=r"^layers: each listed layer must run once per"
                       r" forward; here blocks 0×$"):  # fmt: skip
        hooked_forward(nested(["blocks", "head"]), torch.randn(2, 4))


def test_a_value_changed_in_place_after_its_hook_saw_it_is_refused():
    """torchvision's ResNet runs ReLU(inplace=True) on a BatchNorm's output: recording that
    BatchNorm would record the ReLU's result. Named instead, with the layer around it."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(4, 2))  # fmt: skip
    model.parity_layers = ("0", "2")
    later = r"^layers: '0''s output is changed in place later in the forward \(an in-place"
    with pytest.raises(ModelError, match=later + r" operation such as ReLU\(inplace=True\)\)"):
        hooked_forward(model, torch.randn(3, 4))
    model.parity_layers = ("1",)  # the in-place ReLU itself: what it took is gone
    with pytest.raises(ModelError, match=r"^layers: '1''s input is changed in place"):
        hooked_forward(model, torch.randn(3, 4))
    model.parity_layers = ("2",)
    assert hooked_forward(model, torch.randn(3, 4))[1] == ["2"]
