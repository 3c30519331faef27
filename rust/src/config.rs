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
//! `digits`, `text`, `file`) and `label_smoothing` the cross-entropy's ε, in [0, 1).
//!
//! A user's own port (`model: port`, `model_size: {}`, `data: file`) also has `port`: its
//! name, its parameters (PyTorch names and shapes, in model order) and its recorded layers
//! ([`PortDecl`]); no other model has it.

use serde::{Deserialize, Serialize};
use std::path::Path;

mod loss;
mod optimizer;
use crate::models::{self, Declared, ModelSize, PORT};
pub use loss::LossKind;
pub use optimizer::{AdjustLr, Optimizer};

/// The dataset an experiment trains on (the spec's `data`; `meta.data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Sequences of 16 sine steps in 3 classes (cnn1d, cnn_bn, the transformer).
    Sine,
    /// 8×8 grey images of the 10 digits (lenet).
    Digits,
    /// Token ids, a label per position (a language model).
    Text,
    /// A port's own dataset file: whatever inputs the user's module takes.
    File,
}

impl Data {
    /// Every dataset, in the order the error messages list them.
    pub const ALL: [Data; 4] = [Data::Sine, Data::Digits, Data::Text, Data::File];

    /// The name the config and the run file use.
    pub fn name(self) -> &'static str {
        match self {
            Data::Sine => "sine",
            Data::Digits => "digits",
            Data::Text => "text",
            Data::File => "file",
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
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
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

/// One fix the Burn trainer applies by hand where Burn has no setting (the spec's
/// `burn_fixes`; by_hand.rs and train.rs apply them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BurnFix {
    ClipByGlobalNorm,
    MuonLrPerParameter,
    SmoothedTargetsInDtype,
    PytorchSchedule,
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

    /// The derivative the backend's exact (erf) GELU is differentiated with, in the terms
    /// of PyTorch's `approximate`: burn-flex overrides `gelu_backward` with the erf
    /// derivative (src/ops/activation.rs lines 81–103); burn-ndarray keeps burn-backend's
    /// default, the derivative of the tanh approximation with 6-digit constants
    /// (src/backend/ops/activation.rs lines 98–128), whatever the forward computed.
    pub fn gelu_backward(self) -> &'static str {
        match self {
            Backend::Flex => "none",
            Backend::NdArray => "tanh",
        }
    }
}

/// The layer settings a model records (`{layer}.approximate`, …) with, for each exact GELU,
/// `{layer}.backward`: the form of GELU its backward differentiates on `backend`
/// ([`Backend::gelu_backward`]), which no setting of the layer reaches.
pub fn with_gelu_backward(settings: serde_json::Value, backend: Backend) -> serde_json::Value {
    let serde_json::Value::Object(map) = settings else {
        return settings;
    };
    let mut found = serde_json::Map::new();
    for (key, value) in map {
        let exact = key
            .strip_suffix(".approximate")
            .filter(|_| value == "none")
            .map(|layer| format!("{layer}.backward"));
        found.insert(key, value);
        if let Some(backward) = exact {
            found.insert(backward, backend.gelu_backward().into());
        }
    }
    serde_json::Value::Object(found)
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

/// One parameter of a port as the spec declares it: PyTorch's name and shape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortParam {
    pub name: String,
    pub shape: Vec<usize>,
}

/// A user's port as the spec's `port` declares it (the PyTorch side reads it off the
/// module): its name, its parameters and its buffers (BatchNorm running statistics) in
/// model order (the run file's order), the names of its recorded layers in forward order.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortDecl {
    pub name: String,
    pub params: Vec<PortParam>,
    /// None for a port without running statistics (a spec may leave the key out).
    #[serde(default)]
    pub buffers: Vec<PortParam>,
    pub layers: Vec<String>,
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
    /// A built-in model's name, or a port's (`port.name`): resolved in [`parse`].
    model: String,
    /// Checked against `model` in [`parse`].
    model_size: serde_json::Map<String, serde_json::Value>,
    /// Checked in [`parse`] ([`Data::parse`]): read as any JSON so that a wrong one is
    /// refused naming the key.
    data: serde_json::Value,
    /// `cross_entropy` (the default: specs written before `loss` existed) or `mse`.
    #[serde(default)]
    loss: LossKind,
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
    /// A port's declaration; checked against `model` in [`parse`].
    #[serde(default)]
    port: Option<PortDecl>,
    /// What the trainer applies by hand ([`BurnFix`]); absent: nothing.
    #[serde(default)]
    burn_fixes: Vec<BurnFix>,
}

