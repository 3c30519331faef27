//! gpt, on the text's token ids (`x` [N, context] I64, `y` [N, context] I64, the next
//! character at each position): a small GPT as a porter writes one with Burn's own modules,
//! PyTorch's src/torch_burn_parity/models/model_gpt.py:
//!
//! ```text
//! embed:  h = tok_emb(x) + pos_emb(arange(T))           Embedding ×2, positions broadcast
//! attn.i: h = h + mha(ln1(h), causal mask)             LayerNorm, MultiHeadAttention
//! ff.i:   h = h + fc2(gelu(fc1(ln2(h))))               LayerNorm, Linear, Gelu (erf), Linear
//! ln_f:   h = ln_f(h)                                  LayerNorm
//! head:   logits = head(h) [B, T, vocab] → [B·T, vocab] Linear; PyTorch's .flatten(0, 1)
//! ```
//!
//! The logits' rows are sample-major, position-minor, as the labels `y` [N, T] flattened.
//!
//! PyTorch's names are `tok_emb`, `pos_emb`, `blocks.{i}.{ln1, attn, ln2, fc1, fc2}`,
//! `ln_f`, `head`, which are Burn's module paths but for the attention's: PyTorch packs the
//! query, key and value projections into `attn.in_proj_weight` [3d, d] (rows 0..d, d..2d,
//! 2d..3d) and `attn.in_proj_bias` [3d], which Burn holds as three Linear layers
//! (`attn.query`, `attn.key`, `attn.value`): packed-rows entries of three parts, loaded
//! from the arrays by part (models/store.rs), as the transformer's; and it names the output
//! projection `attn.out_proj`, Burn's `attn.output` ([`ParityModel::pytorch_keys`]). The
//! embeddings' weights [num, d] have the same layout on both sides; the Linear weights are
//! transposed ([out, in] → [in, out]).
//!
//! What Burn's modules do (burn-nn 0.22.1, burn-tensor 0.22.1), against PyTorch's:
//!
//! * `MultiHeadAttention` (burn-nn src/modules/attention/mha.rs). Its config's defaults are
//!   not PyTorch's: dropout 0.1 (lines 23–25; PyTorch's nn.MultiheadAttention 0.0, set here
//!   explicitly to the spec's 0.0), `min_float` −1.0e4 (lines 26–30), the value masked
//!   scores are filled with (`attn_weights`, lines 308–315, `mask_fill(mask, min_float)`)
//!   where PyTorch fills −inf; `quiet_softmax` false (lines 31–38, PyTorch's plain softmax;
//!   passed explicitly). This model keeps Burn's −1e4, as a port would: the values are the
//!   same bit for bit as with PyTorch's −inf (exp(−1e4 − max) underflows to an exact 0 in
//!   f32 and f64, tests/gpt.rs) as long as the unmasked scores stay far above −1e4.
//! * The scores are `q·kᵀ / sqrt(d_k)` with `(self.d_k as f32).sqrt()` (`attn_scores`,
//!   lines 287–291): a division by an f32 square root, also in f64 runs, where PyTorch
//!   multiplies by its scale 1/sqrt(d_k) (in its SDPA math path q and k each by
//!   sqrt(1/sqrt(d_k))). Exact and equal when sqrt(d_k) is a power of two (the default
//!   d_k = 32/2 = 16: 4); otherwise they round differently (and in f64 Burn's divisor is the
//!   f32 rounding of the square root).
//! * Dropout is applied to the attention weights after the softmax (line 323), as PyTorch;
//!   at p = 0 Burn's `Dropout` returns its input (src/modules/dropout.rs line 62).
//! * The module holds an `activation: Gelu` (lines 86 and 143) that its forward never uses;
//!   it has no parameters and no PyTorch counterpart (nor do PyTorch's `bias_k`/`bias_v`,
//!   `add_zero_attn`, absent here as in the spec).
//! * The heads are the projections' columns reshaped [B, T, heads, d_k] and swapped
//!   (`attention_linear`, lines 326–332), PyTorch's split of the embedding dimension; the
//!   context is swapped back and reshaped to [B, T, d] before `output` (lines 234–238).
//! * The causal mask is `generate_autoregressive_mask` (src/modules/attention/mask.rs
//!   lines 11–18): `tril_mask([T, T], 0)` (burn-tensor src/tensor/api/bool.rs lines
//!   354–383), true above the diagonal, expanded over the batch: PyTorch's
//!   `triu(ones(T, T), diagonal=1)` boolean mask, true where a score is masked.
//! * `LayerNorm` (burn-nn src/modules/norm/layer.rs): epsilon default 1e-5 (lines 23–25,
//!   PyTorch's; passed explicitly), biased variance, `(x − mean)/sqrt(var + eps)·γ + β`
//!   (burn-tensor src/tensor/module.rs lines 917–920); it widens only F16 inputs to F32
//!   (layer.rs lines 90–104, src/modules/norm/mod.rs line 32).
//! * `Gelu` (burn-nn src/activation/gelu.rs lines 35–39): `approximate` false is the exact
//!   erf GELU, x·½(1 + erf(x/√2)) (burn-tensor src/tensor/activation/base.rs line 93),
//!   PyTorch's approximate="none".
//! * `Embedding` (burn-nn src/modules/embedding.rs line 72): a gather of the weight's rows;
//!   its initializer (N(0, 1), line 21) does not matter: every parameter is the dataset's.

