//! The models at sizes other than the seed's (the spec's `model_size`): each builds from a
//! dataset of those shapes and reads back exactly its values (packed and transposed layouts
//! included), records its layers under their names, and writes the size its modules hold in
//! `meta.model_size`; a dataset of another size, and a spec's wrong size, are refused on one
//! line.
//!
//! Everything runs on an F64 device, so that values can be checked to f64 rounding.

use crate::common;
use burn::tensor::{Device, Tensor};
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::fault::Fault;
use parity_train::models::{
    self, Cnn1d, CnnBn, ConvSize, ModelSize, ParityModel, Probe, Transformer, TransformerSize,
};
use parity_train::registry;
use parity_train::run::Run;
use serde_json::{Value, json};
use std::process::Command;

const STEPS: usize = 3;
const BATCH: usize = 16;
const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";

/// Two encoder layers of width 12, 3 heads of 4, feed-forward 20.
const TWO_LAYERS: TransformerSize = TransformerSize {
    d_model: 12,
    heads: 3,
    layers: 2,
    d_ff: 20,
};
/// Six channels, kernel 3: 14 positions.
const WIDE: ConvSize = ConvSize {
    channels: 6,
    kernel: 3,
};

fn device() -> Device {
    common::f64_device().autodiff()
}

/// A spec for one experiment `e` of `model` at `size` (a JSON object, as the spec writes it).
fn try_spec(model: &str, size: &str) -> Result<Spec, String> {
    let experiment = format!("{SGD}, model: {model}, model_size: {size}");
    config::parse(&common::resolved(&experiment, STEPS, BATCH))
}

fn spec(model: &str, size: &str) -> Spec {
    try_spec(model, size).unwrap()
}

fn f32s(data: &Dataset, name: &str) -> Vec<f64> {
    data.f32(name)
        .unwrap()
        .1
        .iter()
        .map(|&x| x as f64)
        .collect()
}

/// Every declared array of a model built from `data` reads back exactly as the file holds it.
fn reads_back<M: ParityModel>(size: &ModelSize, data: &Dataset) -> M {
    let model: M = models::build(size, data, &device()).unwrap();
    assert_eq!(model.size(), *size);
    for (entry, values) in M::params(size).iter().zip(models::param_values(&model)) {
        assert_eq!(values, f32s(data, &entry.name), "{}", entry.name);
    }
    for (entry, values) in M::buffers(size).iter().zip(models::buffer_values(&model)) {
        assert_eq!(values, f32s(data, &entry.name), "{}", entry.name);
    }
    // Every Burn tensor is a declared one (Burn counts the running statistics too).
    let declared: usize = M::params(size)
        .iter()
        .chain(&M::buffers(size))
        .map(|e| e.shape.iter().product::<usize>())
        .sum();
    assert_eq!(model.num_params(), declared, "{}", M::NAME);
    model
}

#[test]
fn a_transformer_of_two_layers_declares_pytorchs_names_and_reads_back_its_arrays() {
    let size = ModelSize::from(TWO_LAYERS);
    let data = common::dataset(common::transformer_arrays(TWO_LAYERS));
    let params = Transformer::params(&size);
    let per_layer = [
        "self_attn.in_proj_weight",
        "self_attn.in_proj_bias",
        "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
        "norm1.weight",
        "norm1.bias",
        "norm2.weight",
        "norm2.bias",
    ];
    let mut want = vec!["embed.weight".to_string(), "embed.bias".to_string()];
    for i in 0..2 {
        want.extend(per_layer.iter().map(|n| format!("enc.layers.{i}.{n}")));
    }
    want.extend(["fc.weight".to_string(), "fc.bias".to_string()]);
    let names: Vec<&String> = params.iter().map(|e| &e.name).collect();
    assert_eq!(names, want.iter().collect::<Vec<_>>());
    let shape = |name: &str| &params.iter().find(|e| e.name == name).unwrap().shape;
    assert_eq!(shape("embed.weight"), &[12, 1]);
    assert_eq!(shape("enc.layers.1.self_attn.in_proj_weight"), &[36, 12]);
    assert_eq!(shape("enc.layers.1.linear1.weight"), &[20, 12]);
    assert_eq!(shape("enc.layers.1.linear2.weight"), &[12, 20]);
    assert_eq!(shape("fc.weight"), &[3, 16 * 12]);
    assert_eq!(
        Transformer::layers(&size),
        [
            "embed", "attn.0", "norm1.0", "ff.0", "norm2.0", "attn.1", "norm1.1", "ff.1",
            "norm2.1", "fc"
        ]
    );

    let model: Transformer = reads_back(&size, &data);
    assert_eq!(model.enc.len(), 2);
    // Layer 1's key block is rows 12..24 of its in_proj_weight [36, 12].
    let key = models::values(model.enc[1].mha.key.weight.val().transpose());
    let packed = f32s(&data, "enc.layers.1.self_attn.in_proj_weight");
    assert_eq!(key, packed[12 * 12..24 * 12]);
    assert_ne!(packed, f32s(&data, "enc.layers.0.self_attn.in_proj_weight"));
    assert_eq!(model.enc[1].mha.n_heads, 3);
    assert_eq!(model.enc[1].mha.d_k, 4);

    // The recorded stages compose to the layers' own forwards, chained.
    let device = device();
    let x = models::tensor::<3>(data.f32("x").unwrap().1, &[96, 1, 16], &device);
    let staged = models::values(model.forward(x.clone(), &mut Probe::on()));
    let tokens: Tensor<3> = model.embed.forward(x.swap_dims(1, 2));
    let whole: Tensor<2> = model
        .fc
        .forward(model.encoder_forward(tokens).flatten(1, 2));
    assert_eq!(staged, models::values(whole));
}

