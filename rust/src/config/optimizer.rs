//! The spec's `optimizer` and its `hyperparameters`, read into one typed value per
//! optimizer.

use serde::Deserialize;

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
    pub(super) fn tagged(
        name: &str,
        hyperparameters: serde_json::Value,
    ) -> Result<Optimizer, String> {
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
