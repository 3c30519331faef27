//! The run file's JSON form: non-finite floats, names in order, the optional fields.

use super::*;
use crate::measured::{LayerValues, read_float};
use crate::optimizers::SgdHeld;
use serde_json::json;

#[test]
fn non_finite_floats_survive_the_trip() {
    for x in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.1,
        -0.0,
        1e-310,
    ] {
        let text = serde_json::to_string(&F64(x)).unwrap();
        let back = read_float(&serde_json::from_str(&text).unwrap()).unwrap();
        assert!(
            back.to_bits() == x.to_bits() || (x.is_nan() && back.is_nan()),
            "{x} -> {text}"
        );
    }
}

/// A two-step block of a model whose parameters' names are not in sorted order.
fn block(loss: f64, burn_scalars: Option<BurnScalars>) -> RunBlock {
    let names = ["fc.weight", "conv.weight", "conv.bias"];
    let floats = |xs: &[f64]| Floats(xs.to_vec());
    RunBlock {
        losses: floats(&[1.5, f64::NAN]),
        lrs: floats(&[0.1, 0.1]),
        norms: Some(Norms {
            params: names.iter().map(|&n| (n, floats(&[1.0, 2.0]))).collect(),
            grads: names
                .iter()
                .map(|&n| (n, floats(&[0.5, f64::NAN])))
                .collect(),
        }),
        r#final: Final {
            loss: F64(loss),
            correct: Some(2),
            predictions: Some(vec![0, 1, 1]),
        },
        tensors: RunTensors::Inline {
            params: names
                .iter()
                .map(|&n| (n, floats(&[1.0, f64::INFINITY])))
                .collect(),
            buffers: Named(vec![]),
            trajectory: Trajectory {
                params: names.iter().map(|&n| (n, vec![floats(&[2.0])])).collect(),
                grads: names.iter().map(|&n| (n, vec![floats(&[-0.5])])).collect(),
                buffers: Named(vec![]),
            },
        },
        layers: vec![LayerRecord {
            step: 1,
            names: vec!["fc".into()],
            values: Some(LayerValues {
                outputs: vec![floats(&[f64::NEG_INFINITY])],
                input_grads: vec![floats(&[0.25])],
            }),
        }],
        meta: Meta {
            model: "cnn1d".into(),
            model_size: ModelSize::from(crate::models::ConvSize {
                channels: 4,
                kernel: 5,
            }),
            data: "sine".into(),
            layer_hyperparameters: json!({}),
            loss: LossMeta {
                name: "cross_entropy",
                label_smoothing: 0.0,
                by_hand: false,
            },
            optimizer: "sgd".into(),
            hyperparameters: Hyperparameters::Sgd(SgdHeld {
                lr: 0.1,
                momentum: 0.0,
                dampening: 0.0,
                nesterov: false,
                weight_decay: 0.0,
            }),
            param_groups: vec![],
            kept_defaults: vec![],
            schedule: ScheduleMeta {
                kind: "constant",
                burn: Map::from_iter([("lr".to_string(), json!(0.1))]),
            },
            clip_grad: None,
            clip_scope: None,
            burn_fixes: vec![],
            lr_scales: Named(vec![]),
            steps: 2,
            batch_size: 1,
            threads: 1,
            input_sha256: "00".into(),
            burn_shapes: names.iter().map(|&n| (n, vec![vec![3]])).collect(),
            fault: None,
            provenance: None,
        },
        adam_factors: None,
        burn_scalars,
    }
}

