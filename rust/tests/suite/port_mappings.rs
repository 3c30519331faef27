//! A port's own mappings of PyTorch's arrays to Burn tensors ([`Port::mappings`]): a packed
//! qkv array split into three Linears (each block transposed), its bias split as it is, and a
//! `Conv1D`-style weight ([in, out]) held as is in a Burn Linear. Each loads exactly, is
//! recorded in PyTorch's names and layout, trains, and is refused on one line where the
//! mapping does not fit.

use crate::common;

use crate::common::f32_array;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use parity_train::config;
use parity_train::dataset::{Array, Dataset, Values};
use parity_train::models::{self, ParityModel};
use parity_train::port::{self, Layers, Mapping, Port};
use parity_train::record::Output;
use parity_train::run::Run;
use parity_train::train;

const N: usize = 16;
const D: usize = 4;
const CLASSES: usize = 3;

/// PyTorch: `in_proj_weight` [3D, D] and `in_proj_bias` [3D] (nn.MultiheadAttention's), then
/// `head.weight` [D, CLASSES] held [in, out] as GPT-2's Conv1D holds it, `head.bias`.
/// Burn: three Linears q, k, v and a Linear head; the forward sums q, k and v.
#[derive(Module, Debug)]
struct Packed {
    q: Linear,
    k: Linear,
    v: Linear,
    head: Linear,
}

impl Port for Packed {
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        let linear = || LinearConfig::new(D, D).init(device);
        Packed {
            q: linear(),
            k: linear(),
            v: linear(),
            head: LinearConfig::new(D, CLASSES).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = layers.layer("qkv", x, |x| {
            self.q.forward(x.clone()) + self.k.forward(x.clone()) + self.v.forward(x)
        });
        layers.layer("head", h, |h| self.head.forward(h))
    }

    fn mappings() -> Vec<(String, Mapping)> {
        let parts = |field: &str| -> Vec<String> {
            ["q", "k", "v"].map(|m| format!("{m}.{field}")).to_vec()
        };
        vec![
            (
                "in_proj_weight".into(),
                Mapping::SplitRows {
                    parts: parts("weight"),
                    transpose: true,
                },
            ),
            (
                "in_proj_bias".into(),
                Mapping::SplitRows {
                    parts: parts("bias"),
                    transpose: false,
                },
            ),
            ("head.weight".into(), Mapping::AsIs("head.weight".into())),
        ]
    }
}

/// The weights file's arrays, in its order (PyTorch's names and shapes).
fn params() -> Vec<(&'static str, Vec<usize>)> {
    vec![
        ("in_proj_weight", vec![3 * D, D]),
        ("in_proj_bias", vec![3 * D]),
        ("head.weight", vec![D, CLASSES]),
        ("head.bias", vec![CLASSES]),
    ]
}

fn data(params: &[(&str, Vec<usize>)]) -> Dataset {
    let mut arrays = vec![
        (
            "x".to_string(),
            f32_array(&[N, D], |i| (0.7 * i as f64).sin()),
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
        let array = f32_array(shape, |i| 0.05 * ((i + 7 * k) as f64).cos());
        arrays.push((name.to_string(), array));
    }
    common::dataset(arrays)
}

fn spec(params: &[(&str, Vec<usize>)]) -> config::Spec {
    config::parse(&common::port::spec_text(params, &["qkv", "head"])).unwrap()
}

fn flat(t: Tensor<2>) -> Vec<f64> {
    t.into_data()
        .convert::<f64>()
        .try_into_vec::<f64>()
        .unwrap()
}

#[test]
fn a_split_and_an_untransposed_weight_load_exactly_and_record_in_pytorchs_layout() {
    let data = data(&params());
    let device = common::f64_device().autodiff();
    let spec = spec(&params());
    port::prepare::<Packed>(&spec, &data, &device).unwrap();
    let model: Packed = models::build(&spec.model_size, &data, &device).unwrap();
    let file = |name: &str| -> Vec<f64> {
        let (_, values) = data.f32(name).unwrap();
        values.iter().map(|&v| f64::from(v)).collect()
    };
    let w = file("in_proj_weight");
    // Block k of PyTorch's rows, [D, D] as [out, in], is Burn's k-th Linear transposed.
    for (k, linear) in [&model.q, &model.k, &model.v].into_iter().enumerate() {
        let block = &w[k * D * D..(k + 1) * D * D];
        let burn = flat(linear.weight.val().transpose());
        assert_eq!(burn, block, "block {k}");
        let bias: Vec<f64> = linear
            .bias
            .as_ref()
            .unwrap()
            .val()
            .into_data()
            .convert::<f64>()
            .try_into_vec::<f64>()
            .unwrap();
        assert_eq!(bias, file("in_proj_bias")[k * D..(k + 1) * D], "bias {k}");
    }
    // Conv1D's [in, out] is Burn's Linear's own layout: no transpose.
    assert_eq!(flat(model.head.weight.val()), file("head.weight"));
    // Recorded back in PyTorch's names, order and layout: the file's arrays exactly.
    let values = models::param_values(&model);
    let names: Vec<String> = <Packed as ParityModel>::params(&spec.model_size)
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        ["in_proj_weight", "in_proj_bias", "head.weight", "head.bias"]
    );
    for (name, got) in names.iter().zip(&values) {
        assert_eq!(got, &file(name), "{name}");
    }
    // It trains, the packed array's gradient recorded whole.
    let (block, _) =
        train::run_into::<Packed>(Run::new(&spec, &data, &device), Output::Inline).unwrap();
    let block = common::json(block);
    let losses = common::list(&block["losses"]);
    assert!(losses[2] < losses[0], "{losses:?}");
    let grads = block["trajectory"]["grads"]["in_proj_weight"]
        .as_array()
        .unwrap();
    assert_eq!(grads[0].as_array().unwrap().len(), 3 * D * D);
    assert_eq!(
        block["meta"]["burn_shapes"]["in_proj_weight"],
        serde_json::json!([[D, D], [D, D], [D, D]])
    );
}