use burn::module::{Module, Param, ParamId};
use burn::nn::attention::{
    MhaInput, MultiHeadAttention, MultiHeadAttentionConfig, generate_autoregressive_mask,
};
use burn::nn::{
    Embedding, EmbeddingConfig, Gelu, LayerNorm, LayerNormConfig, Linear, LinearConfig,
};
use burn::tensor::{Device, Int, Tensor};
use serde_json::{Value, json};

use super::{Act, Arrays, Entry, GptSize, Layout, ModelSize, ParityModel, SizeKeys};

/// The spec's layer hyperparameters (model_specs.py), passed explicitly.
const DROPOUT: f64 = 0.0;
const LAYER_NORM_EPS: f64 = 1e-5;

/// One pre-norm block: `attend` (ln1 → causal self-attention → residual) and
/// `feed_forward` (ln2 → fc1 → GELU → fc2 → residual).
#[derive(Module, Debug)]
pub struct Block {
    pub ln1: LayerNorm,
    pub attn: MultiHeadAttention,
    pub ln2: LayerNorm,
    pub fc1: Linear,
    pub gelu: Gelu,
    pub fc2: Linear,
}

#[derive(Module, Debug)]
pub struct Gpt {
    pub tok_emb: Embedding,
    pub pos_emb: Embedding,
    /// The blocks, in forward order.
    pub blocks: Vec<Block>,
    pub ln_f: LayerNorm,
    pub head: Linear,
}

/// PyTorch's name prefix of block `i`.
fn prefix(i: usize) -> String {
    format!("blocks.{i}")
}

/// A parameter name of any block (`blocks.{i}.…`) as the first block names it
/// (`blocks.0.…`); any other name as it is.
fn first_block_name(name: &str) -> String {
    let first = name.strip_prefix("blocks.").and_then(|rest| {
        let (i, rest) = rest.split_once('.')?;
        i.parse::<usize>().ok().map(|_| format!("blocks.0.{rest}"))
    });
    first.unwrap_or_else(|| name.to_string())
}

fn layer_norm(d: usize, device: &Device) -> LayerNorm {
    LayerNormConfig::new(d)
        .with_epsilon(LAYER_NORM_EPS)
        .init(device)
}

/// The attention of each block: PyTorch's settings passed explicitly (see the module's
/// documentation).
fn attention_config(s: GptSize) -> MultiHeadAttentionConfig {
    MultiHeadAttentionConfig::new(s.d_model, s.heads)
        .with_dropout(DROPOUT)
        .with_quiet_softmax(false)
}

