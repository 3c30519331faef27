//! The per-step factors of Burn's Adam update, computed exactly as
//! `burn-optim/src/optim/adam.rs` (0.22.1) computes them: in f32, from f32 betas.
//!
//! Burn's update is `p -= lr · m · combined_factor / (sqrt(v) + epsilon · bias_correction2_sqrt)`
//! with `bias_correction2_sqrt = sqrt(1 − β₂^t)` and `combined_factor = bias_correction2_sqrt / (1 − β₁^t)`.
//! PyTorch computes the same factors in Python floats (f64). The f32 rounding of these two
//! scalars is the whole Adam gap between the frameworks in f64 runs; the test
//! `tests/adam_factors.rs` checks them against a real Burn Adam step.

/// `(combined_factor, epsilon · bias_correction2_sqrt)` at step `time` (1-based).
pub fn burn_adam_factors(beta_1: f32, beta_2: f32, epsilon: f32, time: i32) -> (f32, f32) {
    let bias_correction2_sqrt = (1.0 - beta_2.powi(time)).sqrt();
    let combined_factor = bias_correction2_sqrt / (1.0 - beta_1.powi(time));
    (combined_factor, epsilon * bias_correction2_sqrt)
}
