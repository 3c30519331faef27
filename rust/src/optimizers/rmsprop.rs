//! RMSProp: Burn's `RmsProp` (momentum 0.9 by default).

use burn::optim::RmsPropConfig;
use burn::optim::decay::WeightDecayConfig;
use serde::Serialize;

use super::{
    Built, Hyperparameters, Request, Scalars, clip_held, clipping, stored_f32, stored_penalty,
};
use crate::config::Optimizer;

/// RMSProp's `meta.hyperparameters`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RmsPropHeld {
    /// The spec's lr: Burn's config holds none, its scheduler gives each step's.
    pub lr: f64,
    /// The smoothing constant (f32, widened).
    pub alpha: f64,
    /// ε (f32, widened).
    pub eps: f64,
    /// The coupled L2 penalty (f32, widened); 0 without.
    pub weight_decay: f64,
    /// f32, widened (Burn's default 0.9).
    pub momentum: f64,
    pub centered: bool,
}

pub(super) fn build(request: Request) -> Built {
    let Optimizer::RmsProp {
        lr,
        alpha,
        eps,
        weight_decay,
        momentum,
        centered,
    } = *request.optimizer
    else {
        unreachable!("RMSProp hyperparameters")
    };
    let mut config = RmsPropConfig::new().with_grad_clipping(clipping(request.clip));
    if !request.keeps_default("alpha") {
        config = config.with_alpha(alpha as f32);
    }
    if !request.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    // Burn's default momentum is 0.9 (PyTorch: 0): passed even when 0.
    if !request.keeps_default("momentum") {
        config = config.with_momentum(momentum as f32);
    }
    if !request.keeps_default("centered") {
        config = config.with_centered(centered);
    }
    if weight_decay != 0.0 && !request.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    let stored = serde_json::to_value(&config).expect("RmsPropConfig serialises");
    let held = Hyperparameters::RmsProp(RmsPropHeld {
        lr,
        alpha: stored_f32(&stored, "alpha"),
        eps: stored_f32(&stored, "epsilon"),
        weight_decay: stored_penalty(&stored),
        momentum: stored_f32(&stored, "momentum"),
        centered: stored["centered"].as_bool().expect("bool field"),
    });
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::Empty,
    }
}
