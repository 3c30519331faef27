//! Muon: Burn's `Muon` (burn-optim muon.rs), for 2-D parameters only (it asserts D == 2,
//! muon.rs:391). Each step: SGD momentum without dampening, Newton–Schulz orthogonalisation,
//! then `p·(1 − lr·wd) − adjusted_lr·update` (muon.rs:397–419). The adjusted lr is
//! `lr·ratio(shape)` of the shape Burn holds (muon.rs:66–85): for a Linear weight that is
//! [in, out], PyTorch's transpose.

use burn::grad_clipping::GradientClipping;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdjustLrFn, MuonConfig};
use serde::Serialize;

use super::{
    Built, Hyperparameters, Request, Scalars, clipping, f32_held, stored_f32, stored_penalty,
};
use crate::config::{AdjustLr, ClipGrad, Optimizer};

/// Muon's `meta.hyperparameters`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MuonHeld {
    /// The spec's lr: Burn's config holds none, its scheduler gives each step's.
    pub lr: f64,
    /// The decoupled decay penalty (f32, widened); 0 without.
    pub weight_decay: f64,
    /// Burn's Momentum keeps the momentum factor as f32 (momentum.rs:32, 41), widened.
    pub momentum: f64,
    pub nesterov: bool,
    /// Newton–Schulz's (a, b, c) (f32, widened).
    pub ns_coefficients: Vec<f64>,
    /// ε (f32, widened).
    pub eps: f64,
    pub ns_steps: usize,
    /// `original` or `match_rms_adamw`.
    pub adjust_lr_fn: &'static str,
}

pub(super) fn build(request: Request) -> Built {
    let Optimizer::Muon {
        lr,
        weight_decay,
        momentum,
        nesterov,
        ns_coefficients: [a, b, c],
        eps,
        ns_steps,
        adjust_lr_fn,
    } = *request.optimizer
    else {
        unreachable!("Muon hyperparameters")
    };
    let mut config = MuonConfig::new();
    // Decoupled decay with the unadjusted lr, after orthogonalisation (muon.rs:406–413).
    if weight_decay != 0.0 && !request.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    // Burn's Muon default is MomentumConfig { 0.95, dampening 0, nesterov } (muon.rs:136);
    // the config's fields are private, so its default is read back through its serde form.
    // Muon has no dampening: it stays 0.
    let default: MomentumConfig = serde_json::from_value(
        serde_json::to_value(&config).expect("MuonConfig serialises")["momentum"].clone(),
    )
    .expect("a MomentumConfig");
    let mut m = default;
    if !request.keeps_default("momentum") {
        m.momentum = momentum;
    }
    if !request.keeps_default("nesterov") {
        m.nesterov = nesterov;
    }
    config = config.with_momentum(m);
    if !request.keeps_default("ns_coefficients") {
        config = config.with_ns_coefficients((a as f32, b as f32, c as f32));
    }
    if !request.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    if !request.keeps_default("ns_steps") {
        config = config.with_ns_steps(ns_steps);
    }
    if !request.keeps_default("adjust_lr_fn") {
        config = config.with_adjust_lr_fn(match adjust_lr_fn {
            AdjustLr::Original => AdjustLrFn::Original,
            AdjustLr::MatchRmsAdamW => AdjustLrFn::MatchRmsAdamW,
        });
    }
    // Read back what the config holds (defaults included) through its serde form.
    let stored = serde_json::to_value(&config).expect("MuonConfig serialises");
    let m = &stored["momentum"];
    let coefficients: Vec<f64> = stored["ns_coefficients"]
        .as_array()
        .expect("an (f32, f32, f32) field")
        .iter()
        .map(|x| f32_held(x.as_f64().expect("f32")))
        .collect();
    let adjust = match serde_json::from_value(stored["adjust_lr_fn"].clone()) {
        Ok(AdjustLrFn::Original) => AdjustLr::Original,
        Ok(AdjustLrFn::MatchRmsAdamW) => AdjustLr::MatchRmsAdamW,
        Err(e) => panic!("AdjustLrFn field: {e}"),
    };
    let held = Hyperparameters::Muon(MuonHeld {
        lr,
        weight_decay: stored_penalty(&stored),
        momentum: f32_held(m["momentum"].as_f64().expect("f64 field")),
        nesterov: m["nesterov"].as_bool().expect("bool field"),
        ns_coefficients: coefficients,
        eps: stored_f32(&stored, "epsilon"),
        ns_steps: stored["ns_steps"].as_u64().expect("usize field") as usize,
        adjust_lr_fn: adjust.name(),
    });
    // MuonConfig has no clipping field: the clipping goes on the ModuleOptimizer `init()`
    // returns, as the other configs' `init()` attach theirs (e.g. adamw.rs:140–143), and is
    // read back from it.
    let mut optim = config.init();
    if let Some(clip) = clipping(request.clip) {
        optim = optim.with_grad_clipping(clip.init());
    }
    let clip = optim.grad_clipping().map(|clip| match clip {
        GradientClipping::Norm(x) => ClipGrad::Norm(*x as f64),
        GradientClipping::Value(x) => ClipGrad::Value(*x as f64),
    });
    Built {
        optim,
        held,
        clip,
        scalars: Scalars::Empty,
    }
}
