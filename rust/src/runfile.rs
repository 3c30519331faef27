//! The run file the Burn trainer writes, defined once: [`RunFile`] is `{experiment: block}`
//! and [`RunBlock`] the block, every field typed and described here. The PyTorch trainer
//! writes the same fields (src/torch_burn_parity/io/run_file.py); the Burn-only ones are
//! marked so. Parameters and buffers are keyed by PyTorch's names in the model's order
//! ([`Named`]), their values flat in PyTorch's layout.
//!
//! JSON has no NaN or infinity, so non-finite floats are written as the strings "NaN",
//! "Infinity" and "-Infinity" (read back by parity_io.py): the measured values, which a
//! diverging run can take there, are `F64` and `Floats` (measured.rs). Configured values
//! (hyperparameters, schedule, clipping, a fault's delta) are plain `f64`, as the spec gave
//! them or as Burn holds them: serde_json would write a non-finite one as null, as before.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;

use crate::config::{BurnFix, ClipGrad};
use crate::fault::Fault;
use crate::measured::{F64, Floats, LayerRecord};
use crate::models::ModelSize;
use crate::optimizers::Hyperparameters;
use crate::provenance::Provenance;

/// A run file: one experiment's name and its block, written as `{name: block}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFile {
    /// The experiment's name (the spec's `name`).
    pub experiment: String,
    pub block: RunBlock,
}

impl Serialize for RunFile {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.experiment, &self.block)?;
        map.end()
    }
}

/// One run of one experiment at one precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunBlock {
    /// The training loss of each step's batch (train mode).
    pub losses: Floats,
    /// The lr each step used, as Burn's scheduler gave it.
    pub lrs: Floats,
    /// Each parameter's and gradient's L2 norm at every step; absent from a bare run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub norms: Option<Norms>,
    /// The whole dataset after the last step, in eval mode.
    pub r#final: Final,
    /// The run's tensors: `tensors` (the file beside), or `params`, `buffers`, `trajectory`
    /// inline; nothing in a bare run.
    #[serde(flatten)]
    pub tensors: RunTensors,
    /// The layer record at each probe step (the spec's `probe_steps`), in step order; `[]` in
    /// a bare run.
    pub layers: Vec<LayerRecord>,
    pub meta: Meta,
    /// Burn only, Adam only: the per-step f32 factors of its update (adam_factors.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adam_factors: Option<AdamFactors>,
    /// Burn only: AdamW's per-step f32 bias corrections, `{}` for AdaGrad, RMSProp and Muon
    /// (their per-step scalars are f64 or constants); absent for SGD and Adam.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burn_scalars: Option<BurnScalars>,
}

/// `norms`: at every step (1..=steps, whatever `record_steps` says), the L2 norm sqrt(Σx²)
/// of each parameter and of its gradient, computed in f64 from the values (an f32 run's
/// widened exactly), keyed by PyTorch's names in the model's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Norms {
    /// Each parameter after each step's update.
    pub params: Named<Floats>,
    /// Each parameter's gradient of each step's backward, before any clipping.
    pub grads: Named<Floats>,
}

/// `final`: the whole dataset after training, in eval mode (no autodiff, running statistics).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Final {
    /// The mean loss (cross-entropy, or mse).
    pub loss: F64,
    /// How many rows are predicted right; None (`null`) for a regression (mse).
    pub correct: Option<i64>,
    /// The argmax of each row's output; None (`null`) for a regression (mse).
    pub predictions: Option<Vec<i64>>,
}

/// The run's tensors: in the tensors file beside the run file (what the binary writes, see
/// tensors.rs), inline in the JSON (a run without a file: tests), or none at all (a bare
/// run, `parity-train --bare`: the training alone, timed).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RunTensors {
    File {
        tensors: TensorsFile,
    },
    Inline {
        /// Each parameter after the last step.
        params: Named<Floats>,
        /// Each buffer (running statistics) after the last step; `{}` for a model without.
        buffers: Named<Floats>,
        trajectory: Trajectory,
    },
    /// A bare run: no field at all.
    Bare {},
}

