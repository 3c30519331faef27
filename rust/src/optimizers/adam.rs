//! Adam: Burn's `Adam` (epsilon 1e-5 by default; its per-step factors in f32).

use burn::optim::AdamConfig;
use burn::optim::decay::WeightDecayConfig;
use serde::Serialize;

use super::{
    Built, Hyperparameters, Request, Scalars, clip_held, clipping, stored_f32, stored_penalty,
};
use crate::config::Optimizer;

/// Adam's and AdamW's `meta.hyperparameters` (the same fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdamHeld {
    /// The spec's lr: Burn's config holds none, its scheduler gives each step's.
    pub lr: f64,
    /// β₁, β₂ (f32, widened).
    pub betas: [f64; 2],
    /// ε (f32, widened).
    pub eps: f64,
    /// The weight decay (f32, widened): Adam's coupled L2 penalty (0 without), AdamW's
    /// decoupled decay factor.
    pub weight_decay: f64,
    pub amsgrad: bool,
}

pub(super) fn build(request: Request) -> Built {
    let Optimizer::Adam {
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad,
    } = *request.optimizer
    else {
        unreachable!("Adam hyperparameters")
    };
    let mut config = AdamConfig::new().with_grad_clipping(clipping(request.clip));
    if !request.keeps_default("betas") {
        config = config
            .with_beta_1(betas[0] as f32)
            .with_beta_2(betas[1] as f32);
    }
    if !request.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    // Coupled L2 decay, grad + penalty·p (decay.rs:46), only when asked for.
    if weight_decay != 0.0 && !request.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    if !request.keeps_default("amsgrad") {
        config = config.with_amsgrad(amsgrad);
    }
    // Read back what the config holds (defaults included) through its serde form.
    let stored = serde_json::to_value(&config).expect("AdamConfig serialises");
    let get = |k: &str| stored_f32(&stored, k) as f32;
    let (beta_1, beta_2, epsilon) = (get("beta_1"), get("beta_2"), get("epsilon"));
    let held = Hyperparameters::Adam(AdamHeld {
        lr,
        betas: [beta_1 as f64, beta_2 as f64],
        eps: epsilon as f64,
        weight_decay: stored_penalty(&stored),
        amsgrad: stored["amsgrad"].as_bool().expect("bool field"),
    });
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::Adam {
            beta_1,
            beta_2,
            epsilon,
        },
    }
}
