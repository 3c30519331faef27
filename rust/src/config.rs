//! The experiment spec: one experiment resolved by the Python side
//! (src/torch_burn_parity/config/resolve.py, results/specs/{experiment}.json), read into
//! typed structs and not checked again (the whole config was checked once, before any job).
//!
//! Its `optimizer` names the optimizer and `hyperparameters` holds every one of its
//! hyperparameters; `keep_defaults.burn` lists those left at Burn's own defaults (not
//! passed); `requested` (what each framework is asked for) is there for readers.
//! `param_groups` gives some parameters (PyTorch names) an optimizer of their own; the
//! others ("the rest") take the experiment's. `model_size` holds exactly the `model`'s size
//! keys (models/size.rs), each a positive integer. `data` names the dataset (`sine`,
//! `digits`, `text`) and `label_smoothing` the cross-entropy's ε, in [0, 1).

use serde::{Deserialize, Deserializer, Serialize};
use std::path::Path;

use crate::models::{Model, ModelSize};

/// The optimizer and every hyperparameter, as the spec's `optimizer` and `hyperparameters`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    tag = "optimizer",
    content = "hyperparameters",
    rename_all = "lowercase"
)]
pub enum Optimizer {
    Sgd {
        lr: f64,
        momentum: f64,
        dampening: f64,
        weight_decay: f64,
        nesterov: bool,
    },
    Adam {
        lr: f64,
        betas: [f64; 2],
        eps: f64,
        weight_decay: f64,
        amsgrad: bool,
    },
    AdamW {
        lr: f64,
        betas: [f64; 2],
        eps: f64,
        weight_decay: f64,
        amsgrad: bool,
    },
    AdaGrad {
        lr: f64,
        lr_decay: f64,
        eps: f64,
        weight_decay: f64,
        initial_accumulator_value: f64,
    },
    RmsProp {
        lr: f64,
        alpha: f64,
        eps: f64,
        weight_decay: f64,
        momentum: f64,
        centered: bool,
    },
    Muon {
        lr: f64,
        weight_decay: f64,
        momentum: f64,
        nesterov: bool,
        ns_coefficients: [f64; 3],
        eps: f64,
        ns_steps: usize,
        adjust_lr_fn: AdjustLr,
    },
}

/// Muon's lr adjustment by the parameter's shape, as Burn's `AdjustLrFn` (muon.rs:32–54).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum AdjustLr {
    /// `lr·sqrt(max(1, A/B))` of the shape [A, B].
    #[serde(rename = "original")]
    Original,
    /// `lr·0.2·sqrt(max(A, B))`.
    #[serde(rename = "match_rms_adamw")]
    MatchRmsAdamW,
}

impl AdjustLr {
    /// The name the spec and the run file use.
    pub fn name(self) -> &'static str {
        match self {
            AdjustLr::Original => "original",
            AdjustLr::MatchRmsAdamW => "match_rms_adamw",
        }
    }
}

impl Optimizer {
    /// The names the config uses, in the order the error messages list them.
    pub const NAMES: [&'static str; 6] = ["sgd", "adam", "adamw", "adagrad", "rmsprop", "muon"];

    /// The name the config uses for this optimizer.
    pub fn name(&self) -> &'static str {
        match self {
            Optimizer::Sgd { .. } => "sgd",
            Optimizer::Adam { .. } => "adam",
            Optimizer::AdamW { .. } => "adamw",
            Optimizer::AdaGrad { .. } => "adagrad",
            Optimizer::RmsProp { .. } => "rmsprop",
            Optimizer::Muon { .. } => "muon",
        }
    }

    /// The optimizer's own `lr` hyperparameter.
    pub fn lr(&self) -> f64 {
        match *self {
            Optimizer::Sgd { lr, .. }
            | Optimizer::Adam { lr, .. }
            | Optimizer::AdamW { lr, .. }
            | Optimizer::AdaGrad { lr, .. }
            | Optimizer::RmsProp { lr, .. }
            | Optimizer::Muon { lr, .. } => lr,
        }
    }

