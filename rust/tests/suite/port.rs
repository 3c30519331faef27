//! A user's own port (`parity_train::port`): matched to its spec's declaration before any
//! step, refused on one line where it does not fit, trained like a built-in model, and
//! refused by `parity-train`.

use crate::common;

use crate::common::f32_array;
use burn::module::{Module, Param};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig, Tanh};
use burn::tensor::{Device, Tensor};
use parity_train::cli;
use parity_train::config::LossKind;
use parity_train::config::{self, Spec};
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::failure::Failure;
use parity_train::models::{self, ModelSize, ParityModel};
use parity_train::port::{self, Layers, Port};
use parity_train::record::Output;
use parity_train::run::Run;
use parity_train::train;
use std::process::Command;

const FEATURES: usize = 64;
const HIDDEN: usize = 32;
const CLASSES: usize = 10;
const N: usize = 16;
/// The port's name in its spec (`port.name`).
const PORT_NAME: &str = "tiny_mlp";

/// fc1 → tanh → LayerNorm → fc2, the layers fc1, act, norm, fc2.
#[derive(Module, Debug)]
struct TinyMlp {
    fc1: Linear,
    act: Tanh,
    norm: LayerNorm,
    fc2: Linear,
}

fn tiny(device: &Device) -> TinyMlp {
    TinyMlp {
        fc1: LinearConfig::new(FEATURES, HIDDEN).init(device),
        act: Tanh::new(),
        norm: LayerNormConfig::new(HIDDEN).init(device),
        fc2: LinearConfig::new(HIDDEN, CLASSES).init(device),
    }
}

impl Port for TinyMlp {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        tiny(device)
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = layers.layer("fc1", x, |x| self.fc1.forward(x));
        let h = layers.layer("act", h, |h| self.act.forward(h));
        let h = layers.layer("norm", h, |h| self.norm.forward(h));
        layers.layer("fc2", h, |h| self.fc2.forward(h))
    }
}

/// TinyMlp whose last Linear is `head` in Burn, PyTorch's `fc2` (a `pytorch_keys` pair).
#[derive(Module, Debug)]
struct Renamed {
    fc1: Linear,
    act: Tanh,
    norm: LayerNorm,
    head: Linear,
}

impl Port for Renamed {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        let t = tiny(device);
        Renamed {
            fc1: t.fc1,
            act: t.act,
            norm: t.norm,
            head: t.fc2,
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = layers.layer("fc1", x, |x| self.fc1.forward(x));
        let h = layers.layer("act", h, |h| self.act.forward(h));
        let h = layers.layer("norm", h, |h| self.norm.forward(h));
        layers.layer("fc2", h, |h| self.head.forward(h))
    }

    fn pytorch_keys() -> Vec<(String, String)> {
        vec![(r"^fc2\.".into(), "head.".into())]
    }
}

/// A bare 2-D parameter (not a Linear's: Burn holds it as PyTorch does) and no layer
/// called `norm`: its forward records fc1, act, fc2.
#[derive(Module, Debug)]
struct Bare {
    proj: Param<Tensor<2>>,
}

impl Port for Bare {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        Bare {
            proj: Param::from_tensor(Tensor::zeros([FEATURES, CLASSES], device)),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = layers.layer("fc1", x, |x| x.matmul(self.proj.val()));
        let h = layers.layer("act", h, burn::tensor::activation::tanh);
        layers.layer("fc2", h, |h| h)
    }
}

/// The port's parameters in PyTorch's names and shapes, model order.
fn params() -> Vec<(&'static str, Vec<usize>)> {
    vec![
        ("fc1.weight", vec![HIDDEN, FEATURES]),
        ("fc1.bias", vec![HIDDEN]),
        ("norm.weight", vec![HIDDEN]),
        ("norm.bias", vec![HIDDEN]),
        ("fc2.weight", vec![CLASSES, HIDDEN]),
        ("fc2.bias", vec![CLASSES]),
    ]
}

fn spec_of(params: &[(&str, Vec<usize>)], layers: &[&str]) -> String {
    common::port::spec_text(params, layers)
}

fn spec(params: &[(&str, Vec<usize>)], layers: &[&str]) -> Spec {
    config::parse(&spec_of(params, layers)).expect("a port spec")
}

const LAYERS: [&str; 4] = ["fc1", "act", "norm", "fc2"];

/// x [16, 64], y [16] and `params` with small values.
fn arrays(params: &[(&str, Vec<usize>)]) -> Vec<(String, Array)> {
    let mut arrays = vec![
        (
            "x".to_string(),
            f32_array(&[N, FEATURES], |i| (0.37 * i as f64).sin()),
        ),
        (
            "y".to_string(),
            Array {
                shape: vec![N],
                values: Values::I64((0..N as i64).map(|k| k % CLASSES as i64).collect()),
            },
        ),
    ];
    for (k, (name, shape)) in params.iter().enumerate() {
        let scale = if name.ends_with("norm.weight") {
            0.0
        } else {
            0.1
        };
        let base = if name.ends_with("norm.weight") {
            1.0
        } else {
            0.0
        };
        arrays.push((
            name.to_string(),
            f32_array(shape, |i| base + scale * ((i + 7 * k) as f64 + 1.0).cos()),
        ));
    }
    arrays
}

