//! The models a binary trains, by name: a registry of [`ModelEntry`]s, each a model's
//! declarations (models/declared.rs) with the trainer's modes on it, made by [`entry`] from
//! the model's type (what a `match` on the model would otherwise dispatch). `parity-train`
//! trains the built-in models ([`builtins`]); a port's binary its port (`port::main`).
//! [`train`], [`train_into`] and [`local`] run a spec of a built-in model.

use std::path::Path;

use crate::config::{PortDecl, Spec};
use crate::each_builtin_model;
use crate::failure::Failure;
use crate::local::{self as local_mode, Written};
use crate::models::{Declared, ParityModel, declared};
use crate::record::Output;
use crate::run::Run;
use crate::runfile::RunBlock;
use crate::train::run_into;

/// Trains one experiment: the run block without `meta.provenance`.
pub type TrainFn = fn(run: Run, output: Output<'_>) -> Result<RunBlock, Failure>;
/// Runs the local mode of one experiment against a PyTorch run, writing `out`.
pub type LocalFn = fn(run: Run, torch_run: &Path, out: &Path) -> Result<Written, Failure>;

/// Checks that the spec's model can be trained on this dataset, without training (a
/// port's declarations against its module: `BIN check`): the names of the layers it
/// records (a port's, as its forward calls them; none listed for a built-in model), or one
/// line when it cannot.
pub type CheckFn = fn(run: Run) -> Result<Vec<String>, String>;

/// One model of a registry: its declarations and the trainer's modes on it.
#[derive(Debug, Clone, Copy)]
pub struct ModelEntry {
    pub declared: Declared,
    /// The trainer ([`run_into`]); its errors are [`Failure::Failed`].
    pub train: TrainFn,
    /// The local mode (local.rs).
    pub local: LocalFn,
    /// The check before any job trains ([`CheckFn`]).
    pub check: CheckFn,
}

/// Model `M`'s entry: its declarations, trained by the trainer.
pub fn entry<M: ParityModel>() -> ModelEntry {
    ModelEntry {
        declared: declared::<M>(),
        train: train_model::<M>,
        local: local_model::<M>,
        check: |_| Ok(Vec::new()),
    }
}

fn train_model<M: ParityModel>(run: Run, output: Output<'_>) -> Result<RunBlock, Failure> {
    Ok(run_into::<M>(run, output)?.0)
}

fn local_model<M: ParityModel>(run: Run, torch_run: &Path, out: &Path) -> Result<Written, Failure> {
    Ok(local_mode::local_for::<M>(run, torch_run, out)?)
}

/// The built-in models, in the order the error messages list them.
pub fn builtins() -> Vec<ModelEntry> {
    each_builtin_model!(entry)
}

/// The entry of `spec`'s model (`spec.model`) in `models`, a binary's registry; one line
/// naming the binary that trains it otherwise: a port's spec given to `parity-train`, a
/// built-in model's to a port's binary.
pub fn find<'a>(models: &'a [ModelEntry], spec: &Spec) -> Result<&'a ModelEntry, String> {
    models
        .iter()
        .find(|m| m.declared.name == spec.model)
        .ok_or_else(|| match &spec.port {
            Some(decl) => not_built_in(spec, decl),
            None => built_in(spec),
        })
}

/// The refusal of a port's spec by `parity-train`.
pub fn not_built_in(spec: &Spec, port: &PortDecl) -> String {
    format!(
        "experiment {} trains your own port {}: run your crate's binary, not parity-train",
        spec.name, port.name
    )
}

/// The refusal of a built-in model's spec by a port's binary.
pub fn built_in(spec: &Spec) -> String {
    format!(
        "experiment {} trains the built-in model {}: run parity-train, not a port's binary",
        spec.name, spec.model
    )
}

/// Trains one experiment of a built-in model: the run block, without the meta fields the
/// binary adds (`meta.provenance` is None). A port is not built in: its own binary trains it.
/// `out`: the run file to be. With it, the tensors go to the tensors file beside it as the
/// steps go (record.rs, tensors.rs) and the block names that file (`tensors`); without it
/// (tests), the block holds them inline (`params`, `buffers`, `trajectory`, layer values).
pub fn train(run: Run, out: Option<&Path>) -> Result<RunBlock, String> {
    train_into(run, out.into())
}

/// [`train`] into `output`: also [`Output::Bare`], a run that records nothing per step (no
/// trajectory, no layer record, no norms): a block of `losses`, `lrs`, `final`, `layers`
/// (`[]`) and `meta` only (no `adam_factors` or `burn_scalars` either).
pub fn train_into(run: Run, output: Output) -> Result<RunBlock, String> {
    let builtins = builtins();
    let model = find(&builtins, run.spec)?;
    (model.train)(run, output).map_err(Failure::into_message)
}

/// Runs the local mode of a built-in model's experiment against the PyTorch run file
/// `torch_run` (its tensors file beside it) and writes `out`. A layer fault is injected; a
/// parameter fault is checked, then ignored (the parameters here are the reference run's).
/// One line on any refusal.
pub fn local(run: Run, torch_run: &Path, out: &Path) -> Result<Written, String> {
    let builtins = builtins();
    let model = find(&builtins, run.spec)?;
    (model.local)(run, torch_run, out).map_err(Failure::into_message)
}
