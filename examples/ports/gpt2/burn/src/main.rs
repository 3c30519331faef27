//! transformers' `GPT2LMHeadModel` in Burn (transformers/models/gpt2/modeling_gpt2.py), at the
//! `GPT2Config` examples/ports/config.yaml gives it, written with Burn's own modules:
//!
//! ```text
//! transformer.wte, .wpe:  h = wte(x) + wpe(arange(T))            Embedding ×2
//! transformer.h.i:        h = h + attn.c_proj(attention(attn.c_attn(ln_1(h))))
//!                         h = h + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(h))))
//! transformer.ln_f:       h = ln_f(h)
//! lm_head:                logits = h · wteᵀ                       tied to the embedding
//! ```
//!
//! Where GPT-2 is not what Burn's modules assume, the port follows GPT-2:
//!
//! * `Conv1D` (transformers/pytorch_utils.py) holds its weight [in, out], as Burn's `Linear`
//!   does: each is loaded as it is ([`Mapping::AsIs`]), where burn-store would transpose a
//!   Linear's weight.
//! * `c_attn` packs the query, key and value projections in one [d, 3d] array; the port keeps
//!   it packed and splits the output, as GPT-2 does (`split(self.split_size, dim=2)`).
//! * `lm_head.weight` is `transformer.wte.weight` (tied): the head multiplies by the
//!   embedding's weight, so that both uses add into one gradient.
//! * The activation is `gelu_new`, GELU's tanh approximation: Burn's `Gelu::new_approximate`.
//! * LayerNorm's epsilon is `layer_norm_epsilon` 1e-5, Burn's default too; no dropout (the
//!   config's three are 0).

use burn::nn::attention::generate_autoregressive_mask;
use burn::nn::{
    Embedding, EmbeddingConfig, Gelu, LayerNorm, LayerNormConfig, Linear, LinearConfig,
};
use burn::prelude::*;
use burn::tensor::activation::softmax;
use parity_train::port::{Layers, Mapping, Port};
use std::process::ExitCode;

// GPT2Config as examples/ports/config.yaml gives it.
const VOCAB: usize = 84;
const POSITIONS: usize = 32;
const D: usize = 256;
const LAYERS: usize = 2;
const HEADS: usize = 4;

#[derive(Module, Debug)]
pub struct Attention {
    c_attn: Linear,
    c_proj: Linear,
}

impl Attention {
    /// Causal multi-head self-attention of x [B, T, d].
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, t, d] = x.dims();
        let hd = d / HEADS;
        let heads = |m: Tensor<3>| m.reshape([b, t, HEADS, hd]).swap_dims(1, 2);
        let qkv = self.c_attn.forward(x);
        let q = heads(qkv.clone().slice(s![.., .., 0..d]));
        let k = heads(qkv.clone().slice(s![.., .., d..2 * d]));
        let v = heads(qkv.slice(s![.., .., 2 * d..3 * d]));
        let scores = q.matmul(k.swap_dims(2, 3)) / (hd as f64).sqrt();
        let mask = generate_autoregressive_mask(b, t, &scores.device()).unsqueeze_dim::<4>(1);
        let weights = softmax(scores.mask_fill(mask, f32::NEG_INFINITY), 3);
        let context = weights.matmul(v).swap_dims(1, 2).reshape([b, t, d]);
        self.c_proj.forward(context)
    }
}

#[derive(Module, Debug)]
pub struct Mlp {
    c_fc: Linear,
    act: Gelu,
    c_proj: Linear,
}

#[derive(Module, Debug)]
pub struct Block {
    ln_1: LayerNorm,
    attn: Attention,
    ln_2: LayerNorm,
    mlp: Mlp,
}

impl Block {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let x = x.clone() + self.attn.forward(self.ln_1.forward(x));
        let m = &self.mlp;
        let y = m
            .c_proj
            .forward(m.act.forward(m.c_fc.forward(self.ln_2.forward(x.clone()))));
        x + y
    }
}

#[derive(Module, Debug)]
pub struct Transformer {
    wte: Embedding,
    wpe: Embedding,
    h: Vec<Block>,
    ln_f: LayerNorm,
}

#[derive(Module, Debug)]
pub struct Gpt2 {
    transformer: Transformer,
}

impl Port for Gpt2 {
    type Input = Tensor<2, Int>;

    fn init(device: &Device) -> Self {
        let linear = |i: usize, o: usize| LinearConfig::new(i, o).init(device);
        let block = || Block {
            ln_1: LayerNormConfig::new(D).init(device),
            attn: Attention {
                c_attn: linear(D, 3 * D),
                c_proj: linear(D, D),
            },
            ln_2: LayerNormConfig::new(D).init(device),
            mlp: Mlp {
                c_fc: linear(D, 4 * D),
                act: Gelu::new_approximate(),
                c_proj: linear(4 * D, D),
            },
        };
        Gpt2 {
            transformer: Transformer {
                wte: EmbeddingConfig::new(VOCAB, D).init(device),
                wpe: EmbeddingConfig::new(POSITIONS, D).init(device),
                h: (0..LAYERS).map(|_| block()).collect(),
                ln_f: LayerNormConfig::new(D).init(device),
            },
        }
    }

    fn forward(&self, x: Tensor<2, Int>, layers: &mut Layers) -> Tensor<2> {
        let tr = &self.transformer;
        let [b, t] = x.dims();
        let positions = Tensor::<1, Int>::arange(0..t as i64, &x.device()).unsqueeze::<2>();
        let tokens = layers.layer("transformer.wte", x, |x| tr.wte.forward(x));
        let mut h = tokens + tr.wpe.forward(positions);
        for (i, block) in tr.h.iter().enumerate() {
            h = layers.layer(&format!("transformer.h.{i}"), h, |h| block.forward(h));
        }
        let h = layers.layer("transformer.ln_f", h, |h| tr.ln_f.forward(h));
        // lm_head, tied: h · wteᵀ, one row per position
        h.reshape([b * t, D])
            .matmul(tr.wte.weight.val().transpose())
    }

    fn mappings() -> Vec<(String, Mapping)> {
        let conv1d = ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"];
        (0..LAYERS)
            .flat_map(|i| conv1d.map(|m| format!("transformer.h.{i}.{m}.weight")))
            .map(|name| (name.clone(), Mapping::AsIs(name)))
            .collect()
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<Gpt2>()
}
