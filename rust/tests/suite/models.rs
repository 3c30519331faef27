//! The models as plug-ins: each refuses a dataset that is not its own, records its layers at
//! the probe steps without changing the run, and cnn_bn's running statistics and eval-mode
//! `final` are Burn's BatchNorm's.
//!
//! Everything runs on an F64 device, so that values can be checked to f64 rounding.

use crate::common;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Device, Tensor};
use parity_train::config::{self, Spec};
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::fault::Fault;
use parity_train::models::{self, Cnn1d, CnnBn, ModelSize, ParityModel, Probe, Transformer};
use parity_train::run::Run;
use parity_train::train;
use serde_json::{Value, json};
use std::process::Command;

const STEPS: usize = 5;
const BATCH: usize = 16;
const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";
const ADAM: &str = "optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0";

fn device() -> Device {
    common::f64_device().autodiff()
}

/// A spec for one experiment `e`: an optimizer's flow mapping plus extra keys.
fn spec(experiment: &str) -> Spec {
    config::parse(&common::resolved(experiment, STEPS, BATCH)).unwrap()
}

fn cnn1d() -> Dataset {
    common::dataset(common::cnn1d_arrays(common::CONV))
}

fn cnn_bn() -> Dataset {
    common::dataset(common::cnn_bn_arrays(common::CONV))
}

/// cnn_bn's dataset with array `name` replaced by `array` (added if it has none), or removed.
fn cnn_bn_with(name: &str, array: Option<Array>) -> Dataset {
    let mut arrays = common::cnn_bn_arrays(common::CONV);
    arrays.retain(|(n, _)| n != name);
    arrays.extend(array.map(|a| (name.to_string(), a)));
    common::dataset(arrays)
}

fn transformer() -> Dataset {
    common::dataset(common::transformer_arrays(common::TRANSFORMER))
}

/// The seed's sizes of cnn1d and cnn_bn, and of the transformer.
fn conv_size() -> ModelSize {
    ModelSize::from(common::CONV)
}

fn transformer_size() -> ModelSize {
    ModelSize::from(common::TRANSFORMER)
}

fn run(experiment: &str, data: &Dataset) -> Value {
    common::trained(&spec(experiment), data, &device(), None).unwrap()
}

fn f32s(data: &Dataset, name: &str) -> Vec<f64> {
    data.f32(name)
        .unwrap()
        .1
        .iter()
        .map(|&x| x as f64)
        .collect()
}

#[test]
fn cnn_bn_refuses_a_missing_a_misshaped_and_an_extra_array() {
    let refuse = |data: Dataset| {
        let err = common::trained(
            &spec(&format!("{SGD}, model: cnn_bn")),
            &data,
            &device(),
            None,
        )
        .unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        err
    };
    assert_eq!(
        refuse(cnn_bn_with("bn.weight", None)),
        "model cnn_bn: the dataset has no array 'bn.weight' (the Burn module needs it, shape [4])"
    );
    let data = cnn_bn_with(
        "ln.weight",
        Some(Array {
            shape: vec![16],
            values: Values::F32(vec![1.0; 16]),
        }),
    );
    assert_eq!(
        refuse(data),
        "model cnn_bn: array 'ln.weight' has shape [16] in the dataset, the Burn module's is [12]"
    );
    let extra = cnn_bn().arrays()["bn.weight"].clone();
    assert_eq!(
        refuse(cnn_bn_with("norm.weight", Some(extra))),
        "model cnn_bn: the dataset holds 'norm.weight', which the Burn module does not have"
    );
    // The other model's file: cnn1d's lacks the norms, cnn_bn's has arrays cnn1d lacks.
    assert_eq!(
        refuse(cnn1d()),
        "model cnn_bn: the dataset has no array 'bn.weight' (the Burn module needs it, shape [4])"
    );
    let err = common::trained(&spec(SGD), &cnn_bn(), &device(), None).unwrap_err();
    assert_eq!(
        err,
        "model cnn1d: the dataset has no array 'conv.bias' (the Burn module needs it, shape [4])"
    );
    // Inputs the module cannot take.
    let data = cnn_bn_with(
        "x",
        Some(Array {
            shape: vec![96, 1, 8],
            values: Values::F32(vec![0.0; 96 * 8]),
        }),
    );
    assert_eq!(
        refuse(data),
        "model cnn_bn: array 'x' has shape [96, 1, 8] in the dataset, the Burn module takes [N, 1, 16]"
    );
    // A buffer is required like a parameter.
    assert!(refuse(cnn_bn_with("bn.running_var", None)).contains("no array 'bn.running_var'"));
}

