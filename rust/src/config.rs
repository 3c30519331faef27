//! The experiment spec, read from config.yaml (or the pipeline's per-experiment JSON copy).
//!
//! Every hyperparameter of the named optimizer must be present (Adam's `amsgrad` may be left
//! out: false, PyTorch's default); an experiment may list some under `keep_defaults.burn`,
//! and those are then left at Burn's own defaults. Optional: a learning-rate `schedule`
//! (default `{kind: constant}`) and `clip_grad` (`{norm: x}` or `{value: x}`), the
//! `burn_backend` that runs the tensors (`flex`, the default, or `ndarray`), the `model`
//! (`cnn1d`, the default, or `cnn_bn`) and the `probe_steps` at which the layer record is
//! taken (default `[1]`; step 1 always included).

use crate::models::Model;
use serde_yaml::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    Constant,
    Linear { final_lr: f64, num_steps: usize },
    Cosine { min_lr: f64, num_steps: usize },
    Exponential { gamma: f64 },
    Step { step_size: usize, gamma: f64 },
}

/// Gradient clipping as the config asks for it (Burn applies it to each parameter tensor).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClipGrad {
    Norm(f64),
    Value(f64),
}

/// The Burn backend that runs an experiment's tensors (`burn_backend`; default Flex).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

const SGD_KEYS: [&str; 5] = ["lr", "momentum", "dampening", "weight_decay", "nesterov"];
/// Adam's `amsgrad` is optional (absent: false), so configs written before it still work.
const ADAM_KEYS: [&str; 5] = ["lr", "betas", "eps", "weight_decay", "amsgrad"];
const ADAMW_KEYS: [&str; 5] = ["lr", "betas", "eps", "weight_decay", "amsgrad"];
const ADAGRAD_KEYS: [&str; 5] = [
    "lr",
    "lr_decay",
    "eps",
    "weight_decay",
    "initial_accumulator_value",
];
const RMSPROP_KEYS: [&str; 6] = ["lr", "alpha", "eps", "weight_decay", "momentum", "centered"];
const OPTIONAL_KEYS: [(&str, &str); 1] = [("adam", "amsgrad")];

pub fn load(path: &Path, experiment: &str) -> Result<Spec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: Value = serde_yaml::from_str(&text)
        .map_err(|e| format!("{}: not valid YAML ({e})", path.display()))?;
    parse(&config, experiment)
}

/// Reads the typed values of one experiment's mapping, naming `experiments.<name>.<key>`.
struct Reader<'a> {
    exp: &'a Value,
    experiment: &'a str,
}

impl Reader<'_> {
    fn at(&self, key: &str) -> String {
        format!("experiments.{}.{key}", self.experiment)
    }

    fn number(&self, key: &str) -> Result<f64, String> {
        self.exp
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("{}: expected a number", self.at(key)))
    }

    fn boolean(&self, key: &str) -> Result<bool, String> {
        self.exp
            .get(key)
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("{}: expected true or false", self.at(key)))
    }

    fn betas(&self) -> Result<[f64; 2], String> {
        self.exp
            .get("betas")
            .and_then(Value::as_sequence)
            .filter(|s| s.len() == 2)
            .and_then(|s| Some([s[0].as_f64()?, s[1].as_f64()?]))
            .ok_or_else(|| format!("{}: expected two numbers", self.at("betas")))
    }
}

