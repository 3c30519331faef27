//! The token path, for a language model's input (`type Input = Tensor<2, Int>`): token ids
//! [N, T] read and cut by sample, a label per position ([N, T], flattened sample by
//! sample), and the layer record of a token layer (an embedding), whose input gradient is
//! an empty list (no gradient with respect to integer inputs), inline and in the tensors
//! file.
//!
//! The model here is a test's own: Embedding(V → d) → Linear(d → V) at every position. No
//! spec can name it, so it is trained with `train::run` and sized as a conv model is
//! (`channels` = d, `kernel` = V).

use crate::common;
use burn::module::{Module, Param, ParamId};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};
use parity_train::config;
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::measured::Floats;
use parity_train::models::{
    self, Act, Arrays, ConvSize, Entry, ModelInput, ModelSize, ParityModel, Probe, SizeKeys,
};
use parity_train::run::Run;
use parity_train::train;
use safetensors::SafeTensors;
use serde_json::{Value, json};

const VOCAB: usize = 5;
const WIDTH: usize = 3;
/// Positions per sample, and samples.
const T: usize = 4;
const N: usize = 12;
const BATCH: usize = 4;
const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";

fn device() -> Device {
    common::f64_device().autodiff()
}

/// Embedding(V → d) → Linear(d → V) at each position: logits [B·T, V].
#[derive(Module, Debug)]
pub struct TokenModel {
    pub embed: Embedding,
    pub head: Linear,
}

impl ParityModel for TokenModel {
    const NAME: &'static str = "tokens";
    type Input = Tensor<2, Int>;
    /// A conv model's keys: the embedding's width as `channels`, the vocabulary as `kernel`.
    const SIZE: SizeKeys = &[("channels", WIDTH), ("kernel", VOCAB)];

    fn sample(_: &ModelSize) -> Vec<usize> {
        vec![T]
    }

    fn params(size: &ModelSize) -> Vec<Entry> {
        let ConvSize {
            channels: d,
            kernel: v,
        } = ConvSize::from(size);
        vec![
            // nn.Embedding's weight [V, d] is Burn's as it is.
            Entry::same("embed.weight", &[v, d]),
            Entry::transposed("head.weight", &[v, d]),
            Entry::same("head.bias", &[v]),
        ]
    }

    fn buffers(_: &ModelSize) -> Vec<Entry> {
        Vec::new()
    }

    fn layers(_: &ModelSize) -> Vec<String> {
        vec!["embed".into(), "head".into()]
    }

    fn init(size: &ModelSize, device: &Device) -> Self {
        let s = ConvSize::from(size);
        TokenModel {
            embed: EmbeddingConfig::new(s.kernel, s.channels).init(device),
            head: LinearConfig::new(s.channels, s.kernel).init(device),
        }
    }

    fn pytorch_keys(_: &ModelSize) -> Vec<(String, String)> {
        Vec::new()
    }

    fn build(arrays: &Arrays) -> Self {
        let mut m = Self::init(&arrays.size(), arrays.device());
        m.embed.weight = arrays.param("embed.weight");
        m.head.weight = arrays.param("head.weight");
        m.head.bias = Some(arrays.param("head.bias"));
        m
    }

    fn size(&self) -> ModelSize {
        let [kernel, channels] = self.embed.weight.shape().dims();
        ModelSize::from(ConvSize { channels, kernel })
    }

    fn param_ids(&self) -> Vec<ParamId> {
        let bias = |b: &Option<Param<Tensor<1>>>| b.as_ref().expect("bias").id;
        vec![
            self.embed.weight.id,
            self.head.weight.id,
            bias(&self.head.bias),
        ]
    }

    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        Vec::new()
    }

    /// embed, head (the rows [B·T, d] first).
    fn stage(&self, k: usize, x: Act) -> Act {
        match k {
            0 => self.embed.forward(x.tokens()).into(),
            _ => {
                let h = x.r3();
                let [b, t, d] = h.dims();
                self.head.forward(h.reshape([b * t, d])).into()
            }
        }
    }

    fn layer_hyperparameters(&self) -> Value {
        json!({})
    }
}

const SIZE: ConvSize = ConvSize {
    channels: WIDTH,
    kernel: VOCAB,
};

fn f32_array(shape: &[usize], f: impl Fn(usize) -> f64) -> Array {
    let n = shape.iter().product();
    Array {
        shape: shape.to_vec(),
        values: Values::F32((0..n).map(|i| f(i) as f32).collect()),
    }
}

