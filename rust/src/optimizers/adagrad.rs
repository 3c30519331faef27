//! AdaGrad: Burn's `AdaGrad` (no initial accumulator value: its sum starts at 0).

use burn::optim::AdaGradConfig;
use burn::optim::decay::WeightDecayConfig;
use serde::Serialize;

use super::{
    Built, Hyperparameters, Request, Scalars, clip_held, clipping, stored_f32, stored_penalty,
};
use crate::config::Optimizer;

/// AdaGrad's `meta.hyperparameters`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdaGradHeld {
    /// The spec's lr: Burn's config holds none, its scheduler gives each step's.
    pub lr: f64,
    /// An f64 field: the clr lr / (1 + (t − 1)·lr_decay) is f64 (adagrad.rs:134).
    pub lr_decay: f64,
    /// ε (f32, widened).
    pub eps: f64,
    /// The coupled L2 penalty (f32, widened); 0 without.
    pub weight_decay: f64,
    /// Always 0: Burn has no such field, its sum of squares starts at the first g²
    /// (adagrad.rs:131).
    pub initial_accumulator_value: f64,
}

pub(super) fn build(request: Request) -> Built {
    let Optimizer::AdaGrad {
        lr,
        lr_decay,
        eps,
        weight_decay,
        ..
    } = *request.optimizer
    else {
        unreachable!("AdaGrad hyperparameters")
    };
    let mut config = AdaGradConfig::new().with_grad_clipping(clipping(request.clip));
    if !request.keeps_default("lr_decay") {
        config = config.with_lr_decay(lr_decay);
    }
    if !request.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    if weight_decay != 0.0 && !request.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    let stored = serde_json::to_value(&config).expect("AdaGradConfig serialises");
    let held = Hyperparameters::AdaGrad(AdaGradHeld {
        lr,
        lr_decay: stored["lr_decay"].as_f64().expect("f64 field"),
        eps: stored_f32(&stored, "epsilon"),
        weight_decay: stored_penalty(&stored),
        initial_accumulator_value: 0.0,
    });
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::Empty,
    }
}