/// One block's parameters under prefix `p`, in PyTorch's order.
fn block_entries(p: &str, d: usize, f: usize) -> Vec<Entry> {
    vec![
        Entry::same(format!("{p}.ln1.weight"), &[d]),
        Entry::same(format!("{p}.ln1.bias"), &[d]),
        // query, key, value
        Entry::packed_rows(
            format!("{p}.attn.in_proj_weight"),
            &[3 * d, d],
            3,
            Layout::Transposed,
        ),
        Entry::packed_rows(format!("{p}.attn.in_proj_bias"), &[3 * d], 3, Layout::Same),
        Entry::transposed(format!("{p}.attn.out_proj.weight"), &[d, d]),
        Entry::same(format!("{p}.attn.out_proj.bias"), &[d]),
        Entry::same(format!("{p}.ln2.weight"), &[d]),
        Entry::same(format!("{p}.ln2.bias"), &[d]),
        Entry::transposed(format!("{p}.fc1.weight"), &[f, d]),
        Entry::same(format!("{p}.fc1.bias"), &[f]),
        Entry::transposed(format!("{p}.fc2.weight"), &[d, f]),
        Entry::same(format!("{p}.fc2.bias"), &[d]),
    ]
}

fn set_norm(ln: &mut LayerNorm, arrays: &Arrays, name: &str) {
    ln.gamma = arrays.param(&format!("{name}.weight"));
    ln.beta = Some(arrays.param(&format!("{name}.bias")));
}

fn set_linear(linear: &mut Linear, arrays: &Arrays, name: &str) {
    linear.weight = arrays.param(&format!("{name}.weight"));
    linear.bias = Some(arrays.param(&format!("{name}.bias")));
}

/// Block `block`'s parameters under prefix `p`, from the arrays.
fn build_block(block: &mut Block, arrays: &Arrays, p: &str) {
    set_norm(&mut block.ln1, arrays, &format!("{p}.ln1"));
    let attn = &mut block.attn;
    for (part, linear) in [&mut attn.query, &mut attn.key, &mut attn.value]
        .into_iter()
        .enumerate()
    {
        linear.weight = arrays.param_part(&format!("{p}.attn.in_proj_weight"), part);
        linear.bias = Some(arrays.param_part(&format!("{p}.attn.in_proj_bias"), part));
    }
    set_linear(&mut attn.output, arrays, &format!("{p}.attn.out_proj"));
    set_norm(&mut block.ln2, arrays, &format!("{p}.ln2"));
    set_linear(&mut block.fc1, arrays, &format!("{p}.fc1"));
    set_linear(&mut block.fc2, arrays, &format!("{p}.fc2"));
}

fn bias_id(b: &Option<Param<Tensor<1>>>) -> ParamId {
    b.as_ref().expect("bias").id
}

/// One block's Burn parameter ids, in [`block_entries`] order.
fn block_ids(block: &Block) -> Vec<ParamId> {
    let attn = &block.attn;
    vec![
        block.ln1.gamma.id,
        bias_id(&block.ln1.beta),
        attn.query.weight.id,
        attn.key.weight.id,
        attn.value.weight.id,
        bias_id(&attn.query.bias),
        bias_id(&attn.key.bias),
        bias_id(&attn.value.bias),
        attn.output.weight.id,
        bias_id(&attn.output.bias),
        block.ln2.gamma.id,
        bias_id(&block.ln2.beta),
        block.fc1.weight.id,
        bias_id(&block.fc1.bias),
        block.fc2.weight.id,
        bias_id(&block.fc2.bias),
    ]
}

/// One block's sizes as its modules hold them: (d_model, heads, d_ff).
fn block_size(block: &Block) -> (usize, usize, usize) {
    let [_, d_ff] = block.fc1.weight.shape().dims();
    (block.attn.d_model, block.attn.n_heads, d_ff)
}

/// One block's settings, under the spec's keys.
fn block_settings(block: &Block) -> Value {
    let eps = layer_norm_epsilon(&block.ln1);
    assert_eq!(eps, layer_norm_epsilon(&block.ln2), "the block's norms");
    json!({
        "attn.heads": block.attn.n_heads,
        "attn.dropout": block.attn.dropout.prob,
        // The mask each block's `attend` builds.
        "attn.causal": true,
        "ln.eps": eps,
        "gelu.approximate": if block.gelu.approximate { "tanh" } else { "none" },
        "attn.sqrt_d_k": super::transformer::attention_sqrt_d_k(block.attn.d_k),
    })
}

