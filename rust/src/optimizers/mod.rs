//! The Burn side of each optimizer, one module each (like the models): its builder, which
//! passes every hyperparameter it is given explicitly (but those left to Burn's defaults) and
//! reads back what Burn's config holds, in f32 where Burn stores f32, into the module's
//! `*Held` struct (a [`Hyperparameters`] variant: the run file's `meta.hyperparameters`). The
//! same builders serve the experiment's optimizer and each parameter group's.
//! The Python side's registry is src/torch_burn_parity/optimizers/; docs/extending.md
//! "Adding an optimizer".

use burn::grad_clipping::GradientClippingConfig;
use burn::optim::ModuleOptimizer;
use serde::Serialize;
use serde_json::Value;

use crate::config::{ClipGrad, Optimizer};

mod adagrad;
mod adam;
mod adamw;
mod muon;
mod rmsprop;
mod sgd;

pub use adagrad::AdaGradHeld;
pub use adam::AdamHeld;
pub use muon::MuonHeld;
pub use rmsprop::RmsPropHeld;
pub use sgd::SgdHeld;

/// The run file's `meta.hyperparameters` (and each group's): every hyperparameter of one
/// optimizer as Burn's config holds it, read back from its serde form; written as the
/// fields of the optimizer's own struct (each in its module, beside its builder).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Hyperparameters {
    Sgd(SgdHeld),
    Adam(AdamHeld),
    AdamW(AdamHeld),
    AdaGrad(AdaGradHeld),
    RmsProp(RmsPropHeld),
    Muon(MuonHeld),
}

/// What the run records per step besides parameters and gradients: the scalars Burn
/// computes in f32 inside its update (see adam_factors.rs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalars {
    /// SGD: nothing.
    None,
    /// Adam: `adam_factors` (combined factor and ε·sqrt(1 − β₂^t)).
    Adam {
        beta_1: f32,
        beta_2: f32,
        epsilon: f32,
    },
    /// AdamW: `burn_scalars.{bias_correction1, bias_correction2}`.
    AdamW { beta_1: f32, beta_2: f32 },
    /// AdaGrad, RMSProp and Muon: `burn_scalars` is empty; their per-step scalars are f64
    /// (AdaGrad's lr / (1 + (t − 1)·lr_decay), adagrad.rs:134) or constants.
    Empty,
}

/// What a builder is given: one optimizer with every hyperparameter, those left at Burn's
/// defaults (a `keep_defaults.burn`), and the experiment's clipping.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    pub optimizer: &'a Optimizer,
    pub kept: &'a [String],
    pub clip: Option<ClipGrad>,
}

impl Request<'_> {
    /// Whether `key` is left at Burn's default (not passed).
    pub fn keeps_default(&self, key: &str) -> bool {
        self.kept.iter().any(|k| k == key)
    }
}

/// A Burn optimizer built from a spec, with what the run file records about it.
pub struct Built {
    pub optim: ModuleOptimizer,
    /// `meta.hyperparameters`: every hyperparameter of the optimizer as Burn holds it.
    pub held: Hyperparameters,
    /// `meta.clip_grad`: the clipping Burn's config holds, or None.
    pub clip: Option<ClipGrad>,
    pub scalars: Scalars,
}

/// An f32 field of a Burn config as it is applied to an f64 tensor: exactly widened.
pub(crate) fn f32_held(x: f64) -> f64 {
    x as f32 as f64
}

/// An f32 field read back from a config's serde form (serde_json writes the f32's shortest
/// form, so widen it again).
pub(crate) fn stored_f32(stored: &Value, key: &str) -> f64 {
    f32_held(stored[key].as_f64().expect("f32 field"))
}

/// The penalty of an `Option<WeightDecayConfig>` field (f32), 0 when absent.
pub(crate) fn stored_penalty(stored: &Value) -> f64 {
    stored["weight_decay"]["penalty"]
        .as_f64()
        .map_or(0.0, f32_held)
}

/// Burn's clipping for the spec's `clip_grad`: a threshold stored as f32 (grad_clipping/base.rs:10–16).
pub(crate) fn clipping(clip: Option<ClipGrad>) -> Option<GradientClippingConfig> {
    clip.map(|clip| match clip {
        ClipGrad::Norm(x) => GradientClippingConfig::Norm(x as f32),
        ClipGrad::Value(x) => GradientClippingConfig::Value(x as f32),
    })
}

/// `meta.clip_grad` from a config's serde form (`{"Norm": x}` / `{"Value": x}` / null).
pub(crate) fn clip_held(stored: &Value) -> Option<ClipGrad> {
    let (kind, x) = stored.as_object().and_then(|o| o.iter().next())?;
    let x = f32_held(x.as_f64().expect("f32"));
    Some(match kind.as_str() {
        "Norm" => ClipGrad::Norm(x),
        "Value" => ClipGrad::Value(x),
        other => panic!("unknown gradient clipping {other}"),
    })
}

/// The Burn optimizer for `optimizer` and its hyperparameters, and the hyperparameters as
/// Burn holds them: the experiment's (`spec.optimizer`, `spec.burn_defaults`) or a parameter
/// group's, with the experiment's `clip` either way.
///
/// Burn stores betas, epsilon, alpha, every momentum factor, Muon's Newton–Schulz
/// coefficients and the weight-decay penalty as f32: the recorded values are those f32
/// values widened to f64. Hyperparameters listed in `kept` are not passed, so Burn's own
/// defaults apply. Clipping is attached through the config (`with_grad_clipping`), which
/// only `init()` applies; Muon's config has none, so it goes on the `ModuleOptimizer` that
/// `init()` returns (see muon.rs).
pub fn optimizer(optimizer: &Optimizer, kept: &[String], clip: Option<ClipGrad>) -> Built {
    let request = Request {
        optimizer,
        kept,
        clip,
    };
    match optimizer {
        Optimizer::Sgd { .. } => sgd::build(request),
        Optimizer::Adam { .. } => adam::build(request),
        Optimizer::AdamW { .. } => adamw::build(request),
        Optimizer::AdaGrad { .. } => adagrad::build(request),
        Optimizer::RmsProp { .. } => rmsprop::build(request),
        Optimizer::Muon { .. } => muon::build(request),
    }
}