/// `tensors`: the tensors file beside the run file, whose keys hold what the inline form's
/// `params`, `buffers`, `trajectory` and layer records hold (tensors.rs, run_tensors.py).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorsFile {
    /// Its name, in the run file's folder.
    pub file: String,
    /// `"F32"` or `"F64"`: the run's precision.
    pub dtype: &'static str,
    /// The recorded steps (1-based, the spec's `record_steps`): the rows of each trajectory.
    pub steps: Vec<usize>,
    /// Its size in bytes (a file of another size is not this run's).
    pub bytes: u64,
}

/// `trajectory`: the values after each recorded step (the spec's `record_steps`), one list
/// per recorded step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    /// Each parameter after each step's update.
    pub params: Named<Vec<Floats>>,
    /// Each parameter's gradient of each step's backward, before any clipping.
    pub grads: Named<Vec<Floats>>,
    /// Each buffer after each step; `{}` for a model without.
    pub buffers: Named<Vec<Floats>>,
}

/// `adam_factors`: per step (1-based t), the two f32 scalars of Burn's Adam update
/// `p -= lr · m · combined_factor / (sqrt(v) + epsilon_bias_correction2_sqrt)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdamFactors {
    /// sqrt(1 − β₂^t) / (1 − β₁^t).
    pub combined_factor: Floats,
    /// ε · sqrt(1 − β₂^t).
    pub epsilon_bias_correction2_sqrt: Floats,
}

/// `burn_scalars`: the f32 scalars Burn's update computes per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum BurnScalars {
    /// AdamW's bias corrections at each step t (1-based).
    AdamW {
        /// 1 − β₁^t.
        bias_correction1: Floats,
        /// 1 − β₂^t.
        bias_correction2: Floats,
    },
    /// AdaGrad, RMSProp and Muon: `{}`.
    None {},
}

/// `meta`: how the run was made, with the values Burn held, read back from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Meta {
    /// The model's name (`cnn1d`, `cnn_bn`, `transformer`, `lenet`).
    pub model: String,
    /// The model's sizes as the built modules hold them, e.g. `{"channels": 4, "kernel": 5}`
    /// (`ParityModel::size`), its keys in the spec's `model_size` order.
    pub model_size: ModelSize,
    /// The dataset's name, the spec's `data` (`sine`, `digits`, `text`).
    pub data: String,
    /// The layers' settings as the built modules hold them, e.g. `{"bn.eps": 1e-5}`. A
    /// `Value`: each model has its own keys (`ParityModel::layer_hyperparameters`), as
    /// each model's `ModelSpec` on the Python side declares them.
    pub layer_hyperparameters: Value,
    /// The loss as Burn's `CrossEntropyLoss` holds it.
    pub loss: LossMeta,
    /// The experiment's optimizer (for the parameters in no group).
    pub optimizer: String,
    /// Its hyperparameters as Burn's config holds them (one struct per optimizer, in its
    /// module under optimizers/).
    pub hyperparameters: Hyperparameters,
    /// Each parameter group as Burn holds it; `[]` without groups.
    pub param_groups: Vec<GroupMeta>,
    /// The hyperparameters left to Burn's defaults (`keep_defaults.burn`).
    pub kept_defaults: Vec<String>,
    pub schedule: ScheduleMeta,
    /// The clipping Burn's config holds (its f32 threshold widened), `{"norm": x}` or
    /// `{"value": x}`; null without.
    pub clip_grad: Option<ClipGrad>,
    /// What each clipping applies to: `"per parameter tensor"` (Burn clips each tensor on
    /// its own), or `by_hand::GLOBAL_SCOPE` when the trainer clips by one norm itself; null
    /// without clipping.
    pub clip_scope: Option<&'static str>,
    /// The fixes the trainer applied by hand (the spec's `burn_fixes`, by_hand.rs); absent
    /// without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub burn_fixes: Vec<BurnFix>,
    /// With `muon_lr_per_parameter`: each Muon parameter's lr scale, one per Burn tensor
    /// (PyTorch's factor of its shape ÷ Burn's of the tensor's); absent otherwise.
    #[serde(skip_serializing_if = "Named::is_empty")]
    pub lr_scales: Named<Vec<f64>>,
    pub steps: usize,
    pub batch_size: usize,
    /// The threads of Burn's thread pool (the spec's `threads`).
    pub threads: usize,
    /// SHA-256 of the dataset file, lowercase hex.
    pub input_sha256: String,
    /// Burn only: each parameter's Burn tensors' shapes, in its parts' order (a Linear
    /// weight PyTorch holds as [3, 48] is `[[48, 3]]`; a packed one has several).
    pub burn_shapes: Named<Vec<Vec<usize>>>,
    /// Burn only, tests only: the perturbation injected (`{step, parameter, index, delta}`,
    /// fault.rs); absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// What the binary adds: absent from the block `train` returns, always in a run file.
    #[serde(flatten)]
    pub provenance: Option<Provenance>,
}