/// LayerNorm's epsilon as the module holds it (see cnn_bn.rs: read from its display).
fn layer_norm_epsilon(ln: &LayerNorm) -> f64 {
    super::cnn_bn::layer_norm_epsilon(ln)
}

impl Block {
    /// h + attn(ln1(h)), each position attending to itself and the ones before it.
    pub fn attend(&self, h: Tensor<3>) -> Tensor<3> {
        let [batch, t, _] = h.dims();
        let a = self.ln1.forward(h.clone());
        let mask = generate_autoregressive_mask(batch, t, &h.device());
        h + self
            .attn
            .forward(MhaInput::self_attn(a).mask_attn(mask))
            .context
    }

    /// h + fc2(gelu(fc1(ln2(h)))).
    pub fn feed_forward(&self, h: Tensor<3>) -> Tensor<3> {
        let inner = self
            .gelu
            .forward(self.fc1.forward(self.ln2.forward(h.clone())));
        h + self.fc2.forward(inner)
    }
}

impl Gpt {
    /// tok_emb(x) + pos_emb(0..T), the positions' embeddings broadcast over the batch:
    /// [B, T, d].
    pub fn embed(&self, x: Tensor<2, Int>) -> Tensor<3> {
        let [_, t] = x.dims();
        let positions = Tensor::<1, Int>::arange(0..t as i64, &x.device()).reshape([1, t]);
        self.tok_emb.forward(x) + self.pos_emb.forward(positions)
    }

    /// The head's logits [B, T, vocab] as rows [B·T, vocab] (sample-major).
    pub fn logits(&self, h: Tensor<3>) -> Tensor<2> {
        let out = self.head.forward(h);
        let [b, t, vocab] = out.dims();
        out.reshape([b * t, vocab])
    }
}

impl ParityModel for Gpt {
    const NAME: &'static str = "gpt";
    type Input = Tensor<2, Int>;
    const SIZE: SizeKeys = &[
        ("d_model", 32),
        ("heads", 2),
        ("layers", 2),
        ("d_ff", 128),
        ("context", 32),
        ("vocab", 84),
    ];

    /// Heads that divide d_model.
    fn check_size(size: &ModelSize) -> Result<(), String> {
        GptSize::from(size).check()
    }

    /// Any block's name (`blocks.{i}.…`) as the first block names it (`blocks.0.…`).
    fn param_at_default_size(name: &str) -> String {
        first_block_name(name)
    }

    /// [context]: a block of token ids.
    fn sample(size: &ModelSize) -> Vec<usize> {
        vec![GptSize::from(size).context]
    }

    fn params(size: &ModelSize) -> Vec<Entry> {
        let s = GptSize::from(size);
        let d = s.d_model;
        let mut entries = vec![
            // nn.Embedding's weight [num, d] is Burn's as it is.
            Entry::same("tok_emb.weight", &[s.vocab, d]),
            Entry::same("pos_emb.weight", &[s.context, d]),
        ];
        for i in 0..s.layers {
            entries.extend(block_entries(&prefix(i), d, s.d_ff));
        }
        entries.extend([
            Entry::same("ln_f.weight", &[d]),
            Entry::same("ln_f.bias", &[d]),
            Entry::transposed("head.weight", &[s.vocab, d]),
            Entry::same("head.bias", &[s.vocab]),
        ]);
        entries
    }

    fn buffers(_: &ModelSize) -> Vec<Entry> {
        Vec::new()
    }

    fn layers(size: &ModelSize) -> Vec<String> {
        let mut names = vec!["embed".to_string()];
        for i in 0..GptSize::from(size).layers {
            names.extend([format!("attn.{i}"), format!("ff.{i}")]);
        }
        names.extend(["ln_f".to_string(), "head".to_string()]);
        names
    }

