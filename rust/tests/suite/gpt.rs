//! gpt on the text's token ids: its declarations at two sizes, its forward against an
//! independent f64 reference (attention, mask, softmax, LayerNorm and GELU by hand with
//! plain tensor ops, from the file's arrays in PyTorch's layouts), its causality, its run
//! (layer record, meta), and the final evaluation in chunks of `EVAL_CHUNK` samples, for
//! every model.
//!
//! Everything runs on an F64 device, so that values can be checked to f64 rounding. The
//! burn-store load against the arrays path is checked with the other models'
//! (tests/burn_store.rs, tests/burn_store_f32.rs).

use crate::common;
use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData, s};
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::models::{self, Cnn1d, Gpt, GptSize, Layout, ModelSize, ParityModel, Probe};
use parity_train::train::{self, EVAL_CHUNK};
use serde_json::json;

const SMALL: GptSize = common::store::SMALL_GPT;
const N: usize = common::store::GPT_N;
const STEPS: usize = 3;
const BATCH: usize = 4;
const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";

fn device() -> Device {
    common::f64_device().autodiff()
}

fn text(size: GptSize, n: usize) -> Dataset {
    common::dataset(common::gpt_arrays(size, n))
}

fn size_yaml(s: GptSize) -> String {
    format!(
        "{{d_model: {}, heads: {}, layers: {}, d_ff: {}, context: {}, vocab: {}}}",
        s.d_model, s.heads, s.layers, s.d_ff, s.context, s.vocab
    )
}

fn spec(experiment: &str, steps: usize) -> Spec {
    config::parse(&common::resolved(experiment, steps, BATCH)).unwrap()
}

/// PyTorch's names and shapes of gpt at `s`, in its order (model_specs.py `_gpt`).
fn pytorch_params(s: GptSize) -> Vec<(String, Vec<usize>)> {
    let (d, f, v, t) = (s.d_model, s.d_ff, s.vocab, s.context);
    let mut params = vec![
        ("tok_emb.weight".to_string(), vec![v, d]),
        ("pos_emb.weight".to_string(), vec![t, d]),
    ];
    for i in 0..s.layers {
        for (name, shape) in [
            ("ln1.weight", vec![d]),
            ("ln1.bias", vec![d]),
            ("attn.in_proj_weight", vec![3 * d, d]),
            ("attn.in_proj_bias", vec![3 * d]),
            ("attn.out_proj.weight", vec![d, d]),
            ("attn.out_proj.bias", vec![d]),
            ("ln2.weight", vec![d]),
            ("ln2.bias", vec![d]),
            ("fc1.weight", vec![f, d]),
            ("fc1.bias", vec![f]),
            ("fc2.weight", vec![d, f]),
            ("fc2.bias", vec![d]),
        ] {
            params.push((format!("blocks.{i}.{name}"), shape));
        }
    }
    for (name, shape) in [
        ("ln_f.weight", vec![d]),
        ("ln_f.bias", vec![d]),
        ("head.weight", vec![v, d]),
        ("head.bias", vec![v]),
    ] {
        params.push((name.to_string(), shape));
    }
    params
}

