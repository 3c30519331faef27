//! Conv1d(1→C, k=K, no bias) → BatchNorm(C) → GELU (exact) → LayerNorm(P) → flatten →
//! Linear(C·P→3), P = 16 − K + 1 (the seed's C = 4, K = 5: LayerNorm(12), Linear(48→3)).
//!
//! The convolution has no bias, as is usual before a BatchNorm: the normalization removes
//! any per-channel constant, so a bias there would get a gradient that is pure rounding
//! noise (~1e-17 in f64), which Adam turns into ±lr steps that differ between frameworks.
//!
//! Burn names the norms' affine parameters gamma/beta; the run file uses PyTorch's
//! weight/bias. The running statistics are Burn's `RunningState`s, updated by the
//! train-mode forward (`BatchNorm::forward_train`) and used by the eval forward after
//! `valid()`.

use burn::module::{Module, Param, ParamId, RunningState};
use burn::nn::conv::{Conv1d, Conv1dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Gelu, LayerNorm, LayerNormConfig, Linear, LinearConfig,
};
use burn::tensor::{Device, Tensor};
use serde_json::{Value, json};

use super::{
    Act, Arrays, CLASSES, Cnn1d, ConvSize, Entry, LENGTH, ModelSize, ParityModel, SizeKeys,
};

/// PyTorch's defaults, passed explicitly.
const BN_MOMENTUM: f64 = 0.1;
const BN_EPS: f64 = 1e-5;
const LN_EPS: f64 = 1e-5;

#[derive(Module, Debug)]
pub struct CnnBn {
    pub conv: Conv1d,
    pub bn: BatchNorm,
    pub gelu: Gelu,
    pub ln: LayerNorm,
    pub fc: Linear,
}

impl ParityModel for CnnBn {
    const NAME: &'static str = "cnn_bn";
    type Input = Tensor<3>;
    /// cnn1d's: channels and kernel.
    const SIZE: SizeKeys = Cnn1d::SIZE;

    /// A kernel at most the input's length.
    fn check_size(size: &ModelSize) -> Result<(), String> {
        ConvSize::from(size).check()
    }

    /// [1, 16]: one channel of the sine data's 16 steps, at every size.
    fn sample(_: &ModelSize) -> Vec<usize> {
        vec![1, LENGTH]
    }

    fn params(size: &ModelSize) -> Vec<Entry> {
        let s = ConvSize::from(size);
        let (c, p) = (s.channels, s.positions());
        vec![
            Entry::same("conv.weight", &[c, 1, s.kernel]),
            Entry::same("bn.weight", &[c]),
            Entry::same("bn.bias", &[c]),
            Entry::same("ln.weight", &[p]),
            Entry::same("ln.bias", &[p]),
            // Burn's Linear weight is [in, out]; PyTorch's is [out, in].
            Entry::transposed("fc.weight", &[CLASSES, c * p]),
            Entry::same("fc.bias", &[CLASSES]),
        ]
    }

    fn buffers(size: &ModelSize) -> Vec<Entry> {
        let c = ConvSize::from(size).channels;
        vec![
            Entry::same("bn.running_mean", &[c]),
            Entry::same("bn.running_var", &[c]),
        ]
    }

    fn layers(_: &ModelSize) -> Vec<String> {
        ["conv", "bn", "gelu", "ln", "fc"]
            .map(String::from)
            .to_vec()
    }

    fn init(size: &ModelSize, device: &Device) -> Self {
        let s = ConvSize::from(size);
        let (c, p) = (s.channels, s.positions());
        CnnBn {
            conv: Conv1dConfig::new(1, c, s.kernel)
                .with_bias(false)
                .init(device),
            bn: BatchNormConfig::new(c)
                .with_momentum(BN_MOMENTUM)
                .with_epsilon(BN_EPS)
                .init(device),
            gelu: Gelu::new(),
            ln: LayerNormConfig::new(p).with_epsilon(LN_EPS).init(device),
            fc: LinearConfig::new(c * p, CLASSES).init(device),
        }
    }