fn optimizer(r: &Reader, name: &str, burn_defaults: &[String]) -> Result<Optimizer, String> {
    Ok(match name {
        "sgd" => Optimizer::Sgd {
            lr: r.number("lr")?,
            momentum: r.number("momentum")?,
            dampening: r.number("dampening")?,
            weight_decay: r.number("weight_decay")?,
            nesterov: r.boolean("nesterov")?,
        },
        "adam" => Optimizer::Adam {
            lr: r.number("lr")?,
            betas: r.betas()?,
            eps: r.number("eps")?,
            weight_decay: r.number("weight_decay")?,
            amsgrad: match r.exp.get("amsgrad") {
                None => false,
                Some(_) => r.boolean("amsgrad")?,
            },
        },
        "adamw" => Optimizer::AdamW {
            lr: r.number("lr")?,
            betas: r.betas()?,
            eps: r.number("eps")?,
            weight_decay: r.number("weight_decay")?,
            amsgrad: r.boolean("amsgrad")?,
        },
        "adagrad" => {
            let initial_accumulator_value = r.number("initial_accumulator_value")?;
            // Burn's AdaGrad starts its sum of squares at the first g² (adagrad.rs:131):
            // only PyTorch's default, 0, can be expressed.
            let kept = burn_defaults
                .iter()
                .any(|k| k == "initial_accumulator_value");
            if initial_accumulator_value != 0.0 && !kept {
                return Err(format!(
                    "{}: Burn's AdaGrad has no initial accumulator value (its sum starts at the first g²), so only 0 can be passed, got {initial_accumulator_value}",
                    r.at("initial_accumulator_value")
                ));
            }
            Optimizer::AdaGrad {
                lr: r.number("lr")?,
                lr_decay: r.number("lr_decay")?,
                eps: r.number("eps")?,
                weight_decay: r.number("weight_decay")?,
                initial_accumulator_value,
            }
        }
        "rmsprop" => {
            let momentum = r.number("momentum")?;
            // Burn's RMSProp applies momentum only when it is > 0 (rmsprop.rs:280).
            if momentum < 0.0 {
                return Err(format!(
                    "{}: Burn's RMSProp ignores a negative momentum (it applies momentum only when > 0), got {momentum}",
                    r.at("momentum")
                ));
            }
            Optimizer::RmsProp {
                lr: r.number("lr")?,
                alpha: r.number("alpha")?,
                eps: r.number("eps")?,
                weight_decay: r.number("weight_decay")?,
                momentum,
                centered: r.boolean("centered")?,
            }
        }
        _ => unreachable!("optimizer names are checked first"),
    })
}

/// A mapping's keys other than `allowed`, as the first one found.
fn unknown_key<'a>(map: &'a serde_yaml::Mapping, allowed: &[&str]) -> Option<&'a str> {
    map.keys()
        .map(|k| k.as_str().unwrap_or("<not a string>"))
        .find(|k| !allowed.contains(k))
}

/// The optional `schedule` mapping: absent (or null) means constant.
fn schedule(r: &Reader) -> Result<Schedule, String> {
    let Some(value) = r.exp.get("schedule").filter(|v| !v.is_null()) else {
        return Ok(Schedule::Constant);
    };
    let at = |key: &str| r.at(&format!("schedule.{key}"));
    let map = value
        .as_mapping()
        .ok_or_else(|| format!("{}: expected a mapping with a kind", r.at("schedule")))?;
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{}: missing or not a string", at("kind")))?;
    let keys: &[&str] = match kind {
        "constant" => &[],
        "linear" => &["final_lr", "num_steps"],
        "cosine" => &["min_lr", "num_steps"],
        "exponential" => &["gamma"],
        "step" => &["step_size", "gamma"],
        other => {
            return Err(format!(
                "{}: unknown schedule kind '{other}' (known: constant, linear, cosine, exponential, step)",
                at("kind")
            ));
        }
    };
    if let Some(key) = keys.iter().find(|k| value.get(**k).is_none()) {
        return Err(format!("{}: missing for the {kind} schedule", at(key)));
    }
    if let Some(key) = unknown_key(map, &[&["kind"], keys].concat()) {
        return Err(format!("{}: not a key of the {kind} schedule", at(key)));
    }
    let number = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("{}: expected a number", at(key)))
    };
    let count = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .map(|n| n as usize)
            .ok_or_else(|| format!("{}: expected a non-negative integer", at(key)))
    };
    Ok(match kind {
        "constant" => Schedule::Constant,
        "linear" => Schedule::Linear {
            final_lr: number("final_lr")?,
            num_steps: count("num_steps")?,
        },
        "cosine" => Schedule::Cosine {
            min_lr: number("min_lr")?,
            num_steps: count("num_steps")?,
        },
        "exponential" => Schedule::Exponential {
            gamma: number("gamma")?,
        },
        _ => Schedule::Step {
            step_size: count("step_size")?,
            gamma: number("gamma")?,
        },
    })
}