/// The same module with other mappings: each refused on one line.
macro_rules! refused_with {
    ($name:ident, $mappings:expr) => {
        #[derive(Module, Debug)]
        struct $name {
            inner: Packed,
        }

        impl Port for $name {
            type Input = Tensor<2>;
            fn init(device: &Device) -> Self {
                $name {
                    inner: <Packed as Port>::init(device),
                }
            }
            fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
                <Packed as Port>::forward(&self.inner, x, layers)
            }
            fn pytorch_keys() -> Vec<(String, String)> {
                vec![("^".into(), "inner.".into())]
            }
            fn mappings() -> Vec<(String, Mapping)> {
                $mappings
            }
        }
    };
}

/// Packed's mappings, under `inner.`, with `name`'s replaced by `mapping`.
fn with(name: &str, mapping: Mapping) -> Vec<(String, Mapping)> {
    let inner = |m: Mapping| match m {
        Mapping::AsIs(p) => Mapping::AsIs(format!("inner.{p}")),
        Mapping::Transposed(p) => Mapping::Transposed(format!("inner.{p}")),
        Mapping::SplitRows { parts, transpose } => Mapping::SplitRows {
            parts: parts.iter().map(|p| format!("inner.{p}")).collect(),
            transpose,
        },
    };
    let mut found: Vec<(String, Mapping)> = <Packed as Port>::mappings()
        .into_iter()
        .filter(|(n, _)| n != name)
        .map(|(n, m)| (n, inner(m)))
        .collect();
    found.push((name.to_string(), mapping));
    found
}

refused_with!(TwoBlocks, {
    let parts = vec!["inner.q.weight".to_string(), "inner.k.weight".to_string()];
    with(
        "in_proj_weight",
        Mapping::SplitRows {
            parts,
            transpose: true,
        },
    )
});

refused_with!(NoSuchPath, {
    with("head.weight", Mapping::AsIs("inner.out.weight".into()))
});

refused_with!(Transposed, {
    with(
        "head.weight",
        Mapping::Transposed("inner.head.weight".into()),
    )
});

refused_with!(NotAParameter, {
    with("out_proj.weight", Mapping::AsIs("inner.head.weight".into()))
});

fn refusal<P: Port>() -> String {
    let data = data(&params());
    let device = common::f64_device().autodiff();
    port::prepare::<P>(&spec(&params()), &data, &device).unwrap_err()
}

#[test]
fn a_mapping_that_does_not_fit_is_refused_naming_it() {
    assert_eq!(
        refusal::<TwoBlocks>(),
        "port tiny_mlp: Port::mappings maps PyTorch parameter in_proj_weight [12, 4] to Burn parameter inner.q.weight [4, 4]: each block expected [4, 6]"
    );
    assert!(refusal::<NoSuchPath>().starts_with(
        "port tiny_mlp: Port::mappings maps PyTorch parameter head.weight to inner.out.weight, which is no tensor of the Burn module (it has inner.q.weight, "
    ));
    assert_eq!(
        refusal::<Transposed>(),
        "port tiny_mlp: Port::mappings maps PyTorch parameter head.weight [4, 3] to Burn parameter inner.head.weight [4, 3]: the mapping expected [3, 4]"
    );
    assert!(refusal::<NotAParameter>().starts_with(
        "port tiny_mlp: Port::mappings names out_proj.weight, which is no PyTorch parameter of the weights file (in_proj_weight, in_proj_bias, head.weight, head.bias)"
    ));
}