#[test]
fn the_binary_refuses_a_dataset_of_the_other_model_on_one_line() {
    let dir = std::env::temp_dir().join(format!("parity-models-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cnn1d.safetensors"),
        common::encode(&common::cnn1d_arrays(common::CONV)),
    )
    .unwrap();
    let spec = common::resolved(&format!("{SGD}, model: cnn_bn"), 2, 16);
    std::fs::write(dir.join("e.json"), spec).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parity-train"))
        .arg("--spec")
        .arg(dir.join("e.json"))
        .args(["--dtype", "f64"])
        .arg("--data")
        .arg(dir.join("cnn1d.safetensors"))
        .arg("--out")
        .arg(dir.join("run.json"))
        .output()
        .expect("parity-train runs");
    let wrote = dir.join("run.json").exists();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!out.status.success() && !wrote);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "parity-train: model cnn_bn: the dataset has no array 'bn.weight' (the Burn module needs it, shape [4])\n"
    );
}

/// The layer record of `block` at `step`, checked for shapes against the model's layers:
/// outputs and input gradients of a batch of `BATCH`.
fn checked_record<'a>(block: &'a Value, step: usize, names: &[&str], sizes: &[usize]) -> &'a Value {
    let record = block["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["step"] == step)
        .unwrap_or_else(|| panic!("no record at step {step}"));
    assert_eq!(record["names"], json!(names));
    let outputs = record["outputs"].as_array().unwrap();
    let grads = record["input_grads"].as_array().unwrap();
    assert_eq!((outputs.len(), grads.len()), (names.len(), names.len()));
    // Input sizes: x, then each layer's output (flatten is no layer).
    let inputs: Vec<usize> = [BATCH * common::LENGTH]
        .into_iter()
        .chain(sizes[..sizes.len() - 1].iter().map(|s| BATCH * s))
        .collect();
    for k in 0..names.len() {
        assert_eq!(
            outputs[k].as_array().unwrap().len(),
            BATCH * sizes[k],
            "{}",
            names[k]
        );
        assert_eq!(
            grads[k].as_array().unwrap().len(),
            inputs[k],
            "{}",
            names[k]
        );
    }
    record
}

/// The cross-entropy of a batch's logits ([BATCH, 3], flat) against `y`, in f64.
fn cross_entropy(logits: &[f64], y: &[i64]) -> f64 {
    let rows = logits.chunks(common::CLASSES);
    let total: f64 = rows
        .zip(y)
        .map(|(row, &label)| {
            let top = row.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|v| (v - top).exp()).sum();
            top + sum.ln() - row[label as usize]
        })
        .sum();
    total / y.len() as f64
}

/// dLoss/dx from dLoss/d(conv output) through the conv weights (a correlation, so the
/// transposed convolution), in f64.
fn conv_input_grad(weight: &[f64], out_grad: &[f64]) -> Vec<f64> {
    let (channels, kernel, len) = (4, 5, common::LENGTH);
    let out_len = len - kernel + 1;
    let mut grad = vec![0.0; BATCH * len];
    for b in 0..BATCH {
        for o in 0..channels {
            for t in 0..out_len {
                let g = out_grad[(b * channels + o) * out_len + t];
                for k in 0..kernel {
                    grad[b * len + t + k] += weight[o * kernel + k] * g;
                }
            }
        }
    }
    grad
}

