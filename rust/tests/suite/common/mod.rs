//! Shared by the integration tests: the F64 device and the models' dataset files, built with
//! src/torch_burn_parity/training/make_data.py's formulas (f64, rounded to f32 once).
#![allow(dead_code)]

pub mod port;
mod run_tensors;
mod spec;
pub mod store;
#[allow(unused_imports)] // each test file uses some of them
pub use run_tensors::{attach, scratch_run, trained, values};
pub use spec::resolved;

use burn::tensor::{Device, FloatDType};
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::models::{ConvSize, GptSize, LeNetSize, TransformerSize};
use std::sync::OnceLock;

/// The process's Flex device, configured for F64 once (settings can be set only once).
pub fn f64_device() -> Device {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            let mut device = Device::flex();
            device.configure(FloatDType::F64).expect("F64 device");
            device
        })
        .clone()
}

/// A run block as its run file holds it, to read as JSON.
pub fn json(block: parity_train::runfile::RunBlock) -> serde_json::Value {
    serde_json::to_value(block).expect("a run block serialises")
}

/// The numbers of a JSON list (a run file's series).
pub fn list(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// The largest |a − b| over two equally long series.
pub fn max_gap(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| gap_or_infinite((x - y).abs()))
        .fold(0.0, f64::max)
}

/// A gap, or infinity where it is NaN: `f64::max` would drop a NaN, and a prediction gone
/// non-finite would pass for a perfect one.
pub fn gap_or_infinite(gap: f64) -> f64 {
    if gap.is_nan() { f64::INFINITY } else { gap }
}

/// The seed's problem size: 96 sequences of length 16 in 3 classes.
pub const N: usize = 96;
pub const LENGTH: usize = 16;
pub const CLASSES: usize = 3;

/// The seed's sizes of cnn1d and cnn_bn.
pub const CONV: ConvSize = ConvSize {
    channels: 4,
    kernel: 5,
};
/// The seed's sizes of the transformer.
pub const TRANSFORMER: TransformerSize = TransformerSize {
    d_model: 8,
    heads: 2,
    layers: 1,
    d_ff: 16,
};

pub fn f32_array(shape: &[usize], f: impl Fn(usize) -> f64) -> Array {
    let n = shape.iter().product();
    Array {
        shape: shape.to_vec(),
        values: Values::F32((0..n).map(|i| f(i) as f32).collect()),
    }
}

fn sin1(i: usize) -> f64 {
    (i as f64 + 1.0).sin()
}

fn cos1(i: usize) -> f64 {
    (i as f64 + 1.0).cos()
}

/// `x` and `y`: x[k][t] = sin(f·t + 0.37k) + 0.3·sin(2.3t + 1.1k), f = 0.3·(c+1), c = k mod 3.
fn inputs() -> Vec<(String, Array)> {
    let x = f32_array(&[N, 1, LENGTH], |i| {
        let (k, t) = ((i / LENGTH) as f64, (i % LENGTH) as f64);
        let f = 0.3 * ((k as usize % CLASSES) as f64 + 1.0);
        (f * t + 0.37 * k).sin() + 0.3 * (2.3 * t + 1.1 * k).sin()
    });
    let y = Array {
        shape: vec![N],
        values: Values::I64((0..N as i64).map(|k| k % CLASSES as i64).collect()),
    };
    vec![("x".into(), x), ("y".into(), y)]
}

/// The cnn1d dataset's arrays at `size`, in the file's order.
pub fn cnn1d_arrays(size: ConvSize) -> Vec<(String, Array)> {
    let (c, k, p) = (size.channels, size.kernel, size.positions());
    let mut arrays = inputs();
    arrays.extend(named([
        ("conv.weight", f32_array(&[c, 1, k], |i| 0.4 * sin1(i))),
        ("conv.bias", f32_array(&[c], |o| 0.02 * o as f64 - 0.03)),
        ("fc.weight", f32_array(&[3, c * p], |i| 0.15 * cos1(i))),
        ("fc.bias", f32_array(&[3], |_| 0.0)),
    ]));
    arrays
}

