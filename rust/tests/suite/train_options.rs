//! Short `train()` runs on the seed's dataset: each new optimizer, schedule kind and
//! clipping mode reads back what it was given (held values, lrs, meta), and the values Burn
//! refuses come back as one-line errors before training.
//!
//! Everything runs on an F64 device, so that the recorded lrs and updates can be checked to
//! f64 rounding.

use crate::common;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrSchedulerConfig;
use burn::tensor::Device;
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::schedule;
use serde_json::{Value, json};

const STEPS: usize = 6;

/// The process's F64 Flex device, with autodiff.
fn device() -> Device {
    common::f64_device().autodiff()
}

/// The seed's data and initial weights (cnn1d).
fn dataset() -> Dataset {
    common::dataset(common::cnn1d_arrays(common::CONV))
}

const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";
const ADAMW: &str = "optimizer: adamw, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.01, amsgrad: true";
const ADAGRAD: &str = "optimizer: adagrad, lr: 0.1, lr_decay: 0.01, eps: 1.0e-10, weight_decay: 0.001, initial_accumulator_value: 0";
const RMSPROP: &str = "optimizer: rmsprop, lr: 0.01, alpha: 0.99, eps: 1.0e-8, weight_decay: 0, momentum: 0.5, centered: true";

/// A spec for one experiment `e`: an optimizer's flow mapping plus extra keys.
fn spec(experiment: &str) -> Result<Spec, String> {
    config::parse(&common::resolved(experiment, STEPS, 4))
}

fn run(experiment: &str) -> Value {
    let spec = spec(experiment).unwrap();
    common::trained(&spec, &dataset(), &device(), None).unwrap()
}

fn widened(x: f64) -> f64 {
    x as f32 as f64
}

/// |a − b| within `ulps` units in the last place of b.
fn close(a: f64, b: f64, ulps: f64) -> bool {
    (a - b).abs() <= ulps * f64::EPSILON * b.abs()
}

#[test]
fn adamw_holds_what_it_was_given_and_records_its_bias_corrections() {
    let block = run(ADAMW);
    let meta = &block["meta"];
    assert_eq!(meta["optimizer"], "adamw");
    assert_eq!(
        meta["hyperparameters"],
        json!({"lr": 0.01, "betas": [widened(0.9), widened(0.999)], "eps": widened(1e-8),
            "weight_decay": widened(0.01), "amsgrad": true})
    );
    assert_eq!(widened(0.9), 0.8999999761581421);
    let scalars = &block["burn_scalars"];
    let (bc1, bc2) = (
        common::list(&scalars["bias_correction1"]),
        common::list(&scalars["bias_correction2"]),
    );
    assert_eq!((bc1.len(), bc2.len()), (STEPS, STEPS));
    // Step 1: 1 − β in f32, exact (Sterbenz); the f32 value 1 − 0.9f32 widened.
    assert_eq!(bc1[0], (1.0f32 - 0.9f32) as f64);
    assert_eq!(bc2[0], (1.0f32 - 0.999f32) as f64);
    assert!(block.get("adam_factors").is_none());
    assert_eq!(common::list(&block["lrs"]), vec![0.01; STEPS]);
}

#[test]
fn adamw_keeps_burns_default_weight_decay_when_asked() {
    let block = run(&format!(
        "{ADAMW}, keep_defaults: {{burn: [weight_decay, amsgrad]}}"
    ));
    let held = &block["meta"]["hyperparameters"];
    // Burn's AdamW decays by default (1e-4, f32), unlike its Adam; AMSGrad is off by default.
    assert_eq!(held["weight_decay"], json!(widened(1e-4)));
    assert_eq!(held["amsgrad"], json!(false));
    assert_eq!(
        block["meta"]["kept_defaults"],
        json!(["weight_decay", "amsgrad"])
    );
}

#[test]
fn adagrad_holds_what_it_was_given() {
    let block = run(ADAGRAD);
    assert_eq!(block["meta"]["optimizer"], "adagrad");
    assert_eq!(
        block["meta"]["hyperparameters"],
        // lr_decay is an f64 field; there is no accumulator field: Burn's sum starts at g².
        json!({"lr": 0.1, "lr_decay": 0.01, "eps": widened(1e-10),
            "weight_decay": widened(0.001), "initial_accumulator_value": 0.0})
    );
    assert_eq!(block["burn_scalars"], json!({}));
    let kept = run(&format!(
        "{ADAGRAD}, keep_defaults: {{burn: [eps, lr_decay]}}"
    ));
    let held = &kept["meta"]["hyperparameters"];
    assert_eq!(
        (held["eps"].clone(), held["lr_decay"].clone()),
        (json!(widened(1e-5)), json!(0.0))
    );
}

