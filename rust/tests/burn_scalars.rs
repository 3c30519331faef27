//! Proof that the `burn_scalars` the trainer records are the ones Burn's updates apply, and
//! that AdaGrad and RMSProp need none: real Burn steps on a probe tensor, on an F64 device
//! (so that the only f32 values are Burn's own scalars), against a prediction in f64.
//!
//! AdamW: predicted from the recorded f32 bias corrections it matches Burn to the last bits;
//! with the corrections in f64 (PyTorch's way) it must not, or the test could not tell the
//! two apart. AdaGrad and RMSProp: predicted from the held (f32-widened) hyperparameters and
//! the f64 lr alone, they match Burn to the last bits.

#[path = "suite/common/mod.rs"]
mod common;
use burn::optim::{AdaGradConfig, AdamWConfig, Optimizer, RmsPropConfig};
use burn::tensor::{Tensor, TensorData};
use common::f64_device;
use parity_train::adam_factors::burn_adamw_bias_corrections;

// Gradients of very different sizes, scaled from step to step (see `grad_at`).
const GRADS: [f64; 5] = [1.0, -0.37, 1e-3, 1e-9, -2.5e-10];
const START: [f64; 5] = [0.5, -0.25, 0.125, 2.0, -1.0];
const LR: f64 = 0.01;
const STEPS: i32 = 8;

fn grad_at(t: i32) -> [f64; 5] {
    // From step 5 on the gradients nearly vanish: v shrinks, and AMSGrad keeps its max.
    let scale = if t >= 5 { 1e-3 } else { 1.0 + t as f64 / 8.0 };
    GRADS.map(|g| g * scale)
}

fn tensor(values: &[f64]) -> Tensor<1> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [values.len()]),
        &f64_device(),
    )
}

fn to_vec(t: &Tensor<1>) -> Vec<f64> {
    t.clone()
        .into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .unwrap()
}

/// Parameters after each of Burn's real steps, and after each predicted one: `predict`
/// takes (step, gradient, parameters) and updates the parameters in place.
fn run<O: Optimizer>(
    optim: O,
    mut predict: impl FnMut(i32, &[f64; 5], &mut [f64; 5]),
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let mut param = tensor(&START);
    let mut state = None;
    let mut p = START;
    let (mut real, mut predicted) = (Vec::new(), Vec::new());
    for t in 1..=STEPS {
        let g = grad_at(t);
        let (next, next_state) = optim.step(LR, param, tensor(&g), state);
        (param, state) = (next, next_state);
        real.push(to_vec(&param));
        predict(t, &g, &mut p);
        predicted.push(p.to_vec());
    }
    (real, predicted)
}

fn worst_relative_gap(real: &[Vec<f64>], predicted: &[Vec<f64>]) -> f64 {
    real.iter()
        .flatten()
        .zip(predicted.iter().flatten())
        .map(|(a, b)| common::gap_or_infinite(((a - b) / a).abs()))
        .fold(0.0, f64::max)
}

const BETA_1: f32 = 0.9;
const BETA_2: f32 = 0.999;
const EPSILON: f32 = 1e-8;
const WEIGHT_DECAY: f32 = 0.01;

/// Real AdamW steps and the prediction from a bias-correction rule (step → (bc1, bc2)).
fn adamw(amsgrad: bool, corrections: impl Fn(i32) -> (f64, f64)) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let optim = AdamWConfig::new()
        .with_beta_1(BETA_1)
        .with_beta_2(BETA_2)
        .with_epsilon(EPSILON)
        .with_weight_decay(WEIGHT_DECAY)
        .with_amsgrad(amsgrad)
        .build();
    let (b1, b2) = (BETA_1 as f64, BETA_2 as f64);
    // Burn's (1 − β) are f32 subtractions, exact for 0.5 ≤ β ≤ 1 (Sterbenz).
    let (one_b1, one_b2) = ((1.0 - BETA_1) as f64, (1.0 - BETA_2) as f64);
    let (mut m, mut v, mut v_max) = ([0.0f64; 5], [0.0f64; 5], [0.0f64; 5]);
    run(optim, |t, g, p| {
        let (bc1, bc2) = corrections(t);
        for i in 0..5 {
            m[i] = if t == 1 {
                g[i] * one_b1
            } else {
                m[i] * b1 + g[i] * one_b1
            };
            let g2 = g[i] * g[i];
            v[i] = if t == 1 {
                g2 * one_b2
            } else {
                v[i] * b2 + g2 * one_b2
            };
            v_max[i] = if t == 1 { v[i] } else { v_max[i].max(v[i]) };
            let v_used = if amsgrad { v_max[i] } else { v[i] };
            let delta = (m[i] / bc1) / ((v_used / bc2).sqrt() + EPSILON as f64);
            // Decoupled decay with lr·wd in f64 (adamw.rs:83, :97), then the step (:100).
            p[i] = p[i] * (1.0 - LR * WEIGHT_DECAY as f64) - delta * LR;
        }
    })
}