/// The cnn_bn dataset's arrays at `size` (parameters, then buffers), in the file's order.
pub fn cnn_bn_arrays(size: ConvSize) -> Vec<(String, Array)> {
    let (c, k, p) = (size.channels, size.kernel, size.positions());
    let mut arrays = inputs();
    arrays.extend(named([
        ("conv.weight", f32_array(&[c, 1, k], |i| 0.4 * sin1(i))),
        ("bn.weight", f32_array(&[c], |i| 1.0 + 0.1 * sin1(i))),
        ("bn.bias", f32_array(&[c], |i| 0.05 * cos1(i))),
        ("ln.weight", f32_array(&[p], |i| 1.0 + 0.05 * cos1(i))),
        ("ln.bias", f32_array(&[p], |i| 0.02 * sin1(i))),
        ("fc.weight", f32_array(&[3, c * p], |i| 0.15 * cos1(i))),
        ("fc.bias", f32_array(&[3], |_| 0.0)),
        ("bn.running_mean", f32_array(&[c], |_| 0.0)),
        ("bn.running_var", f32_array(&[c], |_| 1.0)),
    ]));
    arrays
}

/// The transformer dataset's arrays at `size`, in the file's order (PyTorch's names and
/// layouts; any small values will do: these tests compare Burn with itself and with these
/// arrays). Encoder layer `l`'s formulas are layer 0's shifted by 7·l.
pub fn transformer_arrays(size: TransformerSize) -> Vec<(String, Array)> {
    let (d, f, layers) = (size.d_model, size.d_ff, size.layers);
    let mut arrays = inputs();
    arrays.extend(named([
        ("embed.weight", f32_array(&[d, 1], |i| 0.8 * sin1(i))),
        ("embed.bias", f32_array(&[d], |i| 0.1 * cos1(i))),
    ]));
    for l in 0..layers {
        let p = if layers == 1 {
            "enc".to_string()
        } else {
            format!("enc.layers.{l}")
        };
        let sin = |i: usize| sin1(i + 7 * l);
        let cos = |i: usize| cos1(i + 7 * l);
        arrays.extend([
            (
                format!("{p}.self_attn.in_proj_weight"),
                f32_array(&[3 * d, d], |i| 0.3 * sin(i)),
            ),
            (
                format!("{p}.self_attn.in_proj_bias"),
                f32_array(&[3 * d], |i| 0.05 * cos(i)),
            ),
            (
                format!("{p}.self_attn.out_proj.weight"),
                f32_array(&[d, d], |i| 0.2 * cos(i)),
            ),
            (
                format!("{p}.self_attn.out_proj.bias"),
                f32_array(&[d], |i| 0.02 * sin(i)),
            ),
            (
                format!("{p}.linear1.weight"),
                f32_array(&[f, d], |i| 0.3 * sin(i + 2)),
            ),
            (
                format!("{p}.linear1.bias"),
                f32_array(&[f], |i| 0.05 * sin(i)),
            ),
            (
                format!("{p}.linear2.weight"),
                f32_array(&[d, f], |i| 0.15 * cos(i + 2)),
            ),
            (
                format!("{p}.linear2.bias"),
                f32_array(&[d], |i| 0.02 * cos(i + 2)),
            ),
            (
                format!("{p}.norm1.weight"),
                f32_array(&[d], |i| 1.0 + 0.05 * cos(i)),
            ),
            (
                format!("{p}.norm1.bias"),
                f32_array(&[d], |i| 0.02 * sin(i)),
            ),
            (
                format!("{p}.norm2.weight"),
                f32_array(&[d], |i| 1.0 + 0.05 * sin(i)),
            ),
            (
                format!("{p}.norm2.bias"),
                f32_array(&[d], |i| 0.02 * cos(i)),
            ),
        ]);
    }
    arrays.extend(named([
        ("fc.weight", f32_array(&[3, LENGTH * d], |i| 0.1 * cos1(i))),
        ("fc.bias", f32_array(&[3], |_| 0.0)),
    ]));
    arrays
}

/// The digits' problem size: 60 images of 8×8 in 10 classes.
pub const DIGITS_N: usize = 60;
pub const SIDE: usize = 8;
pub const DIGITS: usize = 10;

/// The seed's sizes of lenet.
pub const LENET: LeNetSize = LeNetSize {
    conv1: 6,
    conv2: 16,
    hidden: 32,
};