    /// The optimizer named `name` with its `hyperparameters`; one line naming what is wrong
    /// otherwise.
    fn tagged(name: &str, hyperparameters: serde_json::Value) -> Result<Optimizer, String> {
        if !Optimizer::NAMES.contains(&name) {
            return Err(format!(
                "unknown optimizer '{name}' (known: {})",
                Optimizer::NAMES.join(", ")
            ));
        }
        let tagged = serde_json::json!({"optimizer": name, "hyperparameters": hyperparameters});
        serde_json::from_value(tagged).map_err(|e| format!("hyperparameters of {name}: {e}"))
    }
}

/// The dataset an experiment trains on (the spec's `data`; `meta.data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Sequences of 16 sine steps in 3 classes (cnn1d, cnn_bn, the transformer).
    Sine,
    /// 8×8 grey images of the 10 digits (lenet).
    Digits,
    /// Token ids, a label per position (a language model).
    Text,
}

impl Data {
    /// Every dataset, in the order the error messages list them.
    pub const ALL: [Data; 3] = [Data::Sine, Data::Digits, Data::Text];

    /// The name the config and the run file use.
    pub fn name(self) -> &'static str {
        match self {
            Data::Sine => "sine",
            Data::Digits => "digits",
            Data::Text => "text",
        }
    }

    /// The spec's `data`; one line naming the key and the known names otherwise.
    fn parse(value: &serde_json::Value) -> Result<Data, String> {
        let known = || {
            let names: Vec<&str> = Data::ALL.iter().map(|d| d.name()).collect();
            names.join(", ")
        };
        value
            .as_str()
            .and_then(|name| Data::ALL.into_iter().find(|d| d.name() == name))
            .ok_or_else(|| format!("data: {value} is not a known dataset (known: {})", known()))
    }
}

/// The spec's `label_smoothing`: a number in [0, 1); one line naming the key otherwise.
fn label_smoothing(value: &serde_json::Value) -> Result<f64, String> {
    value
        .as_f64()
        .filter(|x| (0.0..1.0).contains(x))
        .ok_or_else(|| format!("label_smoothing: {value} is not a number in [0, 1)"))
}

/// A learning-rate schedule; its initial lr is the optimizer's `lr`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Schedule {
    Constant,
    Linear { final_lr: f64, num_steps: usize },
    Cosine { min_lr: f64, num_steps: usize },
    Exponential { gamma: f64 },
    Step { step_size: usize, gamma: f64 },
}

/// Gradient clipping as the spec asks for it (Burn applies it to each parameter tensor):
/// `{"norm": x}` or `{"value": x}`; the run file's `meta.clip_grad` in the same form.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClipGrad {
    Norm(f64),
    Value(f64),
}

/// The Burn backend that runs an experiment's tensors (`burn_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Flex,
    NdArray,
}

impl Backend {
    /// The names the config uses, in the order the error messages list them.
    pub const NAMES: [&'static str; 2] = ["flex", "ndarray"];

    /// The name the config uses and the run file records (`meta.backend`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Flex => "flex",
            Backend::NdArray => "ndarray",
        }
    }
}

/// The hyperparameters each framework leaves at its own defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepDefaults {
    pub torch: Vec<String>,
    pub burn: Vec<String>,
}

/// One parameter group as the spec writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    params: Vec<String>,
    optimizer: String,
    hyperparameters: serde_json::Value,
    keep_defaults: KeepDefaults,
    #[allow(dead_code)] // for readers of the file, as the experiment's
    requested: serde_json::Value,
}

/// Parameters (exact PyTorch names, each in at most one group) stepped by an optimizer of
/// their own instead of the experiment's.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamGroup {
    pub params: Vec<String>,
    pub optimizer: Optimizer,
    /// The group's hyperparameters left at Burn's defaults (its `keep_defaults.burn`).
    pub burn_defaults: Vec<String>,
}

