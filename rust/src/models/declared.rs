//! What each model declares, as functions of its size: its name, size keys, parameters and
//! layers ([`Declared`], made by [`declared`] from the model's type), and the built-in models
//! by name ([`builtins`]). The config reads a spec's model by these; a binary's registry
//! (registry.rs) adds the trainer's modes to them.

use serde_json::{Map, Value};

use super::{Entry, ModelSize, ParityModel, SizeKeys};

/// `$make::<M>()` for each built-in model type `M`, in the order the error messages list
/// them: the one list of the built-in models ([`builtins`], `registry::builtins`). A new
/// built-in model is one more type here.
#[macro_export]
macro_rules! each_builtin_model {
    ($make:ident) => {
        vec![
            $make::<$crate::models::Cnn1d>(),
            $make::<$crate::models::CnnBn>(),
            $make::<$crate::models::Transformer>(),
            $make::<$crate::models::LeNet>(),
            $make::<$crate::models::Gpt>(),
        ]
    };
}

/// One model's declarations as functions of its size (`M`'s, [`ParityModel`]). A port's
/// are those of its spec, known once its binary has read it (`port::prepare`).
#[derive(Debug, Clone, Copy)]
pub struct Declared {
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
}

impl Declared {
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

/// Model `M`'s declarations.
pub fn declared<M: ParityModel>() -> Declared {
    Declared {
        name: M::NAME,
        size: M::SIZE,
        check_size: ModelSize::check::<M>,
        params: M::params,
        layers: M::layers,
        may_have_param: M::may_have_param,
    }
}

/// The built-in models' declarations, in the order the error messages list them.
pub fn builtins() -> Vec<Declared> {
    each_builtin_model!(declared)
}

/// The built-in model of that name.
pub fn builtin(name: &str) -> Option<Declared> {
    builtins().into_iter().find(|m| m.name == name)
}
