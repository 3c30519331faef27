//! A small LeNet for the 8×8 digits (`x` [N, 1, 8, 8] F32, `y` [N] I64, 10 classes):
//!
//! ```text
//! conv1: Conv2d(1 → C1, 3×3, stride 1, padding 1) → ReLU → MaxPool2d(2, stride 2)   8×8 → 4×4
//! conv2: Conv2d(C1 → C2, 3×3, stride 1, padding 1) → ReLU → AvgPool2d(2, stride 2)  4×4 → 2×2
//! flatten [N, C2·4] (channel-major, PyTorch's h.flatten(1))
//! fc1: Linear(C2·4 → H) → ReLU → fc2: Linear(H → 10)
//! ```
//!
//! The seed's sizes are C1 6, C2 16, H 32. The Burn paths are PyTorch's names (`conv1.weight`
//! …); the Linear weights are Burn's [in, out], PyTorch's transposed. No buffers. The
//! pools' strides are passed explicitly (Burn's pool configs default the stride to the
//! kernel, burn-nn src/modules/pool/max_pool2d.rs and avg_pool2d.rs, which is 2 here too);
//! AvgPool2d has no padding, so its `count_include_pad` does not matter (PyTorch's default,
//! true, is passed).

use burn::module::{Module, Param, ParamId};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AvgPool2d, AvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d, Relu};
use burn::tensor::{Device, Tensor};
use serde_json::{Value, json};

use super::{Act, Arrays, Entry, LeNetSize, ModelSize, ParityModel, SizeKeys};

/// The side of each digit image: `x` is [N, 1, 8, 8].
pub const SIDE: usize = 8;
/// The classes of the digits (the output is [N, 10]).
pub const DIGITS: usize = 10;
/// The convolutions' kernel (3×3, padding 1: the side kept).
const KERNEL: usize = 3;
/// The positions left after the two pools of 2: (8 / 4)² = 4.
const POOLED: usize = (SIDE / 4) * (SIDE / 4);

#[derive(Module, Debug)]
pub struct LeNet {
    pub conv1: Conv2d,
    pub pool1: MaxPool2d,
    pub conv2: Conv2d,
    pub pool2: AvgPool2d,
    pub fc1: Linear,
    pub fc2: Linear,
    pub relu: Relu,
}

/// Conv2d(`input` → `output`, 3×3, stride 1, padding 1), PyTorch's settings.
fn conv(input: usize, output: usize, device: &Device) -> Conv2d {
    Conv2dConfig::new([input, output], [KERNEL, KERNEL])
        .with_stride([1, 1])
        .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
        .with_bias(true)
        .init(device)
}

/// One number of a square setting ([h, w] with h = w), as PyTorch's int argument.
fn square(setting: [usize; 2], what: &str) -> usize {
    assert_eq!(setting[0], setting[1], "{what}: a square setting");
    setting[0]
}

/// A padding the same on every side, as PyTorch's int `padding` (none is 0).
fn padding(p: &PaddingConfig2d, what: &str) -> usize {
    match *p {
        PaddingConfig2d::Valid => 0,
        PaddingConfig2d::Explicit(top, left, bottom, right)
            if top == left && top == bottom && top == right =>
        {
            top
        }
        ref other => panic!("{what}: padding {other:?} is not the same on every side"),
    }
}

impl ParityModel for LeNet {
    const NAME: &'static str = "lenet";
    type Input = Tensor<4>;
    const SIZE: SizeKeys = &[("conv1", 6), ("conv2", 16), ("hidden", 32)];

    /// [1, 8, 8]: one grey 8×8 image, at every size.
    fn sample(_: &ModelSize) -> Vec<usize> {
        vec![1, SIDE, SIDE]
    }

    fn params(size: &ModelSize) -> Vec<Entry> {
        let LeNetSize {
            conv1,
            conv2,
            hidden,
        } = LeNetSize::from(size);
        vec![
            Entry::same("conv1.weight", &[conv1, 1, KERNEL, KERNEL]),
            Entry::same("conv1.bias", &[conv1]),
            Entry::same("conv2.weight", &[conv2, conv1, KERNEL, KERNEL]),
            Entry::same("conv2.bias", &[conv2]),
            // Burn's Linear weight is [in, out]; PyTorch's is [out, in].
            Entry::transposed("fc1.weight", &[hidden, conv2 * POOLED]),
            Entry::same("fc1.bias", &[hidden]),
            Entry::transposed("fc2.weight", &[DIGITS, hidden]),
            Entry::same("fc2.bias", &[DIGITS]),
        ]
    }

    fn buffers(_: &ModelSize) -> Vec<Entry> {
        Vec::new()
    }

    /// The flatten is no layer: a reshape at the start of the fc1 stage.
    fn layers(_: &ModelSize) -> Vec<String> {
        [
            "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "fc1", "relu3", "fc2",
        ]
        .map(String::from)
        .to_vec()
    }