/// One experiment, resolved: every key the Python side writes, none other.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolvedSpec {
    name: String,
    optimizer: String,
    hyperparameters: serde_json::Value,
    keep_defaults: KeepDefaults,
    schedule: Schedule,
    clip_grad: Option<ClipGrad>,
    burn_backend: Backend,
    #[serde(deserialize_with = "model_by_name")]
    model: Model,
    /// Checked against `model` in [`parse`].
    model_size: serde_json::Map<String, serde_json::Value>,
    /// Checked in [`parse`] ([`Data::parse`]): read as any JSON so that a wrong one is
    /// refused naming the key.
    data: serde_json::Value,
    /// Checked in [`parse`] ([`label_smoothing`]), likewise.
    label_smoothing: serde_json::Value,
    probe_steps: Vec<usize>,
    /// Checked against `steps` in [`parse`] ([`record_steps`]): read as any JSON so that a
    /// step that is not a positive integer is refused naming the key.
    record_steps: serde_json::Value,
    steps: usize,
    batch_size: usize,
    threads: usize,
    cpu_path: String,
    param_groups: Vec<RawGroup>,
    #[allow(dead_code)] // what each framework is asked for: for readers of the file
    requested: serde_json::Value,
}

fn model_by_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Model, D::Error> {
    let name = String::deserialize(deserializer)?;
    Model::from_name(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown model '{name}' (known: {})",
            Model::NAMES.join(", ")
        ))
    })
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub optimizer: Optimizer,
    /// Hyperparameters left at Burn's defaults (`keep_defaults.burn`).
    pub burn_defaults: Vec<String>,
    pub schedule: Schedule,
    pub clip_grad: Option<ClipGrad>,
    pub backend: Backend,
    pub model: Model,
    /// The model's sizes (the spec's `model_size`), checked: `model`'s own keys.
    pub model_size: ModelSize,
    /// The dataset (the spec's `data`), recorded in `meta.data`.
    pub data: Data,
    /// The cross-entropy's label smoothing ε (the spec's `label_smoothing`), in [0, 1): 0
    /// is none (train.rs).
    pub label_smoothing: f64,
    /// 1-based steps with a layer record: sorted, without repeats, 1 included, ≤ `steps`.
    pub probe_steps: Vec<usize>,
    /// 1-based steps whose parameters, gradients and buffers are recorded (the rows of the
    /// trajectories): sorted, without repeats, each in 1..=`steps`; possibly none.
    pub record_steps: Vec<usize>,
    pub steps: usize,
    pub batch_size: usize,
    pub threads: usize,
    /// The config's `cpu_path` (`native`, `avx2` or `compatible`): PyTorch's pinned kernel
    /// paths. Burn has no such switch, so its trainer only records it beside the kernels it
    /// took (`parity_train::cpu_path`).
    pub cpu_path: String,
    /// Parameters with an optimizer of their own, in the spec's order (possibly none).
    pub param_groups: Vec<ParamGroup>,
}

impl Spec {
    pub fn keeps_default(&self, key: &str) -> bool {
        self.burn_defaults.iter().any(|k| k == key)
    }

    /// The experiment's `lr`: its optimizer's, the schedule's initial lr.
    pub fn lr(&self) -> f64 {
        self.optimizer.lr()
    }
}

/// The spec's `record_steps`: a list of steps of 1..=`steps`, sorted, without repeats; one
/// line naming the key and what is wrong otherwise.
fn record_steps(value: &serde_json::Value, steps: usize) -> Result<Vec<usize>, String> {
    let list = value
        .as_array()
        .ok_or_else(|| format!("record_steps: {value} is not a list of steps"))?;
    let mut record = Vec::with_capacity(list.len());
    for v in list {
        let step = v
            .as_u64()
            .and_then(|s| usize::try_from(s).ok())
            .filter(|s| (1..=steps).contains(s))
            .ok_or_else(|| format!("record_steps: {v} is not a step of 1..={steps}"))?;
        if let Some(&last) = record.last()
            && step <= last
        {
            return Err(format!(
                "record_steps: {step} after {last} (the steps must be sorted, without repeats)"
            ));
        }
        record.push(step);
    }
    Ok(record)
}