#[test]
fn the_layer_record_is_taken_at_each_probe_step_with_the_layers_shapes() {
    let y: Vec<i64> = cnn1d().i64("y").unwrap().1[..BATCH].to_vec();
    for (experiment, data, names, sizes) in [
        (
            format!("{SGD}, probe_steps: [3]"),
            cnn1d(),
            &["conv", "relu", "fc"][..],
            &[48, 48, 3][..],
        ),
        (
            format!("{SGD}, model: cnn_bn, probe_steps: [3]"),
            cnn_bn(),
            &["conv", "bn", "gelu", "ln", "fc"][..],
            &[48, 48, 48, 48, 3][..],
        ),
    ] {
        let block = run(&experiment, &data);
        let steps: Vec<&Value> = block["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["step"])
            .collect();
        assert_eq!(steps, [1, 3]);
        let record = checked_record(&block, 1, names, sizes);
        checked_record(&block, 3, names, sizes);
        // The last layer's output is the batch's logits: their loss is the step's loss.
        let logits = common::list(&record["outputs"][names.len() - 1]);
        let loss = common::list(&block["losses"])[0];
        assert!((cross_entropy(&logits, &y) - loss).abs() < 1e-14);
        // input_grads[0] is dLoss/dx: the conv's input gradient from its output gradient.
        let weight = f32s(&data, "conv.weight");
        let want = conv_input_grad(&weight, &common::list(&record["input_grads"][1]));
        let got = common::list(&record["input_grads"][0]);
        assert!(
            common::max_gap(&got, &want) < 1e-15,
            "{:e}",
            common::max_gap(&got, &want)
        );
        assert!(got.iter().any(|g| g.abs() > 1e-6));
    }
}

#[test]
fn probe_steps_change_nothing_else_in_the_run() {
    for (experiment, data) in [
        (ADAM.to_string(), cnn1d()),
        (format!("{ADAM}, model: cnn_bn"), cnn_bn()),
    ] {
        let mut plain = run(&experiment, &data);
        let mut probed = run(&format!("{experiment}, probe_steps: [2, 3, 5]"), &data);
        assert_eq!(plain["layers"].as_array().unwrap().len(), 1);
        assert_eq!(probed["layers"].as_array().unwrap().len(), 4);
        // The step-1 record is the same; every other value is bit for bit the same.
        assert_eq!(plain["layers"][0], probed["layers"][0]);
        plain.as_object_mut().unwrap().remove("layers");
        probed.as_object_mut().unwrap().remove("layers");
        assert!(plain == probed, "{experiment}");
        assert!(
            plain["trajectory"]["params"]["conv.weight"]
                .as_array()
                .unwrap()
                .len()
                == STEPS
        );
    }
}

#[test]
fn running_statistics_after_step_1_are_burns_biased_batch_statistics() {
    let data = cnn_bn();
    let block = run(&format!("{SGD}, model: cnn_bn"), &data);
    // The conv output of the first batch, in f64 from the file's f32 values.
    let (x, w) = (f32s(&data, "x"), f32s(&data, "conv.weight"));
    let (len, out_len) = (common::LENGTH, common::LENGTH - 4);
    let momentum = 0.1;
    let (mut means, mut vars) = (Vec::new(), Vec::new());
    for o in 0..4 {
        let values: Vec<f64> = (0..BATCH)
            .flat_map(|n| (0..out_len).map(move |t| (n, t)))
            .map(|(n, t)| {
                (0..5)
                    .map(|k| w[o * 5 + k] * x[n * len + t + k])
                    .sum::<f64>()
            })
            .collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
        means.push((1.0 - momentum) * 0.0 + momentum * mean);
        vars.push((1.0 - momentum) * 1.0 + momentum * var);
    }
    let buffers = &block["trajectory"]["buffers"];
    let (got_mean, got_var) = (
        common::list(&buffers["bn.running_mean"][0]),
        common::list(&buffers["bn.running_var"][0]),
    );
    assert!(
        common::max_gap(&got_mean, &means) < 1e-12,
        "{got_mean:?} {means:?}"
    );
    assert!(
        common::max_gap(&got_var, &vars) < 1e-12,
        "{got_var:?} {vars:?}"
    );
    // With PyTorch's unbiased estimator the step-1 value would differ by m·var/(n − 1).
    let n = (BATCH * out_len) as f64;
    assert!(vars.iter().all(|v| (v - 0.9) * (1.0 / (n - 1.0)) > 1e-5));
    // One entry per step, and the final buffers are the last step's.
    for name in ["bn.running_mean", "bn.running_var"] {
        let series = buffers[name].as_array().unwrap();
        assert_eq!(series.len(), STEPS);
        assert_eq!(series[STEPS - 1], block["buffers"][name]);
    }
}

#[test]
fn cnn_bn_final_is_in_eval_mode_with_the_running_statistics() {
    let data = cnn_bn();
    let device = device();
    let (block, model) = train::run::<CnnBn>(
        Run::new(&spec(&format!("{ADAM}, model: cnn_bn")), &data, &device),
        None,
    )
    .unwrap();
    let final_loss = block.r#final.loss.0;
    let (eval_loss, correct, _) = train::evaluate(&model, &data, &device).unwrap();
    assert_eq!(final_loss.to_bits(), eval_loss.to_bits());
    assert_eq!(block.r#final.correct, correct);
    // The same model in train mode (batch statistics) on the whole dataset: another loss.
    let (x, y) = train::inputs(&data, &device).unwrap();
    let train_loss: f64 = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(model.forward(x, &mut Probe::off()), y)
        .into_scalar();
    assert!(
        (train_loss - final_loss).abs() > 1e-6,
        "{train_loss} vs {final_loss}"
    );
}

#[test]
fn meta_names_the_model_and_its_layer_hyperparameters_as_burn_holds_them() {
    let bn = run(&format!("{SGD}, model: cnn_bn"), &cnn_bn());
    assert_eq!(bn["meta"]["model"], "cnn_bn");
    assert_eq!(
        bn["meta"]["layer_hyperparameters"],
        json!({"bn.momentum": 0.1, "bn.eps": 1e-5, "ln.eps": 1e-5, "gelu.approximate": "none",
            "gelu.backward": "none", "bn.running_var_estimator": "biased"})
    );
    let names: Vec<&String> = bn["params"].as_object().unwrap().keys().collect();
    assert_eq!(names.len(), CnnBn::params(&conv_size()).len());
    let seed = json!({"channels": 4, "kernel": 5});
    assert_eq!(bn["meta"]["model_size"], seed);
    let plain = run(SGD, &cnn1d());
    assert_eq!(plain["meta"]["model"], "cnn1d");
    assert_eq!(plain["meta"]["model_size"], seed);
    assert_eq!(plain["meta"]["layer_hyperparameters"], json!({}));
    assert_eq!(plain["buffers"], json!({}));
    assert_eq!(plain["trajectory"]["buffers"], json!({}));
}

/// The model at `size` built from `data`, each declared array read back as the file holds it.
fn built<M: ParityModel>(data: &Dataset, size: &ModelSize) -> M {
    let model: M = models::build(size, data, &device()).unwrap();
    let params = M::params(size)
        .into_iter()
        .zip(models::param_values(&model));
    let buffers = M::buffers(size)
        .into_iter()
        .zip(models::buffer_values(&model));
    for (entry, values) in params.chain(buffers) {
        assert_eq!(values, f32s(data, &entry.name), "{}", entry.name);
    }
    model
}

#[test]
fn params_and_buffers_read_back_in_pytorchs_layouts() {
    built::<CnnBn>(&cnn_bn(), &conv_size());
    built::<Cnn1d>(&cnn1d(), &conv_size());
}

#[test]
fn a_fault_bumps_a_parameter_of_the_model_and_is_refused_for_one_it_lacks() {
    let data = cnn_bn();
    let experiment = format!("{SGD}, model: cnn_bn");
    let fault = Fault::parse("2:ln.weight:5:0.25").unwrap();
    let bumped = common::trained(&spec(&experiment), &data, &device(), Some(&fault)).unwrap();
    assert_eq!(
        bumped["meta"]["fault"],
        serde_json::to_value(&fault).unwrap()
    );
    let plain = run(&experiment, &data);
    let at = |block: &Value, step: usize| {
        common::list(&block["trajectory"]["params"]["ln.weight"][step])
    };
    assert_eq!(at(&bumped, 0), at(&plain, 0));
    let (a, b) = (at(&bumped, 1), at(&plain, 1));
    assert!((a[5] - b[5] - 0.25).abs() < 1e-15);
    assert!((0..12).filter(|&i| i != 5).all(|i| a[i] == b[i]));
    let err = common::trained(&spec(SGD), &cnn1d(), &device(), Some(&fault)).unwrap_err();
    assert_eq!(
        err,
        "PARITY_FAULT: model cnn1d has no parameter ln.weight (it has conv.weight, conv.bias, fc.weight, fc.bias)"
    );
}

#[test]
fn the_transformer_reads_back_its_packed_in_projection_in_pytorchs_layout() {
    // in_proj_weight [24, 8] is three Burn Linear weights ([8, 8] each, transposed), joined
    // again along PyTorch's rows; in_proj_bias is their three biases.
    let data = transformer();
    let model: Transformer = built(&data, &transformer_size());
    // The key block is rows 8..16: Burn's key weight [in, out] is its transpose.
    let key = models::values(model.enc[0].mha.key.weight.val().transpose());
    assert_eq!(key, f32s(&data, "enc.self_attn.in_proj_weight")[64..128]);
    let value_bias = models::values(model.enc[0].mha.value.bias.as_ref().unwrap().val());
    assert_eq!(
        value_bias,
        f32s(&data, "enc.self_attn.in_proj_bias")[16..24]
    );
    // Every Burn parameter is a declared one: the dataset replaces the initializer's values.
    let declared: usize = Transformer::params(&transformer_size())
        .iter()
        .map(|e| e.shape.iter().product::<usize>())
        .sum();
    assert_eq!(model.num_params(), declared);
}

#[test]
fn the_transformer_forward_is_its_encoder_layers_forward() {
    let data = transformer();
    let device = device();
    let model: Transformer = models::build(&transformer_size(), &data, &device).unwrap();
    let x = models::tensor::<3>(data.f32("x").unwrap().1, &[96, 1, 16], &device);
    let staged = models::values(model.forward(x.clone(), &mut Probe::on()));
    let tokens: Tensor<3> = model.embed.forward(x.swap_dims(1, 2));
    let whole: Tensor<2> = model
        .fc
        .forward(model.encoder_forward(tokens).flatten(1, 2));
    assert_eq!(staged, models::values(whole));
}

#[test]
fn the_transformer_gradients_come_back_packed_and_a_fault_bumps_one_part() {
    let data = transformer();
    let experiment = format!("{SGD}, model: transformer");
    let plain = run(&experiment, &data);
    let grads = &plain["trajectory"]["grads"]["enc.self_attn.in_proj_weight"][0];
    assert_eq!(common::list(grads).len(), 24 * 8);
    // Element 70 is row 8, column 6: the key weight's.
    let fault = Fault::parse("2:enc.self_attn.in_proj_weight:70:0.25").unwrap();
    let bumped = common::trained(&spec(&experiment), &data, &device(), Some(&fault)).unwrap();
    let at = |block: &Value, step: usize| {
        common::list(&block["trajectory"]["params"]["enc.self_attn.in_proj_weight"][step])
    };
    assert_eq!(at(&bumped, 0), at(&plain, 0));
    let (a, b) = (at(&bumped, 1), at(&plain, 1));
    assert!((a[70] - b[70] - 0.25).abs() < 1e-15);
    assert!((0..192).filter(|&i| i != 70).all(|i| a[i] == b[i]));
}
