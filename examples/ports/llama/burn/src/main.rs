//! transformers' `LlamaForCausalLM` in Burn (transformers/models/llama/modeling_llama.py), at
//! the `LlamaConfig` examples/ports/config.yaml gives it, written with Burn's own modules as
//! tracel-ai/models' llama-burn writes them (`RmsNorm`, `RotaryEncoding`, `SwiGlu`):
//!
//! ```text
//! model.embed_tokens:  h = embed_tokens(x)                                Embedding
//! model.layers.i:      h = h + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))
//!                          with n = input_layernorm(h)                    RmsNorm, causal
//!                      h = h + down_proj(silu(gate_proj(m)) · up_proj(m))
//!                          with m = post_attention_layernorm(h)           SwiGlu, Linear
//! model.norm:          h = norm(h)                                        RmsNorm
//! lm_head:             logits = lm_head(h), one row per position          Linear
//! ```
//!
//! Where Llama is not what Burn's modules assume, the port follows Llama:
//!
//! * The rotary embedding: Llama's `rotate_half` pairs a head's dimension i with i + d/2, Burn's
//!   `RotaryEncoding` pairs 2i with 2i + 1 (the same frequencies, 1/θ^(2i/d)). The port
//!   regroups each head's query and key into Burn's pairs before the rotation; the attention's
//!   scores, dot products over the whole head, are the same for any order of its dimensions
//!   taken alike for the query and the key, so they are not regrouped back.
//! * The feed-forward's `gate_proj` and `up_proj` are Burn's `SwiGlu` `linear_inner` and
//!   `linear_outer` (silu(inner(x)) · outer(x)); `pytorch_keys` maps the names.
//! * RMSNorm's epsilon is Llama's `rms_norm_eps`, 1e-6 (Burn's default is 1e-5); no bias
//!   anywhere (`attention_bias`, `mlp_bias` false), no tied head, no dropout.

use burn::nn::attention::generate_autoregressive_mask;
use burn::nn::{
    Embedding, EmbeddingConfig, Linear, LinearConfig, RmsNorm, RmsNormConfig, RotaryEncoding,
    RotaryEncodingConfig, SwiGlu, SwiGluConfig,
};
use burn::prelude::*;
use burn::tensor::activation::softmax;
use parity_train::port::{Layers, Port};
use std::process::ExitCode;

// LlamaConfig as examples/ports/config.yaml gives it.
const VOCAB: usize = 84;
const POSITIONS: usize = 32;
const D: usize = 256;
const INTERMEDIATE: usize = 688;
const LAYERS: usize = 2;
const HEADS: usize = 4;
const RMS_NORM_EPS: f64 = 1e-6;
const ROPE_THETA: f32 = 10000.0;

fn linear(i: usize, o: usize, device: &Device) -> Linear {
    LinearConfig::new(i, o).with_bias(false).init(device)
}

fn rms_norm(device: &Device) -> RmsNorm {
    RmsNormConfig::new(D)
        .with_epsilon(RMS_NORM_EPS)
        .init(device)
}

#[derive(Module, Debug)]
pub struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
}

impl Attention {
    /// Causal multi-head self-attention of x [B, T, d], queries and keys rotated.
    fn forward(&self, x: Tensor<3>, rope: &RotaryEncoding) -> Tensor<3> {
        let [b, t, d] = x.dims();
        let hd = d / HEADS;
        let heads = |m: Tensor<3>| m.reshape([b, t, HEADS, hd]).swap_dims(1, 2);
        // Llama's halves (i, i + hd/2) as Burn's pairs (2i, 2i + 1), then rotated
        let rotated = |m: Tensor<4>| {
            let pairs = m.reshape([b, HEADS, t, 2, hd / 2]).swap_dims(3, 4);
            rope.apply(pairs.reshape([b, HEADS, t, hd]), 0)
        };
        let q = rotated(heads(self.q_proj.forward(x.clone())));
        let k = rotated(heads(self.k_proj.forward(x.clone())));
        let v = heads(self.v_proj.forward(x));
        let scores = q.matmul(k.swap_dims(2, 3)) / (hd as f64).sqrt();
        let mask = generate_autoregressive_mask(b, t, &scores.device()).unsqueeze_dim::<4>(1);
        let weights = softmax(scores.mask_fill(mask, f32::NEG_INFINITY), 3);
        let context = weights.matmul(v).swap_dims(1, 2).reshape([b, t, d]);
        self.o_proj.forward(context)
    }
}

#[derive(Module, Debug)]
pub struct Mlp {
    swiglu: SwiGlu,
    down_proj: Linear,
}

#[derive(Module, Debug)]
pub struct DecoderLayer {
    self_attn: Attention,
    mlp: Mlp,
    input_layernorm: RmsNorm,
    post_attention_layernorm: RmsNorm,
}

impl DecoderLayer {
    fn forward(&self, h: Tensor<3>, rope: &RotaryEncoding) -> Tensor<3> {
        let h = h.clone()
            + self
                .self_attn
                .forward(self.input_layernorm.forward(h), rope);
        let m = self.post_attention_layernorm.forward(h.clone());
        h + self.mlp.down_proj.forward(self.mlp.swiglu.forward(m))
    }
}

#[derive(Module, Debug)]
pub struct LlamaModel {
    embed_tokens: Embedding,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    rotary_emb: RotaryEncoding,
}

#[derive(Module, Debug)]
pub struct Llama {
    model: LlamaModel,
    lm_head: Linear,
}

impl Port for Llama {
    type Input = Tensor<2, Int>;

    fn init(device: &Device) -> Self {
        let layer = || DecoderLayer {
            self_attn: Attention {
                q_proj: linear(D, D, device),
                k_proj: linear(D, D, device),
                v_proj: linear(D, D, device),
                o_proj: linear(D, D, device),
            },
            mlp: Mlp {
                swiglu: SwiGluConfig::new(D, INTERMEDIATE).init(device),
                down_proj: linear(INTERMEDIATE, D, device),
            },
            input_layernorm: rms_norm(device),
            post_attention_layernorm: rms_norm(device),
        };
        Llama {
            model: LlamaModel {
                embed_tokens: EmbeddingConfig::new(VOCAB, D).init(device),
                layers: (0..LAYERS).map(|_| layer()).collect(),
                norm: rms_norm(device),
                rotary_emb: RotaryEncodingConfig::new(POSITIONS, D / HEADS)
                    .with_theta(ROPE_THETA)
                    .init(device),
            },
            lm_head: linear(D, VOCAB, device),
        }
    }

    fn forward(&self, x: Tensor<2, Int>, layers: &mut Layers) -> Tensor<2> {
        let m = &self.model;
        let [b, t] = x.dims();
        let mut h = layers.layer("model.embed_tokens", x, |x| m.embed_tokens.forward(x));
        for (i, layer) in m.layers.iter().enumerate() {
            h = layers.layer(&format!("model.layers.{i}"), h, |h| {
                layer.forward(h, &m.rotary_emb)
            });
        }
        let h = layers.layer("model.norm", h, |h| m.norm.forward(h));
        self.lm_head.forward(h).reshape([b * t, VOCAB])
    }

    fn pytorch_keys() -> Vec<(String, String)> {
        vec![
            (
                r"\.mlp\.gate_proj\.".into(),
                ".mlp.swiglu.linear_inner.".into(),
            ),
            (
                r"\.mlp\.up_proj\.".into(),
                ".mlp.swiglu.linear_outer.".into(),
            ),
        ]
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<Llama>()
}