#[test]
fn rmsprop_holds_what_it_was_given_and_burns_momentum_default_is_not_pytorchs() {
    let block = run(RMSPROP);
    assert_eq!(block["meta"]["optimizer"], "rmsprop");
    assert_eq!(
        block["meta"]["hyperparameters"],
        json!({"lr": 0.01, "alpha": widened(0.99), "eps": widened(1e-8), "weight_decay": 0.0,
            "momentum": 0.5, "centered": true})
    );
    assert_eq!(block["burn_scalars"], json!({}));
    let kept = run(&format!(
        "{RMSPROP}, keep_defaults: {{burn: [momentum, eps, centered]}}"
    ));
    let held = &kept["meta"]["hyperparameters"];
    assert_eq!(held["momentum"], json!(0.8999999761581421));
    assert_eq!(held["eps"], json!(widened(1e-5)));
    assert_eq!(held["centered"], json!(false));
}

#[test]
fn adam_records_amsgrad_and_keeps_its_factors() {
    let adam = "optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0";
    let block = run(&format!("{adam}, amsgrad: true"));
    assert_eq!(block["meta"]["hyperparameters"]["amsgrad"], json!(true));
    assert_eq!(
        common::list(&block["adam_factors"]["combined_factor"]).len(),
        STEPS
    );
    assert!(block.get("burn_scalars").is_none());
    let plain = run(adam);
    assert_eq!(plain["meta"]["hyperparameters"]["amsgrad"], json!(false));
    assert_eq!(plain["adam_factors"], block["adam_factors"]);
}