/// The digits' `x` [60, 1, 8, 8] and `y` [60]: pixel (r, c) of image k is
/// ((3k + 5r + 7c + (k mod 10)·r·c) mod 17) / 16, a multiple of 1/16 in [0, 1] (exact in
/// f32); label k mod 10.
pub fn digits_inputs() -> Vec<(String, Array)> {
    let x = f32_array(&[DIGITS_N, 1, SIDE, SIDE], |i| {
        let (k, r, c) = (i / (SIDE * SIDE), (i / SIDE) % SIDE, i % SIDE);
        ((3 * k + 5 * r + 7 * c + (k % DIGITS) * r * c) % 17) as f64 / 16.0
    });
    let y = Array {
        shape: vec![DIGITS_N],
        values: Values::I64((0..DIGITS_N as i64).map(|k| k % DIGITS as i64).collect()),
    };
    vec![("x".into(), x), ("y".into(), y)]
}

/// The lenet dataset's arrays at `size`, in the file's order (PyTorch's names and layouts;
/// small sines, as the other models').
pub fn lenet_arrays(size: LeNetSize) -> Vec<(String, Array)> {
    let (c1, c2, h) = (size.conv1, size.conv2, size.hidden);
    let mut arrays = digits_inputs();
    arrays.extend(named([
        ("conv1.weight", f32_array(&[c1, 1, 3, 3], |i| 0.3 * sin1(i))),
        ("conv1.bias", f32_array(&[c1], |o| 0.02 * o as f64 - 0.03)),
        (
            "conv2.weight",
            f32_array(&[c2, c1, 3, 3], |i| 0.15 * sin1(i + 3)),
        ),
        ("conv2.bias", f32_array(&[c2], |i| 0.05 * cos1(i))),
        ("fc1.weight", f32_array(&[h, c2 * 4], |i| 0.1 * cos1(i))),
        ("fc1.bias", f32_array(&[h], |i| 0.02 * sin1(i))),
        ("fc2.weight", f32_array(&[DIGITS, h], |i| 0.2 * sin1(i + 5))),
        ("fc2.bias", f32_array(&[DIGITS], |_| 0.0)),
    ]));
    arrays
}

/// The spec's default sizes of gpt.
pub const GPT: GptSize = GptSize {
    d_model: 32,
    heads: 2,
    layers: 2,
    d_ff: 128,
    context: 32,
    vocab: 84,
};

/// Token `t` of sample `k` of the gpt data: (7k + 3t + (k·t mod 5)) mod vocab.
pub fn gpt_token(k: usize, t: usize, vocab: usize) -> i64 {
    ((7 * k + 3 * t + (k * t) % 5) % vocab) as i64
}

/// The text data of gpt at `size`: `x` [n, context] of [`gpt_token`]s, `y` [n, context]
/// the next token of each position (the formula's at t + 1).
pub fn gpt_inputs(size: GptSize, n: usize) -> Vec<(String, Array)> {
    let (t, v) = (size.context, size.vocab);
    let ids = |shift: usize| -> Vec<i64> {
        (0..n * t)
            .map(|i| gpt_token(i / t, i % t + shift, v))
            .collect()
    };
    let array = |values| Array {
        shape: vec![n, t],
        values: Values::I64(values),
    };
    vec![("x".into(), array(ids(0))), ("y".into(), array(ids(1)))]
}

