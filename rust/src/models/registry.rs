//! The models a binary trains, by name: a registry of [`ModelEntry`]s, each made from the
//! model's type by [`entry`] (what a `match` on the model would otherwise dispatch).
//! `parity-train` trains the built-in models ([`builtins`]); a port's binary its port
//! ([`crate::port::main`]). A new built-in model is one more line of [`builtins`].

use std::path::Path;

use burn::tensor::Device;
use serde_json::{Map, Value};

use super::{Cnn1d, CnnBn, Entry, Gpt, LeNet, ModelSize, ParityModel, SizeKeys, Transformer};
use crate::config::Spec;
use crate::dataset::Dataset;
use crate::failure::Failure;
use crate::fault::Fault;
use crate::local::{self, Written};
use crate::port;
use crate::record::Output;
use crate::runfile::RunBlock;
use crate::train;

/// Trains one experiment: the run block without `meta.provenance`.
pub type TrainFn =
    fn(&Spec, &Dataset, &Device, Option<&Fault>, Output<'_>) -> Result<RunBlock, Failure>;
/// Runs the local mode of one experiment against a PyTorch run, writing `out`.
pub type LocalFn = fn(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    torch_run: &Path,
    out: &Path,
) -> Result<Written, Failure>;

/// Checks that the spec's model can be trained on this dataset, without training (a
/// port's declarations against its module: `BIN check`): the names of the layers it
/// records (a port's, as its forward calls them; none listed for a built-in model), or one
/// line when it cannot.
pub type CheckFn = fn(spec: &Spec, data: &Dataset, device: &Device) -> Result<Vec<String>, String>;

/// One model of a registry: its name, its size declaration and its declarations as
/// functions of its size (`M`'s, [`ParityModel`]), and the trainer's two modes on it. A
/// port's declarations are those of its spec, known once its binary has read it
/// ([`crate::port::prepare`]).
#[derive(Debug, Clone, Copy)]
pub struct ModelEntry {
    /// The spec's and the run file's name ([`ParityModel::NAME`]).
    pub name: &'static str,
    /// The size keys with their defaults ([`ParityModel::SIZE`]).
    pub size: SizeKeys,
    /// [`ModelSize::check`] of the model.
    pub check_size: fn(&ModelSize) -> Result<(), String>,
    /// [`ParityModel::params`].
    pub params: fn(&ModelSize) -> Vec<Entry>,
    /// [`ParityModel::layers`].
    pub layers: fn(&ModelSize) -> Vec<String>,
    /// [`ParityModel::may_have_param`].
    pub may_have_param: fn(&str) -> bool,
    /// The trainer ([`train::run_into`]); its errors are [`Failure::Failed`].
    pub train: TrainFn,
    /// The local mode ([`local`](crate::local)).
    pub local: LocalFn,
    /// The check before any job trains ([`CheckFn`]).
    pub check: CheckFn,
}

impl ModelEntry {
    /// The model's default size ([`ModelSize::defaults`]).
    pub fn default_size(&self) -> ModelSize {
        ModelSize::defaults(self.size)
    }

    /// The model's size in the spec's `model_size` object ([`ModelSize::parse`], then
    /// [`ModelSize::check`]); one line naming the key otherwise.
    pub fn parse_size(&self, object: &Map<String, Value>) -> Result<ModelSize, String> {
        let size = ModelSize::parse(self.name, self.size, object)?;
        (self.check_size)(&size)?;
        Ok(size)
    }
}

/// Model `M`'s entry: its declarations, trained by the trainer.
pub fn entry<M: ParityModel>() -> ModelEntry {
    ModelEntry {
        name: M::NAME,
        size: M::SIZE,
        check_size: ModelSize::check::<M>,
        params: M::params,
        layers: M::layers,
        may_have_param: M::may_have_param,
        train: train_model::<M>,
        local: local_model::<M>,
        check: |_, _, _| Ok(Vec::new()),
    }
}

fn train_model<M: ParityModel>(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    output: Output<'_>,
) -> Result<RunBlock, Failure> {
    Ok(train::run_into::<M>(spec, data, device, fault, output)?.0)
}

fn local_model<M: ParityModel>(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    torch_run: &Path,
    out: &Path,
) -> Result<Written, Failure> {
    Ok(local::local_for::<M>(
        spec, data, device, fault, torch_run, out,
    )?)
}

/// The built-in models, in the order the error messages list them.
pub fn builtins() -> Vec<ModelEntry> {
    vec![
        entry::<Cnn1d>(),
        entry::<CnnBn>(),
        entry::<Transformer>(),
        entry::<LeNet>(),
        entry::<Gpt>(),
    ]
}

/// The built-in model of that name.
pub fn builtin(name: &str) -> Option<ModelEntry> {
    builtins().into_iter().find(|m| m.name == name)
}

/// The entry of `spec`'s model (`spec.model`) in `models`, a binary's registry; one line
/// naming the binary that trains it otherwise: a port's spec given to `parity-train`, a
/// built-in model's to a port's binary.
pub fn find<'a>(models: &'a [ModelEntry], spec: &Spec) -> Result<&'a ModelEntry, String> {
    models
        .iter()
        .find(|m| m.name == spec.model)
        .ok_or_else(|| match &spec.port {
            Some(decl) => port::not_built_in(spec, decl),
            None => port::built_in(spec),
        })
}