#[test]
fn a_block_writes_non_finite_floats_as_strings_and_names_in_order() {
    let file = RunFile {
        experiment: "e".into(),
        block: block(f64::INFINITY, None),
    };
    let text = serde_json::to_string(&file).unwrap();
    let read: Value = serde_json::from_str(&text).unwrap();
    let b = &read["e"];
    assert_eq!(b["losses"], json!([1.5, "NaN"]));
    assert_eq!(b["final"]["loss"], json!("Infinity"));
    assert_eq!(b["params"]["fc.weight"], json!([1.0, "Infinity"]));
    assert_eq!(b["layers"][0]["outputs"], json!([["-Infinity"]]));
    assert_eq!(read_float(&b["final"]["loss"]), Some(f64::INFINITY));
    // Configured values are plain numbers; SGD has neither per-step series.
    assert_eq!(b["meta"]["hyperparameters"]["lr"], json!(0.1));
    assert_eq!(
        b["meta"]["schedule"],
        json!({"kind": "constant", "lr": 0.1})
    );
    assert_eq!(b["meta"]["clip_grad"], Value::Null);
    assert_eq!(b["buffers"], json!({}));
    for absent in ["adam_factors", "burn_scalars"] {
        assert!(b.get(absent).is_none(), "{absent}");
    }
    for absent in ["fault", "framework", "git"] {
        assert!(b["meta"].get(absent).is_none(), "{absent}");
    }
    // Parameters keep the order they were given in, not serde_json's sorted one.
    let order = r#"{"fc.weight":[1.0,"Infinity"],"conv.weight":[1.0,"Infinity"],"conv.bias":[1.0,"Infinity"]}"#;
    let RunTensors::Inline { params, .. } = &file.block.tensors else {
        panic!("inline")
    };
    assert_eq!(serde_json::to_string(params).unwrap(), order);
    let at = |key: &str| text.find(&format!(r#""{key}":[[2.0]]"#)).unwrap();
    assert!(at("fc.weight") < at("conv.weight") && at("conv.weight") < at("conv.bias"));
    let at = |key: &str| text.find(&format!(r#""{key}":[[3]]"#)).unwrap();
    assert!(at("fc.weight") < at("conv.weight") && at("conv.weight") < at("conv.bias"));
}

#[test]
fn burn_scalars_are_adamws_corrections_or_empty() {
    let empty = serde_json::to_value(block(0.5, Some(BurnScalars::None {}))).unwrap();
    assert_eq!(empty["burn_scalars"], json!({}));
    let adamw = BurnScalars::AdamW {
        bias_correction1: Floats(vec![0.1]),
        bias_correction2: Floats(vec![f64::NAN]),
    };
    let adamw = serde_json::to_value(block(0.5, Some(adamw))).unwrap();
    assert_eq!(
        adamw["burn_scalars"],
        json!({"bias_correction1": [0.1], "bias_correction2": ["NaN"]})
    );
    assert_eq!(adamw["final"]["loss"], json!(0.5));
}

#[test]
fn a_block_with_a_tensors_file_names_it_after_final_and_keeps_the_layers_names() {
    let mut block = block(0.5, None);
    block.tensors = RunTensors::File {
        tensors: TensorsFile {
            file: "burn-f32.safetensors".into(),
            dtype: "F32",
            steps: vec![1, 2],
            bytes: 4096,
        },
    };
    block.layers[0].values = None;
    let text = serde_json::to_string(&block).unwrap();
    let fields = [
        r#"{"losses":"#,
        r#","lrs":"#,
        r#","norms":{"params":{"fc.weight":[1.0,2.0],"conv.weight":[1.0,2.0],"conv.bias":[1.0,2.0]},"grads":{"fc.weight":[0.5,"NaN"],"#,
        r#","final":"#,
        r#","tensors":{"file":"burn-f32.safetensors","dtype":"F32","steps":[1,2],"bytes":4096}"#,
        r#","layers":[{"step":1,"names":["fc"]}]"#,
        r#","meta":"#,
    ];
    let at: Vec<usize> = fields.iter().map(|f| text.find(f).expect(f)).collect();
    assert!(at.is_sorted(), "{text}");
    // No tensor inline (`norms` has a `params` of its own: the block's keys, then the text).
    let read: Value = serde_json::from_str(&text).unwrap();
    for absent in ["params", "buffers", "trajectory"] {
        assert!(read.get(absent).is_none(), "{absent}");
    }
    for absent in ["trajectory", "outputs", "input_grads"] {
        assert!(!text.contains(&format!(r#""{absent}":"#)), "{absent}");
    }
}

#[test]
fn a_bare_block_has_losses_lrs_final_layers_and_meta_only() {
    let mut block = block(0.5, None);
    block.norms = None;
    block.tensors = RunTensors::Bare {};
    block.layers = vec![];
    let text = serde_json::to_string(&block).unwrap();
    let read: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = read.as_object().unwrap().keys().collect();
    let mut want = ["losses", "lrs", "final", "layers", "meta"];
    want.sort();
    assert_eq!(keys, want, "{text}");
    assert_eq!(read["layers"], json!([]));
    let at: Vec<usize> = ["losses", "lrs", "final", "layers", "meta"]
        .iter()
        .map(|f| text.find(&format!(r#""{f}":"#)).unwrap())
        .collect();
    assert!(at.is_sorted(), "{text}");
}

#[test]
fn meta_writes_the_data_after_the_size_and_the_loss_after_the_layer_settings() {
    let mut meta = block(0.5, None).meta;
    meta.loss.label_smoothing = f64::from(0.1f32);
    let text = serde_json::to_string(&meta).unwrap();
    let want = concat!(
        r#"{"model":"cnn1d","model_size":{"channels":4,"kernel":5},"data":"sine","#,
        r#""layer_hyperparameters":{},"loss":{"name":"cross_entropy","label_smoothing":0.10000000149011612},"#,
        r#""optimizer":"sgd","#
    );
    assert!(text.starts_with(want), "{text}");
}