/// The spec in a resolved spec's JSON text; one line naming what is wrong otherwise.
pub fn parse(text: &str) -> Result<Spec, String> {
    let raw: ResolvedSpec = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let model_size = ModelSize::parse(raw.model, &raw.model_size)?;
    let data = Data::parse(&raw.data)?;
    let label_smoothing = label_smoothing(&raw.label_smoothing)?;
    let record_steps = record_steps(&raw.record_steps, raw.steps)?;
    let optimizer = Optimizer::tagged(&raw.optimizer, raw.hyperparameters)?;
    let param_groups = raw
        .param_groups
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            Ok(ParamGroup {
                params: g.params,
                optimizer: Optimizer::tagged(&g.optimizer, g.hyperparameters)
                    .map_err(|e| format!("param_groups[{i}]: {e}"))?,
                burn_defaults: g.keep_defaults.burn,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Spec {
        name: raw.name,
        optimizer,
        burn_defaults: raw.keep_defaults.burn,
        schedule: raw.schedule,
        clip_grad: raw.clip_grad,
        backend: raw.burn_backend,
        model: raw.model,
        model_size,
        data,
        label_smoothing,
        probe_steps: raw.probe_steps,
        record_steps,
        steps: raw.steps,
        batch_size: raw.batch_size,
        threads: raw.threads,
        cpu_path: raw.cpu_path,
        param_groups,
    })
}

/// The spec in a resolved spec file (`python -m torch_burn_parity.config.resolve`).
pub fn load(path: &Path) -> Result<Spec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: not a resolved spec: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::LazyLock;

    /// An Adam experiment of 100 steps, each recorded (`record_steps` 1..=100).
    static ADAM: LazyLock<String> = LazyLock::new(|| {
        let every: Vec<String> = (1..=100).map(|s| s.to_string()).collect();
        ADAM_WITHOUT_RECORD_STEPS.replace(
            r#""steps": 100"#,
            &format!(r#""record_steps": [{}], "steps": 100"#, every.join(", ")),
        )
    });

    const ADAM_WITHOUT_RECORD_STEPS: &str = r#"{"name": "adam", "optimizer": "adam",
        "hyperparameters": {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-08,
                            "weight_decay": 0, "amsgrad": false},
        "keep_defaults": {"torch": [], "burn": ["eps"]},
        "schedule": {"kind": "linear", "final_lr": 0.001, "num_steps": 50},
        "clip_grad": {"norm": 1.0}, "burn_backend": "ndarray", "model": "cnn_bn",
        "model_size": {"channels": 4, "kernel": 5}, "data": "sine", "label_smoothing": 0.0,
        "probe_steps": [1, 100], "steps": 100, "batch_size": 16, "threads": 1,
        "cpu_path": "native", "requested": {"torch": {}, "burn": {}}, "param_groups": []}"#;

    /// A Muon group on fc.weight, as the Python side writes it.
    const MUON_GROUP: &str = r#"{"params": ["fc.weight"], "optimizer": "muon",
        "hyperparameters": {"lr": 0.02, "weight_decay": 0.0, "momentum": 0.95, "nesterov": true,
                            "ns_coefficients": [3.4445, -4.775, 2.0315], "eps": 1e-07,
                            "ns_steps": 5, "adjust_lr_fn": "original"},
        "keep_defaults": {"torch": [], "burn": ["eps"]},
        "requested": {"torch": {}, "burn": {}}}"#;

    fn with_group(group: &str) -> Result<Spec, String> {
        parse(&ADAM.replace(
            r#""param_groups": []"#,
            &format!(r#""param_groups": [{group}]"#),
        ))
    }

    #[test]
    fn reads_every_field_of_a_resolved_spec() {
        let spec = parse(&ADAM).unwrap();
        assert_eq!(spec.name, "adam");
        assert_eq!(
            spec.optimizer,
            Optimizer::Adam {
                lr: 0.01,
                betas: [0.9, 0.999],
                eps: 1e-8,
                weight_decay: 0.0,
                amsgrad: false
            }
        );
        assert!(spec.keeps_default("eps") && !spec.keeps_default("betas"));
        assert_eq!(
            spec.schedule,
            Schedule::Linear {
                final_lr: 0.001,
                num_steps: 50
            }
        );
        assert_eq!(spec.clip_grad, Some(ClipGrad::Norm(1.0)));
        assert_eq!(spec.backend, Backend::NdArray);
        assert_eq!(spec.model, Model::CnnBn);
        assert_eq!(spec.model_size, ModelSize::default_for(Model::CnnBn));
        assert_eq!(spec.probe_steps, vec![1, 100]);
        assert_eq!(spec.record_steps, (1..=100).collect::<Vec<_>>());
        assert_eq!((spec.steps, spec.batch_size, spec.threads), (100, 16, 1));
        assert_eq!(spec.lr(), 0.01);
        assert_eq!(spec.param_groups, vec![]);
    }

    #[test]
    fn reads_a_muon_group() {
        let spec = with_group(MUON_GROUP).unwrap();
        assert_eq!(
            spec.param_groups,
            vec![ParamGroup {
                params: vec!["fc.weight".into()],
                optimizer: Optimizer::Muon {
                    lr: 0.02,
                    weight_decay: 0.0,
                    momentum: 0.95,
                    nesterov: true,
                    ns_coefficients: [3.4445, -4.775, 2.0315],
                    eps: 1e-7,
                    ns_steps: 5,
                    adjust_lr_fn: AdjustLr::Original,
                },
                burn_defaults: vec!["eps".into()],
            }]
        );
        assert_eq!(spec.param_groups[0].optimizer.lr(), 0.02);
        assert_eq!(spec.param_groups[0].optimizer.name(), "muon");
        // The experiment's own optimizer is untouched.
        assert_eq!(spec.optimizer.name(), "adam");
        let moonshot = with_group(&MUON_GROUP.replace("original", "match_rms_adamw")).unwrap();
        let Optimizer::Muon { adjust_lr_fn, .. } = moonshot.param_groups[0].optimizer else {
            panic!("a Muon group")
        };
        assert_eq!(adjust_lr_fn, AdjustLr::MatchRmsAdamW);
        assert_eq!(
            (AdjustLr::Original.name(), adjust_lr_fn.name()),
            ("original", "match_rms_adamw")
        );
    }

    #[test]
    fn refuses_a_wrong_group_on_one_line() {
        let refused = |from: &str, to: &str| with_group(&MUON_GROUP.replace(from, to)).unwrap_err();
        for (error, start) in [
            (
                refused(r#""original""#, r#""adamw""#),
                "param_groups[0]: hyperparameters of muon: unknown variant `adamw`, expected `original` or `match_rms_adamw`",
            ),
            (
                refused(r#""optimizer": "muon""#, r#""optimizer": "lion""#),
                "param_groups[0]: unknown optimizer 'lion'",
            ),
            (
                refused(r#""ns_steps": 5, "#, ""),
                "param_groups[0]: hyperparameters of muon: missing field `ns_steps`",
            ),
        ] {
            assert!(error.starts_with(start), "{error}");
            assert!(!error.contains('\n'), "{error}");
        }
        assert!(refused(r#""params""#, r#""lr": 1, "params""#).contains("unknown field `lr`"));
        // `param_groups` is always written.
        let without = ADAM.replace(r#", "param_groups": []"#, "");
        assert!(
            parse(&without)
                .unwrap_err()
                .starts_with("missing field `param_groups`")
        );
    }

    #[test]
    fn each_optimizer_and_backend_is_named_as_the_spec_names_it() {
        for name in Optimizer::NAMES {
            let spec = parse(&ADAM.replace(r#""optimizer": "adam""#, &format!(r#""optimizer": "{name}""#))
                .replace(r#""hyperparameters": {"#, r#""hyperparameters": {"momentum": 0, "dampening": 0, "nesterov": false, "lr_decay": 0, "initial_accumulator_value": 0, "alpha": 0.99, "centered": false, "ns_coefficients": [3.4445, -4.775, 2.0315], "ns_steps": 5, "adjust_lr_fn": "original", "#));
            // every optimizer's keys are there; serde ignores the other optimizers' keys
            assert_eq!(spec.map(|s| s.optimizer.name()), Ok(name));
        }
        assert_eq!(Backend::Flex.name(), "flex");
        assert_eq!(Backend::NdArray.name(), "ndarray");
        assert_eq!(Backend::NAMES, ["flex", "ndarray"]);
    }

    #[test]
    fn names_what_is_wrong_on_one_line() {
        let refused = |from: &str, to: &str| parse(&ADAM.replace(from, to)).unwrap_err();
        assert_eq!(
            refused(r#""optimizer": "adam""#, r#""optimizer": "lion""#),
            "unknown optimizer 'lion' (known: sgd, adam, adamw, adagrad, rmsprop, muon)"
        );
        assert!(
            refused(r#""model": "cnn_bn""#, r#""model": "mlp""#)
                .starts_with("unknown model 'mlp' (known: cnn1d, cnn_bn, transformer, lenet, gpt)")
        );
        assert!(
            refused(r#""eps": 1e-08,"#, "")
                .starts_with("hyperparameters of adam: missing field `eps`")
        );
        assert!(refused(r#""steps": 100"#, r#""steps": 100, "extra": 1"#).contains("`extra`"));
        for error in [
            refused(r#""optimizer": "adam""#, r#""optimizer": "lion""#),
            refused(r#""burn_backend": "ndarray""#, r#""burn_backend": "tch""#),
        ] {
            assert!(!error.contains('\n'), "{error}");
        }
    }

    #[test]
    fn reads_the_model_size_and_names_a_wrong_key_on_one_line() {
        // Every check, per key, is models/size.rs's; here the spec's key itself.
        let sized = |size: &str| {
            parse(
                &ADAM
                    .replace(r#""model": "cnn_bn""#, r#""model": "transformer""#)
                    .replace(r#"{"channels": 4, "kernel": 5}"#, size),
            )
        };
        let size = sized(r#"{"d_model": 12, "heads": 3, "layers": 2, "d_ff": 20}"#)
            .map(|spec| serde_json::to_string(&spec.model_size).unwrap());
        assert_eq!(
            size.as_deref(),
            Ok(r#"{"d_model":12,"heads":3,"layers":2,"d_ff":20}"#)
        );
        assert_eq!(
            sized(r#"{"d_model": 8, "heads": 3, "layers": 1, "d_ff": 16}"#).unwrap_err(),
            "model_size.heads: 3 does not divide d_model 8"
        );
        // `model_size` is always written.
        let without = ADAM.replace(r#""model_size": {"channels": 4, "kernel": 5},"#, "");
        assert!(
            parse(&without)
                .unwrap_err()
                .starts_with("missing field `model_size`")
        );
    }

    #[test]
    fn reads_the_data_and_the_label_smoothing_and_refuses_wrong_ones_on_one_line() {
        let spec = parse(&ADAM).unwrap();
        assert_eq!((spec.data, spec.label_smoothing), (Data::Sine, 0.0));
        let with = |data: &str, smoothing: &str| {
            parse(
                &ADAM
                    .replace(r#""data": "sine""#, &format!(r#""data": {data}"#))
                    .replace(
                        r#""label_smoothing": 0.0"#,
                        &format!(r#""label_smoothing": {smoothing}"#),
                    ),
            )
        };
        let spec = with(r#""digits""#, "0.1").unwrap();
        assert_eq!((spec.data, spec.label_smoothing), (Data::Digits, 0.1));
        assert_eq!(with(r#""text""#, "0").unwrap().data, Data::Text);
        assert_eq!(with(r#""sine""#, "0.999").unwrap().label_smoothing, 0.999);
        assert_eq!(
            Data::ALL.map(Data::name),
            ["sine", "digits", "text"],
            "the names the spec and meta.data use"
        );
        for (data, smoothing, error) in [
            (
                r#""mnist""#,
                "0",
                r#"data: "mnist" is not a known dataset (known: sine, digits, text)"#,
            ),
            (
                "3",
                "0",
                "data: 3 is not a known dataset (known: sine, digits, text)",
            ),
            (
                "null",
                "0",
                "data: null is not a known dataset (known: sine, digits, text)",
            ),
            (
                r#""sine""#,
                "1",
                "label_smoothing: 1 is not a number in [0, 1)",
            ),
            (
                r#""sine""#,
                "1.0",
                "label_smoothing: 1.0 is not a number in [0, 1)",
            ),
            (
                r#""sine""#,
                "-0.1",
                "label_smoothing: -0.1 is not a number in [0, 1)",
            ),
            (
                r#""sine""#,
                r#""0.1""#,
                r#"label_smoothing: "0.1" is not a number in [0, 1)"#,
            ),
            (
                r#""sine""#,
                "null",
                "label_smoothing: null is not a number in [0, 1)",
            ),
        ] {
            assert_eq!(with(data, smoothing).unwrap_err(), error);
        }
        // Both are always written.
        for (key, field) in [
            (r#""data": "sine", "#, "data"),
            (r#""label_smoothing": 0.0,"#, "label_smoothing"),
        ] {
            let error = parse(&ADAM.replace(key, "")).unwrap_err();
            assert!(
                error.starts_with(&format!("missing field `{field}`")),
                "{error}"
            );
        }
    }

    #[test]
    fn reads_record_steps_and_refuses_any_not_sorted_distinct_steps_of_the_run() {
        let with = |list: &str| {
            parse(&ADAM_WITHOUT_RECORD_STEPS.replace(
                r#""steps": 100"#,
                &format!(r#""record_steps": {list}, "steps": 100"#),
            ))
        };
        assert_eq!(
            with("[1, 2, 50, 100]").unwrap().record_steps,
            [1, 2, 50, 100]
        );
        assert_eq!(with("[]").unwrap().record_steps, Vec::<usize>::new());
        for (list, error) in [
            ("[0, 1]", "record_steps: 0 is not a step of 1..=100"),
            ("[1, 101]", "record_steps: 101 is not a step of 1..=100"),
            ("[1, -2]", "record_steps: -2 is not a step of 1..=100"),
            ("[1, 2.5]", "record_steps: 2.5 is not a step of 1..=100"),
            ("[1, \"2\"]", "record_steps: \"2\" is not a step of 1..=100"),
            (
                "[1, 5, 3]",
                "record_steps: 3 after 5 (the steps must be sorted, without repeats)",
            ),
            (
                "[1, 2, 2]",
                "record_steps: 2 after 2 (the steps must be sorted, without repeats)",
            ),
            ("7", "record_steps: 7 is not a list of steps"),
            ("null", "record_steps: null is not a list of steps"),
        ] {
            assert_eq!(with(list).unwrap_err(), error, "{list}");
        }
        // `record_steps` is always written.
        assert!(
            parse(ADAM_WITHOUT_RECORD_STEPS)
                .unwrap_err()
                .starts_with("missing field `record_steps`")
        );
    }
}
