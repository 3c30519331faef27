//! The seed's 1-D CNN: Conv1d(1→C, k=K) → ReLU → flatten → Linear(C·P→3), P = 16 − K + 1
//! (the seed's C = 4, K = 5: Linear(48→3)).

use burn::module::{Module, ParamId};
use burn::nn::conv::{Conv1d, Conv1dConfig};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Tensor};
use serde_json::{Value, json};

use super::{Act, Arrays, CLASSES, ConvSize, Entry, LENGTH, ModelSize, ParityModel, SizeKeys};

#[derive(Module, Debug)]
pub struct Cnn1d {
    pub conv: Conv1d,
    pub fc: Linear,
    pub relu: Relu,
}

impl ParityModel for Cnn1d {
    const NAME: &'static str = "cnn1d";
    type Input = Tensor<3>;
    const SIZE: SizeKeys = &[("channels", 4), ("kernel", 5)];

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
        vec![
            Entry::same("conv.weight", &[s.channels, 1, s.kernel]),
            Entry::same("conv.bias", &[s.channels]),
            // Burn's Linear weight is [in, out]; PyTorch's is [out, in].
            Entry::transposed("fc.weight", &[CLASSES, s.channels * s.positions()]),
            Entry::same("fc.bias", &[CLASSES]),
        ]
    }

    fn buffers(_: &ModelSize) -> Vec<Entry> {
        Vec::new()
    }

    fn layers(_: &ModelSize) -> Vec<String> {
        ["conv", "relu", "fc"].map(String::from).to_vec()
    }

    fn init(size: &ModelSize, device: &Device) -> Self {
        let s = ConvSize::from(size);
        Cnn1d {
            conv: Conv1dConfig::new(1, s.channels, s.kernel).init(device),
            fc: LinearConfig::new(s.channels * s.positions(), CLASSES).init(device),
            relu: Relu::new(),
        }
    }

    /// The Burn paths are PyTorch's names.
    fn pytorch_keys(_: &ModelSize) -> Vec<(String, String)> {
        Vec::new()
    }

    fn build(arrays: &Arrays) -> Self {
        let mut m = Self::init(&arrays.size(), arrays.device());
        m.conv.weight = arrays.param("conv.weight");
        m.conv.bias = Some(arrays.param("conv.bias"));
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
        let bias = |b: &Option<burn::module::Param<Tensor<1>>>| b.as_ref().expect("bias").id;
        vec![
            self.conv.weight.id,
            bias(&self.conv.bias),
            self.fc.weight.id,
            bias(&self.fc.bias),
        ]
    }

    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    /// conv, relu, fc (the flatten [N, C, P] → [N, C·P] first).
    fn stage(&self, k: usize, x: Act) -> Act {
        match k {
            0 => self.conv.forward(x.r3()).into(),
            1 => self.relu.forward(x.r3()).into(),
            2 => self.fc.forward(x.r3().flatten::<2>(1, 2)).into(),
            _ => panic!("cnn1d has no layer {k}"),
        }
    }

    fn layer_hyperparameters(&self) -> Value {
        json!({})
    }
}