/// The optional `clip_grad` mapping: absent or null means no clipping.
fn clip_grad(r: &Reader) -> Result<Option<ClipGrad>, String> {
    let Some(value) = r.exp.get("clip_grad").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let at = r.at("clip_grad");
    let map = value
        .as_mapping()
        .ok_or_else(|| format!("{at}: expected {{norm: x}} or {{value: x}}"))?;
    if let Some(key) = unknown_key(map, &["norm", "value"]) {
        return Err(format!(
            "{at}.{key}: not a key of clip_grad (norm or value)"
        ));
    }
    let (key, clip) = match (value.get("norm"), value.get("value")) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{at}: give exactly one of norm and value (Burn clips by one of them), not both"
            ));
        }
        (Some(x), None) => ("norm", x.as_f64().map(ClipGrad::Norm)),
        (None, Some(x)) => ("value", x.as_f64().map(ClipGrad::Value)),
        (None, None) => return Err(format!("{at}: expected {{norm: x}} or {{value: x}}")),
    };
    match clip {
        Some(ClipGrad::Norm(x) | ClipGrad::Value(x)) if x > 0.0 && x.is_finite() => Ok(clip),
        _ => Err(format!("{at}.{key}: expected a positive number")),
    }
}

/// The optional `burn_backend`: absent means Flex.
fn backend(r: &Reader) -> Result<Backend, String> {
    let Some(value) = r.exp.get("burn_backend") else {
        return Ok(Backend::Flex);
    };
    match value.as_str() {
        Some("flex") => Ok(Backend::Flex),
        Some("ndarray") => Ok(Backend::NdArray),
        _ => Err(format!(
            "{}: unknown Burn backend '{}' (known: {})",
            r.at("burn_backend"),
            match value.as_str() {
                Some(name) => name.to_string(),
                None => serde_yaml::to_string(value)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            },
            Backend::NAMES.join(", ")
        )),
    }
}

/// The optional `model`: absent means cnn1d.
fn model(r: &Reader) -> Result<Model, String> {
    let Some(value) = r.exp.get("model") else {
        return Ok(Model::Cnn1d);
    };
    value.as_str().and_then(Model::from_name).ok_or_else(|| {
        format!(
            "{}: unknown model '{}' (known: {})",
            r.at("model"),
            shown(value),
            Model::NAMES.join(", ")
        )
    })
}

/// The optional `probe_steps`: absent means `[1]`; 1 is always added; sorted, deduplicated;
/// a step after the last one is refused.
fn probe_steps(r: &Reader, steps: usize) -> Result<Vec<usize>, String> {
    let at = r.at("probe_steps");
    let mut list = vec![1];
    if let Some(value) = r.exp.get("probe_steps").filter(|v| !v.is_null()) {
        let items = value
            .as_sequence()
            .ok_or_else(|| format!("{at}: expected a list of steps (positive integers)"))?;
        for item in items {
            match item.as_u64() {
                Some(step) if step >= 1 => list.push(step as usize),
                _ => {
                    return Err(format!(
                        "{at}: '{}' is not a step (a positive integer)",
                        shown(item)
                    ));
                }
            }
        }
    }
    list.sort_unstable();
    list.dedup();
    match list.last() {
        Some(&last) if last > steps => Err(format!(
            "{at}: step {last} is after the last step (steps: {steps})"
        )),
        _ => Ok(list),
    }
}

/// A YAML value as one line, for error messages.
fn shown(value: &Value) -> String {
    match value.as_str() {
        Some(text) => text.to_string(),
        None => serde_yaml::to_string(value)
            .unwrap_or_default()
            .trim()
            .replace('\n', " "),
    }
}

