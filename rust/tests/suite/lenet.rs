//! lenet on the 8×8 digits: its declarations at two sizes, its forward against PyTorch's
//! (computed here in f64 from the file's arrays), its run (layer record, meta), the label
//! smoothing of its loss, and its refusals of another model's data.
//!
//! Everything runs on an F64 device but the binary's run (f32), so that values can be
//! checked to f64 rounding. The burn-store load against the arrays path is checked with the
//! other models' (tests/burn_store.rs, tests/burn_store_f32.rs).

use crate::common;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Device, Tensor};
use parity_train::config::{self, Spec};
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::models::{self, LeNet, LeNetSize, ModelSize, ParityModel, Probe};
use parity_train::run::Run;
use parity_train::train;
use serde_json::{Value, json};
use std::process::Command;

const STEPS: usize = 3;
const BATCH: usize = 16;
const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";
const NARROW: LeNetSize = common::store::NARROW_LENET;

fn device() -> Device {
    common::f64_device().autodiff()
}

fn spec(experiment: &str) -> Spec {
    config::parse(&common::resolved(experiment, STEPS, BATCH)).unwrap()
}

fn digits(size: LeNetSize) -> Dataset {
    common::dataset(common::lenet_arrays(size))
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
fn lenet_declares_pytorchs_names_shapes_and_layers_at_each_size() {
    let model = models::builtin("lenet").expect("lenet is built in");
    assert_eq!(model.name, LeNet::NAME);
    assert_eq!(model.default_size().keys(), ["conv1", "conv2", "hidden"]);
    assert_eq!(model.default_size(), ModelSize::from(common::LENET));
    for (size, shapes) in [
        (
            common::LENET,
            [
                vec![6, 1, 3, 3],
                vec![6],
                vec![16, 6, 3, 3],
                vec![16],
                vec![32, 64],
                vec![32],
                vec![10, 32],
                vec![10],
            ],
        ),
        (
            NARROW,
            [
                vec![3, 1, 3, 3],
                vec![3],
                vec![5, 3, 3, 3],
                vec![5],
                vec![7, 20],
                vec![7],
                vec![10, 7],
                vec![10],
            ],
        ),
    ] {
        let size = ModelSize::from(size);
        let params = LeNet::params(&size);
        let names: Vec<&str> = params.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "conv1.weight",
                "conv1.bias",
                "conv2.weight",
                "conv2.bias",
                "fc1.weight",
                "fc1.bias",
                "fc2.weight",
                "fc2.bias"
            ]
        );
        let got: Vec<Vec<usize>> = params.iter().map(|e| e.shape.clone()).collect();
        assert_eq!(got, shapes);
        let transposed: Vec<&str> = params
            .iter()
            .filter(|e| e.layout == models::Layout::Transposed)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(transposed, ["fc1.weight", "fc2.weight"]);
        assert!(params.iter().all(|e| e.parts == 1));
        assert!(LeNet::buffers(&size).is_empty());
        assert!(LeNet::pytorch_keys(&size).is_empty());
        assert_eq!(LeNet::sample(&size), [1, 8, 8]);
        assert_eq!(
            LeNet::layers(&size),
            [
                "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "fc1", "relu3", "fc2"
            ]
        );
        assert_eq!((model.params)(&size), params);
    }
    // A fault can name lenet's parameters.
    assert!((model.may_have_param)("conv2.weight"));
    assert!(parity_train::fault::Fault::parse("2:fc1.bias:3:0.5").is_ok());
}

