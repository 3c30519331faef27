//! A port refused before any step, on one line that names what to change: a Linear built
//! with in and out swapped (named before its bias's shape, which a safetensors file lists
//! first, could read as a packed array), and a BatchNorm's running statistics missing from
//! the weights file, or declared as parameters (taken for parameters, they once reached a
//! panic after the first backward: "gradient").

use crate::common;

use crate::common::f32_array;
use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::tensor::{DType, Device, Tensor};
use parity_train::config;
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::port::{self, Layers, Port};

const N: usize = 8;
const IN: usize = 12;
const OUT: usize = 48;

/// PyTorch's `nn.Linear(12, 48)`, ported as `LinearConfig::new(48, 12)`.
#[derive(Module, Debug)]
struct Swapped {
    fc: Linear,
}

impl Port for Swapped {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        Swapped {
            fc: LinearConfig::new(OUT, IN).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        layers.layer("fc", x, |x| self.fc.forward(x))
    }
}

/// A Linear and a BatchNorm (running mean and variance: buffers).
#[derive(Module, Debug)]
struct Normed {
    fc: Linear,
    bn: BatchNorm,
}

impl Port for Normed {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        Normed {
            fc: LinearConfig::new(IN, 4).init(device),
            bn: BatchNormConfig::new(4).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = layers.layer("fc", x, |x| self.fc.forward(x));
        layers.layer("bn", h, |h| self.bn.forward(h))
    }
}

/// x [8, 12], y [8] and `params` (the weights file's tensors, in its order).
fn data(params: &[(&str, Vec<usize>)]) -> Dataset {
    let mut arrays = vec![
        (
            "x".to_string(),
            f32_array(&[N, IN], |i| (0.3 * i as f64).sin()),
        ),
        (
            "y".to_string(),
            Array {
                shape: vec![N],
                values: Values::I64((0..N as i64).map(|k| k % 4).collect()),
            },
        ),
    ];
    for (name, shape) in params {
        arrays.push((name.to_string(), f32_array(shape, |i| 0.01 * i as f64)));
    }
    common::dataset(arrays)
}

fn refusal<P: Port>(params: &[(&str, Vec<usize>)], layers: &[&str]) -> String {
    let spec = config::parse(&common::port::spec_text(params, layers)).unwrap();
    let device = common::f64_device().autodiff();
    port::prepare::<P>(&spec, &data(params), &device).unwrap_err()
}

#[test]
fn names_a_linear_built_with_in_and_out_swapped_before_its_bias() {
    // safetensors lists `fc.bias` first: its shape [48] against Burn's [12] alone would
    // read as a split into 4 row blocks.
    let params = [("fc.bias", vec![OUT]), ("fc.weight", vec![OUT, IN])];
    assert_eq!(
        refusal::<Swapped>(&params, &["fc"]),
        "port tiny_mlp: Burn's Linear fc is built with in and out swapped: its weight is [48, 12] where PyTorch's fc.weight [48, 12] needs [12, 48] (Burn's Linear holds [in, out]); build it LinearConfig::new(12, 48)"
    );
}

#[test]
fn refuses_batchnorm_running_statistics_the_weights_file_lacks() {
    let params = vec![
        ("fc.weight", vec![4, IN]),
        ("fc.bias", vec![4]),
        ("bn.weight", vec![4]),
        ("bn.bias", vec![4]),
    ];
    assert_eq!(
        refusal::<Normed>(&params, &["fc", "bn"]),
        "port tiny_mlp: Burn's BatchNorm bn holds running statistics (bn.running_mean) the weights file lacks: save PyTorch's state_dict(), which holds its running_mean and running_var"
    );
}

#[test]
fn takes_batchnorm_running_statistics_as_buffers_not_parameters() {
    let params = vec![
        ("fc.weight", vec![4, IN]),
        ("fc.bias", vec![4]),
        ("bn.weight", vec![4]),
        ("bn.bias", vec![4]),
        ("bn.running_mean", vec![4]),
        ("bn.running_var", vec![4]),
    ];
    let spec = config::parse(&common::port::spec_text(&params, &["fc", "bn"])).unwrap();
    let device = common::f64_device().autodiff();
    port::prepare::<Normed>(&spec, &data(&params), &device).unwrap();
    // A running statistic declared as a parameter (a spec the Python side never writes):
    // named, not trained.
    let mut spec = spec;
    let port = spec.port.as_mut().unwrap();
    let mean = port.buffers.remove(0);
    port.params.push(mean);
    assert_eq!(
        port::prepare::<Normed>(&spec, &data(&params), &device).unwrap_err(),
        "port tiny_mlp: PyTorch parameter bn.running_mean maps to Burn's BatchNorm running statistic (a buffer, which training does not update) bn.running_mean"
    );
}

/// A port whose module depends on the run's precision: built through `init_with_dtype`.
#[derive(Module, Debug)]
struct ByDtype {
    fc: Linear,
}

impl Port for ByDtype {
    type Input = Tensor<2>;

    fn init(_: &Device) -> Self {
        panic!("the trainer builds a port through init_with_dtype")
    }

    fn init_with_dtype(device: &Device, dtype: DType) -> Self {
        assert_eq!(dtype, DType::F64, "the F64 device's precision");
        ByDtype {
            fc: LinearConfig::new(IN, 4).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        layers.layer("fc", x, |x| self.fc.forward(x))
    }
}

#[test]
fn builds_a_port_for_the_runs_precision() {
    let params = [("fc.weight", vec![4, IN]), ("fc.bias", vec![4])];
    let spec = config::parse(&common::port::spec_text(&params, &["fc"])).unwrap();
    let device = common::f64_device().autodiff();
    port::prepare::<ByDtype>(&spec, &data(&params), &device).unwrap();
}