fn data() -> Dataset {
    common::dataset(arrays(&params()))
}

fn device() -> Device {
    common::f64_device().autodiff()
}

fn refusal<P: Port>(params: &[(&str, Vec<usize>)], layers: &[&str]) -> String {
    port::prepare::<P>(&spec(params, layers), &data(), &device()).unwrap_err()
}

#[test]
fn reads_a_port_spec_and_refuses_a_port_without_its_declaration() {
    let spec = spec(&params(), &LAYERS);
    assert_eq!(spec.model, models::PORT);
    assert_eq!(spec.model_size, ModelSize::default());
    assert_eq!(serde_json::to_string(&spec.model_size).unwrap(), "{}");
    assert_eq!(spec.data, config::Data::File);
    let sized = serde_json::json!({"hidden": 32});
    assert_eq!(
        ModelSize::parse(models::PORT, &[], sized.as_object().unwrap()).unwrap_err(),
        "model_size.hidden: unknown key (model port is sized by no keys)"
    );
    let port = spec.port.unwrap();
    assert_eq!((port.name.as_str(), port.params.len()), ("tiny_mlp", 6));
    assert_eq!(port.layers, LAYERS);
    let text = spec_of(&params(), &LAYERS);
    let mut without: serde_json::Value = serde_json::from_str(&text).unwrap();
    without.as_object_mut().unwrap().remove("port");
    assert_eq!(
        config::parse(&without.to_string()).unwrap_err(),
        "port: missing (model port declares its port)"
    );
    let mut builtin: serde_json::Value = serde_json::from_str(&text).unwrap();
    builtin["model"] = "lenet".into();
    builtin["model_size"] = serde_json::json!({"conv1": 6, "conv2": 16, "hidden": 32});
    assert_eq!(
        config::parse(&builtin.to_string()).unwrap_err(),
        "port: only model port has one, the spec's model is lenet"
    );
}

#[test]
fn refuses_a_pytorch_parameter_the_burn_module_lacks() {
    let mut params = params();
    params[4].0 = "head.weight";
    assert_eq!(
        refusal::<TinyMlp>(&params, &LAYERS),
        "port tiny_mlp: PyTorch parameter head.weight [10, 32] has no Burn parameter; Burn parameters left unmatched: fc2.weight [32, 10]"
    );
}

#[test]
fn refuses_a_parameter_of_another_shape_naming_what_would_fit() {
    let with = |k: usize, shape: Vec<usize>| {
        let mut params = params();
        params[k].1 = shape;
        params
    };
    assert_eq!(
        refusal::<TinyMlp>(&with(0, vec![HIDDEN, 16]), &LAYERS),
        "port tiny_mlp: PyTorch parameter fc1.weight [32, 16] does not fit Burn parameter fc1.weight [64, 32] (expected [16, 32]: a Linear's weight is PyTorch's transposed); neither a transpose nor a split into equal row blocks would fit"
    );
    assert_eq!(
        refusal::<TinyMlp>(&with(0, vec![FEATURES, HIDDEN]), &LAYERS),
        "port tiny_mlp: Burn's Linear fc1 is built with in and out swapped: its weight is [64, 32] where PyTorch's fc1.weight [64, 32] needs [32, 64] (Burn's Linear holds [in, out]); build it LinearConfig::new(32, 64)"
    );
    assert_eq!(
        refusal::<TinyMlp>(&with(0, vec![3 * HIDDEN, FEATURES]), &LAYERS),
        "port tiny_mlp: PyTorch parameter fc1.weight [96, 64] does not fit Burn parameter fc1.weight [64, 32] (expected [64, 96]: a Linear's weight is PyTorch's transposed); a split into 3 equal row blocks would fit (a packed array, e.g. a qkv projection: declare it in Port::mappings, Mapping::SplitRows)"
    );
    assert_eq!(
        refusal::<TinyMlp>(&with(2, vec![HIDDEN + 1]), &LAYERS),
        "port tiny_mlp: PyTorch parameter norm.weight [33] does not fit Burn parameter norm.gamma [32] (expected [33]); neither a transpose nor a split into equal row blocks would fit"
    );
    assert_eq!(
        refusal::<Bare>(&[("proj", vec![CLASSES, FEATURES])], &["fc1", "act", "fc2"]),
        "port tiny_mlp: PyTorch parameter proj [10, 64] does not fit Burn parameter proj [64, 10] (expected [10, 64]); a transpose would fit (Burn transposes only a Linear's weight: declare it in Port::mappings, Mapping::Transposed or Mapping::AsIs)"
    );
}