#[test]
fn conv_models_of_another_size_read_back_their_arrays() {
    let size = ModelSize::from(WIDE);
    let model: CnnBn = reads_back(&size, &common::dataset(common::cnn_bn_arrays(WIDE)));
    assert_eq!(model.ln.gamma.val().dims(), [14]);
    let shapes: Vec<Vec<usize>> = CnnBn::params(&size).into_iter().map(|e| e.shape).collect();
    assert_eq!(
        shapes,
        [
            vec![6, 1, 3],
            vec![6],
            vec![6],
            vec![14],
            vec![14],
            vec![3, 84],
            vec![3]
        ]
    );
    let model: Cnn1d = reads_back(&size, &common::dataset(common::cnn1d_arrays(WIDE)));
    assert_eq!(model.fc.weight.val().dims(), [84, 3]);
}

/// The run block of `experiment`'s spec on `data` with its tensors read back from its
/// tensors file, and the block as its run file writes it (keys in order).
fn run_text(spec: &Spec, data: &Dataset, fault: Option<&Fault>) -> (Value, String) {
    let out = common::scratch_run();
    let block = registry::train(
        Run::new(spec, data, &device()).with_fault(fault),
        Some(&out),
    )
    .unwrap();
    let text = serde_json::to_string(&block).unwrap();
    let block = common::attach(common::json(block), &out);
    std::fs::remove_dir_all(out.parent().unwrap()).unwrap();
    (block, text)
}