/// The spec's `model`: a built-in model's entry by name ([`models::builtins`]), or None for a
/// port, when it names the spec's port (`port.name`; [`PORT`] itself is accepted too).
fn model_by_name(name: &str, port: Option<&PortDecl>) -> Result<Option<Declared>, String> {
    if name == PORT || port.is_some_and(|p| p.name == name) {
        return Ok(None);
    }
    models::builtin(name).map(Some).ok_or_else(|| {
        let names: Vec<&str> = models::builtins().iter().map(|m| m.name).collect();
        format!(
            "unknown model '{name}' (known: {}, or a port's name with its `port`)",
            names.join(", "),
        )
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
    /// The name of the model's entry in a binary's registry (registry.rs): a built-in
    /// model's, or [`PORT`] for a port (whose own name is `port.name`). Every binary reads a
    /// spec alike; each trains the models of its own registry.
    pub model: &'static str,
    /// The model's sizes (the spec's `model_size`), checked: `model`'s own keys.
    pub model_size: ModelSize,
    /// The dataset (the spec's `data`), recorded in `meta.data`.
    pub data: Data,
    /// The loss both sides compute (the spec's `loss`).
    pub loss: LossKind,
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
    /// The port's declaration: present exactly when `model` is [`PORT`].
    pub port: Option<PortDecl>,
    /// What the trainer applies by hand where Burn has no setting (by_hand.rs).
    pub burn_fixes: Vec<BurnFix>,
}

impl Spec {
    pub fn keeps_default(&self, key: &str) -> bool {
        self.burn_defaults.iter().any(|k| k == key)
    }

    /// The experiment's `lr`: its optimizer's, the schedule's initial lr.
    pub fn lr(&self) -> f64 {
        self.optimizer.lr()
    }

    pub fn applies(&self, fix: BurnFix) -> bool {
        self.burn_fixes.contains(&fix)
    }

    /// The clipping attached to Burn's optimizers: none when the trainer clips by hand.
    pub fn attached_clip(&self) -> Option<ClipGrad> {
        self.clip_grad
            .filter(|_| !self.applies(BurnFix::ClipByGlobalNorm))
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
    let (model, model_size) = match model_by_name(&raw.model, raw.port.as_ref())? {
        Some(entry) => (entry.name, entry.parse_size(&raw.model_size)?),
        None => (PORT, ModelSize::parse(PORT, &[], &raw.model_size)?),
    };
    let data = Data::parse(&raw.data)?;
    let label_smoothing = label_smoothing(&raw.label_smoothing)?;
    let record_steps = record_steps(&raw.record_steps, raw.steps)?;
    check_port(model, raw.port.as_ref())?;
    if raw.burn_fixes.contains(&BurnFix::ClipByGlobalNorm)
        && !matches!(raw.clip_grad, Some(ClipGrad::Norm(_)))
    {
        return Err("burn_fixes: clip_by_global_norm needs clip_grad {norm: x}".into());
    }
    if raw.burn_fixes.contains(&BurnFix::PytorchSchedule) && raw.schedule == Schedule::Constant {
        return Err("burn_fixes: pytorch_schedule needs a schedule other than constant".into());
    }
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
        model,
        model_size,
        data,
        loss: raw.loss,
        label_smoothing,
        probe_steps: raw.probe_steps,
        record_steps,
        steps: raw.steps,
        batch_size: raw.batch_size,
        threads: raw.threads,
        cpu_path: raw.cpu_path,
        param_groups,
        port: raw.port,
        burn_fixes: raw.burn_fixes,
    })
}

/// Refuses, on one line, a port without its declaration, a declaration for a built-in
/// model, and a declaration with no parameter, no layer, a parameter declared twice or a
/// shape with a zero.
fn check_port(model: &str, port: Option<&PortDecl>) -> Result<(), String> {
    let port = match (model, port) {
        (PORT, Some(port)) => port,
        (PORT, None) => return Err("port: missing (model port declares its port)".into()),
        (_, None) => return Ok(()),
        (m, Some(_)) => {
            return Err(format!(
                "port: only model port has one, the spec's model is {m}"
            ));
        }
    };
    if port.params.is_empty() {
        return Err(format!(
            "port.params: port {} declares no parameter",
            port.name
        ));
    }
    if port.layers.is_empty() {
        return Err(format!("port.layers: port {} declares no layer", port.name));
    }
    for (i, p) in port.params.iter().enumerate() {
        if port.params[..i].iter().any(|q| q.name == p.name) {
            return Err(format!("port.params: {} is declared twice", p.name));
        }
        if p.shape.contains(&0) {
            return Err(format!(
                "port.params: {} has shape {:?}, with a zero",
                p.name, p.shape
            ));
        }
    }
    Ok(())
}

/// The spec in a resolved spec file (`python -m torch_burn_parity.config.resolve`).
pub fn load(path: &Path) -> Result<Spec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: not a resolved spec: {e}", path.display()))
}

#[cfg(test)]
mod tests;
