//! Proof that the factors the trainer records are the ones Burn's Adam really applies.
//!
//! One real Burn Adam step after another on a probe tensor, on an F64 device (so that the
//! only f32 values are Burn's own scalars). The update predicted from the recorded factors
//! must match Burn's result to the last bits; the same prediction with the factors computed
//! in f64 (PyTorch's way) must not, or the test could not tell the two apart.

#[path = "suite/common/mod.rs"]
mod common;
use burn::optim::{AdamConfig, Optimizer};
use burn::tensor::{Tensor, TensorData};
use common::f64_device;
use parity_train::adam_factors::burn_adam_factors;

// Gradients of very different sizes: for the tiny ones sqrt(v) is far below
// epsilon · bias_correction2_sqrt, so the second factor decides the update.
const GRADS: [f64; 5] = [1.0, -0.37, 1e-3, 1e-9, -2.5e-10];
const LR: f64 = 0.01;
const STEPS: i32 = 8;

/// Parameters after each step: Burn's real ones and the predicted ones for a factor rule.
fn run(factors: impl Fn(i32) -> (f64, f64)) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let (beta_1, beta_2, epsilon) = (0.9f32, 0.999f32, 1e-8f32);
    let device = f64_device();
    let adam = AdamConfig::new()
        .with_beta_1(beta_1)
        .with_beta_2(beta_2)
        .with_epsilon(epsilon)
        .build();
    let grad: Tensor<1> =
        Tensor::from_data(TensorData::new(GRADS.to_vec(), [GRADS.len()]), &device);
    let mut param: Tensor<1> = Tensor::zeros([GRADS.len()], &device);
    let mut state = None;
    let (mut m, mut v, mut p) = ([0.0f64; 5], [0.0f64; 5], [0.0f64; 5]);
    let (mut real, mut predicted) = (Vec::new(), Vec::new());
    for t in 1..=STEPS {
        let (next, next_state) = adam.step(LR, param, grad.clone(), state);
        (param, state) = (next, next_state);
        real.push(
            param
                .clone()
                .into_data()
                .convert::<f64>()
                .try_to_vec::<f64>()
                .unwrap(),
        );
        let (c, e) = factors(t);
        for i in 0..GRADS.len() {
            let g = GRADS[i];
            // Burn's moment update: the betas and (1 − beta) are f32 scalars.
            let (b1, b2) = (beta_1 as f64, beta_2 as f64);
            let (one_b1, one_b2) = ((1.0 - beta_1) as f64, (1.0 - beta_2) as f64);
            m[i] = if t == 1 {
                g * one_b1
            } else {
                m[i] * b1 + g * one_b1
            };
            v[i] = if t == 1 {
                g * g * one_b2
            } else {
                v[i] * b2 + g * g * one_b2
            };
            p[i] -= (m[i] * c / (v[i].sqrt() + e)) * LR;
        }
        predicted.push(p.to_vec());
    }
    (real, predicted)
}

fn worst_relative_gap(real: &[Vec<f64>], predicted: &[Vec<f64>]) -> f64 {
    real.iter()
        .flatten()
        .zip(predicted.iter().flatten())
        .map(|(a, b)| ((a - b) / a).abs())
        .fold(0.0, f64::max)
}

#[test]
fn recorded_factors_are_the_ones_burn_applies() {
    let (real, predicted) = run(|t| {
        let (c, e) = burn_adam_factors(0.9, 0.999, 1e-8, t);
        (c as f64, e as f64)
    });
    let gap = worst_relative_gap(&real, &predicted);
    assert!(
        gap < 1e-14,
        "Burn's real Adam steps differ from the recorded factors by {gap:e}"
    );

    // The same prediction with factors computed in f64 must be visibly off.
    let (real, predicted_f64) = run(|t| {
        let (b1, b2, eps) = (0.9f32 as f64, 0.999f32 as f64, 1e-8f32 as f64);
        let bc2 = (1.0 - b2.powi(t)).sqrt();
        (bc2 / (1.0 - b1.powi(t)), eps * bc2)
    });
    let gap_f64 = worst_relative_gap(&real, &predicted_f64);
    eprintln!("recorded factors: worst relative gap {gap:e}; f64 factors: {gap_f64:e}");
    assert!(
        gap_f64 > 1e-9,
        "f64 factors should not reproduce Burn (gap {gap_f64:e})"
    );
}
