//! Linear(1→8) per token → one post-norm transformer encoder layer (d_model 8, 2 heads,
//! feed-forward 16, GELU, dropout 0) → flatten → Linear(128→3).
//!
//! The input [N, 1, 16] is read as 16 tokens of one scalar ([N, 16, 1]). The encoder layer is
//! Burn's `TransformerEncoderLayer` (burn-nn src/modules/transformer/encoder.rs), built by
//! its config with PyTorch's settings passed explicitly; its initializer does not matter, as
//! every parameter is replaced by the dataset's. With `norm_first` false its forward is
//!
//! ```text
//! h = norm_1(x + dropout(mha(x)));  out = norm_2(h + dropout(pwff(h)))
//! ```
//!
//! which is nn.TransformerEncoderLayer's post-norm forward with PyTorch's norm1 as Burn's
//! norm_1 and norm2 as norm_2. [`Transformer::forward`] runs those same calls on the layer's
//! own submodules, cut into the recorded layers (embed, attn = x + mha(x), norm1,
//! ff = h + pwff(h), norm2, fc); a test checks it gives exactly the layer's forward.
//!
//! PyTorch packs the query, key and value projections into `in_proj_weight` [24, 8] (rows
//! 0..8, 8..16, 16..24, each [out, in]) and `in_proj_bias` [24]; Burn holds three Linear
//! layers (`mha.query`, `mha.key`, `mha.value`, each weight [in, out]): packed-rows entries
//! of three parts. The scores are divided by sqrt(d_k) = sqrt(4) = 2 (mha.rs
//! `attn_scores`), PyTorch scales the query by 1/sqrt(4) = 0.5: both exact.

use burn::module::{Module, Param, ParamId};
use burn::nn::attention::MhaInput;
use burn::nn::transformer::{TransformerEncoderConfig, TransformerEncoderLayer};
use burn::nn::{LayerNorm, Linear, LinearConfig};
use burn::tensor::Tensor;
use serde_json::{Value, json};

use super::{Arrays, Entry, Layout, ParityModel, Probe};

const D_MODEL: usize = 8;
const HEADS: usize = 2;
const D_FF: usize = 16;
/// PyTorch's defaults, passed explicitly (dropout 0 rather than either side's 0.1).
const DROPOUT: f64 = 0.0;
const LAYER_NORM_EPS: f64 = 1e-5;

#[derive(Module, Debug)]
pub struct Transformer {
    pub embed: Linear,
    pub enc: TransformerEncoderLayer,
    pub fc: Linear,
}

/// The config of the one encoder layer.
fn encoder_config() -> TransformerEncoderConfig {
    TransformerEncoderConfig::new(D_MODEL, D_FF, HEADS, 1)
        .with_dropout(DROPOUT)
        .with_norm_first(false)
        .with_quiet_softmax(false)
        .with_activation(burn::nn::activation::ActivationConfig::Gelu)
        .with_layer_norm_eps(LAYER_NORM_EPS)
}

impl Transformer {
    /// The encoder layer's own forward (no mask), for the test that the recorded stages
    /// compose to it.
    pub fn encoder_forward(&self, h: Tensor<3>) -> Tensor<3> {
        self.enc.forward(h, None, None)
    }
}

