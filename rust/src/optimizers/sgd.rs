//! SGD: Burn's `Sgd`, with a `MomentumConfig` when momentum is on (dampening 0.1 by default).

use burn::optim::SgdConfig;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use serde::Serialize;

use super::{
    Built, Hyperparameters, Request, Scalars, clip_held, clipping, f32_held, stored_penalty,
};
use crate::config::Optimizer;

/// SGD's `meta.hyperparameters`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SgdHeld {
    /// The spec's lr: Burn's config holds none, its scheduler gives each step's.
    pub lr: f64,
    /// Burn's Momentum keeps the momentum factor as f32 (widened); 0 without momentum.
    pub momentum: f64,
    /// An f64 in Burn's Momentum; 0 without momentum.
    pub dampening: f64,
    /// False without momentum.
    pub nesterov: bool,
    /// The weight-decay penalty (f32, widened); 0 without.
    pub weight_decay: f64,
}

pub(super) fn build(request: Request) -> Built {
    let Optimizer::Sgd {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
    } = *request.optimizer
    else {
        unreachable!("SGD hyperparameters")
    };
    let mut config = SgdConfig::new().with_gradient_clipping(clipping(request.clip));
    if weight_decay != 0.0 && !request.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    // Burn's SGD has momentum only when given a MomentumConfig (default dampening 0.1).
    if momentum != 0.0 && !request.keeps_default("momentum") {
        let mut m = MomentumConfig::new().with_momentum(momentum);
        if !request.keeps_default("dampening") {
            m = m.with_dampening(dampening);
        }
        if !request.keeps_default("nesterov") {
            m = m.with_nesterov(nesterov);
        }
        config = config.with_momentum(Some(m));
    }
    // Read back what the config holds (defaults included) through its serde form.
    let stored = serde_json::to_value(&config).expect("SgdConfig serialises");
    let m = &stored["momentum"];
    let held = Hyperparameters::Sgd(SgdHeld {
        lr,
        // Burn's Momentum keeps the momentum factor as f32, the dampening as f64.
        momentum: m["momentum"].as_f64().map_or(0.0, f32_held),
        dampening: m["dampening"].as_f64().unwrap_or(0.0),
        nesterov: m["nesterov"].as_bool().unwrap_or(false),
        weight_decay: stored_penalty(&stored),
    });
    let clip = clip_held(&stored["gradient_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::None,
    }
}
