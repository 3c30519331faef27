"""transformer: Linear(1→d) per token → L post-norm transformer encoder layers (d_model d,
h heads, feed-forward f, GELU, dropout 0) → flatten → Linear(16·d→3); by default one layer,
d 8, h 2, f 16 (Linear(128→3)).

Names, shapes, layer hyperparameters and initial values are model_specs.TRANSFORMER's
(torch-free); this module adds the PyTorch module. The input [N, 1, 16] is read as 16
tokens of one scalar each ([N, 16, 1]); the encoder layer is nn.TransformerEncoderLayer
(batch_first, norm_first False); a stack of L > 1 is nn.TransformerEncoder's (its names:
`enc.layers.0.self_attn…`), run layer after layer. Each layer computes

    h = norm1(x + self_attn(x));  out = norm2(h + linear2(gelu(linear1(h))))

The layer record cuts it there, each stage taking the previous one's output: embed, attn
(x + self_attn(x), the sublayer with its residual), norm1, ff (h + feed-forward(h)), norm2,
fc (in a stack, attn.0, norm1.0, …, norm2.{L−1}). The stages call the encoder layer's own
submodules the way its forward does on its regular path (`_sa_block`, `_ff_block`); with
dropout 0 they are its forward (a test checks they give exactly its output).

The fast path. nn.TransformerEncoderLayer and nn.MultiheadAttention switch to fused kernels
(torch._transformer_encoder_layer_fwd, torch._native_multi_head_attention) when neither
training nor recording gradients, that is in the eval-mode final evaluation. Training never
takes it (training mode and grad enabled); the final evaluation is kept off it too
(`forward` turns torch.backends.mha's fast path off for its duration), so it computes exactly
what a training step's forward computes, as Burn's does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from torch_burn_parity.models.model_specs import (
    CLASSES,
    LENGTH,
    TRANSFORMER,
    ModelSpec,
    encoder_stage_names,
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
        num_layers: int = 1,
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(1, d_model)
        layer = nn.TransformerEncoderLayer(
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
        # One layer is the layer itself (names enc.self_attn…); a stack is
        # nn.TransformerEncoder's (enc.layers.0.self_attn…), whose copies start alike until
        # the dataset's values replace them.
        self.enc = (
            layer
            if num_layers == 1
            else nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        )
        self.fc = nn.Linear(LENGTH * d_model, CLASSES)

    def encoder_layers(self) -> list[nn.TransformerEncoderLayer]:
        """The encoder layers, in order."""
        return (
            [self.enc]
            if isinstance(self.enc, nn.TransformerEncoderLayer)
            else list(self.enc.layers)
        )

    def stages(self) -> list[Stage]:
        """The layers in order, each taking the previous one's output."""
        encoder = []
        for enc in self.encoder_layers():
            encoder += [
                lambda h, enc=enc: h + enc._sa_block(h, None, None, is_causal=False),
                enc.norm1,
                lambda h, enc=enc: h + enc._ff_block(h),
                enc.norm2,
            ]
        names = encoder_stage_names(len(self.encoder_layers()))
        return [
            ("embed", lambda x: self.embed(x.transpose(1, 2))),
            *zip(names, encoder, strict=True),
            ("fc", lambda h: self.fc(h.flatten(1))),
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with regular_path():
            for _, stage in self.stages():
                x = stage(x)
        return x


def new(spec: ModelSpec = SPEC) -> Transformer:
    """The module at the spec's size with its layer hyperparameters, each passed
    explicitly."""
    hp, size = spec.hyperparameters, spec.size
    assert (hp["enc.d_model"], hp["enc.nhead"], hp["enc.dim_feedforward"]) == (
        size["d_model"],
        size["heads"],
        size["d_ff"],
    )
    return Transformer(
        num_layers=size["layers"],
        d_model=hp["enc.d_model"],
        nhead=hp["enc.nhead"],
        dim_feedforward=hp["enc.dim_feedforward"],
        dropout=hp["enc.dropout"],
        activation=hp["enc.activation"],
        layer_norm_eps=hp["enc.layer_norm_eps"],
        norm_first=hp["enc.norm_first"],
    )


def model_size(module: Transformer) -> dict[str, int]:
    """The size keys as the module holds them, read back from it."""
    enc = module.encoder_layers()[0]
    return {
        "d_model": enc.self_attn.embed_dim,
        "heads": enc.self_attn.num_heads,
        "layers": len(module.encoder_layers()),
        "d_ff": enc.linear1.out_features,
    }


def layer_hyperparameters(module: Transformer) -> dict:
    """The layer hyperparameters as the module holds them, read back from its first encoder
    layer (every layer of a stack is built from the same one)."""
    enc = module.encoder_layers()[0]
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
        # the square root the scores are scaled by (nn.MultiheadAttention: 1/√d_k)
        "enc.self_attn.sqrt_d_k": math.sqrt(enc.self_attn.head_dim),
    }