impl ParityModel for Transformer {
    const NAME: &'static str = "transformer";
    const PARAMS: &'static [Entry] = &[
        // Burn's Linear weight is [in, out]; PyTorch's is [out, in].
        Entry::transposed("embed.weight", &[8, 1]),
        Entry::same("embed.bias", &[8]),
        // query, key, value
        Entry::packed_rows(
            "enc.self_attn.in_proj_weight",
            &[24, 8],
            3,
            Layout::Transposed,
        ),
        Entry::packed_rows("enc.self_attn.in_proj_bias", &[24], 3, Layout::Same),
        Entry::transposed("enc.self_attn.out_proj.weight", &[8, 8]),
        Entry::same("enc.self_attn.out_proj.bias", &[8]),
        Entry::transposed("enc.linear1.weight", &[16, 8]),
        Entry::same("enc.linear1.bias", &[16]),
        Entry::transposed("enc.linear2.weight", &[8, 16]),
        Entry::same("enc.linear2.bias", &[8]),
        Entry::same("enc.norm1.weight", &[8]),
        Entry::same("enc.norm1.bias", &[8]),
        Entry::same("enc.norm2.weight", &[8]),
        Entry::same("enc.norm2.bias", &[8]),
        Entry::transposed("fc.weight", &[3, 128]),
        Entry::same("fc.bias", &[3]),
    ];
    const BUFFERS: &'static [Entry] = &[];
    const LAYERS: &'static [&'static str] = &["embed", "attn", "norm1", "ff", "norm2", "fc"];
    const SAMPLE: [usize; 2] = [1, 16];

    fn build(arrays: &Arrays) -> Self {
        let device = arrays.device();
        let mut m = Transformer {
            embed: LinearConfig::new(1, D_MODEL).init(device),
            enc: TransformerEncoderLayer::new(&encoder_config(), device),
            fc: LinearConfig::new(16 * D_MODEL, 3).init(device),
        };
        m.embed.weight = arrays.param("embed.weight");
        m.embed.bias = Some(arrays.param("embed.bias"));
        let mha = &mut m.enc.mha;
        for (part, linear) in [&mut mha.query, &mut mha.key, &mut mha.value]
            .into_iter()
            .enumerate()
        {
            linear.weight = arrays.param_part("enc.self_attn.in_proj_weight", part);
            linear.bias = Some(arrays.param_part("enc.self_attn.in_proj_bias", part));
        }
        mha.output.weight = arrays.param("enc.self_attn.out_proj.weight");
        mha.output.bias = Some(arrays.param("enc.self_attn.out_proj.bias"));
        let pwff = &mut m.enc.pwff;
        pwff.linear_inner.weight = arrays.param("enc.linear1.weight");
        pwff.linear_inner.bias = Some(arrays.param("enc.linear1.bias"));
        pwff.linear_outer.weight = arrays.param("enc.linear2.weight");
        pwff.linear_outer.bias = Some(arrays.param("enc.linear2.bias"));
        m.enc.norm_1.gamma = arrays.param("enc.norm1.weight");
        m.enc.norm_1.beta = Some(arrays.param("enc.norm1.bias"));
        m.enc.norm_2.gamma = arrays.param("enc.norm2.weight");
        m.enc.norm_2.beta = Some(arrays.param("enc.norm2.bias"));
        m.fc.weight = arrays.param("fc.weight");
        m.fc.bias = Some(arrays.param("fc.bias"));
        m
    }

    fn param_ids(&self) -> Vec<ParamId> {
        let some = |b: &Option<Param<Tensor<1>>>| b.as_ref().expect("bias").id;
        let mha = &self.enc.mha;
        let pwff = &self.enc.pwff;
        vec![
            self.embed.weight.id,
            some(&self.embed.bias),
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
            self.enc.norm_1.gamma.id,
            some(&self.enc.norm_1.beta),
            self.enc.norm_2.gamma.id,
            some(&self.enc.norm_2.beta),
            self.fc.weight.id,
            some(&self.fc.bias),
        ]
    }

    fn buffers(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    /// `TransformerEncoderLayer::forward` (norm_first false, no mask), its calls in its order,
    /// cut into the recorded layers.
    fn forward(&self, x: Tensor<3>, p: &mut Probe) -> Tensor<2> {
        let enc = &self.enc;
        let h = p.layer(x, |x| self.embed.forward(x.swap_dims(1, 2)));
        let h = p.layer(h, |x| {
            let residual = enc.mha.forward(MhaInput::self_attn(x.clone())).context;
            x + enc.dropout.forward(residual)
        });
        let h = p.layer(h, |h| enc.norm_1.forward(h));
        let h = p.layer(h, |x| {
            let residual = enc.pwff.forward(x.clone());
            x + enc.dropout.forward(residual)
        });
        let h = p.layer(h, |h| enc.norm_2.forward(h));
        p.layer(h.flatten(1, 2), |h| self.fc.forward(h))
    }

    fn layer_hyperparameters(&self) -> Value {
        let mha = &self.enc.mha;
        let [_, d_ff] = self.enc.pwff.linear_inner.weight.shape().dims();
        let eps = layer_norm_epsilon(&self.enc.norm_1);
        assert_eq!(eps, layer_norm_epsilon(&self.enc.norm_2));
        assert_eq!(self.enc.dropout.prob, self.enc.pwff.dropout.prob);
        assert_eq!(self.enc.dropout.prob, mha.dropout.prob);
        json!({
            "enc.d_model": mha.d_model,
            "enc.nhead": mha.n_heads,
            "enc.dim_feedforward": d_ff,
            "enc.dropout": self.enc.dropout.prob,
            "enc.norm_first": self.enc.norm_first,
            "enc.activation": activation_name(&self.enc.pwff.activation),
            "enc.layer_norm_eps": eps,
            // Burn only: softmax + 1 in the denominator when true.
            "enc.quiet_softmax": mha.quiet_softmax,
        })
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
