//! AdamW: Burn's `AdamW` (decoupled decay, 1e-4 by default).

use super::{AdamHeld, Built, Hyperparameters, Request, Scalars, clip_held, clipping, stored_f32};
use crate::config::Optimizer;
use burn::optim::AdamWConfig;

pub(super) fn build(request: Request) -> Built {
    let Optimizer::AdamW {
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad,
    } = *request.optimizer
    else {
        unreachable!("AdamW hyperparameters")
    };
    let mut config = AdamWConfig::new().with_grad_clipping(clipping(request.clip));
    if !request.keeps_default("betas") {
        config = config
            .with_beta_1(betas[0] as f32)
            .with_beta_2(betas[1] as f32);
    }
    if !request.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    // Decoupled decay p·(1 − lr·wd), a plain f32 field (default 1e-4), passed even when 0.
    if !request.keeps_default("weight_decay") {
        config = config.with_weight_decay(weight_decay as f32);
    }
    if !request.keeps_default("amsgrad") {
        config = config.with_amsgrad(amsgrad);
    }
    let stored = serde_json::to_value(&config).expect("AdamWConfig serialises");
    let get = |k: &str| stored_f32(&stored, k) as f32;
    let (beta_1, beta_2) = (get("beta_1"), get("beta_2"));
    let held = Hyperparameters::AdamW(AdamHeld {
        lr,
        betas: [beta_1 as f64, beta_2 as f64],
        eps: stored_f32(&stored, "epsilon"),
        weight_decay: stored_f32(&stored, "weight_decay"),
        amsgrad: stored["amsgrad"].as_bool().expect("bool field"),
    });
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::AdamW { beta_1, beta_2 },
    }
}