#[test]
fn gpt_declares_pytorchs_names_shapes_and_layers_at_each_size() {
    let model = models::builtin("gpt").expect("gpt is built in");
    assert_eq!(model.name, Gpt::NAME);
    assert_eq!(
        model.default_size().keys(),
        ["d_model", "heads", "layers", "d_ff", "context", "vocab"]
    );
    assert_eq!(model.default_size(), ModelSize::from(common::GPT));
    assert_eq!(
        serde_json::to_string(&model.default_size()).unwrap(),
        r#"{"d_model":32,"heads":2,"layers":2,"d_ff":128,"context":32,"vocab":84}"#
    );
    for s in [common::GPT, SMALL] {
        let size = ModelSize::from(s);
        let params = Gpt::params(&size);
        let got: Vec<(String, Vec<usize>)> = params
            .iter()
            .map(|e| (e.name.clone(), e.shape.clone()))
            .collect();
        assert_eq!(got, pytorch_params(s));
        for e in &params {
            let packed = e.name.contains("in_proj");
            assert_eq!(e.parts, if packed { 3 } else { 1 }, "{}", e.name);
            let matrix = e.shape.len() == 2 && !e.name.contains("_emb");
            let layout = if matrix {
                Layout::Transposed
            } else {
                Layout::Same
            };
            assert_eq!(e.layout, layout, "{}", e.name);
        }
        assert!(Gpt::buffers(&size).is_empty());
        assert_eq!(Gpt::sample(&size), [s.context]);
        let mut layers = vec!["embed".to_string()];
        for i in 0..s.layers {
            layers.extend([format!("attn.{i}"), format!("ff.{i}")]);
        }
        layers.extend(["ln_f".to_string(), "head".to_string()]);
        assert_eq!(Gpt::layers(&size), layers);
        assert_eq!(
            Gpt::pytorch_keys(&size),
            [(
                r"\.attn\.out_proj\.".to_string(),
                ".attn.output.".to_string()
            )]
        );
        assert_eq!((model.params)(&size), params);
    }
    // Any block's names are gpt's; a fault can name them.
    assert!((model.may_have_param)("blocks.7.attn.in_proj_bias"));
    assert!(!(model.may_have_param)("blocks.x.fc1.weight"));
    assert!(parity_train::fault::Fault::parse("2:blocks.5.fc2.bias:3:0.5").is_ok());
    // The spec's size is checked as the others'; gpt's data is the text.
    let sized = |size: &str| {
        config::parse(&common::resolved(
            &format!("{SGD}, model: gpt, model_size: {size}"),
            STEPS,
            BATCH,
        ))
    };
    assert_eq!(
        sized("{d_model: 32, heads: 3, layers: 2, d_ff: 128, context: 32, vocab: 84}").unwrap_err(),
        "model_size.heads: 3 does not divide d_model 32"
    );
    assert_eq!(
        sized("{d_model: 32, heads: 2, layers: 2, d_ff: 128, context: 32}").unwrap_err(),
        "model_size.vocab: missing (model gpt is sized by d_model, heads, layers, d_ff, context, vocab)"
    );
    assert_eq!(
        sized("{d_model: 32, heads: 2, layers: 0, d_ff: 128, context: 32, vocab: 84}").unwrap_err(),
        "model_size.layers: 0 is not a positive integer"
    );
    let spec = sized(&size_yaml(SMALL)).unwrap();
    assert_eq!(spec.model_size, ModelSize::from(SMALL));
    assert_eq!(spec.data, config::Data::Text);
}

#[test]
fn gpt_reads_back_its_arrays_sizes_and_settings() {
    for s in [common::GPT, SMALL] {
        let size = ModelSize::from(s);
        let data = text(s, N);
        let model: Gpt = models::build(&size, &data, &device()).unwrap();
        assert_eq!(model.size(), size);
        let params = Gpt::params(&size);
        for (entry, values) in params.iter().zip(models::param_values(&model)) {
            let file: Vec<f64> = data
                .f32(&entry.name)
                .unwrap()
                .1
                .iter()
                .map(|&x| x as f64)
                .collect();
            assert_eq!(values, file, "{}", entry.name);
        }
        let declared: usize = params
            .iter()
            .map(|e| e.shape.iter().product::<usize>())
            .sum();
        assert_eq!(model.num_params(), declared);
        let attn = &model.blocks[0].attn;
        assert_eq!(attn.query.weight.val().dims(), [s.d_model, s.d_model]);
        assert_eq!(
            model.blocks[0].fc1.weight.val().dims(),
            [s.d_model, s.d_ff],
            "Burn's [in, out]"
        );
        // The query is rows 0..d of in_proj_weight, the value rows 2d..3d, transposed.
        let (_, packed) = data.f32("blocks.0.attn.in_proj_weight").unwrap();
        let d = s.d_model;
        let value = models::values(attn.value.weight.val());
        for (r, c) in [(0, 0), (1, 2), (d - 1, d - 2)] {
            assert_eq!(value[c * d + r], packed[(2 * d + r) * d + c] as f64);
        }
        assert_eq!(
            model.layer_hyperparameters(),
            json!({
                "attn.heads": s.heads, "attn.dropout": 0.0, "attn.causal": true,
                "ln.eps": 1e-5, "gelu.approximate": "none",
                // the f32 square root Burn divides the scores by (mha.rs line 290)
                "attn.sqrt_d_k": ((s.d_model / s.heads) as f32).sqrt() as f64,
            })
        );
        assert!(!attn.quiet_softmax);
        assert_eq!(attn.min_float, -1.0e4, "Burn's default, as a port keeps it");
    }
}