/// The gpt dataset's arrays at `size` with `n` samples, in the file's order (PyTorch's
/// names and layouts; small sines, as the other models'). Block `l`'s formulas are block
/// 0's shifted by 7·l.
pub fn gpt_arrays(size: GptSize, n: usize) -> Vec<(String, Array)> {
    let (d, f, v, t) = (size.d_model, size.d_ff, size.vocab, size.context);
    let mut arrays = gpt_inputs(size, n);
    arrays.extend(named([
        ("tok_emb.weight", f32_array(&[v, d], |i| 0.5 * sin1(i))),
        ("pos_emb.weight", f32_array(&[t, d], |i| 0.2 * cos1(i + 3))),
    ]));
    for l in 0..size.layers {
        let p = format!("blocks.{l}");
        let sin = |i: usize| sin1(i + 7 * l);
        let cos = |i: usize| cos1(i + 7 * l);
        let array = |name: &str, shape: &[usize], f: &dyn Fn(usize) -> f64| {
            (format!("{p}.{name}"), f32_array(shape, f))
        };
        arrays.extend([
            array("ln1.weight", &[d], &|i| 1.0 + 0.05 * cos(i)),
            array("ln1.bias", &[d], &|i| 0.02 * sin(i)),
            array("attn.in_proj_weight", &[3 * d, d], &|i| 0.3 * sin(i)),
            array("attn.in_proj_bias", &[3 * d], &|i| 0.05 * cos(i)),
            array("attn.out_proj.weight", &[d, d], &|i| 0.2 * cos(i)),
            array("attn.out_proj.bias", &[d], &|i| 0.02 * sin(i)),
            array("ln2.weight", &[d], &|i| 1.0 + 0.05 * sin(i)),
            array("ln2.bias", &[d], &|i| 0.02 * cos(i)),
            array("fc1.weight", &[f, d], &|i| 0.3 * sin(i + 2)),
            array("fc1.bias", &[f], &|i| 0.05 * sin(i)),
            array("fc2.weight", &[d, f], &|i| 0.15 * cos(i + 2)),
            array("fc2.bias", &[d], &|i| 0.02 * cos(i + 2)),
        ]);
    }
    arrays.extend(named([
        ("ln_f.weight", f32_array(&[d], |i| 1.0 + 0.05 * sin1(i + 1))),
        ("ln_f.bias", f32_array(&[d], |i| 0.02 * cos1(i + 1))),
        ("head.weight", f32_array(&[v, d], |i| 0.25 * cos1(i))),
        ("head.bias", f32_array(&[v], |i| 0.01 * sin1(i))),
    ]));
    arrays
}

fn named<const K: usize>(arrays: [(&str, Array); K]) -> [(String, Array); K] {
    arrays.map(|(name, a)| (name.to_string(), a))
}

/// The arrays as a dataset read from its file: their dataset file's bytes ([`encode`])
/// decoded, so that the bytes burn-store loads from are those of the arrays checked.
pub fn dataset(arrays: Vec<(String, Array)>) -> Dataset {
    parity_train::dataset::decode(encode(&arrays)).expect("a dataset file")
}

/// The arrays as a dataset file (src/torch_burn_parity/io/parity_io.py), as make_data.py
/// writes it but for the model tag in its metadata, which the Burn side does not read.
pub fn encode(arrays: &[(String, Array)]) -> Vec<u8> {
    parity_train::dataset::encode(arrays, "rust-test")
}

/// A float of a run file's list (a number, or a non-finite one as a string).
pub fn float(v: &serde_json::Value) -> f64 {
    parity_train::measured::read_float(v).expect("a float")
}

/// Checks a run block's `norms` (the block in the inline form, as [`attach`] reads it): for
/// the parameters and for their gradients, one norm per step (`meta.steps`) per parameter,
/// in the trajectory's order (the model's), each at a recorded step (`record_steps`, the
/// trajectory's rows) sqrt(Σx²) in f64 of that step's recorded values, to 1e-12 relative.
pub fn check_norms(block: &serde_json::Value, record_steps: &[usize]) {
    let steps = block["meta"]["steps"].as_u64().unwrap() as usize;
    for kind in ["params", "grads"] {
        let norms = block["norms"][kind]
            .as_object()
            .expect("norms of each kind");
        let rows = block["trajectory"][kind].as_object().unwrap();
        let names: Vec<&String> = norms.keys().collect();
        assert_eq!(
            names,
            rows.keys().collect::<Vec<_>>(),
            "{kind}: the model's order"
        );
        for (name, series) in norms {
            let series: Vec<f64> = series.as_array().unwrap().iter().map(float).collect();
            assert_eq!(series.len(), steps, "{kind}/{name}: a norm per step");
            let rows = rows[name].as_array().unwrap();
            assert_eq!(
                rows.len(),
                record_steps.len(),
                "{kind}/{name}: recorded rows"
            );
            for (row, &step) in rows.iter().zip(record_steps) {
                let sum: f64 = row
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| float(x).powi(2))
                    .sum();
                let (norm, want) = (series[step - 1], sum.sqrt());
                assert!(
                    (norm - want).abs() <= 1e-12 * want.abs() || norm == want,
                    "{kind}/{name} at step {step}: {norm} against {want}"
                );
            }
        }
    }
}
