"""A layer's settings side by side (models/port_torch.py `layer_settings`,
analysis/layer_settings.py): read from the PyTorch module in the terms the Burn side
records (rust/src/port/settings.rs, tested there), the applicable ones that differ given to
the PyTorch module for the counterfactual, and the fix named per setting."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torch_burn_parity.analysis import layer_settings
from torch_burn_parity.judgement.fixes import layer_fix
from torch_burn_parity.judgement.verdict import measured_apart
from torch_burn_parity.models.port_torch import layer_settings as settings_of


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, stride=2, padding=1, bias=False)
        self.side = nn.Conv1d(1, 4, 3, padding="same", dilation=2)
        self.norm = nn.LayerNorm(4, eps=1e-3, bias=False)
        self.rms = nn.RMSNorm(4)
        self.act = nn.GELU(approximate="tanh")
        self.drop = nn.Dropout(0.25)
        self.head = nn.Linear(4, 2)


def test_each_known_layer_is_read_in_the_terms_burn_records():
    found = settings_of(Layers().double())
    assert found == {
        "conv.stride": [2, 2], "conv.dilation": [1, 1], "conv.groups": 1, "conv.padding": [1, 1],
        "side.stride": [1], "side.dilation": [2], "side.groups": 1, "side.padding": "same",
        "norm.eps": 1e-3, "norm.bias": False,
        # RMSNorm's eps=None: the machine epsilon of its dtype (f64 here)
        "rms.eps": torch.finfo(torch.float64).eps,
        "act.approximate": "tanh",
        "drop.p": 0.25,
        "head.bias": True,
    }  # fmt: skip


def test_the_applicable_settings_that_differ_are_given_to_the_module():
    model = Layers()
    torch_held = settings_of(model)
    burn_held = {**torch_held, "norm.eps": 1e-5, "act.approximate": "none", "conv.padding": [0, 0]}
    # the padding changes shapes: shown, not applied
    assert layer_settings.differing(torch_held, burn_held) == {
        "norm.eps": 1e-5, "act.approximate": "none",
    }  # fmt: skip
    layer_settings.apply(model, layer_settings.differing(torch_held, burn_held))
    assert (model.norm.eps, model.act.approximate) == (1e-5, "none")
    with pytest.raises(AttributeError, match="Linear head has no setting 'eps'"):
        layer_settings.apply(model, {"head.eps": 1e-5})


def test_a_layer_setting_is_measured_apart_from_the_optimizers_values():
    for name in ("norm.eps", "bn.momentum", "act.approximate", "blocks.0.ln.eps"):
        assert measured_apart({"hyperparameter": name}), name
    for name in ("eps", "momentum", "param_groups[0].eps", "clip_grad.norm", "conv.padding"):
        assert not measured_apart({"hyperparameter": name}), name


def test_each_layer_setting_gets_its_burn_line():
    assert layer_fix(layer_settings.cause("norm.eps", 0.001, 1e-05)) == (
        "build Burn's `norm` with PyTorch's epsilon: its config's `.with_epsilon(0.001)`"
    )
    assert layer_fix(layer_settings.cause("act.approximate", "tanh", "none")) == (
        "build Burn's `act` as PyTorch's GELU (tanh): `Gelu::new_approximate()`"
    )
    assert layer_fix(layer_settings.cause("bn.momentum", 0.01, 0.1)).endswith(
        "`BatchNormConfig::new(…).with_momentum(0.01)`"
    )


# --- the GELU a backend differentiates (analysis/burn_gelu.py) ---------------------------


def test_ndarrays_gelu_backward_is_the_tanh_approximations_derivative():
    """burn-backend's default gelu_backward (src/backend/ops/activation.rs lines 98–128),
    written out here from Burn's source with its 6-digit constants: the stand-in's
    gradient is that, in f64, while its forward stays the exact GELU."""
    from torch_burn_parity.analysis.burn_gelu import BurnGelu

    x = torch.linspace(-4, 4, 81, dtype=torch.float64, requires_grad=True)
    out = BurnGelu("tanh")(x)
    assert torch.equal(out, nn.functional.gelu(x))
    out.sum().backward()
    inner1 = 0.0356774 * x.detach() ** 3 + 0.797885 * x.detach()
    inner2 = 0.0535161 * x.detach() ** 3 + 0.398942 * x.detach()
    t = torch.tanh(inner1)
    burn = 0.5 * t + (inner2 * (1 - t**2) + 0.5)
    assert torch.allclose(x.grad, burn, rtol=0, atol=1e-15)
    exact = torch.autograd.grad(nn.functional.gelu(x).sum(), x)[0]
    assert 1e-4 < (x.grad - exact).abs().max() < 1e-2  # the approximation's, not rounding's
    x.grad = None
    BurnGelu("none")(x).sum().backward()
    assert torch.equal(x.grad, exact)


def test_an_exact_gelus_backward_is_recorded_and_given_to_each_block():
    from torch_burn_parity.models import models

    class Block(nn.Module):
        def __init__(self, approximate: str):
            super().__init__()
            self.fc, self.act = nn.Linear(2, 2), nn.GELU(approximate=approximate)

    class Blocks(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block("none"), Block("tanh"), Block("none")])
            self.parity_layers = ("blocks.0", "blocks.1", "blocks.2")  # a port's

    model = Blocks()
    held = models.layer_hyperparameters("port", model)
    assert held["blocks.0.act.backward"] == "none" and "blocks.1.act.backward" not in held
    layer_settings.apply(model, {"blocks.0.act.backward": "tanh"})
    assert [type(b.act).__name__ for b in model.blocks] == ["BurnGelu", "GELU", "GELU"]
    # a built-in model's one key for each block's layer (gpt's `gelu`): every such layer
    layer_settings.apply(model, {"act.backward": "tanh"})
    assert [type(b.act).__name__ for b in model.blocks] == ["BurnGelu"] * 3


# --- the square root Burn's attention divides by (analysis/burn_attention.py) ------------


def test_burns_attention_divides_the_scores_by_its_held_square_root():
    """burn-nn's MultiHeadAttention: q·kᵀ / (d_k as f32).sqrt(), masked, softmax, times v
    (mha.rs lines 287–323); given to one nn.MultiheadAttention by hooks, the others kept."""
    import math

    import numpy as np

    from torch_burn_parity.analysis.burn_attention import divide_scores_by

    torch.manual_seed(0)
    attention, other = (nn.MultiheadAttention(96, 4, batch_first=True).double() for _ in "ab")
    x = torch.randn(2, 5, 96, dtype=torch.float64)
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    before = attention(x, x, x, attn_mask=mask, need_weights=False)[0]
    other_before = other(x, x, x, need_weights=False)[0]
    held = float(np.float32(math.sqrt(24)))  # d_k 24: √24 is not exact in f32
    divide_scores_by(attention, held)
    after = attention(x, x, x, attn_mask=mask, need_weights=False)[0]
    q, k, v = nn.functional.linear(x, attention.in_proj_weight, attention.in_proj_bias).chunk(3, -1)
    heads = [t.reshape(2, 5, 4, 24).transpose(1, 2) for t in (q, k, v)]
    scores = heads[0] @ heads[1].transpose(-2, -1) / held
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
    by_hand = attention.out_proj((weights @ heads[2]).transpose(1, 2).reshape(2, 5, 96))
    assert torch.allclose(after, by_hand, rtol=0, atol=1e-14)
    assert 1e-10 < (after - before).abs().max() < 1e-6  # the f32 rounding of √24, no more
    # after it ran, the other attention keeps PyTorch's own scaling
    assert torch.equal(other(x, x, x, need_weights=False)[0], other_before)
    with pytest.raises(AttributeError, match="Linear has no setting 'sqrt_d_k'"):
        divide_scores_by(nn.Linear(2, 2), held)


def test_a_librarys_own_layers_take_burns_settings_in_their_own_terms():
    """Hugging Face's RMSNorm holds its epsilon as `variance_epsilon`; a library's GELU
    module has no `approximate` and is replaced by nn.GELU of Burn's form; attention's
    square root goes in through apply like any other setting."""

    class HubRMSNorm(nn.Module):  # transformers' LlamaRMSNorm keeps `variance_epsilon`
        def __init__(self):
            super().__init__()
            self.weight, self.variance_epsilon = nn.Parameter(torch.ones(4)), 1e-6

    class NewGELUActivation(nn.Module):  # transformers' gelu_new: no `approximate`
        def forward(self, x):
            return nn.functional.gelu(x, approximate="tanh")

    class Hub(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.act = HubRMSNorm(), NewGELUActivation()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    torch.manual_seed(0)
    model = Hub().double()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    before = model.attn(x, x, x, need_weights=False)[0]
    layer_settings.apply(model, {"norm.eps": 1e-5, "act.approximate": "none", "attn.sqrt_d_k": 1.5})
    assert model.norm.variance_epsilon == 1e-5 and not hasattr(model.norm, "eps")
    assert type(model.act) is nn.GELU and model.act.approximate == "none"
    after = model.attn(x, x, x, need_weights=False)[0]
    assert (after - before).abs().max() > 1e-3  # scores divided by 1.5, not √4 = 2


def test_a_key_names_its_layer_by_full_name_or_by_each_blocks_last_name():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(2)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])
            self.ln = nn.LayerNorm(2)

    model = Net()
    layer_settings.apply(model, {"blocks.1.ln.eps": 1e-3})  # the one named
    assert [b.ln.eps for b in model.blocks] + [model.ln.eps] == [1e-5, 1e-3, 1e-5]
    layer_settings.apply(model, {"ln.eps": 1e-2})  # a top-level layer of that name: it alone
    assert [b.ln.eps for b in model.blocks] + [model.ln.eps] == [1e-5, 1e-3, 1e-2]
    other = Net()
    del other.ln
    layer_settings.apply(other, {"block.ln.eps": 1e-4})  # no such path: each block's `ln`
    assert [b.ln.eps for b in other.blocks] == [1e-4, 1e-4]
    with pytest.raises(AttributeError, match="has no attribute `nowhere`"):
        layer_settings.apply(other, {"nowhere.eps": 1e-4})