/// SGD without momentum: each step moved every parameter by −lr·g with the recorded lr and
/// gradient, `clip` applied to each parameter tensor's gradient first.
fn check_sgd_steps(block: &Value, clip: impl Fn(&[f64]) -> Vec<f64>) {
    let lrs = common::list(&block["lrs"]);
    let traj = &block["trajectory"];
    let mut checked = 0;
    for name in ["conv.weight", "conv.bias", "fc.weight", "fc.bias"] {
        let params = traj["params"][name].as_array().unwrap();
        let grads = traj["grads"][name].as_array().unwrap();
        for step in 1..STEPS {
            let (before, after) = (common::list(&params[step - 1]), common::list(&params[step]));
            let g = clip(&common::list(&grads[step]));
            for i in 0..g.len() {
                let want = before[i] - lrs[step] * g[i];
                assert!(
                    (after[i] - want).abs() <= 4.0 * f64::EPSILON * before[i].abs().max(1e-3),
                    "{name}[{i}] step {}: {} vs {want}",
                    step + 1,
                    after[i]
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100);
}

/// The lrs Burn's own scheduler gives for the spec (the same config, a fresh scheduler).
fn burn_lrs(spec: &Spec) -> Vec<f64> {
    let mut scheduler = ModuleLrSchedulerConfig::new(schedule::config(spec))
        .init()
        .unwrap();
    (0..STEPS).map(|_| scheduler.step().base()).collect()
}

/// Runs SGD with `schedule`, checks the lrs against Burn's scheduler and the updates, and
/// returns (lrs, meta.schedule).
fn scheduled(schedule: &str) -> (Vec<f64>, Value) {
    let experiment = format!("{SGD}, schedule: {schedule}");
    let block = run(&experiment);
    let lrs = common::list(&block["lrs"]);
    assert_eq!(lrs, burn_lrs(&spec(&experiment).unwrap()), "{schedule}");
    check_sgd_steps(&block, |g| g.to_vec());
    (lrs, block["meta"]["schedule"].clone())
}

#[test]
fn constant_schedule_by_default() {
    let block = run(SGD);
    assert_eq!(common::list(&block["lrs"]), vec![0.1; STEPS]);
    assert_eq!(
        block["meta"]["schedule"],
        json!({"kind": "constant", "lr": 0.1})
    );
    let (lrs, _) = scheduled("{kind: constant}");
    assert_eq!(lrs, vec![0.1; STEPS]);
}

#[test]
fn linear_schedule_reaches_its_final_lr_and_stays() {
    let (lrs, held) = scheduled("{kind: linear, final_lr: 0.02, num_steps: 4}");
    assert_eq!(
        held,
        json!({"kind": "linear", "initial_lr": 0.1, "final_lr": 0.02, "num_iters": 4})
    );
    // By hand: 0.1, 0.08, 0.06, 0.04, then 0.02 from step 5 on.
    for (got, want) in lrs.iter().zip([0.1, 0.08, 0.06, 0.04, 0.02, 0.02]) {
        assert!(close(*got, want, 4.0), "{lrs:?}");
    }
    assert_eq!(lrs[4..], [0.02, 0.02]);
}

#[test]
fn cosine_schedule_is_half_way_at_half_its_steps_and_follows_the_curve_after() {
    let (lrs, held) = scheduled("{kind: cosine, min_lr: 0.02, num_steps: 4}");
    assert_eq!(
        held,
        json!({"kind": "cosine", "initial_lr": 0.1, "min_lr": 0.02, "num_iters": 4})
    );
    assert!(close(lrs[0], 0.1, 2.0), "{lrs:?}");
    assert!(close(lrs[2], (0.1 + 0.02) / 2.0, 4.0), "{lrs:?}");
    assert!(close(lrs[4], 0.02, 4.0), "{lrs:?}");
    // Past num_steps Burn keeps following the cosine: back up, no restart, no clamp.
    assert!(close(lrs[5], lrs[3], 4.0) && lrs[5] > lrs[4], "{lrs:?}");
}

#[test]
fn exponential_schedule_multiplies_by_gamma() {
    let (lrs, held) = scheduled("{kind: exponential, gamma: 0.9}");
    assert_eq!(
        held,
        json!({"kind": "exponential", "initial_lr": 0.1, "gamma": 0.9})
    );
    // Seeded with lr/γ, so step 1 is lr to an ulp; then lr·γ^k.
    for (k, lr) in lrs.iter().enumerate() {
        assert!(
            close(*lr, 0.1 * 0.9f64.powi(k as i32), 2.0 + k as f64),
            "{lrs:?}"
        );
    }
}

#[test]
fn step_schedule_drops_by_gamma_every_step_size_steps() {
    let (lrs, held) = scheduled("{kind: step, step_size: 2, gamma: 0.5}");
    assert_eq!(
        held,
        json!({"kind": "step", "initial_lr": 0.1, "step_size": 2, "gamma": 0.5})
    );
    assert_eq!(lrs, [0.1, 0.1, 0.05, 0.05, 0.025, 0.025]);
}

#[test]
fn clip_by_norm_scales_each_parameter_tensor_on_its_own() {
    let block = run(&format!("{SGD}, clip_grad: {{norm: 0.01}}"));
    let max_norm = widened(0.01);
    assert_eq!(block["meta"]["clip_grad"], json!({"norm": max_norm}));
    assert_eq!(block["meta"]["clip_scope"], "per parameter tensor");
    // Burn: g · min(1, (1 / (‖g‖ + min_positive)) · max), per tensor (grad_clipping/base.rs:70–87).
    check_sgd_steps(&block, |g| {
        let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
        let coef = ((1.0 / (norm + f64::MIN_POSITIVE)) * max_norm).min(1.0);
        g.iter().map(|x| x * coef).collect()
    });
    // The norm is small enough that some tensor is really clipped.
    let grads = &block["trajectory"]["grads"]["fc.weight"][1];
    assert!(
        common::list(grads)
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt()
            > max_norm
    );
}

#[test]
fn clip_by_value_clamps_each_element() {
    let block = run(&format!("{SGD}, clip_grad: {{value: 0.001}}"));
    let threshold = widened(0.001);
    assert_eq!(block["meta"]["clip_grad"], json!({"value": threshold}));
    check_sgd_steps(&block, |g| {
        g.iter().map(|x| x.clamp(-threshold, threshold)).collect()
    });
    assert!(
        common::list(&block["trajectory"]["grads"]["fc.bias"][1])
            .iter()
            .any(|x| x.abs() > threshold)
    );
}

#[test]
fn no_clipping_is_null() {
    let block = run(ADAMW);
    assert_eq!(block["meta"]["clip_grad"], Value::Null);
    assert_eq!(block["meta"]["clip_scope"], Value::Null);
    let clipped = run(&format!("{ADAMW}, clip_grad: {{norm: 1.0}}"));
    assert_eq!(clipped["meta"]["clip_grad"], json!({"norm": 1.0}));
}

#[test]
fn refuses_what_burns_schedulers_refuse_before_training() {
    let refuse = |experiment: String| {
        let spec = spec(&experiment).unwrap();
        let err = common::trained(&spec, &dataset(), &device(), None).unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        err
    };
    let big_lr = SGD.replace("lr: 0.1", "lr: 2");
    for kind in [
        "{kind: linear, final_lr: 0.01, num_steps: 4}",
        "{kind: cosine, min_lr: 0, num_steps: 4}",
        "{kind: exponential, gamma: 0.5}",
    ] {
        let err = refuse(format!("{big_lr}, schedule: {kind}"));
        assert!(
            err.starts_with("experiments.e.schedule: Burn's ")
                && err.contains("refuses the initial lr (experiments.e.lr = 2)")
                && err.ends_with("Initial learning rate must be greater than 0 and at most 1"),
            "{err}"
        );
    }
    // The step and constant schedules take any lr.
    for kind in ["{kind: step, step_size: 2, gamma: 0.5}", "{kind: constant}"] {
        let spec = spec(&format!("{big_lr}, schedule: {kind}")).unwrap();
        assert!(common::trained(&spec, &dataset(), &device(), None).is_ok());
    }
    for (schedule, key) in [
        ("{kind: linear, final_lr: 1.5, num_steps: 4}", "final_lr"),
        ("{kind: linear, final_lr: 0.01, num_steps: 0}", "num_steps"),
        ("{kind: cosine, min_lr: 0.5, num_steps: 4}", "min_lr"),
        ("{kind: cosine, min_lr: 0, num_steps: 0}", "num_steps"),
        ("{kind: exponential, gamma: 1.5}", "gamma"),
        ("{kind: exponential, gamma: 0}", "gamma"),
        ("{kind: step, step_size: 0, gamma: 0.5}", "step_size"),
    ] {
        let err = refuse(format!("{SGD}, schedule: {schedule}"));
        assert!(
            err.starts_with(&format!("experiments.e.schedule.{key}: Burn's ")),
            "{schedule}: {err}"
        );
    }
}