pub fn parse(config: &Value, experiment: &str) -> Result<Spec, String> {
    let experiments = config
        .get("experiments")
        .and_then(Value::as_mapping)
        .ok_or("experiments: missing or not a mapping")?;
    let exp = experiments
        .get(experiment)
        .ok_or_else(|| format!("unknown experiment '{experiment}'"))?;
    let r = Reader { exp, experiment };
    let optimizer_name = exp
        .get("optimizer")
        .and_then(Value::as_str)
        .unwrap_or("<missing>");
    let keys: &[&str] = match optimizer_name {
        "sgd" => &SGD_KEYS,
        "adam" => &ADAM_KEYS,
        "adamw" => &ADAMW_KEYS,
        "adagrad" => &ADAGRAD_KEYS,
        "rmsprop" => &RMSPROP_KEYS,
        other => {
            return Err(format!(
                "{}: unknown optimizer '{other}' (known: sgd, adam, adamw, adagrad, rmsprop)",
                r.at("optimizer")
            ));
        }
    };
    for key in keys {
        if exp.get(*key).is_none() && !OPTIONAL_KEYS.contains(&(optimizer_name, *key)) {
            return Err(format!(
                "{}: missing hyperparameter for {optimizer_name}",
                r.at(key)
            ));
        }
    }
    let burn_defaults: Vec<String> = match exp.get("keep_defaults").and_then(|k| k.get("burn")) {
        None => Vec::new(),
        Some(list) => list
            .as_sequence()
            .ok_or_else(|| format!("{}: expected a list", r.at("keep_defaults.burn")))?
            .iter()
            .map(|v| {
                let key = v.as_str().unwrap_or_default();
                if keys.contains(&key) && key != "lr" {
                    Ok(key.to_string())
                } else {
                    Err(format!(
                        "{}: '{key}' has no Burn default for {optimizer_name}",
                        r.at("keep_defaults.burn")
                    ))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    let optimizer = optimizer(&r, optimizer_name, &burn_defaults)?;
    let positive = |key: &str, default: Option<u64>| -> Result<usize, String> {
        match config.get(key).map(Value::as_u64) {
            None => default
                .map(|d| d as usize)
                .ok_or_else(|| format!("{key}: missing")),
            Some(Some(n)) if n > 0 => Ok(n as usize),
            Some(_) => Err(format!("{key}: must be a positive integer")),
        }
    };
    let steps = positive("steps", None)?;
    Ok(Spec {
        name: experiment.to_string(),
        optimizer,
        burn_defaults,
        schedule: schedule(&r)?,
        clip_grad: clip_grad(&r)?,
        backend: backend(&r)?,
        model: model(&r)?,
        probe_steps: probe_steps(&r, steps)?,
        steps,
        batch_size: positive("batch_size", None)?,
        threads: positive("threads", Some(1))?,
        cpu_path: cpu_path(config)?,
    })
}

/// The known `cpu_path` settings (workflow/scripts/cpu_path.py holds what each pins).
pub const CPU_PATHS: [&str; 3] = ["native", "avx2", "compatible"];

/// The optional top-level `cpu_path`: absent means `native`.
fn cpu_path(config: &Value) -> Result<String, String> {
    match config.get("cpu_path") {
        None => Ok("native".into()),
        Some(value) => match value.as_str() {
            Some(name) if CPU_PATHS.contains(&name) => Ok(name.into()),
            _ => Err(format!(
                "cpu_path: unknown setting {} (known: {})",
                serde_yaml::to_string(value).unwrap_or_default().trim(),
                CPU_PATHS.join(", ")
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(experiment: &str) -> Value {
        serde_yaml::from_str(&format!(
            "steps: 3\nbatch_size: 16\nexperiments:\n  e:\n{experiment}"
        ))
        .unwrap()
    }

    #[test]
    fn reads_an_adam_experiment() {
        let c = config(
            "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n    keep_defaults: {burn: [eps]}\n",
        );
        let spec = parse(&c, "e").unwrap();
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
        assert!(spec.keeps_default("eps"));
        assert_eq!((spec.steps, spec.batch_size, spec.threads), (3, 16, 1));
    }

    #[test]
    fn reads_the_burn_backend_flex_by_default_and_refuses_others() {
        let adam = "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n";
        let backend = |extra: &str| parse(&config(&format!("{adam}{extra}")), "e");
        assert_eq!(backend("").unwrap().backend, Backend::Flex);
        for name in Backend::NAMES {
            let spec = backend(&format!("    burn_backend: {name}\n")).unwrap();
            assert_eq!(spec.backend.name(), name);
        }
        for (value, shown) in [
            ("wgpu", "wgpu"),
            ("'NdArray'", "NdArray"),
            ("1", "1"),
            ("null", "null"),
        ] {
            assert_eq!(
                backend(&format!("    burn_backend: {value}\n")).unwrap_err(),
                format!(
                    "experiments.e.burn_backend: unknown Burn backend '{shown}' (known: flex, ndarray)"
                )
            );
        }
    }

    #[test]
    fn reads_the_model_cnn1d_by_default_and_refuses_others() {
        let model = |extra: &str| parse(&config(&format!("{RMSPROP}{extra}")), "e");
        assert_eq!(model("").unwrap().model, Model::Cnn1d);
        for name in Model::NAMES {
            assert_eq!(
                model(&format!("    model: {name}\n")).unwrap().model.name(),
                name
            );
        }
        for (value, shown) in [("resnet", "resnet"), ("1", "1"), ("[cnn1d]", "- cnn1d")] {
            assert_eq!(
                model(&format!("    model: {value}\n")).unwrap_err(),
                format!(
                    "experiments.e.model: unknown model '{shown}' (known: cnn1d, cnn_bn, transformer)"
                )
            );
        }
    }

    #[test]
    fn probe_steps_always_hold_step_1_sorted_once_and_within_the_steps() {
        let probe = |extra: &str| with(extra).map(|s| s.probe_steps);
        assert_eq!(probe("").unwrap(), [1]);
        assert_eq!(probe("    probe_steps: null\n").unwrap(), [1]);
        assert_eq!(probe("    probe_steps: []\n").unwrap(), [1]);
        assert_eq!(probe("    probe_steps: [3, 2, 3]\n").unwrap(), [1, 2, 3]);
        assert_eq!(probe("    probe_steps: [3, 1]\n").unwrap(), [1, 3]);
        assert_eq!(
            probe("    probe_steps: [2, 4]\n").unwrap_err(),
            "experiments.e.probe_steps: step 4 is after the last step (steps: 3)"
        );
        for (value, item) in [("[0]", "0"), ("[1.5]", "1.5"), ("[-2]", "-2")] {
            assert_eq!(
                probe(&format!("    probe_steps: {value}\n")).unwrap_err(),
                format!("experiments.e.probe_steps: '{item}' is not a step (a positive integer)")
            );
        }
        assert_eq!(
            probe("    probe_steps: 2\n").unwrap_err(),
            "experiments.e.probe_steps: expected a list of steps (positive integers)"
        );
    }

    #[test]
    fn refuses_an_unknown_optimizer_naming_it() {
        let err = parse(&config("    optimizer: lion\n    lr: 0.1\n"), "e").unwrap_err();
        assert!(
            err.contains("experiments.e.optimizer") && err.contains("lion"),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_missing_hyperparameter_naming_it() {
        let c = config(
            "    optimizer: sgd\n    lr: 0.1\n    momentum: 0\n    weight_decay: 0\n    nesterov: false\n",
        );
        let err = parse(&c, "e").unwrap_err();
        assert!(err.contains("experiments.e.dampening"), "{err}");
    }

    #[test]
    fn refuses_an_unknown_experiment() {
        let err = parse(&config("    optimizer: sgd\n"), "nope").unwrap_err();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn keeps_only_the_listed_defaults_and_reads_lr_of_either_optimizer() {
        let adam = config(
            "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n",
        );
        let spec = parse(&adam, "e").unwrap();
        assert!(!spec.keeps_default("eps") && spec.burn_defaults.is_empty());
        assert_eq!(spec.lr(), 0.01);
        let sgd = config(
            "    optimizer: sgd\n    lr: 0.5\n    momentum: 0.9\n    dampening: 0\n    weight_decay: 0\n    nesterov: false\n    keep_defaults: {burn: [dampening]}\n",
        );
        let spec = parse(&sgd, "e").unwrap();
        assert!(spec.keeps_default("dampening") && !spec.keeps_default("momentum"));
        assert_eq!(spec.lr(), 0.5);
    }

    #[test]
    fn refuses_keeping_a_default_burn_does_not_have() {
        // lr has no default, and nesterov is no Adam hyperparameter.
        for key in ["lr", "nesterov"] {
            let c = config(&format!(
                "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n    keep_defaults: {{burn: [{key}]}}\n"
            ));
            assert_eq!(
                parse(&c, "e").unwrap_err(),
                format!("experiments.e.keep_defaults.burn: '{key}' has no Burn default for adam")
            );
        }
    }

    #[test]
    fn reads_the_cpu_path_native_by_default_and_refuses_others() {
        let base = "steps: 1\nbatch_size: 1\nexperiments:\n  e: {optimizer: sgd, lr: 0.1, momentum: 0.0, dampening: 0.0, weight_decay: 0.0, nesterov: false}\n";
        let spec = |text: &str| parse(&serde_yaml::from_str(text).unwrap(), "e");
        assert_eq!(spec(base).unwrap().cpu_path, "native");
        assert_eq!(
            spec(&format!("cpu_path: avx2\n{base}")).unwrap().cpu_path,
            "avx2"
        );
        assert_eq!(
            spec(&format!("cpu_path: avx3\n{base}")).unwrap_err(),
            "cpu_path: unknown setting avx3 (known: native, avx2, compatible)"
        );
    }

    #[test]
    fn steps_batch_size_and_threads_must_be_positive() {
        let exp = "experiments:\n  e:\n    optimizer: sgd\n    lr: 0.1\n    momentum: 0\n    dampening: 0\n    weight_decay: 0\n    nesterov: false\n";
        let read = |head: &str| parse(&serde_yaml::from_str(&format!("{head}{exp}")).unwrap(), "e");
        let spec = read("steps: 1\nbatch_size: 1\nthreads: 1\n").unwrap();
        assert_eq!((spec.steps, spec.batch_size, spec.threads), (1, 1, 1));
        for (head, key) in [
            ("steps: 0\nbatch_size: 16\n", "steps"),
            ("steps: 3\nbatch_size: 0\n", "batch_size"),
            ("steps: 3\nbatch_size: 16\nthreads: 0\n", "threads"),
        ] {
            assert_eq!(
                read(head).unwrap_err(),
                format!("{key}: must be a positive integer")
            );
        }
        assert_eq!(read("batch_size: 16\n").unwrap_err(), "steps: missing");
    }

    const ADAMW: &str = "    optimizer: adamw\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0.01\n    amsgrad: true\n";
    const ADAGRAD: &str = "    optimizer: adagrad\n    lr: 0.1\n    lr_decay: 0.01\n    eps: 1.0e-10\n    weight_decay: 0\n    initial_accumulator_value: 0\n";
    const RMSPROP: &str = "    optimizer: rmsprop\n    lr: 0.01\n    alpha: 0.99\n    eps: 1.0e-8\n    weight_decay: 0\n    momentum: 0\n    centered: true\n";

    #[test]
    fn reads_the_new_optimizers() {
        assert_eq!(
            parse(&config(ADAMW), "e").unwrap().optimizer,
            Optimizer::AdamW {
                lr: 0.01,
                betas: [0.9, 0.999],
                eps: 1e-8,
                weight_decay: 0.01,
                amsgrad: true
            }
        );
        assert_eq!(
            parse(&config(ADAGRAD), "e").unwrap().optimizer,
            Optimizer::AdaGrad {
                lr: 0.1,
                lr_decay: 0.01,
                eps: 1e-10,
                weight_decay: 0.0,
                initial_accumulator_value: 0.0
            }
        );
        let spec = parse(&config(RMSPROP), "e").unwrap();
        assert_eq!(
            spec.optimizer,
            Optimizer::RmsProp {
                lr: 0.01,
                alpha: 0.99,
                eps: 1e-8,
                weight_decay: 0.0,
                momentum: 0.0,
                centered: true
            }
        );
        assert_eq!((spec.lr(), spec.optimizer.name()), (0.01, "rmsprop"));
        // No schedule and no clipping unless asked for.
        assert_eq!((spec.schedule, spec.clip_grad), (Schedule::Constant, None));
    }

    #[test]
    fn adam_amsgrad_is_optional_and_adamw_amsgrad_is_not() {
        let adam = "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n";
        for (extra, want) in [("", false), ("    amsgrad: true\n", true)] {
            let spec = parse(&config(&format!("{adam}{extra}")), "e").unwrap();
            assert!(matches!(spec.optimizer, Optimizer::Adam { amsgrad, .. } if amsgrad == want));
        }
        let err = parse(&config(&format!("{adam}    amsgrad: 1\n")), "e").unwrap_err();
        assert_eq!(err, "experiments.e.amsgrad: expected true or false");
        let adamw = ADAMW.replace("    amsgrad: true\n", "");
        let err = parse(&config(&adamw), "e").unwrap_err();
        assert_eq!(
            err,
            "experiments.e.amsgrad: missing hyperparameter for adamw"
        );
    }

    #[test]
    fn refuses_an_initial_accumulator_burn_cannot_hold() {
        let c = config(&ADAGRAD.replace(
            "initial_accumulator_value: 0",
            "initial_accumulator_value: 0.1",
        ));
        let err = parse(&c, "e").unwrap_err();
        assert!(
            err.starts_with("experiments.e.initial_accumulator_value: Burn's AdaGrad has no initial accumulator value")
                && err.ends_with("got 0.1")
                && !err.contains('\n'),
            "{err}"
        );
        // Left at Burn's default (no accumulator, i.e. 0), it is not passed and not refused.
        let kept = config(&format!(
            "{}    keep_defaults: {{burn: [initial_accumulator_value]}}\n",
            ADAGRAD.replace(
                "initial_accumulator_value: 0",
                "initial_accumulator_value: 0.1"
            )
        ));
        assert!(
            parse(&kept, "e")
                .unwrap()
                .keeps_default("initial_accumulator_value")
        );
    }

    #[test]
    fn refuses_a_negative_rmsprop_momentum_burn_would_ignore() {
        let c = config(&RMSPROP.replace("momentum: 0", "momentum: -0.5"));
        let err = parse(&c, "e").unwrap_err();
        assert!(
            err.starts_with("experiments.e.momentum: Burn's RMSProp ignores"),
            "{err}"
        );
    }

    fn with(extra: &str) -> Result<Spec, String> {
        parse(&config(&format!("{RMSPROP}{extra}")), "e")
    }

    #[test]
    fn reads_every_schedule_kind() {
        for (text, want) in [
            ("{kind: constant}", Schedule::Constant),
            ("null", Schedule::Constant),
            (
                "{kind: linear, final_lr: 0.001, num_steps: 10}",
                Schedule::Linear {
                    final_lr: 0.001,
                    num_steps: 10,
                },
            ),
            (
                "{kind: cosine, min_lr: 0, num_steps: 4}",
                Schedule::Cosine {
                    min_lr: 0.0,
                    num_steps: 4,
                },
            ),
            (
                "{kind: exponential, gamma: 0.9}",
                Schedule::Exponential { gamma: 0.9 },
            ),
            (
                "{kind: step, step_size: 2, gamma: 0.5}",
                Schedule::Step {
                    step_size: 2,
                    gamma: 0.5,
                },
            ),
        ] {
            let spec = with(&format!("    schedule: {text}\n")).unwrap();
            assert_eq!(spec.schedule, want, "{text}");
        }
    }

    #[test]
    fn refuses_bad_schedules_naming_the_key() {
        for (text, want) in [
            (
                "{kind: warmup}",
                "experiments.e.schedule.kind: unknown schedule kind 'warmup' (known: constant, linear, cosine, exponential, step)",
            ),
            (
                "{final_lr: 0.1}",
                "experiments.e.schedule.kind: missing or not a string",
            ),
            (
                "{kind: linear, final_lr: 0.001}",
                "experiments.e.schedule.num_steps: missing for the linear schedule",
            ),
            (
                "{kind: cosine, min_lr: 0}",
                "experiments.e.schedule.num_steps: missing for the cosine schedule",
            ),
            (
                "{kind: cosine, min_lr: 0, num_steps: 2.5}",
                "experiments.e.schedule.num_steps: expected a non-negative integer",
            ),
            (
                "{kind: exponential, gamma: 0.9, step_size: 3}",
                "experiments.e.schedule.step_size: not a key of the exponential schedule",
            ),
            (
                "cosine",
                "experiments.e.schedule: expected a mapping with a kind",
            ),
        ] {
            assert_eq!(
                with(&format!("    schedule: {text}\n")).unwrap_err(),
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn reads_clip_grad_by_norm_or_value_and_refuses_both() {
        assert_eq!(
            with("    clip_grad: {norm: 1.5}\n").unwrap().clip_grad,
            Some(ClipGrad::Norm(1.5))
        );
        assert_eq!(
            with("    clip_grad: {value: 0.1}\n").unwrap().clip_grad,
            Some(ClipGrad::Value(0.1))
        );
        assert_eq!(with("    clip_grad: null\n").unwrap().clip_grad, None);
        for (text, want) in [
            (
                "{norm: 1.0, value: 0.1}",
                "experiments.e.clip_grad: give exactly one of norm and value (Burn clips by one of them), not both",
            ),
            (
                "{}",
                "experiments.e.clip_grad: expected {norm: x} or {value: x}",
            ),
            (
                "{max: 1.0}",
                "experiments.e.clip_grad.max: not a key of clip_grad (norm or value)",
            ),
            (
                "{norm: 0}",
                "experiments.e.clip_grad.norm: expected a positive number",
            ),
            (
                "{value: -1.0}",
                "experiments.e.clip_grad.value: expected a positive number",
            ),
        ] {
            assert_eq!(
                with(&format!("    clip_grad: {text}\n")).unwrap_err(),
                want,
                "{text}"
            );
        }
    }
}