/// The step-1 layer record's names and each output's length.
fn record(block: &Value) -> (Vec<String>, Vec<usize>) {
    let record = &block["layers"][0];
    let names = serde_json::from_value(record["names"].clone()).unwrap();
    let sizes = record["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_array().unwrap().len())
        .collect();
    (names, sizes)
}

#[test]
fn a_run_at_another_size_records_its_layers_and_the_size_its_modules_hold() {
    let size = r#"{"d_model": 12, "heads": 3, "layers": 2, "d_ff": 20}"#;
    let data = common::dataset(common::transformer_arrays(TWO_LAYERS));
    let (block, text) = run_text(&spec("transformer", size), &data, None);
    assert!(
        text.contains(r#""model_size":{"d_model":12,"heads":3,"layers":2,"d_ff":20}"#),
        "{}",
        &text[text.find(r#""meta""#).unwrap()..]
    );
    let held = &block["meta"]["layer_hyperparameters"];
    assert_eq!(
        (
            &held["enc.d_model"],
            &held["enc.nhead"],
            &held["enc.dim_feedforward"]
        ),
        (&json!(12), &json!(3), &json!(20))
    );
    let (names, sizes) = record(&block);
    assert_eq!(names, Transformer::layers(&ModelSize::from(TWO_LAYERS)));
    let tokens = BATCH * 16 * 12;
    assert_eq!(sizes, [vec![tokens; 9], vec![BATCH * 3]].concat());
    let params: Vec<&String> = block["params"].as_object().unwrap().keys().collect();
    assert_eq!(params.len(), 2 + 2 * 12 + 2);
    assert_eq!(
        block["meta"]["burn_shapes"]["enc.layers.1.self_attn.in_proj_weight"],
        json!([[12, 12], [12, 12], [12, 12]])
    );
    assert_eq!(block["meta"]["burn_shapes"]["fc.weight"], json!([[192, 3]]));
    // A fault bumps one element of the second layer's linear1 ([20, 12]) after step 2.
    let fault = Fault::parse("2:enc.layers.1.linear1.weight:37:0.25").unwrap();
    let (bumped, _) = run_text(&spec("transformer", size), &data, Some(&fault));
    let at = |block: &Value, step: usize| {
        common::list(&block["trajectory"]["params"]["enc.layers.1.linear1.weight"][step])
    };
    let (a, b) = (at(&bumped, 1), at(&block, 1));
    assert!((a[37] - b[37] - 0.25).abs() < 1e-15);
    assert!((0..240).filter(|&i| i != 37).all(|i| a[i] == b[i]));

    let data = common::dataset(common::cnn_bn_arrays(WIDE));
    let (block, text) = run_text(
        &spec("cnn_bn", r#"{"channels": 6, "kernel": 3}"#),
        &data,
        None,
    );
    assert!(text.contains(r#""model_size":{"channels":6,"kernel":3}"#));
    let (names, sizes) = record(&block);
    assert_eq!(names, ["conv", "bn", "gelu", "ln", "fc"]);
    assert_eq!(
        sizes,
        [BATCH * 84, BATCH * 84, BATCH * 84, BATCH * 84, BATCH * 3]
    );
    assert_eq!(
        block["buffers"]["bn.running_var"].as_array().unwrap().len(),
        6
    );
    assert_eq!(block["meta"]["burn_shapes"]["fc.weight"], json!([[84, 3]]));
}

#[test]
fn a_dataset_of_another_size_is_refused_before_the_model_is_built() {
    let refused = |spec: Spec, data: Dataset| {
        let error = common::trained(&spec, &data, &device(), None).unwrap_err();
        assert!(!error.contains('\n'), "{error}");
        error
    };
    assert_eq!(
        refused(
            spec("cnn_bn", r#"{"channels": 6, "kernel": 3}"#),
            common::dataset(common::cnn_bn_arrays(common::CONV))
        ),
        "model cnn_bn: array 'conv.weight' has shape [4, 1, 5] in the dataset, the Burn module's is [6, 1, 3]"
    );
    // Two layers asked for, the seed's one-layer file given.
    assert_eq!(
        refused(
            spec(
                "transformer",
                r#"{"d_model": 8, "heads": 2, "layers": 2, "d_ff": 16}"#
            ),
            common::dataset(common::transformer_arrays(common::TRANSFORMER))
        ),
        "model transformer: the dataset has no array 'enc.layers.0.self_attn.in_proj_weight' (the Burn module needs it, shape [24, 8])"
    );
    // A size built in code is checked too.
    let error = models::build::<Transformer>(
        &ModelSize::from(TransformerSize {
            heads: 5,
            ..TWO_LAYERS
        }),
        &common::dataset(common::transformer_arrays(TWO_LAYERS)),
        &device(),
    )
    .map(|_| ())
    .unwrap_err();
    assert_eq!(
        error,
        "model transformer: model_size.heads: 5 does not divide d_model 12"
    );
}

#[test]
fn a_spec_with_a_wrong_size_is_refused_on_one_line() {
    for (model, size, want) in [
        (
            "transformer",
            r#"{"d_model": 12, "heads": 5, "layers": 2, "d_ff": 20}"#,
            "model_size.heads: 5 does not divide d_model 12",
        ),
        (
            "cnn1d",
            r#"{"channels": 4, "kernel": 5, "padding": 1}"#,
            "model_size.padding: unknown key (model cnn1d is sized by channels, kernel)",
        ),
        (
            "transformer",
            r#"{"d_model": 12, "heads": 3, "d_ff": 20}"#,
            "model_size.layers: missing (model transformer is sized by d_model, heads, layers, d_ff)",
        ),
    ] {
        assert_eq!(try_spec(model, size).unwrap_err(), want);
    }
    // The binary says so on one line, before reading the dataset.
    let dir = std::env::temp_dir().join(format!("parity-sizes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let experiment = format!(
        "{SGD}, model: transformer, model_size: {{d_model: 8, heads: 3, layers: 1, d_ff: 16}}"
    );
    std::fs::write(
        dir.join("e.json"),
        common::resolved(&experiment, STEPS, BATCH),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parity-train"))
        .arg("--spec")
        .arg(dir.join("e.json"))
        .args(["--dtype", "f64", "--data"])
        .arg(dir.join("absent.safetensors"))
        .arg("--out")
        .arg(dir.join("run.json"))
        .output()
        .expect("parity-train runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!out.status.success());
    assert!(
        stderr.ends_with(
            "e.json: not a resolved spec: model_size.heads: 3 does not divide d_model 8\n"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
