//! Linear(1→d) per token → L post-norm transformer encoder layers (d_model d, h heads,
//! feed-forward f, GELU, dropout 0) → flatten → Linear(16·d→3). The seed's sizes are d 8,
//! h 2, L 1, f 16 (Linear(128→3)).
//!
//! The input [N, 1, 16] is read as 16 tokens of one scalar ([N, 16, 1]). Each encoder layer
//! is Burn's `TransformerEncoderLayer` (burn-nn src/modules/transformer/encoder.rs), built by
//! its config with PyTorch's settings passed explicitly; its initializer does not matter, as
//! every parameter is replaced by the dataset's. With `norm_first` false its forward is
//!
//! ```text
//! h = norm_1(x + dropout(mha(x)));  out = norm_2(h + dropout(pwff(h)))
//! ```
//!
//! which is nn.TransformerEncoderLayer's post-norm forward with PyTorch's norm1 as Burn's
//! norm_1 and norm2 as norm_2. [`Transformer::forward`] runs those same calls on each
//! layer's own submodules, the layers chained (each one's output is the next one's input),
//! each cut into the recorded layers (attn = x + mha(x), norm1, ff = h + pwff(h), norm2),
//! between embed and fc; a test checks it gives exactly the layers' forwards composed.
//!
//! PyTorch names one layer's parameters `enc.…` (the seed's nn.TransformerEncoderLayer) and
//! those of several `enc.layers.{i}.…` (nn.TransformerEncoder's); the recorded layers are
//! `attn, norm1, ff, norm2` for one layer, `attn.{i}, norm1.{i}, ff.{i}, norm2.{i}` for
//! several. PyTorch packs each layer's query, key and value projections into
//! `in_proj_weight` [3d, d] (rows 0..d, d..2d, 2d..3d, each [out, in]) and `in_proj_bias`
//! [3d]; Burn holds three Linear layers (`mha.query`, `mha.key`, `mha.value`, each weight
//! [in, out]): packed-rows entries of three parts.
//!
//! The model is loaded from the dataset through burn-store (models/store.rs) with
//! [`ParityModel::pytorch_keys`]: PyTorch's `enc.…` (`enc.layers.{i}.…`) to Burn's `enc.0.…`
//! (`enc.{i}.…`), `self_attn.out_proj` to `mha.output`, `linear1`/`linear2` to
//! `pwff.linear_inner`/`pwff.linear_outer`, `norm1`/`norm2` to `norm_1`/`norm_2`. The packed
//! `in_proj_weight`/`in_proj_bias` cannot be: burn-store loads one array into one Burn
//! tensor, and these are three (`mha.query`, `mha.key`, `mha.value`), so they are loaded from
//! the arrays, by part (models/store.rs). The scores are divided by sqrt(d/h) (mha.rs
//! `attn_scores`, an f32 square root, also in f64 runs) where PyTorch scales by 1/sqrt(d/h):
//! both are exact when sqrt(d/h) is a power of two (the seed's d/h = 4: 2 and 0.5), and
//! round differently otherwise.