    fn init(size: &ModelSize, device: &Device) -> Self {
        let s = LeNetSize::from(size);
        LeNet {
            conv1: conv(1, s.conv1, device),
            pool1: MaxPool2dConfig::new([2, 2])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Valid)
                .with_dilation([1, 1])
                .with_ceil_mode(false)
                .init(),
            conv2: conv(s.conv1, s.conv2, device),
            pool2: AvgPool2dConfig::new([2, 2])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Valid)
                .with_count_include_pad(true)
                .with_ceil_mode(false)
                .init(),
            fc1: LinearConfig::new(s.conv2 * POOLED, s.hidden).init(device),
            fc2: LinearConfig::new(s.hidden, DIGITS).init(device),
            relu: Relu::new(),
        }
    }

    /// The Burn paths are PyTorch's names.
    fn pytorch_keys(_: &ModelSize) -> Vec<(String, String)> {
        Vec::new()
    }

    fn build(arrays: &Arrays) -> Self {
        let mut m = Self::init(&arrays.size(), arrays.device());
        m.conv1.weight = arrays.param("conv1.weight");
        m.conv1.bias = Some(arrays.param("conv1.bias"));
        m.conv2.weight = arrays.param("conv2.weight");
        m.conv2.bias = Some(arrays.param("conv2.bias"));
        m.fc1.weight = arrays.param("fc1.weight");
        m.fc1.bias = Some(arrays.param("fc1.bias"));
        m.fc2.weight = arrays.param("fc2.weight");
        m.fc2.bias = Some(arrays.param("fc2.bias"));
        m
    }

    /// conv1 and conv2 from conv2's weight [C2, C1, 3, 3], hidden from fc1's weight (Burn's
    /// [C2·4, H]).
    fn size(&self) -> ModelSize {
        let [conv2, conv1, _, _] = self.conv2.weight.shape().dims();
        let [_, hidden] = self.fc1.weight.shape().dims();
        ModelSize::from(LeNetSize {
            conv1,
            conv2,
            hidden,
        })
    }

    fn param_ids(&self) -> Vec<ParamId> {
        let bias = |b: &Option<Param<Tensor<1>>>| b.as_ref().expect("bias").id;
        vec![
            self.conv1.weight.id,
            bias(&self.conv1.bias),
            self.conv2.weight.id,
            bias(&self.conv2.bias),
            self.fc1.weight.id,
            bias(&self.fc1.bias),
            self.fc2.weight.id,
            bias(&self.fc2.bias),
        ]
    }

    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    /// conv1, relu1, pool1, conv2, relu2, pool2, fc1 (the flatten first), relu3, fc2.
    fn stage(&self, k: usize, x: Act) -> Act {
        match k {
            0 => self.conv1.forward(x.r4()).into(),
            1 | 4 => self.relu.forward(x.r4()).into(),
            2 => self.pool1.forward(x.r4()).into(),
            3 => self.conv2.forward(x.r4()).into(),
            5 => self.pool2.forward(x.r4()).into(),
            // [N, C2, 2, 2] → [N, C2·4], channel-major as PyTorch's flatten(1).
            6 => self.fc1.forward(x.r4().flatten::<2>(1, 3)).into(),
            7 => self.relu.forward(x.r2()).into(),
            8 => self.fc2.forward(x.r2()).into(),
            _ => panic!("lenet has no layer {k}"),
        }
    }

    /// The convolutions' and pools' settings as the modules hold them, under the keys the
    /// PyTorch side records (models/model_specs.py): both convolutions' kernel and padding,
    /// each pool's kind, both pools' kernel and stride (each the same for both, asserted;
    /// square, one number). The convolutions' stride is 1 (asserted), as PyTorch's.
    fn layer_hyperparameters(&self) -> Value {
        let (c1, c2) = (&self.conv1, &self.conv2);
        let (p1, p2) = (&self.pool1, &self.pool2);
        assert_eq!(c1.kernel_size, c2.kernel_size, "the convolutions' kernels");
        assert_eq!(c1.padding, c2.padding, "the convolutions' padding");
        assert_eq!(
            [c1.stride, c2.stride],
            [[1, 1]; 2],
            "the convolutions' stride"
        );
        assert_eq!(p1.kernel_size, p2.kernel_size, "the pools' kernels");
        assert_eq!(p1.stride, p2.stride, "the pools' strides");
        assert_eq!(
            [&p1.padding, &p2.padding],
            [&PaddingConfig2d::Valid; 2],
            "the pools' padding"
        );
        json!({
            "conv.kernel": square(c1.kernel_size, "conv.kernel"),
            "conv.padding": padding(&c1.padding, "conv"),
            // The pools' kinds: the modules' types.
            "pool1": "max",
            "pool2": "avg",
            "pool.kernel": square(p1.kernel_size, "pool.kernel"),
            "pool.stride": square(p1.stride, "pool.stride"),
        })
    }
}