/// `meta.loss`: the loss as Burn holds it (loss.rs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LossMeta {
    /// The spec's `loss`: `cross_entropy` or `mse`.
    pub name: &'static str,
    /// Its label smoothing α: Burn's `smoothing` (an f32, burn-nn src/loss/cross_entropy.rs)
    /// widened to f64, e.g. 0.10000000149011612 for the spec's 0.1; 0 without smoothing
    /// (Burn's `None`, the spec's 0). Burn's target weights 1 − α and α/C are f32 roundings
    /// too (train.rs, `loss_config`). With `burn_fixes: [smoothed_targets_in_dtype]` the
    /// spec's ε itself (by_hand.rs computes the loss, in the run's dtype).
    pub label_smoothing: f64,
    /// With that fix: true (the targets built by hand in the run's dtype); absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_hand: bool,
}

/// `meta.param_groups[i]`: one parameter group as Burn holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMeta {
    /// Its parameters' exact PyTorch names.
    pub params: Vec<String>,
    pub optimizer: String,
    /// Its optimizer's hyperparameters as Burn's config holds them.
    pub hyperparameters: Hyperparameters,
}

/// `meta.schedule`: the lr schedule as Burn's config holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleMeta {
    /// `constant`, `linear`, `cosine`, `exponential` or `step`.
    pub kind: &'static str,
    /// Burn's own fields, read back from its config's serde form (schedule.rs), e.g.
    /// `initial_lr`, `final_lr`, `num_iters`; a constant schedule's bare lr is `lr`. A
    /// `Map`: the record is whatever Burn's `LrSchedulerConfig` holds, under its own names.
    #[serde(flatten)]
    pub burn: Map<String, Value>,
}

/// A JSON object keyed by name, written in the order it was built: the model's `params` or
/// `buffers` order. (serde_json's own `Map` sorts its keys: this crate does not enable its
/// `preserve_order` feature.)
#[derive(Debug, Clone, PartialEq)]
pub struct Named<T>(pub Vec<(String, T)>);

impl<T> Named<T> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T: Serialize> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<T, K: Into<String>> FromIterator<(K, T)> for Named<T> {
    fn from_iter<I: IntoIterator<Item = (K, T)>>(iter: I) -> Self {
        Named(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Writes through a temporary file in the same folder and renames it into place, so a
/// killed process never leaves a truncated run file behind.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("run");
    // Temporary files left by a writer that was killed: never trusted, never kept.
    let stale_prefix = format!(".{name}.");
    for entry in std::fs::read_dir(dir)?.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if file.starts_with(&stale_prefix) && file.ends_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests;
