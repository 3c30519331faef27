"""gpt, on text: a small GPT as a porter writes one with PyTorch's own modules.

token nn.Embedding + position nn.Embedding → `layers` pre-norm blocks (LayerNorm →
nn.MultiheadAttention with a causal mask → residual; LayerNorm → Linear → GELU → Linear →
residual) → LayerNorm → Linear head; the logits of every position, [B·context, vocab], so
that the loss is next-character cross-entropy over every position of a block.

Names, shapes and initial values are model_specs' (torch-free). The causal mask is a
boolean [context, context] mask, True above the diagonal (a position attends to itself and
the ones before it): nn.MultiheadAttention fills those scores with −inf before the
softmax. Layers, in the layer record's order: embed (its input is token ids: it has no
input gradient), attn.i and ff.i per block (each with its residual), ln_f, head.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from torch_burn_parity.models.model_specs import SPECS, ModelSpec

SPEC = SPECS["gpt"]

Stage = tuple[str, Callable[[torch.Tensor], torch.Tensor]]


class Block(nn.Module):
    def __init__(self, d_model: int, heads: int, d_ff: int, eps: float, dropout: float) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, eps=eps)
        self.attn = nn.MultiheadAttention(
            d_model, heads, dropout=dropout, bias=True, batch_first=True
        )
        self.ln2 = nn.LayerNorm(d_model, eps=eps)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.gelu = nn.GELU(approximate="none")
        self.fc2 = nn.Linear(d_ff, d_model)

    def attend(self, h: torch.Tensor) -> torch.Tensor:
        """h + attn(ln1(h)), each position attending to itself and the ones before it."""
        t = h.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        a = self.ln1(h)
        return h + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]

    def feed_forward(self, h: torch.Tensor) -> torch.Tensor:
        """h + fc2(gelu(fc1(ln2(h))))."""
        return h + self.fc2(self.gelu(self.fc1(self.ln2(h))))


class Gpt(nn.Module):
    def __init__(
        self, vocab: int, context: int, d_model: int, heads: int, layers: int, d_ff: int,
        eps: float, dropout: float,
    ) -> None:  # fmt: skip
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(
            Block(d_model, heads, d_ff, eps, dropout) for _ in range(layers)
        )
        self.ln_f = nn.LayerNorm(d_model, eps=eps)
        self.head = nn.Linear(d_model, vocab)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1])
        return self.tok_emb(tokens) + self.pos_emb(positions)

    def stages(self) -> list[Stage]:
        """The layers in order, each taking the previous one's output."""
        blocks = []
        for i, block in enumerate(self.blocks):
            blocks += [(f"attn.{i}", block.attend), (f"ff.{i}", block.feed_forward)]
        return [
            ("embed", self.embed),
            *blocks,
            ("ln_f", self.ln_f),
            ("head", lambda h: self.head(h).flatten(0, 1)),
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _, stage in self.stages():
            x = stage(x)
        return x


def new(spec: ModelSpec = SPEC) -> Gpt:
    """The module at the spec's size with its layer hyperparameters passed explicitly."""
    s, hp = spec.size, spec.hyperparameters
    assert hp["attn.heads"] == s["heads"] and hp["attn.causal"]
    return Gpt(
        vocab=s["vocab"],
        context=s["context"],
        d_model=s["d_model"],
        heads=s["heads"],
        layers=s["layers"],
        d_ff=s["d_ff"],
        eps=hp["ln.eps"],
        dropout=hp["attn.dropout"],
    )


def model_size(module: Gpt) -> dict[str, int]:
    """The size keys as the module holds them, read back from it."""
    block = module.blocks[0]
    return {
        "d_model": module.tok_emb.embedding_dim,
        "heads": block.attn.num_heads,
        "layers": len(module.blocks),
        "d_ff": block.fc1.out_features,
        "context": module.pos_emb.num_embeddings,
        "vocab": module.tok_emb.num_embeddings,
    }


def layer_hyperparameters(module: Gpt) -> dict:
    """The layers' settings as the modules hold them, read back from the first block."""
    block = module.blocks[0]
    assert block.ln1.eps == block.ln2.eps == module.ln_f.eps
    return {
        "attn.heads": block.attn.num_heads,
        "attn.dropout": block.attn.dropout,
        "attn.causal": True,  # the mask each block builds (Block.attend)
        "ln.eps": block.ln1.eps,
        "gelu.approximate": block.gelu.approximate,
        # the square root the scores are scaled by (nn.MultiheadAttention: 1/√d_k)
        "attn.sqrt_d_k": math.sqrt(block.attn.head_dim),
    }
