//! torchvision's `resnet18(num_classes=10)` in Burn (torchvision/models/resnet.py: `ResNet`
//! with `BasicBlock` and layers [2, 2, 2, 2]), written with Burn's own modules and Burn's
//! defaults where a porter keeps them: BatchNorm's momentum 0.1 and epsilon 1e-5 (PyTorch's
//! too), the convolutions without bias, as torchvision builds them.
//!
//! Burn's field names are PyTorch's (a block's `Vec` index is its `layer1.0`), but for the
//! shortcut, torchvision's `nn.Sequential` `downsample.0` (the 1×1 convolution) and
//! `downsample.1` (its BatchNorm), here a struct: `pytorch_keys` maps the two.

use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d, Relu};
use burn::prelude::*;
use parity_train::port::{Layers, Port};
use std::process::ExitCode;

/// A k×k convolution of `stride` without bias, padded to keep the size at stride 1.
fn conv(channels: [usize; 2], k: usize, stride: usize, device: &Device) -> Conv2d {
    let pad = k / 2;
    Conv2dConfig::new(channels, [k, k])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
        .with_bias(false)
        .init(device)
}

#[derive(Module, Debug)]
pub struct Downsample {
    conv: Conv2d,
    bn: BatchNorm,
}

#[derive(Module, Debug)]
pub struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm,
    relu: Relu,
    conv2: Conv2d,
    bn2: BatchNorm,
    downsample: Option<Downsample>,
}

impl BasicBlock {
    fn new(channels: [usize; 2], stride: usize, device: &Device) -> Self {
        let [cin, cout] = channels;
        let downsample = (stride != 1 || cin != cout).then(|| Downsample {
            conv: conv([cin, cout], 1, stride, device),
            bn: BatchNormConfig::new(cout).init(device),
        });
        BasicBlock {
            conv1: conv([cin, cout], 3, stride, device),
            bn1: BatchNormConfig::new(cout).init(device),
            relu: Relu::new(),
            conv2: conv([cout, cout], 3, 1, device),
            bn2: BatchNormConfig::new(cout).init(device),
            downsample,
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let out = self
            .relu
            .forward(self.bn1.forward(self.conv1.forward(x.clone())));
        let out = self.bn2.forward(self.conv2.forward(out));
        let identity = match &self.downsample {
            Some(d) => d.bn.forward(d.conv.forward(x)),
            None => x,
        };
        self.relu.forward(out + identity)
    }
}

#[derive(Module, Debug)]
pub struct ResNet18 {
    conv1: Conv2d,
    bn1: BatchNorm,
    relu: Relu,
    maxpool: MaxPool2d,
    layer1: Vec<BasicBlock>,
    layer2: Vec<BasicBlock>,
    layer3: Vec<BasicBlock>,
    layer4: Vec<BasicBlock>,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear,
}

impl Port for ResNet18 {
    type Input = Tensor<4>;

    fn init(device: &Device) -> Self {
        let stage = |cin: usize, cout: usize, stride: usize| {
            vec![
                BasicBlock::new([cin, cout], stride, device),
                BasicBlock::new([cout, cout], 1, device),
            ]
        };
        ResNet18 {
            conv1: conv([3, 64], 7, 2, device),
            bn1: BatchNormConfig::new(64).init(device),
            relu: Relu::new(),
            maxpool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            layer1: stage(64, 64, 1),
            layer2: stage(64, 128, 2),
            layer3: stage(128, 256, 2),
            layer4: stage(256, 512, 2),
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: LinearConfig::new(512, 10).init(device),
        }
    }

    fn forward(&self, x: Tensor<4>, layers: &mut Layers) -> Tensor<2> {
        let x = layers.layer("conv1", x, |x| self.conv1.forward(x));
        let mut x = self.maxpool.forward(self.relu.forward(self.bn1.forward(x)));
        let stages = [&self.layer1, &self.layer2, &self.layer3, &self.layer4];
        for (i, blocks) in stages.into_iter().enumerate() {
            for (j, block) in blocks.iter().enumerate() {
                x = layers.layer(&format!("layer{}.{j}", i + 1), x, |x| block.forward(x));
            }
        }
        let x = self.avgpool.forward(x).flatten::<2>(1, 3);
        layers.layer("fc", x, |x| self.fc.forward(x))
    }

    fn pytorch_keys() -> Vec<(String, String)> {
        vec![
            (r"\.downsample\.0\.".into(), ".downsample.conv.".into()),
            (r"\.downsample\.1\.".into(), ".downsample.bn.".into()),
        ]
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<ResNet18>()
}