    /// The Burn paths are PyTorch's names, but for the norms' gamma/beta, which
    /// `PyTorchToBurnAdapter` takes from PyTorch's weight/bias (the running statistics have
    /// the same names on both sides).
    fn pytorch_keys(_: &ModelSize) -> Vec<(String, String)> {
        Vec::new()
    }

    fn build(arrays: &Arrays) -> Self {
        let mut m = Self::init(&arrays.size(), arrays.device());
        m.conv.weight = arrays.param("conv.weight");
        m.bn.gamma = arrays.param("bn.weight");
        m.bn.beta = arrays.param("bn.bias");
        m.bn.running_mean = RunningState::new(arrays.tensor("bn.running_mean"));
        m.bn.running_var = RunningState::new(arrays.tensor("bn.running_var"));
        m.ln.gamma = arrays.param("ln.weight");
        m.ln.beta = Some(arrays.param("ln.bias"));
        m.fc.weight = arrays.param("fc.weight");
        m.fc.bias = Some(arrays.param("fc.bias"));
        m
    }

    /// Channels and kernel from the conv weight [C, 1, K].
    fn size(&self) -> ModelSize {
        let [channels, _, kernel] = self.conv.weight.shape().dims();
        ModelSize::from(ConvSize { channels, kernel })
    }

    fn param_ids(&self) -> Vec<ParamId> {
        let some = |b: &Option<Param<Tensor<1>>>| b.as_ref().expect("bias").id;
        vec![
            self.conv.weight.id,
            self.bn.gamma.id,
            self.bn.beta.id,
            self.ln.gamma.id,
            some(&self.ln.beta),
            self.fc.weight.id,
            some(&self.fc.bias),
        ]
    }

    /// The running statistics with this thread's pending update applied (`RunningState`
    /// holds the latest `forward_train` update apart until synchronised).
    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        vec![
            self.bn.running_mean.value_sync(),
            self.bn.running_var.value_sync(),
        ]
    }

    /// The running statistics replaced (`RunningState`s holding these values).
    fn set_buffers(&mut self, buffers: Vec<Tensor<1>>) {
        let [mean, var] = <[Tensor<1>; 2]>::try_from(buffers).expect("cnn_bn's two buffers");
        self.bn.running_mean = RunningState::new(mean);
        self.bn.running_var = RunningState::new(var);
    }

    /// conv, bn (train mode on an autodiff device: the batch's statistics), gelu, ln, fc
    /// (the flatten [N, C, P] → [N, C·P] first).
    fn stage(&self, k: usize, x: Act) -> Act {
        match k {
            0 => self.conv.forward(x.r3()).into(),
            1 => self.bn.forward(x.r3()).into(),
            2 => self.gelu.forward(x.r3()).into(),
            3 => self.ln.forward(x.r3()).into(),
            4 => self.fc.forward(x.r3().flatten::<2>(1, 2)).into(),
            _ => panic!("cnn_bn has no layer {k}"),
        }
    }

    fn layer_hyperparameters(&self) -> Value {
        json!({
            "bn.momentum": self.bn.momentum,
            "bn.eps": self.bn.epsilon,
            "ln.eps": layer_norm_epsilon(&self.ln),
            "gelu.approximate": if self.gelu.approximate { "tanh" } else { "none" },
            // BatchNorm::forward_train feeds the running variance with batch_norm_train's
            // variance, the mean of squared deviations (burn-nn src/modules/norm/batch.rs;
            // burn-backend src/backend/ops/modules/base.rs, batch_norm_train).
            "bn.running_var_estimator": "biased",
        })
    }
}

/// LayerNorm's epsilon as the module holds it: the field is private, so it is read from the
/// module's display (`LayerNorm {d_model: 12, epsilon: 0.00001, ...}`), which prints the
/// f64 in its shortest round-trip form.
pub(super) fn layer_norm_epsilon(ln: &LayerNorm) -> f64 {
    let text = ln.to_string();
    text.split("epsilon:")
        .nth(1)
        .and_then(|rest| rest.split([',', '}', '\n']).next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no epsilon in LayerNorm's display: {text}"))
}