#[test]
fn refuses_a_burn_parameter_no_pytorch_parameter_maps_to() {
    let mut params = params();
    params.pop();
    assert_eq!(
        refusal::<TinyMlp>(&params, &LAYERS),
        "port tiny_mlp: Burn parameter fc2.bias [10] has no PyTorch parameter of port.params mapped to it (mapped: fc1.weight, fc1.bias, norm.weight, norm.bias, fc2.weight)"
    );
}

#[test]
fn refuses_layers_the_forward_calls_other_than_the_specs() {
    assert_eq!(
        refusal::<TinyMlp>(&params(), &["fc1", "act", "fc2"]),
        "port tiny_mlp: the forward records the layers [fc1, act, norm, fc2], the spec's port.layers are [fc1, act, fc2] (layer 2: the forward's is norm, the spec's fc2)"
    );
    assert_eq!(
        refusal::<TinyMlp>(&params(), &["fc1", "act", "norm", "fc2", "softmax"]),
        "port tiny_mlp: the forward records the layers [fc1, act, norm, fc2], the spec's port.layers are [fc1, act, norm, fc2, softmax] (layer 4: the forward's is nothing, the spec's softmax)"
    );
}

#[test]
fn loads_the_datasets_weights_in_burns_layouts_through_the_remapping() {
    let data = data();
    let device = device();
    let spec = spec(&params(), &LAYERS);
    port::prepare::<Renamed>(&spec, &data, &device).unwrap();
    let model: Renamed = models::build(&spec.model_size, &data, &device).unwrap();
    assert_eq!(
        [
            model.fc1.weight.val().dims(),
            model.head.weight.val().dims()
        ],
        [[FEATURES, HIDDEN], [HIDDEN, CLASSES]],
        "Burn's Linear weights are [in, out]"
    );
    // Read back in PyTorch's layouts, the values are the dataset's.
    for ((name, _), values) in params().iter().zip(models::param_values(&model)) {
        let (_, want) = data.f32(name).unwrap();
        let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
        assert_eq!(values, want, "{name}");
    }
}

