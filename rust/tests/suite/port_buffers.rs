//! A port with buffers: the built-in cnn_bn written as a user's port (its BatchNorm's
//! running mean and variance loaded from the weights file, updated by the train-mode
//! forward, recorded after each step) trains exactly as the built-in model does, and
//! records its BatchNorm's settings by PyTorch's layer name.

use crate::common;

use burn::module::Module;
use burn::nn::conv::{Conv1d, Conv1dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Gelu, LayerNorm, LayerNormConfig, Linear, LinearConfig,
};
use burn::tensor::{Device, Tensor};
use parity_train::config;
use parity_train::models::CnnBn;
use parity_train::port::{self, Layers, Port};
use parity_train::record::Output;
use parity_train::run::Run;
use parity_train::train;

/// cnn_bn at the seed's sizes (C = 4, K = 5, P = 12), as a porter writes it; its BatchNorm
/// keeps Burn's default momentum (0.1, PyTorch's too), its `bn` named `norm` in Burn.
#[derive(Module, Debug)]
struct BnPort {
    conv: Conv1d,
    norm: BatchNorm,
    gelu: Gelu,
    ln: LayerNorm,
    fc: Linear,
}

impl Port for BnPort {
    type Input = Tensor<3>;

    fn init(device: &Device) -> Self {
        BnPort {
            conv: Conv1dConfig::new(1, 4, 5).with_bias(false).init(device),
            norm: BatchNormConfig::new(4).init(device),
            gelu: Gelu::new(),
            ln: LayerNormConfig::new(12).init(device),
            fc: LinearConfig::new(48, 3).init(device),
        }
    }

    fn forward(&self, x: Tensor<3>, layers: &mut Layers) -> Tensor<2> {
        let x = layers.layer("conv", x, |x| self.conv.forward(x));
        let x = layers.layer("bn", x, |x| self.norm.forward(x));
        let x = layers.layer("gelu", x, |x| self.gelu.forward(x));
        let x = layers.layer("ln", x, |x| self.ln.forward(x));
        layers.layer("fc", x, |x| self.fc.forward(x.flatten::<2>(1, 2)))
    }

    fn pytorch_keys() -> Vec<(String, String)> {
        vec![(r"^bn\.".into(), "norm.".into())]
    }
}

const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0.9, dampening: 0.0, weight_decay: 0.0, nesterov: false";

#[test]
fn a_batchnorm_port_trains_exactly_as_the_built_in_cnn_bn() {
    let arrays = common::cnn_bn_arrays(common::CONV);
    let data = common::dataset(arrays.clone());
    let device = common::f64_device().autodiff();
    let shapes: Vec<(&str, Vec<usize>)> = arrays[2..]
        .iter()
        .map(|(name, a)| (name.as_str(), a.shape.clone()))
        .collect();
    let layers = ["conv", "bn", "gelu", "ln", "fc"];
    let experiment = format!("{SGD}, model: port, data: file, probe_steps: [1, 6]");
    let spec = config::parse(&common::port::spec_with(
        &experiment,
        6,
        16,
        &shapes,
        &layers,
    ))
    .unwrap();
    port::prepare::<BnPort>(&spec, &data, &device).unwrap();
    let (ported, _) =
        train::run_into::<BnPort>(Run::new(&spec, &data, &device), Output::Inline).unwrap();
    let built_in = config::parse(&common::resolved(
        &format!("{SGD}, model: cnn_bn, probe_steps: [1, 6]"),
        6,
        16,
    ))
    .unwrap();
    let (reference, _) =
        train::run_into::<CnnBn>(Run::new(&built_in, &data, &device), Output::Inline).unwrap();
    let (ported, reference) = (common::json(ported), common::json(reference));
    // Compared whole, reported by name (the values run to thousands of numbers).
    for part in [
        "losses",
        "final",
        "params",
        "buffers",
        "trajectory",
        "layers",
    ] {
        assert!(
            ported[part] == reference[part],
            "the port's {part} differ from cnn_bn's"
        );
    }
    // The running statistics moved from the file's 0 and 1, and are the buffers recorded.
    let mean = common::list(&ported["buffers"]["bn.running_mean"]);
    assert!(mean.iter().any(|&m| m != 0.0), "{mean:?}");
    assert_eq!(
        ported["buffers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["bn.running_mean", "bn.running_var"]
    );
    // Its layers' settings, by PyTorch's layer name (the port's BatchNorm is Burn's `norm`),
    // the keys cnn_bn records holding the same values.
    let held = &ported["meta"]["layer_hyperparameters"];
    assert_eq!(
        held,
        &serde_json::json!({
            "conv.stride": [1], "conv.dilation": [1], "conv.groups": 1, "conv.padding": [0],
            "bn.momentum": 0.1, "bn.eps": 1e-5, "bn.running_var_estimator": "biased",
            "gelu.approximate": "none", "gelu.backward": "none", "ln.eps": 1e-5, "ln.bias": true,
            "fc.bias": true,
        })
    );
    let reference_held = reference["meta"]["layer_hyperparameters"]
        .as_object()
        .unwrap();
    for (key, value) in reference_held {
        assert_eq!(&held[key], value, "{key}");
    }
}