/// lenet's forward of sample `k` as PyTorch computes it, in f64 from the file's arrays:
/// zero-padded 3×3 correlations, max and average pools of 2, channel-major flatten, Linear
/// weights [out, in].
fn pytorch_logits(data: &Dataset, s: LeNetSize, k: usize) -> Vec<f64> {
    let x = &f32s(data, "x")[k * 64..(k + 1) * 64];
    let conv = |input: &[f64], cin: usize, side: usize, w: &[f64], b: &[f64], cout: usize| {
        let mut out = vec![0.0; cout * side * side];
        for o in 0..cout {
            for r in 0..side {
                for c in 0..side {
                    let mut sum = b[o];
                    for i in 0..cin {
                        for dr in 0..3 {
                            for dc in 0..3 {
                                let (rr, cc) = (r + dr, c + dc);
                                if rr == 0 || cc == 0 || rr > side || cc > side {
                                    continue; // the zero padding
                                }
                                let v = input[(i * side + rr - 1) * side + cc - 1];
                                sum += w[((o * cin + i) * 3 + dr) * 3 + dc] * v;
                            }
                        }
                    }
                    out[(o * side + r) * side + c] = sum.max(0.0); // ReLU
                }
            }
        }
        out
    };
    let pool = |input: &[f64], channels: usize, side: usize, max: bool| {
        let half = side / 2;
        let mut out = vec![0.0; channels * half * half];
        for ch in 0..channels {
            for r in 0..half {
                for c in 0..half {
                    let at =
                        |dr: usize, dc: usize| input[(ch * side + 2 * r + dr) * side + 2 * c + dc];
                    let four = [at(0, 0), at(0, 1), at(1, 0), at(1, 1)];
                    out[(ch * half + r) * half + c] = if max {
                        four.into_iter().fold(f64::MIN, f64::max)
                    } else {
                        four.iter().sum::<f64>() / 4.0
                    };
                }
            }
        }
        out
    };
    let linear = |input: &[f64], w: &[f64], b: &[f64], relu: bool| -> Vec<f64> {
        b.iter()
            .enumerate()
            .map(|(o, bias)| {
                let row = &w[o * input.len()..(o + 1) * input.len()];
                let v = bias + row.iter().zip(input).map(|(a, b)| a * b).sum::<f64>();
                if relu { v.max(0.0) } else { v }
            })
            .collect()
    };
    let p = |name: &str| f32s(data, name);
    let h = conv(x, 1, 8, &p("conv1.weight"), &p("conv1.bias"), s.conv1);
    let h = pool(&h, s.conv1, 8, true);
    let h = conv(
        &h,
        s.conv1,
        4,
        &p("conv2.weight"),
        &p("conv2.bias"),
        s.conv2,
    );
    let h = pool(&h, s.conv2, 4, false); // [C2, 2, 2], flat channel-major
    let h = linear(&h, &p("fc1.weight"), &p("fc1.bias"), true);
    linear(&h, &p("fc2.weight"), &p("fc2.bias"), false)
}

#[test]
fn lenet_reads_back_its_arrays_and_computes_pytorchs_forward() {
    for size in [common::LENET, NARROW] {
        let data = digits(size);
        let model: LeNet = models::build(&ModelSize::from(size), &data, &device()).unwrap();
        assert_eq!(model.size(), ModelSize::from(size));
        let params = LeNet::params(&ModelSize::from(size));
        for (entry, values) in params.iter().zip(models::param_values(&model)) {
            assert_eq!(values, f32s(&data, &entry.name), "{}", entry.name);
        }
        let declared: usize = params
            .iter()
            .map(|e| e.shape.iter().product::<usize>())
            .sum();
        assert_eq!(model.num_params(), declared);
        assert_eq!(
            model.fc1.weight.val().dims(),
            [size.conv2 * 4, size.hidden],
            "Burn's [in, out]"
        );
        // The whole dataset's logits, recorded layer by layer or not, are PyTorch's.
        let (x, _) = train::inputs::<Tensor<4>>(&data, &device()).unwrap();
        let logits = models::values(model.forward(x.clone(), &mut Probe::on()));
        assert_eq!(logits, models::values(model.forward(x, &mut Probe::off())));
        let mut gap: f64 = 0.0;
        for k in 0..common::DIGITS_N {
            let want = pytorch_logits(&data, size, k);
            gap = gap.max(common::max_gap(&logits[k * 10..(k + 1) * 10], &want));
        }
        assert!(gap < 1e-13, "{size:?}: {gap:e}");
        assert!(logits.iter().any(|v| v.abs() > 1e-3));
    }
}