#[test]
fn trains_a_port_and_records_its_layers() {
    let data = data();
    let device = device();
    let spec = spec(&params(), &LAYERS);
    port::prepare::<TinyMlp>(&spec, &data, &device).unwrap();
    let (block, _) =
        train::run_into::<TinyMlp>(Run::new(&spec, &data, &device), Output::Inline).unwrap();
    let block = common::json(block);
    let losses = common::list(&block["losses"]);
    assert_eq!(losses.len(), 4);
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    // Steps 1 and 3 take the same batch (two batches in rotation).
    assert!(losses[2] < losses[0], "{losses:?}");
    // a port is recorded under its own name (the spec's `port.name`)
    assert_eq!(block["meta"]["model"], PORT_NAME);
    assert_eq!(block["meta"]["model_size"], serde_json::json!({}));
    assert_eq!(block["meta"]["data"], "file");
    let records = block["layers"].as_array().unwrap();
    assert_eq!(records.len(), 2, "probe steps 1 and 3");
    for record in records {
        assert_eq!(record["names"], serde_json::json!(LAYERS));
        let outputs = record["outputs"].as_array().unwrap();
        let sizes: Vec<usize> = outputs
            .iter()
            .map(|o| o.as_array().unwrap().len())
            .collect();
        assert_eq!(sizes, [8 * HIDDEN, 8 * HIDDEN, 8 * HIDDEN, 8 * CLASSES]);
        let grads: Vec<usize> = record["input_grads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_array().unwrap().len())
            .collect();
        assert_eq!(grads, [8 * FEATURES, 8 * HIDDEN, 8 * HIDDEN, 8 * HIDDEN]);
    }
}

#[test]
fn a_ports_binary_refuses_a_built_in_models_spec_on_one_line() {
    let mut builtin: serde_json::Value =
        serde_json::from_str(&spec_of(&params(), &LAYERS)).unwrap();
    builtin.as_object_mut().unwrap().remove("port");
    builtin["model"] = "lenet".into();
    builtin["model_size"] = serde_json::json!({"conv1": 6, "conv2": 16, "hidden": 32});
    let spec = config::parse(&builtin.to_string()).unwrap();
    let runner = port::runner::<TinyMlp>();
    let want = Failure::Refused(
        "experiment e trains the built-in model lenet: run parity-train, not a port's binary"
            .into(),
    );
    let trained = runner.train(Run::new(&spec, &data(), &device()), Output::Inline);
    assert_eq!(trained.unwrap_err(), want);
    let out = std::env::temp_dir().join("parity-port-never-written.safetensors");
    let local = runner.local(Run::new(&spec, &data(), &device()), &out, &out);
    assert_eq!(local.unwrap_err(), want);
    assert!(!out.exists());
}

#[test]
fn parity_train_refuses_a_port_spec_on_one_line() {
    let data = data();
    let spec = spec(&params(), &LAYERS);
    let refused = cli::builtin().train(Run::new(&spec, &data, &device()), Output::Inline);
    assert_eq!(
        refused.unwrap_err(),
        Failure::Refused(
            "experiment e trains your own port tiny_mlp: run your crate's binary, not parity-train"
                .into()
        )
    );
    let dir = std::env::temp_dir().join(format!("parity-port-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("data.safetensors"),
        common::encode(&arrays(&params())),
    )
    .unwrap();
    std::fs::write(dir.join("e.json"), spec_of(&params(), &LAYERS)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parity-train"))
        .arg("--spec")
        .arg(dir.join("e.json"))
        .args(["--dtype", "f64"])
        .arg("--data")
        .arg(dir.join("data.safetensors"))
        .arg("--out")
        .arg(dir.join("run.json"))
        .output()
        .expect("parity-train runs");
    let ran = dir.join("run.json").exists();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "parity-train: experiment e trains your own port tiny_mlp: run your crate's binary, not parity-train\n"
    );
    assert!(!ran);
}

#[test]
fn the_local_mode_of_a_port_reads_pytorchs_run_and_refuses_a_spec_its_forward_does_not_fit() {
    let data = data();
    let spec = spec(&params(), &LAYERS);
    let dir = std::env::temp_dir().join(format!("parity-port-local-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("local.safetensors");
    let runner = port::runner::<TinyMlp>();
    // Its layers run on PyTorch's recorded inputs: without PyTorch's run, one line naming it.
    let missing = runner.local(
        Run::new(&spec, &data, &device()),
        &dir.join("none.json"),
        &out,
    );
    assert!(
        matches!(&missing, Err(Failure::Failed(e)) if e.contains("none.json")),
        "{missing:?}"
    );
    assert!(!out.exists());
    // A spec its forward does not fit is refused first, as in training.
    let wrong = spec_of(&params(), &["fc1", "fc2"]);
    let refused = runner.local(
        Run::new(&config::parse(&wrong).unwrap(), &data, &device()),
        &dir.join("none.json"),
        &out,
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        matches!(&refused, Err(Failure::Failed(e)) if e.starts_with("port tiny_mlp: the forward records")),
        "{refused:?}"
    );
}

#[test]
fn trains_a_port_on_float_targets_with_the_mean_squared_error() {
    // The port's data with float targets y [16, 10] (mse's) in place of the labels.
    let mut arrays = arrays(&params());
    arrays[1].1 = f32_array(&[N, CLASSES], |i| (0.11 * i as f64).cos());
    let data = common::dataset(arrays);
    let device = device();
    let mut spec = spec(&params(), &LAYERS);
    spec.loss = LossKind::Mse;
    port::prepare::<TinyMlp>(&spec, &data, &device).unwrap();
    let (block, model) =
        train::run_into::<TinyMlp>(Run::new(&spec, &data, &device), Output::Inline).unwrap();
    let block = common::json(block);
    let losses = common::list(&block["losses"]);
    assert!(losses[2] < losses[0], "{losses:?}");
    // A regression has no classes: no correct count, no predictions.
    assert_eq!(block["final"]["correct"], serde_json::Value::Null);
    assert_eq!(block["final"]["predictions"], serde_json::Value::Null);
    assert_eq!(block["meta"]["loss"]["name"], "mse");
    // The final loss is the mean over every element of (out − y)², in eval mode.
    let inner = device.clone().inner();
    let x: Tensor<2> = models::ModelInput::read(&data, &inner).unwrap();
    let out = models::values(ParityModel::forward(
        &model.valid(),
        x,
        &mut models::Probe::off(),
    ));
    let squares = out.iter().zip(data.f32("y").unwrap().1);
    let by_hand = squares
        .map(|(o, &t)| (o - f64::from(t)).powi(2))
        .sum::<f64>();
    let by_hand = by_hand / out.len() as f64;
    let final_loss = block["final"]["loss"].as_f64().unwrap();
    assert!(
        (final_loss - by_hand).abs() <= 1e-12 * by_hand,
        "{final_loss} {by_hand}"
    );
    // The cross-entropy refuses float targets, on one line, before any step.
    spec.loss = LossKind::CrossEntropy;
    let refused = train::run_into::<TinyMlp>(Run::new(&spec, &data, &device), Output::Inline).err();
    let want =
        "loss cross_entropy: y holds F32 values, not I64 class labels (mse takes float targets)";
    assert_eq!(refused.as_deref(), Some(want));
}
