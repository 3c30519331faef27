//! The experiment spec: one experiment resolved by the Python side
//! (src/torch_burn_parity/config/resolve.py, results/specs/{experiment}.json), read into
//! typed structs and not checked again (the whole config was checked once, before any job).
//!
//! Its `optimizer` names the optimizer and `hyperparameters` holds every one of its
//! hyperparameters; `keep_defaults.burn` lists those left at Burn's own defaults (not
//! passed); `requested` (what each framework is asked for) is there for readers.

use serde::{Deserialize, Deserializer};
use std::path::Path;

use crate::models::Model;

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
}

impl Optimizer {
    /// The names the config uses, in the order the error messages list them.
    pub const NAMES: [&'static str; 5] = ["sgd", "adam", "adamw", "adagrad", "rmsprop"];

    /// The name the config uses for this optimizer.
    pub fn name(&self) -> &'static str {
        match self {
            Optimizer::Sgd { .. } => "sgd",
            Optimizer::Adam { .. } => "adam",
            Optimizer::AdamW { .. } => "adamw",
            Optimizer::AdaGrad { .. } => "adagrad",
            Optimizer::RmsProp { .. } => "rmsprop",
        }
    }
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
/// `{"norm": x}` or `{"value": x}`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
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
    probe_steps: Vec<usize>,
    steps: usize,
    batch_size: usize,
    threads: usize,
    cpu_path: String,
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
    /// 1-based steps with a layer record: sorted, without repeats, 1 included, ≤ `steps`.
    pub probe_steps: Vec<usize>,
    pub steps: usize,
    pub batch_size: usize,
    pub threads: usize,
    /// The config's `cpu_path` (`native`, `avx2` or `compatible`): PyTorch's pinned kernel
    /// paths. Burn has no such switch, so its trainer only records it beside the kernels it
    /// took (`parity_train::cpu_path`).
    pub cpu_path: String,
}

impl Spec {
    pub fn keeps_default(&self, key: &str) -> bool {
        self.burn_defaults.iter().any(|k| k == key)
    }

    pub fn lr(&self) -> f64 {
        match self.optimizer {
            Optimizer::Sgd { lr, .. }
            | Optimizer::Adam { lr, .. }
            | Optimizer::AdamW { lr, .. }
            | Optimizer::AdaGrad { lr, .. }
            | Optimizer::RmsProp { lr, .. } => lr,
        }
    }
}

/// The spec in a resolved spec's JSON text; one line naming what is wrong otherwise.
pub fn parse(text: &str) -> Result<Spec, String> {
    let raw: ResolvedSpec = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if !Optimizer::NAMES.contains(&raw.optimizer.as_str()) {
        return Err(format!(
            "unknown optimizer '{}' (known: {})",
            raw.optimizer,
            Optimizer::NAMES.join(", ")
        ));
    }
    let tagged =
        serde_json::json!({"optimizer": raw.optimizer, "hyperparameters": raw.hyperparameters});
    let optimizer = serde_json::from_value(tagged)
        .map_err(|e| format!("hyperparameters of {}: {e}", raw.optimizer))?;
    Ok(Spec {
        name: raw.name,
        optimizer,
        burn_defaults: raw.keep_defaults.burn,
        schedule: raw.schedule,
        clip_grad: raw.clip_grad,
        backend: raw.burn_backend,
        model: raw.model,
        probe_steps: raw.probe_steps,
        steps: raw.steps,
        batch_size: raw.batch_size,
        threads: raw.threads,
        cpu_path: raw.cpu_path,
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

    const ADAM: &str = r#"{"name": "adam", "optimizer": "adam",
        "hyperparameters": {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-08,
                            "weight_decay": 0, "amsgrad": false},
        "keep_defaults": {"torch": [], "burn": ["eps"]},
        "schedule": {"kind": "linear", "final_lr": 0.001, "num_steps": 50},
        "clip_grad": {"norm": 1.0}, "burn_backend": "ndarray", "model": "cnn_bn",
        "probe_steps": [1, 100], "steps": 100, "batch_size": 16, "threads": 1,
        "cpu_path": "native", "requested": {"torch": {}, "burn": {}}}"#;

    #[test]
    fn reads_every_field_of_a_resolved_spec() {
        let spec = parse(ADAM).unwrap();
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
        assert_eq!(spec.probe_steps, vec![1, 100]);
        assert_eq!((spec.steps, spec.batch_size, spec.threads), (100, 16, 1));
        assert_eq!(spec.lr(), 0.01);
    }

    #[test]
    fn each_optimizer_and_backend_is_named_as_the_spec_names_it() {
        for name in Optimizer::NAMES {
            let spec = parse(&ADAM.replace(r#""optimizer": "adam""#, &format!(r#""optimizer": "{name}""#))
                .replace(r#""hyperparameters": {"#, r#""hyperparameters": {"momentum": 0, "dampening": 0, "nesterov": false, "lr_decay": 0, "initial_accumulator_value": 0, "alpha": 0.99, "centered": false, "#));
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
            "unknown optimizer 'lion' (known: sgd, adam, adamw, adagrad, rmsprop)"
        );
        assert!(
            refused(r#""model": "cnn_bn""#, r#""model": "mlp""#)
                .starts_with("unknown model 'mlp' (known: cnn1d, cnn_bn, transformer)")
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
}