use burn::module::{Module, Param, ParamId};
use burn::nn::attention::MhaInput;
use burn::nn::transformer::{TransformerEncoderConfig, TransformerEncoderLayer};
use burn::nn::{LayerNorm, Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use serde_json::{Value, json};

use super::{
    Act, Arrays, CLASSES, Entry, LENGTH, Layout, ModelSize, ParityModel, SizeKeys, TransformerSize,
};

/// PyTorch's defaults, passed explicitly (dropout 0 rather than either side's 0.1).
const DROPOUT: f64 = 0.0;
const LAYER_NORM_EPS: f64 = 1e-5;

#[derive(Module, Debug)]
pub struct Transformer {
    pub embed: Linear,
    /// The encoder layers, in forward order.
    pub enc: Vec<TransformerEncoderLayer>,
    pub fc: Linear,
}

/// The config of each encoder layer.
fn encoder_config(s: TransformerSize) -> TransformerEncoderConfig {
    TransformerEncoderConfig::new(s.d_model, s.d_ff, s.heads, s.layers)
        .with_dropout(DROPOUT)
        .with_norm_first(false)
        .with_quiet_softmax(false)
        .with_activation(burn::nn::activation::ActivationConfig::Gelu)
        .with_layer_norm_eps(LAYER_NORM_EPS)
}

/// PyTorch's name prefix of encoder layer `i` of `layers`: `enc` for one (the seed's
/// names), nn.TransformerEncoder's `enc.layers.{i}` for several.
fn prefix(i: usize, layers: usize) -> String {
    if layers == 1 {
        "enc".to_string()
    } else {
        format!("enc.layers.{i}")
    }
}

/// A parameter name of several layers (`enc.layers.{i}.…`) as one layer names it (`enc.…`);
/// any other name as it is.
fn one_layer_name(name: &str) -> String {
    let one = name.strip_prefix("enc.layers.").and_then(|rest| {
        let (i, rest) = rest.split_once('.')?;
        i.parse::<usize>().ok().map(|_| format!("enc.{rest}"))
    });
    one.unwrap_or_else(|| name.to_string())
}

/// One encoder layer's parameters under prefix `p`, in PyTorch's order.
fn layer_entries(p: &str, d: usize, f: usize) -> Vec<Entry> {
    vec![
        // query, key, value
        Entry::packed_rows(
            format!("{p}.self_attn.in_proj_weight"),
            &[3 * d, d],
            3,
            Layout::Transposed,
        ),
        Entry::packed_rows(
            format!("{p}.self_attn.in_proj_bias"),
            &[3 * d],
            3,
            Layout::Same,
        ),
        Entry::transposed(format!("{p}.self_attn.out_proj.weight"), &[d, d]),
        Entry::same(format!("{p}.self_attn.out_proj.bias"), &[d]),
        Entry::transposed(format!("{p}.linear1.weight"), &[f, d]),
        Entry::same(format!("{p}.linear1.bias"), &[f]),
        Entry::transposed(format!("{p}.linear2.weight"), &[d, f]),
        Entry::same(format!("{p}.linear2.bias"), &[d]),
        Entry::same(format!("{p}.norm1.weight"), &[d]),
        Entry::same(format!("{p}.norm1.bias"), &[d]),
        Entry::same(format!("{p}.norm2.weight"), &[d]),
        Entry::same(format!("{p}.norm2.bias"), &[d]),
    ]
}

/// Encoder layer `layer`'s parameters under prefix `p`, from the arrays.
fn build_layer(layer: &mut TransformerEncoderLayer, arrays: &Arrays, p: &str) {
    let mha = &mut layer.mha;
    for (part, linear) in [&mut mha.query, &mut mha.key, &mut mha.value]
        .into_iter()
        .enumerate()
    {
        linear.weight = arrays.param_part(&format!("{p}.self_attn.in_proj_weight"), part);
        linear.bias = Some(arrays.param_part(&format!("{p}.self_attn.in_proj_bias"), part));
    }
    mha.output.weight = arrays.param(&format!("{p}.self_attn.out_proj.weight"));
    mha.output.bias = Some(arrays.param(&format!("{p}.self_attn.out_proj.bias")));
    let pwff = &mut layer.pwff;
    pwff.linear_inner.weight = arrays.param(&format!("{p}.linear1.weight"));
    pwff.linear_inner.bias = Some(arrays.param(&format!("{p}.linear1.bias")));
    pwff.linear_outer.weight = arrays.param(&format!("{p}.linear2.weight"));
    pwff.linear_outer.bias = Some(arrays.param(&format!("{p}.linear2.bias")));
    layer.norm_1.gamma = arrays.param(&format!("{p}.norm1.weight"));
    layer.norm_1.beta = Some(arrays.param(&format!("{p}.norm1.bias")));
    layer.norm_2.gamma = arrays.param(&format!("{p}.norm2.weight"));
    layer.norm_2.beta = Some(arrays.param(&format!("{p}.norm2.bias")));
}

/// One encoder layer's Burn parameter ids, in [`layer_entries`] order.
fn layer_ids(layer: &TransformerEncoderLayer) -> Vec<ParamId> {
    let some = |b: &Option<Param<Tensor<1>>>| b.as_ref().expect("bias").id;
    let (mha, pwff) = (&layer.mha, &layer.pwff);
    vec![
        mha.query.weight.id,
        mha.key.weight.id,
        mha.value.weight.id,
        some(&mha.query.bias),
        some(&mha.key.bias),
        some(&mha.value.bias),
        mha.output.weight.id,
        some(&mha.output.bias),
        pwff.linear_inner.weight.id,
        some(&pwff.linear_inner.bias),
        pwff.linear_outer.weight.id,
        some(&pwff.linear_outer.bias),
        layer.norm_1.gamma.id,
        some(&layer.norm_1.beta),
        layer.norm_2.gamma.id,
        some(&layer.norm_2.beta),
    ]
}

/// One encoder layer's sizes as its modules hold them: (d_model, heads, d_ff).
fn layer_size(layer: &TransformerEncoderLayer) -> (usize, usize, usize) {
    let [_, d_ff] = layer.pwff.linear_inner.weight.shape().dims();
    (layer.mha.d_model, layer.mha.n_heads, d_ff)
}

/// One encoder layer's settings, under today's keys (`enc.…`).
/// The square root Burn's `MultiHeadAttention` divides the scores by, as it holds it:
/// `(self.d_k as f32).sqrt()` (burn-nn 0.22.1 src/modules/attention/mha.rs line 290), f32
/// also in an f64 run; PyTorch scales by 1/√d_k in the run's dtype. Recorded widened
/// exactly, so that the config diff tells an f32 rounding of PyTorch's value apart.
pub(super) fn attention_sqrt_d_k(d_k: usize) -> f64 {
    (d_k as f32).sqrt() as f64
}

fn layer_settings(layer: &TransformerEncoderLayer) -> Value {
    let mha = &layer.mha;
    let (d_model, heads, d_ff) = layer_size(layer);
    let eps = layer_norm_epsilon(&layer.norm_1);
    assert_eq!(eps, layer_norm_epsilon(&layer.norm_2));
    assert_eq!(layer.dropout.prob, layer.pwff.dropout.prob);
    assert_eq!(layer.dropout.prob, mha.dropout.prob);
    json!({
        "enc.d_model": d_model,
        "enc.nhead": heads,
        "enc.dim_feedforward": d_ff,
        "enc.dropout": layer.dropout.prob,
        "enc.norm_first": layer.norm_first,
        "enc.activation": activation_name(&layer.pwff.activation),
        "enc.layer_norm_eps": eps,
        // Burn only: softmax + 1 in the denominator when true.
        "enc.quiet_softmax": mha.quiet_softmax,
        "enc.self_attn.sqrt_d_k": attention_sqrt_d_k(mha.d_k),
    })
}

impl Transformer {
    /// The encoder layers' own forwards (no mask), chained, for the test that the recorded
    /// stages compose to them.
    pub fn encoder_forward(&self, h: Tensor<3>) -> Tensor<3> {
        self.enc
            .iter()
            .fold(h, |h, layer| layer.forward(h, None, None))
    }
}

impl ParityModel for Transformer {
    const NAME: &'static str = "transformer";
    type Input = Tensor<3>;
    const SIZE: SizeKeys = &[("d_model", 8), ("heads", 2), ("layers", 1), ("d_ff", 16)];

    /// Heads that divide d_model.
    fn check_size(size: &ModelSize) -> Result<(), String> {
        TransformerSize::from(size).check()
    }

    /// A name of several layers (`enc.layers.{i}.…`) as one layer names it (`enc.…`).
    fn param_at_default_size(name: &str) -> String {
        one_layer_name(name)
    }

    /// [1, 16]: one channel of the sine data's 16 steps, at every size.
    fn sample(_: &ModelSize) -> Vec<usize> {
        vec![1, LENGTH]
    }

    fn params(size: &ModelSize) -> Vec<Entry> {
        let s = TransformerSize::from(size);
        let d = s.d_model;
        // Burn's Linear weight is [in, out]; PyTorch's is [out, in].
        let mut entries = vec![
            Entry::transposed("embed.weight", &[d, 1]),
            Entry::same("embed.bias", &[d]),
        ];
        for i in 0..s.layers {
            entries.extend(layer_entries(&prefix(i, s.layers), d, s.d_ff));
        }
        entries.push(Entry::transposed("fc.weight", &[CLASSES, LENGTH * d]));
        entries.push(Entry::same("fc.bias", &[CLASSES]));
        entries
    }

    fn buffers(_: &ModelSize) -> Vec<Entry> {
        Vec::new()
    }

    fn layers(size: &ModelSize) -> Vec<String> {
        let layers = TransformerSize::from(size).layers;
        let stages = ["attn", "norm1", "ff", "norm2"];
        let mut names = vec!["embed".to_string()];
        for i in 0..layers {
            names.extend(stages.iter().map(|stage| match layers {
                1 => stage.to_string(),
                _ => format!("{stage}.{i}"),
            }));
        }
        names.push("fc".to_string());
        names
    }

    fn init(size: &ModelSize, device: &Device) -> Self {
        let s = TransformerSize::from(size);
        Transformer {
            embed: LinearConfig::new(1, s.d_model).init(device),
            enc: (0..s.layers)
                .map(|_| TransformerEncoderLayer::new(&encoder_config(s), device))
                .collect(),
            fc: LinearConfig::new(LENGTH * s.d_model, CLASSES).init(device),
        }
    }

    /// PyTorch's layer prefix to the index in `enc`, then each submodule's name to Burn's
    /// (the norms' weight/bias are gamma/beta through the adapter). The packed
    /// `…self_attn.in_proj_weight`/`in_proj_bias` come out as `enc.{i}.self_attn.…`, which
    /// is no Burn path: burn-store leaves them unused.
    fn pytorch_keys(size: &ModelSize) -> Vec<(String, String)> {
        let layer = match TransformerSize::from(size).layers {
            1 => (r"^enc\.", "enc.0."),
            _ => (r"^enc\.layers\.(\d+)\.", "enc.${1}."),
        };
        [
            layer,
            (r"\.self_attn\.out_proj\.", ".mha.output."),
            (r"\.linear1\.", ".pwff.linear_inner."),
            (r"\.linear2\.", ".pwff.linear_outer."),
            (r"\.norm1\.", ".norm_1."),
            (r"\.norm2\.", ".norm_2."),
        ]
        .map(|(from, to)| (from.to_string(), to.to_string()))
        .to_vec()
    }

    fn build(arrays: &Arrays) -> Self {
        let s = TransformerSize::from(&arrays.size());
        let mut m = Self::init(&arrays.size(), arrays.device());
        m.embed.weight = arrays.param("embed.weight");
        m.embed.bias = Some(arrays.param("embed.bias"));
        for (i, layer) in m.enc.iter_mut().enumerate() {
            build_layer(layer, arrays, &prefix(i, s.layers));
        }
        m.fc.weight = arrays.param("fc.weight");
        m.fc.bias = Some(arrays.param("fc.bias"));
        m
    }

    /// d_model and heads from the first layer's attention, d_ff from its linear1, layers
    /// from their count; every layer holds the same sizes.
    fn size(&self) -> ModelSize {
        let (d_model, heads, d_ff) = layer_size(&self.enc[0]);
        for layer in &self.enc[1..] {
            assert_eq!(layer_size(layer), (d_model, heads, d_ff), "layer sizes");
        }
        ModelSize::from(TransformerSize {
            d_model,
            heads,
            layers: self.enc.len(),
            d_ff,
        })
    }

    fn param_ids(&self) -> Vec<ParamId> {
        let some = |b: &Option<Param<Tensor<1>>>| b.as_ref().expect("bias").id;
        let mut ids = vec![self.embed.weight.id, some(&self.embed.bias)];
        for layer in &self.enc {
            ids.extend(layer_ids(layer));
        }
        ids.extend([self.fc.weight.id, some(&self.fc.bias)]);
        ids
    }

    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    /// embed (the input [N, 1, 16] read as [N, 16, 1]), then
    /// `TransformerEncoderLayer::forward` (norm_first false, no mask) of each layer in turn,
    /// its calls in its order, cut into the recorded layers (attn, norm1, ff, norm2), then fc
    /// (the flatten first).
    fn stage(&self, k: usize, x: Act) -> Act {
        let last = 1 + 4 * self.enc.len();
        if k == 0 {
            return self.embed.forward(x.r3().swap_dims(1, 2)).into();
        }
        if k == last {
            return self.fc.forward(x.r3().flatten::<2>(1, 2)).into();
        }
        let enc = self
            .enc
            .get((k - 1) / 4)
            .unwrap_or_else(|| panic!("the transformer has no layer {k}"));
        let x = x.r3();
        match (k - 1) % 4 {
            0 => {
                let residual = enc.mha.forward(MhaInput::self_attn(x.clone())).context;
                x + enc.dropout.forward(residual)
            }
            1 => enc.norm_1.forward(x),
            2 => {
                let residual = enc.pwff.forward(x.clone());
                x + enc.dropout.forward(residual)
            }
            _ => enc.norm_2.forward(x),
        }
        .into()
    }

    /// The first layer's settings; every layer holds the same.
    fn layer_hyperparameters(&self) -> Value {
        let first = layer_settings(&self.enc[0]);
        for layer in &self.enc[1..] {
            assert_eq!(layer_settings(layer), first, "layer settings");
        }
        first
    }
}

fn activation_name(a: &burn::nn::activation::Activation) -> &'static str {
    use burn::nn::activation::Activation;
    match a {
        Activation::Gelu(g) if !g.approximate => "gelu",
        Activation::Gelu(_) => "gelu_tanh",
        Activation::Relu(_) => "relu",
        _ => "other",
    }
}

/// LayerNorm's epsilon as the module holds it (see cnn_bn.rs: read from its display).
fn layer_norm_epsilon(ln: &LayerNorm) -> f64 {
    super::cnn_bn::layer_norm_epsilon(ln)
}
