//! The seed's 1-D CNN: Conv1d(1→4, k=5) → ReLU → flatten → Linear(48→3).

use burn::module::{Module, ParamId};
use burn::nn::conv::{Conv1d, Conv1dConfig};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::Tensor;
use serde_json::{Value, json};

use super::{Arrays, Entry, ParityModel, Probe};

#[derive(Module, Debug)]
pub struct Cnn1d {
    pub conv: Conv1d,
    pub fc: Linear,
    pub relu: Relu,
}

impl ParityModel for Cnn1d {
    const NAME: &'static str = "cnn1d";
    const PARAMS: &'static [Entry] = &[
        Entry::same("conv.weight", &[4, 1, 5]),
        Entry::same("conv.bias", &[4]),
        // Burn's Linear weight is [in, out]; PyTorch's is [out, in].
        Entry::transposed("fc.weight", &[3, 48]),
        Entry::same("fc.bias", &[3]),
    ];
    const BUFFERS: &'static [Entry] = &[];
    const LAYERS: &'static [&'static str] = &["conv", "relu", "fc"];
    const SAMPLE: [usize; 2] = [1, 16];

    fn build(arrays: &Arrays) -> Self {
        let device = arrays.device();
        let mut m = Cnn1d {
            conv: Conv1dConfig::new(1, 4, 5).init(device),
            fc: LinearConfig::new(48, 3).init(device),
            relu: Relu::new(),
        };
        m.conv.weight = arrays.param("conv.weight");
        m.conv.bias = Some(arrays.param("conv.bias"));
        m.fc.weight = arrays.param("fc.weight");
        m.fc.bias = Some(arrays.param("fc.bias"));
        m
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

    fn buffers(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    fn forward(&self, x: Tensor<3>, p: &mut Probe) -> Tensor<2> {
        let h = p.layer(x, |x| self.conv.forward(x));
        let h = p.layer(h, |h| self.relu.forward(h));
        p.layer(h.flatten(1, 2), |h| self.fc.forward(h))
    }

    fn layer_hyperparameters(&self) -> Value {
        json!({})
    }
}
