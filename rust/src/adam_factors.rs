//! The per-step factors of Burn's Adam and AdamW updates, computed exactly as
//! `burn-optim/src/optim/adam.rs` and `adamw.rs` (0.22.1) compute them: in f32, from f32 betas.
//!
//! Burn's Adam update is `p -= lr · m · combined_factor / (sqrt(v) + epsilon · bias_correction2_sqrt)`
//! with `bias_correction2_sqrt = sqrt(1 − β₂^t)` and `combined_factor = bias_correction2_sqrt / (1 − β₁^t)`.
//! PyTorch computes the same factors in Python floats (f64). The f32 rounding of these two
//! scalars is the whole Adam gap between the frameworks in f64 runs; the test
//! `tests/adam_factors.rs` checks them against a real Burn Adam step.

/// `(combined_factor, epsilon · bias_correction2_sqrt)` at step `time` (1-based), as adam.rs:195–196
/// and :208 compute them.
pub fn burn_adam_factors(beta_1: f32, beta_2: f32, epsilon: f32, time: i32) -> (f32, f32) {
    let bias_correction2_sqrt = (1.0 - beta_2.powi(time)).sqrt();
    let combined_factor = bias_correction2_sqrt / (1.0 - beta_1.powi(time));
    (combined_factor, epsilon * bias_correction2_sqrt)
}

/// `(bias_correction1, bias_correction2) = (1 − β₁^t, 1 − β₂^t)` at step `time` (1-based),
/// exactly as `burn-optim/src/optim/adamw.rs` (0.22.1) computes them: in f32, from f32 betas
/// (`1f32 - self.beta_1.powi(time)`, adamw.rs:212; `1f32 - self.beta_2.powi(time)`, :220).
///
/// Burn's AdamW update is `p·(1 − lr·wd) − lr · (m / bias_correction1) / (sqrt(v / bias_correction2) + ε)`
/// with `lr·wd` in f64 (adamw.rs:83, :97, :100); PyTorch computes both corrections in Python
/// floats (f64). The test `tests/burn_scalars.rs` checks them against real Burn AdamW steps.
pub fn burn_adamw_bias_corrections(beta_1: f32, beta_2: f32, time: i32) -> (f32, f32) {
    (1f32 - beta_1.powi(time), 1f32 - beta_2.powi(time))
}
