"""transformer: Linear(1→8) per token → one post-norm transformer encoder layer (d_model 8,
2 heads, feed-forward 16, GELU, dropout 0) → flatten → Linear(128→3).

Names, shapes, layer hyperparameters and initial values are model_specs.TRANSFORMER's
(torch-free); this module adds the PyTorch module. The input [N, 1, 16] is read as 16
tokens of one scalar each ([N, 16, 1]); the encoder layer is nn.TransformerEncoderLayer
(batch_first, norm_first False), which computes

    h = norm1(x + self_attn(x));  out = norm2(h + linear2(gelu(linear1(h))))

The layer record cuts it there, each stage taking the previous one's output: embed, attn
(x + self_attn(x), the sublayer with its residual), norm1, ff (h + feed-forward(h)), norm2,
fc. The stages call the encoder layer's own submodules the way its forward does on its
regular path (`_sa_block`, `_ff_block`); with dropout 0 they are its forward (a test checks
they give exactly its output).

The fast path. nn.TransformerEncoderLayer and nn.MultiheadAttention switch to fused kernels
(torch._transformer_encoder_layer_fwd, torch._native_multi_head_attention) when neither
training nor recording gradients, that is in the eval-mode final evaluation. Training never
takes it (training mode and grad enabled); the final evaluation is kept off it too
(`forward` turns torch.backends.mha's fast path off for its duration), so it computes exactly
what a training step's forward computes, as Burn's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from torch_burn_parity.models.model_specs import (
    CLASSES,
    D_FF,
    D_MODEL,
    HEADS,
    TOKENS_FLAT,
    TRANSFORMER,
)

SPEC = TRANSFORMER

Stage = tuple[str, Callable[[torch.Tensor], torch.Tensor]]


@contextmanager
def regular_path() -> Iterator[None]:
    """torch.backends.mha's fast path off, and back as it was."""
    was = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(was)


class Transformer(nn.Module):
    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float,
        activation: str,
        layer_norm_eps: float,
        norm_first: bool,
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(1, d_model)
        self.enc = nn.TransformerEncoderLayer(
            d_model=d_model,
            nhead=nhead,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=True,
            norm_first=norm_first,
            bias=True,
        )
        self.fc = nn.Linear(TOKENS_FLAT, CLASSES)

    def stages(self) -> list[Stage]:
        """The layers in order, each taking the previous one's output."""
        enc = self.enc
        return [
            ("embed", lambda x: self.embed(x.transpose(1, 2))),
            ("attn", lambda h: h + enc._sa_block(h, None, None, is_causal=False)),
            ("norm1", enc.norm1),
            ("ff", lambda h: h + enc._ff_block(h)),
            ("norm2", enc.norm2),
            ("fc", lambda h: self.fc(h.flatten(1))),
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with regular_path():
            for _, stage in self.stages():
                x = stage(x)
        return x


def new() -> Transformer:
    """The module with the spec's layer hyperparameters, each passed explicitly."""
    hp = SPEC.hyperparameters
    assert (hp["enc.d_model"], hp["enc.nhead"], hp["enc.dim_feedforward"]) == (
        D_MODEL,
        HEADS,
        D_FF,
    )
    return Transformer(
        d_model=hp["enc.d_model"],
        nhead=hp["enc.nhead"],
        dim_feedforward=hp["enc.dim_feedforward"],
        dropout=hp["enc.dropout"],
        activation=hp["enc.activation"],
        layer_norm_eps=hp["enc.layer_norm_eps"],
        norm_first=hp["enc.norm_first"],
    )


def layer_hyperparameters(module: Transformer) -> dict:
    """The layer hyperparameters as the module holds them, read back from it."""
    enc = module.enc
    activation = enc.activation
    name = getattr(activation, "__name__", type(activation).__name__).lower()
    assert enc.norm1.eps == enc.norm2.eps
    return {
        "enc.d_model": enc.self_attn.embed_dim,
        "enc.nhead": enc.self_attn.num_heads,
        "enc.dim_feedforward": enc.linear1.out_features,
        "enc.dropout": enc.dropout.p,
        "enc.norm_first": enc.norm_first,
        "enc.activation": name,
        "enc.layer_norm_eps": enc.norm1.eps,
    }