/// The run of `experiment` on lenet's seed-size data, its tensors read back.
fn run(experiment: &str) -> Value {
    let experiment = format!("{experiment}, model: lenet");
    common::trained(&spec(&experiment), &digits(common::LENET), &device(), None).unwrap()
}

#[test]
fn lenet_trains_and_records_its_layers_and_meta() {
    let block = run(&format!("{SGD}, probe_steps: [3]"));
    let losses = common::list(&block["losses"]);
    assert_eq!(losses.len(), STEPS);
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(losses[0] > 1.0 && losses[0] < 5.0, "{losses:?}");
    assert!(common::float(&block["final"]["loss"]).is_finite());
    let predictions = block["final"]["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), common::DIGITS_N);
    assert!(
        predictions
            .iter()
            .all(|p| (0..10).contains(&p.as_i64().unwrap()))
    );
    // Outputs per sample of each layer: conv1 6×8×8, pool1 6×4×4, conv2 16×4×4, pool2
    // 16×2×2, fc1 32, fc2 10; each layer's input is the one before's output (x for conv1).
    let sizes = [384, 384, 96, 256, 256, 64, 32, 32, 10];
    let inputs = [64, 384, 384, 96, 256, 256, 64, 32, 32];
    let names = LeNet::layers(&ModelSize::from(common::LENET));
    for step in [1, 3] {
        let record = block["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["step"] == step)
            .unwrap();
        assert_eq!(record["names"], json!(names));
        for k in 0..names.len() {
            let output = common::list(&record["outputs"][k]);
            let grad = common::list(&record["input_grads"][k]);
            assert_eq!(output.len(), BATCH * sizes[k], "{}", names[k]);
            assert_eq!(grad.len(), BATCH * inputs[k], "{}", names[k]);
            assert!(grad.iter().any(|g| g.abs() > 0.0), "{}", names[k]);
        }
    }
    // relu1's output is conv1's, clamped at 0; the fc1 stage's input gradient is pool2's
    // output's (the flatten is a reshape), flat in the same order.
    let record = &block["layers"][0];
    let (conv1, relu1) = (
        common::list(&record["outputs"][0]),
        common::list(&record["outputs"][1]),
    );
    assert!(conv1.iter().zip(&relu1).all(|(c, r)| *r == c.max(0.0)));
    assert!(conv1.iter().any(|&c| c < 0.0));
    let meta = &block["meta"];
    assert_eq!(meta["model"], "lenet");
    assert_eq!(meta["data"], "digits");
    assert_eq!(
        meta["model_size"],
        json!({"conv1": 6, "conv2": 16, "hidden": 32})
    );
    assert_eq!(
        meta["loss"],
        json!({"name": "cross_entropy", "label_smoothing": 0.0})
    );
    assert_eq!(
        meta["layer_hyperparameters"],
        json!({
            "conv.kernel": 3, "conv.padding": 1, "pool1": "max", "pool2": "avg",
            "pool.kernel": 2, "pool.stride": 2,
        })
    );
    assert_eq!(meta["burn_shapes"]["fc1.weight"], json!([[64, 32]]));
    assert_eq!(meta["burn_shapes"]["conv2.weight"], json!([[16, 6, 3, 3]]));
    assert_eq!(block["buffers"], json!({}));
    let params: Vec<&String> = block["params"].as_object().unwrap().keys().collect();
    assert_eq!(params.len(), 8);
    assert_eq!(
        common::list(&block["trajectory"]["grads"]["fc1.weight"][0]).len(),
        32 * 64
    );
}

/// mean over the rows of `on`·(−log p_y) + `each`·Σ_c(−log p_c), of a batch's logits
/// ([rows, classes], flat), in f64: the smoothed cross-entropy with target weights `on` +
/// `each` at the label and `each` elsewhere. PyTorch's `label_smoothing=ε` is `on` = 1 − ε,
/// `each` = ε/C.
fn smoothed_cross_entropy(logits: &[f64], y: &[i64], classes: usize, on: f64, each: f64) -> f64 {
    let total: f64 = logits
        .chunks(classes)
        .zip(y)
        .map(|(row, &label)| {
            let top = row.iter().cloned().fold(f64::MIN, f64::max);
            let log_sum = top + row.iter().map(|v| (v - top).exp()).sum::<f64>().ln();
            let nll = log_sum - row[label as usize];
            let all = row.iter().map(|v| log_sum - v).sum::<f64>();
            on * nll + each * all
        })
        .sum();
    total / y.len() as f64
}

#[test]
fn label_smoothing_is_burns_with_its_f32_alpha_in_training_and_evaluation() {
    let plain = run(SGD);
    let smoothed = run(&format!("{SGD}, label_smoothing: 0.1"));
    let (plain_losses, losses) = (
        common::list(&plain["losses"]),
        common::list(&smoothed["losses"]),
    );
    // The same model and batch at step 1: only the loss differs.
    assert_eq!(
        plain["layers"][0]["outputs"],
        smoothed["layers"][0]["outputs"]
    );
    assert!(
        (losses[0] - plain_losses[0]).abs() > 1e-4,
        "{losses:?} {plain_losses:?}"
    );
    // Burn holds α as an f32: 0.1 is 0.10000000149011612, in meta and in the loss.
    let alpha = f64::from(0.1f32);
    assert_eq!(alpha, 0.10000000149011612);
    assert_eq!(
        smoothed["meta"]["loss"],
        json!({"name": "cross_entropy", "label_smoothing": alpha})
    );
    let logits = common::list(&smoothed["layers"][0]["outputs"][8]);
    let y: Vec<i64> = (0..BATCH as i64).map(|k| k % 10).collect();
    // Burn's target weights are f32 computations, also in an f64 run: 1 − α and α/C, each
    // rounded to f32 (0.8999999761581421 and 0.009999999776482582), which sum over the
    // classes to 1 − 2.6e-8, not 1.
    let (on, each) = (f64::from(1.0 - 0.1f32), f64::from(0.1f32 / 10.0));
    assert_eq!((on, each), (0.8999999761581421, 0.009999999776482582));
    let want = smoothed_cross_entropy(&logits, &y, 10, on, each);
    assert!((losses[0] - want).abs() < 1e-14, "{} vs {want}", losses[0]);
    let unsmoothed = smoothed_cross_entropy(&logits, &y, 10, 1.0, 0.0);
    assert!((plain_losses[0] - unsmoothed).abs() < 1e-14);
    // PyTorch's f64 loss, (1 − ε)·nll + ε·mean_c(−log p_c) with ε = 0.1 in f64, is ~2.6e-8
    // relative away; with Burn's α in its place, as far.
    for alpha in [0.1, alpha] {
        let pytorch = smoothed_cross_entropy(&logits, &y, 10, 1.0 - alpha, alpha / 10.0);
        let gap = (losses[0] - pytorch).abs() / pytorch;
        assert!(gap > 1e-8 && gap < 1e-7, "{alpha}: {gap:e}");
    }

    // `final` is the smoothed loss of the whole dataset in eval mode.
    let data = digits(common::LENET);
    let device = device();
    let spec = spec(&format!("{SGD}, model: lenet, label_smoothing: 0.1"));
    let (block, model) = train::run::<LeNet>(Run::new(&spec, &data, &device), None).unwrap();
    let config = parity_train::loss::loss_config(spec.label_smoothing);
    assert_eq!(config.smoothing, Some(0.1f32));
    let (loss, correct, predictions) =
        train::evaluate_with(&model, &data, &device, &config.clone().into()).unwrap();
    assert_eq!(block.r#final.loss.0.to_bits(), loss.to_bits());
    assert_eq!(
        (block.r#final.correct, &block.r#final.predictions),
        (correct, &predictions)
    );
    let (plain_loss, plain_correct, _) = train::evaluate(&model, &data, &device).unwrap();
    assert!((plain_loss - loss).abs() > 1e-6, "{plain_loss} {loss}");
    assert_eq!(plain_correct, correct);
    // No smoothing is Burn's plain cross-entropy, not a smoothing of 0.
    assert_eq!(parity_train::loss::loss_config(0.0).smoothing, None);
    assert_eq!(
        format!("{:?}", parity_train::loss::loss_config(0.0)),
        format!("{:?}", CrossEntropyLossConfig::new())
    );
}

#[test]
fn lenet_refuses_the_sine_data_and_token_ids_on_one_line() {
    let refused = |x: Array| {
        let mut arrays = common::lenet_arrays(common::LENET);
        arrays.retain(|(n, _)| n != "x");
        arrays.insert(0, ("x".to_string(), x));
        let spec = spec(&format!("{SGD}, model: lenet"));
        let data = common::dataset(arrays);
        let error = common::trained(&spec, &data, &device(), None).unwrap_err();
        assert!(!error.contains('\n'), "{error}");
        error
    };
    assert_eq!(
        refused(Array {
            shape: vec![60, 1, 16],
            values: Values::F32(vec![0.0; 60 * 16]),
        }),
        "model lenet: array 'x' has shape [60, 1, 16] in the dataset, the Burn module takes [N, 1, 8, 8]"
    );
    assert_eq!(
        refused(Array {
            shape: vec![60, 1, 8, 8],
            values: Values::I64(vec![0; 60 * 64]),
        }),
        "model lenet: array 'x' is I64 in the dataset, the Burn module takes F32"
    );
    // The sine models refuse the digits.
    let mut arrays = common::cnn1d_arrays(common::CONV);
    arrays.retain(|(n, _)| n != "x" && n != "y");
    arrays.extend(common::digits_inputs());
    let error = common::trained(&spec(SGD), &common::dataset(arrays), &device(), None).unwrap_err();
    assert_eq!(
        error,
        "model cnn1d: array 'x' has shape [60, 1, 8, 8] in the dataset, the Burn module takes [N, 1, 16]"
    );
    // A spec's lenet size is checked as the others'.
    let sized = |size: &str| {
        config::parse(&common::resolved(
            &format!("{SGD}, model: lenet, model_size: {size}"),
            STEPS,
            BATCH,
        ))
    };
    assert_eq!(
        sized("{conv1: 6, conv2: 16}").unwrap_err(),
        "model_size.hidden: missing (model lenet is sized by conv1, conv2, hidden)"
    );
    let spec = sized("{conv1: 3, conv2: 5, hidden: 7}").unwrap();
    assert_eq!(spec.model_size, ModelSize::from(NARROW));
    assert_eq!(spec.data, config::Data::Digits);
}

#[test]
fn the_binary_trains_lenet_in_f32_and_records_the_data_and_the_loss() {
    let dir = std::env::temp_dir().join(format!("parity-lenet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("lenet.safetensors"),
        common::encode(&common::lenet_arrays(NARROW)),
    )
    .unwrap();
    let experiment = format!(
        "{SGD}, model: lenet, model_size: {{conv1: 3, conv2: 5, hidden: 7}}, label_smoothing: 0.05"
    );
    std::fs::write(dir.join("e.json"), common::resolved(&experiment, 2, 16)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parity-train"))
        .arg("--spec")
        .arg(dir.join("e.json"))
        .args(["--dtype", "f32"])
        .arg("--data")
        .arg(dir.join("lenet.safetensors"))
        .arg("--out")
        .arg(dir.join("run.json"))
        .output()
        .expect("parity-train runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let text = std::fs::read_to_string(dir.join("run.json")).unwrap_or_default();
    let tensors = dir.join("run.safetensors").is_file();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tensors);
    assert!(stdout.contains("/60 -> "), "{stdout}");
    assert!(
        text.contains(
            r#""model_size":{"conv1":3,"conv2":5,"hidden":7},"data":"digits","layer_hyperparameters":"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#""loss":{"name":"cross_entropy","label_smoothing":0.05000000074505806},"optimizer":"sgd""#),
        "{text}"
    );
    let block: Value = serde_json::from_str(&text).unwrap();
    let losses = &block["e"]["losses"];
    assert!(common::list(losses).iter().all(|l| l.is_finite()));
}