/// A [rows, cols] matrix of the file's array `name` (PyTorch's layout), in f64.
fn matrix(data: &Dataset, name: &str, device: &Device) -> Tensor<2> {
    let (shape, values) = data.f32(name).unwrap();
    let values: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    let shape = if shape.len() == 1 {
        [1, shape[0]]
    } else {
        [shape[0], shape[1]]
    };
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// x [rows, in] · Wᵀ + b, PyTorch's Linear, W [out, in].
fn linear(x: Tensor<2>, w: Tensor<2>, b: Tensor<2>) -> Tensor<2> {
    x.matmul(w.transpose()) + b
}

/// LayerNorm over the last axis by hand: (x − mean)/sqrt(biased var + 1e-5)·γ + β.
fn layer_norm(x: Tensor<2>, data: &Dataset, name: &str, device: &Device) -> Tensor<2> {
    let c = x.clone() - x.mean_dim(1);
    let var = (c.clone() * c.clone()).mean_dim(1);
    let g = matrix(data, &format!("{name}.weight"), device);
    let b = matrix(data, &format!("{name}.bias"), device);
    c / (var + 1e-5).sqrt() * g + b
}

/// gpt's logits [n·T, vocab] as PyTorch computes them, in f64 from the file's arrays, with
/// plain tensor ops: one-hot embeddings, LayerNorm, attention (scores scaled by
/// 1/sqrt(d_k), an additive −inf mask above the diagonal, softmax by hand), erf GELU.
fn reference(data: &Dataset, s: GptSize, device: &Device) -> Vec<f64> {
    let (shape, ids) = data.i64("x").unwrap();
    let (n, t) = (shape[0], shape[1]);
    let (d, heads, v) = (s.d_model, s.heads, s.vocab);
    let dk = d / heads;
    let mut onehot = vec![0.0; n * t * v];
    for (i, &id) in ids.iter().enumerate() {
        onehot[i * v + id as usize] = 1.0;
    }
    let onehot = Tensor::<2>::from_data(TensorData::new(onehot, [n * t, v]), device);
    let tok = onehot.matmul(matrix(data, "tok_emb.weight", device));
    let pos = matrix(data, "pos_emb.weight", device)
        .reshape([1, t, d])
        .expand([n, t, d])
        .reshape([n * t, d]);
    let mut h = tok + pos;
    let mut mask = vec![0.0; t * t];
    for i in 0..t {
        for j in i + 1..t {
            mask[i * t + j] = f64::NEG_INFINITY;
        }
    }
    let mask = Tensor::<2>::from_data(TensorData::new(mask, [t, t]), device).reshape([1, 1, t, t]);
    let heads_of = |x: Tensor<2>| x.reshape([n, t, heads, dk]).swap_dims(1, 2);
    for l in 0..s.layers {
        let p = |name: &str| format!("blocks.{l}.{name}");
        let a = layer_norm(h.clone(), data, &p("ln1"), device);
        let w = matrix(data, &p("attn.in_proj_weight"), device);
        let b = matrix(data, &p("attn.in_proj_bias"), device);
        let part = |k: usize| {
            let wk = w.clone().slice(s![k * d..(k + 1) * d, ..]);
            let bk = b.clone().slice(s![.., k * d..(k + 1) * d]);
            heads_of(linear(a.clone(), wk, bk))
        };
        let (q, k, val) = (part(0), part(1), part(2));
        let scores = q.matmul(k.swap_dims(2, 3)) * (1.0 / (dk as f64).sqrt()) + mask.clone();
        let e = (scores.clone() - scores.max_dim(3)).exp();
        let weights = e.clone() / e.sum_dim(3);
        let context = weights.matmul(val).swap_dims(1, 2).reshape([n * t, d]);
        h = h + linear(
            context,
            matrix(data, &p("attn.out_proj.weight"), device),
            matrix(data, &p("attn.out_proj.bias"), device),
        );
        let a = layer_norm(h.clone(), data, &p("ln2"), device);
        let a = linear(
            a,
            matrix(data, &p("fc1.weight"), device),
            matrix(data, &p("fc1.bias"), device),
        );
        let gelu = a.clone() * ((a / 2f64.sqrt()).erf() + 1.0) * 0.5;
        h = h + linear(
            gelu,
            matrix(data, &p("fc2.weight"), device),
            matrix(data, &p("fc2.bias"), device),
        );
    }
    let h = layer_norm(h, data, "ln_f", device);
    models::values(linear(
        h,
        matrix(data, "head.weight", device),
        matrix(data, "head.bias", device),
    ))
}

#[test]
fn gpts_forward_is_an_independent_f64_reference_of_its_blocks() {
    for s in [SMALL, common::GPT] {
        let data = text(s, N);
        let model: Gpt = models::build(&ModelSize::from(s), &data, &device()).unwrap();
        let (x, _) = train::inputs::<Tensor<2, Int>>(&data, &device()).unwrap();
        let logits = models::values(model.forward(x.clone(), &mut Probe::on()));
        assert_eq!(
            logits,
            models::values(model.forward(x.clone(), &mut Probe::off()))
        );
        assert_eq!(logits.len(), N * s.context * s.vocab);
        let want = reference(&data, s, &common::f64_device());
        let gap = common::max_gap(&logits, &want);
        assert!(gap < 1e-12, "{s:?}: {gap:e}");
        assert!(logits.iter().any(|v| v.abs() > 1e-2));
        // Burn's default fill of masked scores, −1e4, gives the same values bit for bit as
        // PyTorch's −inf here: exp(−1e4 − max) is an exact 0.
        let mut filled = model.clone();
        for block in &mut filled.blocks {
            block.attn.min_float = f64::NEG_INFINITY;
        }
        assert_eq!(models::values(filled.forward(x, &mut Probe::off())), logits);
    }
}

#[test]
fn a_later_token_does_not_change_an_earlier_positions_logits() {
    let s = SMALL;
    let (t, v) = (s.context, s.vocab);
    let data = text(s, N);
    let device = common::f64_device();
    let model: Gpt = models::build(&ModelSize::from(s), &data, &device).unwrap();
    let (_, ids) = data.i64("x").unwrap();
    let rows = 4;
    let logits = |ids: &[i64]| {
        let x = Tensor::<2, Int>::from_data(TensorData::new(ids.to_vec(), [rows, t]), &device);
        models::values(model.valid().forward(x, &mut Probe::off()))
    };
    let base = logits(&ids[..rows * t]);
    for changed in [1, t - 1] {
        let mut other = ids[..rows * t].to_vec();
        for k in 0..rows {
            other[k * t + changed] = (other[k * t + changed] + 1) % v as i64;
        }
        let out = logits(&other);
        for k in 0..rows {
            for pos in 0..t {
                let at = (k * t + pos) * v..(k * t + pos + 1) * v;
                if pos < changed {
                    assert_eq!(out[at.clone()], base[at], "sample {k} position {pos}");
                } else if pos == changed {
                    assert!(common::max_gap(&out[at.clone()], &base[at]) > 1e-6);
                }
            }
        }
    }
}

/// The cross-entropy of logits [rows, V] (flat) against `y`, in f64.
fn cross_entropy(logits: &[f64], y: &[i64], vocab: usize) -> f64 {
    let total: f64 = logits
        .chunks(vocab)
        .zip(y)
        .map(|(row, &label)| {
            let top = row.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|v| (v - top).exp()).sum();
            top + sum.ln() - row[label as usize]
        })
        .sum();
    total / y.len() as f64
}