/// Token k·T + t is (3k + t) mod V; its label the next id, (token + 1) mod V; `y` [N, T],
/// or [N] (each sample's first label) when `per_position` is false.
fn token_arrays(per_position: bool) -> Vec<(String, Array)> {
    let x: Vec<i64> = (0..N * T)
        .map(|i| ((3 * (i / T) + i % T) % VOCAB) as i64)
        .collect();
    let y: Vec<i64> = x.iter().map(|&t| (t + 1) % VOCAB as i64).collect();
    let y = if per_position {
        Array {
            shape: vec![N, T],
            values: Values::I64(y),
        }
    } else {
        Array {
            shape: vec![N],
            values: Values::I64(y.iter().step_by(T).copied().collect()),
        }
    };
    vec![
        (
            "x".into(),
            Array {
                shape: vec![N, T],
                values: Values::I64(x),
            },
        ),
        ("y".into(), y),
        (
            "embed.weight".into(),
            f32_array(&[VOCAB, WIDTH], |i| 0.5 * (i as f64 + 1.0).sin()),
        ),
        (
            "head.weight".into(),
            f32_array(&[VOCAB, WIDTH], |i| 0.3 * (i as f64 + 1.0).cos()),
        ),
        ("head.bias".into(), f32_array(&[VOCAB], |_| 0.0)),
    ]
}

fn tokens() -> Dataset {
    common::dataset(token_arrays(true))
}

#[test]
fn a_token_layer_records_its_output_and_an_empty_input_gradient() {
    let device = device();
    let embed = EmbeddingConfig::new(VOCAB, WIDTH).init(&device);
    let head = LinearConfig::new(WIDTH, VOCAB).init(&device);
    let x = Tensor::<2, Int>::from_data([[0, 1, 2], [3, 4, 0]], &device);
    let forward = |probe: &mut Probe| {
        let h = probe.stage(0, Act::Tokens(x.clone()), |x| {
            embed.forward(x.tokens()).into()
        });
        probe
            .stage(1, h, |h| head.forward(h.r3().reshape([6, WIDTH])).into())
            .r2()
    };
    let mut probe = Probe::on();
    let out = forward(&mut probe);
    let plain = forward(&mut Probe::off());
    assert_eq!(models::values(out.clone()), models::values(plain));
    let y = Tensor::<1, Int>::from_data([1, 2, 3, 4, 0, 1], &device);
    let grads = CrossEntropyLossConfig::new()
        .init(&device)
        .forward(out, y)
        .backward();
    let names = vec!["embed".to_string(), "head".to_string()];
    let record = probe.record(1, &names, &grads).unwrap();
    let values = record.values.expect("inline values");
    assert_eq!(values.outputs.len(), 2);
    assert_eq!(values.input_grads.len(), 2, "one input gradient per layer");
    assert_eq!(
        values.input_grads[0],
        Floats(vec![]),
        "no gradient of token ids"
    );
    let embedded = models::values(embed.forward(x));
    assert_eq!(values.outputs[0].0, embedded);
    assert_eq!(values.input_grads[1].0.len(), 6 * WIDTH);
    assert!(values.input_grads[1].0.iter().any(|g| g.abs() > 0.0));
}

#[test]
fn token_ids_are_read_cut_and_refused_as_the_models_take_them() {
    let device = device();
    let data = tokens();
    let x = <Tensor<2, Int> as ModelInput>::read(&data, &device).unwrap();
    assert_eq!((x.samples(), x.dims()), (N, [N, T]));
    let rows: Vec<i64> = x
        .rows(2..5)
        .into_data()
        .convert::<i64>()
        .try_to_vec()
        .unwrap();
    assert_eq!(rows, data.i64("x").unwrap().1[2 * T..5 * T]);
    let (_, y) = train::inputs::<Tensor<2, Int>>(&data, &device).unwrap();
    assert_eq!(y.dims(), [N * T], "a label per position, flat");
    assert_eq!(models::labels_per_sample(&data), T);
    assert_eq!(
        models::labels_per_sample(&common::dataset(token_arrays(false))),
        1
    );
    // Each input type refuses another dtype or rank, on one line.
    assert_eq!(
        <Tensor<3> as ModelInput>::read(&data, &device).unwrap_err(),
        "array 'x' is I64 in the dataset, the model takes F32"
    );
    let sine = common::dataset(common::cnn1d_arrays(common::CONV));
    assert_eq!(
        <Tensor<2, Int> as ModelInput>::read(&sine, &device).unwrap_err(),
        "array 'x' is F32 in the dataset, the model takes I64"
    );
    assert_eq!(
        <Tensor<4> as ModelInput>::read(&sine, &device).unwrap_err(),
        "array 'x' has shape [96, 1, 16] in the dataset, the model takes rank 4"
    );
    // The model's declaration: x [N, T] of I64.
    let size = ModelSize::from(SIZE);
    assert_eq!(
        models::build::<TokenModel>(&size, &sine, &device)
            .map(|_| ())
            .unwrap_err(),
        "model tokens: the dataset has no array 'embed.weight' (the Burn module needs it, shape [5, 3])"
    );
    let mut arrays = token_arrays(true);
    arrays[0].1 = f32_array(&[N, T], |_| 0.0);
    assert_eq!(
        models::build::<TokenModel>(&size, &common::dataset(arrays), &device)
            .map(|_| ())
            .unwrap_err(),
        "model tokens: array 'x' is F32 in the dataset, the Burn module takes I64"
    );
}