    fn init(size: &ModelSize, device: &Device) -> Self {
        let s = GptSize::from(size);
        let d = s.d_model;
        Gpt {
            tok_emb: EmbeddingConfig::new(s.vocab, d).init(device),
            pos_emb: EmbeddingConfig::new(s.context, d).init(device),
            blocks: (0..s.layers)
                .map(|_| Block {
                    ln1: layer_norm(d, device),
                    attn: attention_config(s).init(device),
                    ln2: layer_norm(d, device),
                    fc1: LinearConfig::new(d, s.d_ff).init(device),
                    gelu: Gelu::new(),
                    fc2: LinearConfig::new(s.d_ff, d).init(device),
                })
                .collect(),
            ln_f: layer_norm(d, device),
            head: LinearConfig::new(d, s.vocab).init(device),
        }
    }

    /// PyTorch's names are the Burn paths but for the attention's output projection (the
    /// norms' weight/bias are gamma/beta through the adapter). The packed
    /// `blocks.{i}.attn.in_proj_weight`/`in_proj_bias` are no Burn path: burn-store leaves
    /// them unused.
    fn pytorch_keys(_: &ModelSize) -> Vec<(String, String)> {
        vec![(
            r"\.attn\.out_proj\.".to_string(),
            ".attn.output.".to_string(),
        )]
    }

    fn build(arrays: &Arrays) -> Self {
        let mut m = Self::init(&arrays.size(), arrays.device());
        m.tok_emb.weight = arrays.param("tok_emb.weight");
        m.pos_emb.weight = arrays.param("pos_emb.weight");
        for (i, block) in m.blocks.iter_mut().enumerate() {
            build_block(block, arrays, &prefix(i));
        }
        set_norm(&mut m.ln_f, arrays, "ln_f");
        set_linear(&mut m.head, arrays, "head");
        m
    }

    /// vocab and d_model from the token embedding, context from the position embedding,
    /// heads from the first block's attention, d_ff from its fc1, layers from the blocks'
    /// count; every block holds the same sizes.
    fn size(&self) -> ModelSize {
        let [vocab, d_model] = self.tok_emb.weight.shape().dims();
        let [context, _] = self.pos_emb.weight.shape().dims();
        let (d, heads, d_ff) = block_size(&self.blocks[0]);
        assert_eq!(d, d_model, "the blocks' width");
        for block in &self.blocks[1..] {
            assert_eq!(block_size(block), (d, heads, d_ff), "block sizes");
        }
        ModelSize::from(GptSize {
            d_model,
            heads,
            layers: self.blocks.len(),
            d_ff,
            context,
            vocab,
        })
    }

    fn param_ids(&self) -> Vec<ParamId> {
        let mut ids = vec![self.tok_emb.weight.id, self.pos_emb.weight.id];
        for block in &self.blocks {
            ids.extend(block_ids(block));
        }
        ids.extend([
            self.ln_f.gamma.id,
            bias_id(&self.ln_f.beta),
            self.head.weight.id,
            bias_id(&self.head.bias),
        ]);
        ids
    }

    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    /// embed (of the token ids), each block's attend and feed_forward, ln_f, head (its
    /// logits as rows [B·T, vocab]).
    fn stage(&self, k: usize, x: Act) -> Act {
        let blocks = self.blocks.len();
        match k {
            0 => self.embed(x.tokens()).into(),
            k if k <= 2 * blocks => {
                let block = &self.blocks[(k - 1) / 2];
                if k % 2 == 1 {
                    block.attend(x.r3()).into()
                } else {
                    block.feed_forward(x.r3()).into()
                }
            }
            k if k == 2 * blocks + 1 => self.ln_f.forward(x.r3()).into(),
            k if k == 2 * blocks + 2 => self.logits(x.r3()).into(),
            _ => panic!("gpt has no layer {k}"),
        }
    }

    /// The first block's settings (every block holds the same; ln_f's epsilon is theirs).
    fn layer_hyperparameters(&self) -> Value {
        let first = block_settings(&self.blocks[0]);
        for block in &self.blocks[1..] {
            assert_eq!(block_settings(block), first, "block settings");
        }
        assert_eq!(
            json!(layer_norm_epsilon(&self.ln_f)),
            first["ln.eps"],
            "ln_f's epsilon"
        );
        first
    }
}