#[test]
fn gpt_trains_and_records_its_layers_and_meta() {
    let s = SMALL;
    let (t, d, v) = (s.context, s.d_model, s.vocab);
    let data = text(s, N);
    let experiment = format!(
        "{SGD}, model: gpt, model_size: {}, probe_steps: [3]",
        size_yaml(s)
    );
    let block = common::trained(&spec(&experiment, STEPS), &data, &device(), None).unwrap();
    let losses = common::list(&block["losses"]);
    assert_eq!(losses.len(), STEPS);
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(losses[0] > 1.0 && losses[0] < 5.0, "{losses:?}");
    assert!(common::float(&block["final"]["loss"]).is_finite());
    let predictions = block["final"]["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), N * t, "a prediction per position");
    assert!(
        predictions
            .iter()
            .all(|p| (0..v as i64).contains(&p.as_i64().unwrap()))
    );
    let names = Gpt::layers(&ModelSize::from(s));
    let y = data.i64("y").unwrap().1;
    for (k, step) in [1, 3].into_iter().enumerate() {
        let record = &block["layers"][k];
        assert_eq!(record["step"], step);
        assert_eq!(record["names"], json!(names));
        assert_eq!(
            record["input_grads"][0],
            json!([]),
            "no gradient of token ids"
        );
        assert_eq!(common::list(&record["outputs"][0]).len(), BATCH * t * d);
        for j in 1..names.len() {
            let grad = common::list(&record["input_grads"][j]);
            assert_eq!(grad.len(), BATCH * t * d, "{}", names[j]);
            assert!(grad.iter().any(|g| g.abs() > 0.0), "{}", names[j]);
        }
        // The head's output is the [B·T, vocab] logits the loss is taken over.
        let logits = common::list(&record["outputs"][names.len() - 1]);
        assert_eq!(logits.len(), BATCH * t * v);
        let first = ((step - 1) % (N / BATCH)) * BATCH * t;
        let want = cross_entropy(&logits, &y[first..first + BATCH * t], v);
        assert!((losses[step - 1] - want).abs() < 1e-14, "step {step}");
    }
    let meta = &block["meta"];
    assert_eq!(meta["model"], "gpt");
    assert_eq!(meta["data"], "text");
    assert_eq!(
        meta["model_size"],
        serde_json::to_value(ModelSize::from(s)).unwrap()
    );
    assert_eq!(
        meta["layer_hyperparameters"],
        json!({
            "attn.heads": 3, "attn.dropout": 0.0, "attn.causal": true, "ln.eps": 1e-5,
            "gelu.approximate": "none", "attn.sqrt_d_k": 2.0,
            // Flex differentiates the exact GELU (config.rs `gelu_backward`)
            "gelu.backward": "none",
        })
    );
    assert_eq!(
        meta["burn_shapes"]["blocks.2.attn.in_proj_weight"],
        json!([[d, d], [d, d], [d, d]])
    );
    assert_eq!(meta["burn_shapes"]["head.weight"], json!([[d, v]]));
    assert_eq!(block["buffers"], json!({}));
    let params = block["params"].as_object().unwrap();
    assert_eq!(params.len(), pytorch_params(s).len());
    assert_eq!(
        common::list(&block["trajectory"]["grads"]["blocks.1.attn.in_proj_bias"][0]).len(),
        3 * d
    );
    // The default size trains too.
    let default = common::trained(
        &spec(&format!("{SGD}, model: gpt, record_steps: []"), 2),
        &text(common::GPT, N),
        &device(),
        None,
    )
    .unwrap();
    let losses = common::list(&default["losses"]);
    assert!(
        losses.iter().all(|l| l.is_finite() && *l > 1.0),
        "{losses:?}"
    );
}

/// The final evaluation as the PyTorch side's `evaluate` computes it, by hand: the model's
/// eval-mode forward of each chunk of `EVAL_CHUNK` samples, its mean loss and rows, and
/// Σ (mean · rows) / Σ rows in f64 for several chunks.
fn by_hand<M: ParityModel>(model: &M, data: &Dataset, smoothing: f64) -> (f64, i64, Vec<i64>) {
    let device = common::f64_device();
    let (x, y) = train::inputs::<M::Input>(data, &device).unwrap();
    let ce = parity_train::loss::loss_config(smoothing).init(&device);
    let per = models::labels_per_sample(data);
    let eval = model.valid();
    let n = parity_train::models::ModelInput::samples(&x);
    let (mut means, mut rows, mut correct, mut predictions) = (vec![], vec![], 0, vec![]);
    let mut start = 0;
    while start < n {
        let end = (start + EVAL_CHUNK).min(n);
        let xc = parity_train::models::ModelInput::rows(&x, start..end);
        let yc = y.clone().slice(s![start * per..end * per]);
        let out = eval.forward(xc, &mut Probe::off());
        rows.push(out.dims()[0]);
        means.push(ce.forward(out.clone(), yc.clone()).into_scalar::<f64>());
        let labels: Vec<i64> = yc.into_data().convert::<i64>().try_to_vec().unwrap();
        let logits = models::values(out);
        let classes = logits.len() / labels.len();
        for (row, label) in logits.chunks(classes).zip(labels) {
            let best = (0..classes).fold(0, |b, c| if row[c] > row[b] { c } else { b }) as i64;
            correct += i64::from(best == label);
            predictions.push(best);
        }
        start = end;
    }
    let mean = if means.len() == 1 {
        means[0]
    } else {
        let total: f64 = means.iter().zip(&rows).map(|(m, &r)| m * r as f64).sum();
        total / rows.iter().sum::<usize>() as f64
    };
    (mean, correct, predictions)
}

#[test]
fn the_final_evaluation_takes_the_dataset_in_chunks_as_pytorch_does() {
    assert_eq!(EVAL_CHUNK, 512);
    assert_eq!(train::chunked_mean(&[0.1], &[7]), 0.1);
    assert_eq!(
        train::chunked_mean(&[1.5, 3.0], &[3, 1]).to_bits(),
        ((1.5 * 3.0 + 3.0) / 4.0f64).to_bits()
    );
    let device = device();
    // More than one chunk: 600 blocks of the small gpt (512 + 88 samples).
    let data = text(SMALL, 600);
    let model: Gpt = models::build(&ModelSize::from(SMALL), &data, &device).unwrap();
    for smoothing in [0.0, 0.1] {
        let config = parity_train::loss::loss_config(smoothing);
        let (loss, correct, predictions) =
            train::evaluate_with(&model, &data, &device, &config.clone().into()).unwrap();
        let (want, want_correct, want_predictions) = by_hand(&model, &data, smoothing);
        assert_eq!(loss.to_bits(), want.to_bits(), "{smoothing}: {loss} {want}");
        let predictions = predictions.expect("a classifier's predictions");
        assert_eq!(
            (correct, &predictions),
            (Some(want_correct), &want_predictions)
        );
        assert_eq!(predictions.len(), 600 * SMALL.context);
        // Close to the mean over the whole dataset at once, by construction.
        let (x, y) = train::inputs::<Tensor<2, Int>>(&data, &device.clone().inner()).unwrap();
        let whole: f64 = config
            .init(&device.clone().inner())
            .forward(model.valid().forward(x, &mut Probe::off()), y)
            .into_scalar();
        assert!((whole - loss).abs() < 1e-12, "{whole} {loss}");
    }
    // One chunk (≤ 512 samples): the whole dataset's own mean, bit for bit, as before.
    let one = |loss: f64, out: Tensor<2>, y| {
        let want: f64 = parity_train::loss::loss_config(0.0)
            .init(&common::f64_device())
            .forward(out, y)
            .into_scalar();
        assert_eq!(loss.to_bits(), want.to_bits());
    };
    let data = text(SMALL, 512);
    let model: Gpt = models::build(&ModelSize::from(SMALL), &data, &device).unwrap();
    let (loss, _, _) = train::evaluate(&model, &data, &device).unwrap();
    let (x, y) = train::inputs::<Tensor<2, Int>>(&data, &common::f64_device()).unwrap();
    one(loss, model.valid().forward(x, &mut Probe::off()), y);
    let sine = common::dataset(common::cnn1d_arrays(common::CONV));
    let cnn1d: Cnn1d = models::build(&ModelSize::from(common::CONV), &sine, &device).unwrap();
    let (loss, _, _) = train::evaluate(&cnn1d, &sine, &device).unwrap();
    let (x, y) = train::inputs::<Tensor<3>>(&sine, &common::f64_device()).unwrap();
    one(loss, cnn1d.valid().forward(x, &mut Probe::off()), y);
}