/// A spec of `steps` SGD steps of batches of 4, sized for [`TokenModel`], on the text data.
fn spec(steps: usize) -> config::Spec {
    let experiment =
        format!("{SGD}, model_size: {{channels: 3, kernel: 5}}, data: text, probe_steps: [2]");
    config::parse(&common::resolved(&experiment, steps, BATCH)).unwrap()
}

/// The cross-entropy of logits [rows, V] (flat) against `y`, in f64.
fn cross_entropy(logits: &[f64], y: &[i64]) -> f64 {
    let total: f64 = logits
        .chunks(VOCAB)
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
fn a_token_model_trains_on_a_label_per_position_and_writes_an_empty_input_gradient() {
    let data = tokens();
    let spec = spec(3);
    assert_eq!(spec.data, config::Data::Text);
    let out = common::scratch_run();
    let (block, _) =
        train::run::<TokenModel>(Run::new(&spec, &data, &device()), Some(&out)).unwrap();
    // The tensors file holds the token layer's input gradient as a tensor of shape [0].
    let bytes = std::fs::read(out.with_extension("safetensors")).unwrap();
    let file = SafeTensors::deserialize(&bytes).expect("a valid safetensors file");
    for step in [1, 2] {
        let empty = file
            .tensor(&format!("layers/{step}/input_grads/0"))
            .unwrap();
        assert_eq!((empty.shape(), empty.data().len()), (&[0][..], 0));
        let grads = file
            .tensor(&format!("layers/{step}/input_grads/1"))
            .unwrap();
        assert_eq!(grads.shape(), [BATCH * T * WIDTH]);
    }
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let entry = &header["layers/1/input_grads/0"];
    assert_eq!(entry["shape"], json!([0]));
    assert_eq!(entry["data_offsets"][0], entry["data_offsets"][1]);
    let block = common::attach(common::json(block), &out);
    std::fs::remove_dir_all(out.parent().unwrap()).unwrap();

    let losses = common::list(&block["losses"]);
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    let y = data.i64("y").unwrap().1;
    for (k, step) in [1, 2].into_iter().enumerate() {
        let record = &block["layers"][k];
        assert_eq!(record["step"], step);
        assert_eq!(record["names"], json!(["embed", "head"]));
        assert_eq!(record["input_grads"][0], json!([]));
        assert_eq!(common::list(&record["outputs"][0]).len(), BATCH * T * WIDTH);
        // The loss is over every position of the batch's samples, their labels in order.
        let logits = common::list(&record["outputs"][1]);
        assert_eq!(logits.len(), BATCH * T * VOCAB);
        let first = (step - 1) * BATCH * T;
        let want = cross_entropy(&logits, &y[first..first + BATCH * T]);
        assert!((losses[step - 1] - want).abs() < 1e-14, "step {step}");
    }
    let predictions = block["final"]["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), N * T, "a prediction per position");
    assert!(block["final"]["correct"].as_i64().unwrap() <= (N * T) as i64);
    assert_eq!(block["meta"]["data"], "text");
    assert_eq!(block["meta"]["model"], "tokens");
    assert_eq!(
        common::list(&block["trajectory"]["grads"]["embed.weight"][0]).len(),
        VOCAB * WIDTH
    );
}

#[test]
fn labels_that_are_not_the_forwards_rows_are_refused_on_one_line() {
    // A label per sample for a model that predicts at every position.
    let data = common::dataset(token_arrays(false));
    let out = common::scratch_run();
    let error = train::run::<TokenModel>(Run::new(&spec(2), &data, &device()), Some(&out))
        .map(|_| ())
        .unwrap_err();
    let left = std::fs::read_dir(out.parent().unwrap()).map_or(0, |d| d.count());
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    assert_eq!(
        error,
        "model tokens: the forward gives 16 rows of classes where the labels are 4"
    );
    assert_eq!(left, 0, "a failed run leaves no file");
}