#[test]
fn recorded_adamw_bias_corrections_are_the_ones_burn_applies() {
    let burn = |t| {
        let (bc1, bc2) = burn_adamw_bias_corrections(BETA_1, BETA_2, t);
        (bc1 as f64, bc2 as f64)
    };
    // The gradients shrink at step 5, so AMSGrad's running max changes the steps.
    let (plain, _) = adamw(false, burn);
    let (ams, _) = adamw(true, burn);
    assert!(
        worst_relative_gap(&plain, &ams) > 1e-6,
        "AMSGrad should matter here"
    );
    for amsgrad in [false, true] {
        let (real, predicted) = adamw(amsgrad, burn);
        let gap = worst_relative_gap(&real, &predicted);
        assert!(
            gap < 1e-14,
            "amsgrad={amsgrad}: Burn's real AdamW steps differ from the recorded corrections by {gap:e}"
        );
        // The same prediction with corrections computed in f64 must be visibly off.
        let (real, predicted_f64) = adamw(amsgrad, |t| {
            let (b1, b2) = (BETA_1 as f64, BETA_2 as f64);
            (1.0 - b1.powi(t), 1.0 - b2.powi(t))
        });
        let gap_f64 = worst_relative_gap(&real, &predicted_f64);
        eprintln!("AdamW amsgrad={amsgrad}: recorded {gap:e}; f64 corrections {gap_f64:e}");
        assert!(
            gap_f64 > 1e-9,
            "f64 corrections should not reproduce Burn ({gap_f64:e})"
        );
    }
}

#[test]
fn adagrad_needs_no_recorded_scalars() {
    let (lr_decay, epsilon, penalty) = (0.05f64, 1e-6f32, 0.01f32);
    let optim = AdaGradConfig::new()
        .with_lr_decay(lr_decay)
        .with_epsilon(epsilon)
        .with_weight_decay(Some(burn::optim::decay::WeightDecayConfig::new(penalty)))
        .build();
    let mut sum = [0.0f64; 5];
    let (real, predicted) = run(optim, |t, g, p| {
        // The decayed lr is f64 (adagrad.rs:134); ε and the penalty are f32 widened.
        let clr = LR / (1.0 + (t as f64 - 1.0) * lr_decay);
        for i in 0..5 {
            let g = p[i] * penalty as f64 + g[i];
            sum[i] = if t == 1 { g * g } else { sum[i] + g * g };
            p[i] -= g / (sum[i].sqrt() + epsilon as f64) * clr;
        }
    });
    let gap = worst_relative_gap(&real, &predicted);
    assert!(gap < 1e-14, "AdaGrad: prediction off by {gap:e}");
}

#[test]
fn rmsprop_needs_no_recorded_scalars() {
    for (momentum, centered) in [(0.0f32, false), (0.9, true), (0.5, false)] {
        let (alpha, epsilon) = (0.99f32, 1e-8f32);
        let optim = RmsPropConfig::new()
            .with_alpha(alpha)
            .with_epsilon(epsilon)
            .with_momentum(momentum)
            .with_centered(centered)
            .build();
        let (a, one_a) = (alpha as f64, (1.0 - alpha) as f64);
        let (mut sq, mut avg_g, mut buf) = ([0.0f64; 5], [0.0f64; 5], [0.0f64; 5]);
        let (real, predicted) = run(optim, |t, g, p| {
            for i in 0..5 {
                sq[i] = if t == 1 {
                    g[i] * g[i] * one_a
                } else {
                    sq[i] * a + g[i] * g[i] * one_a
                };
                avg_g[i] = if t == 1 {
                    g[i] * one_a
                } else {
                    avg_g[i] * a + g[i] * one_a
                };
                let avg = if centered {
                    sq[i] - avg_g[i] * avg_g[i]
                } else {
                    sq[i]
                };
                let step = g[i] / (avg.sqrt() + epsilon as f64);
                // Momentum only when > 0 (rmsprop.rs:280); the first buffer is the step itself.
                let step = if momentum > 0.0 {
                    buf[i] = if t == 1 {
                        step
                    } else {
                        buf[i] * momentum as f64 + step
                    };
                    buf[i]
                } else {
                    step
                };
                p[i] -= step * LR;
            }
        });
        let gap = worst_relative_gap(&real, &predicted);
        assert!(
            gap < 1e-14,
            "RMSProp momentum={momentum} centered={centered}: prediction off by {gap:e}"
        );
    }
}
