//! The learning-rate schedule, through Burn's own schedulers (`burn::lr_scheduler`).
//!
//! Burn's Learner calls `LrScheduler::step()` once per iteration, before the forward pass
//! and the optimizer step, and passes its result to that step: the first call gives the
//! initial lr (burn-train, not a dependency here: `learner/supervised/strategies/single/epoch.rs`
//! calls `learner.lr_step()`, then `learner.optimizer_step(..)` with the lr it set). The
//! trainer does the same.
//! Every schedule is computed in f64 (burn-optim 0.22.1 `src/lr_scheduler/*.rs`).

use burn::lr_scheduler::LrSchedulerConfig;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::lr_scheduler::exponential::ExponentialLrSchedulerConfig;
use burn::lr_scheduler::linear::LinearLrSchedulerConfig;
use burn::lr_scheduler::module_lr_scheduler::{ModuleLrScheduler, ModuleLrSchedulerConfig};
use burn::lr_scheduler::step::StepLrSchedulerConfig;
use serde_json::{Map, Value};

use crate::config::{Schedule, Spec};
use crate::runfile::ScheduleMeta;

/// Burn's config for the spec's schedule; the initial lr is the optimizer's `lr`.
pub fn config(spec: &Spec) -> LrSchedulerConfig {
    let lr = spec.lr();
    match spec.schedule {
        Schedule::Constant => LrSchedulerConfig::Constant(lr),
        Schedule::Linear {
            final_lr,
            num_steps,
        } => LinearLrSchedulerConfig::new(lr, final_lr, num_steps).into(),
        Schedule::Cosine { min_lr, num_steps } => {
            CosineAnnealingLrSchedulerConfig::new(lr, num_steps)
                .with_min_lr(min_lr)
                .into()
        }
        Schedule::Exponential { gamma } => ExponentialLrSchedulerConfig::new(lr, gamma).into(),
        Schedule::Step { step_size, gamma } => StepLrSchedulerConfig::new(lr, step_size)
            .with_gamma(gamma)
            .into(),
    }
}

fn kind(schedule: &Schedule) -> &'static str {
    match schedule {
        Schedule::Constant => "constant",
        Schedule::Linear { .. } => "linear",
        Schedule::Cosine { .. } => "cosine",
        Schedule::Exponential { .. } => "exponential",
        Schedule::Step { .. } => "step",
    }
}

/// The schedule as Burn's config holds it, read back through its serde form
/// (`{"Linear": {"initial_lr", "final_lr", "num_iters"}}`, `{"Constant": lr}`, …): `kind`
/// and Burn's own field names (its `num_iters` is the config's `num_steps`; a constant
/// schedule is a bare lr, recorded as `lr`). All are f64 or integers, held exactly.
pub fn held(spec: &Spec, config: &LrSchedulerConfig) -> ScheduleMeta {
    let stored = serde_json::to_value(config).expect("LrSchedulerConfig serialises");
    let (_, inner) = stored
        .as_object()
        .and_then(|o| o.iter().next())
        .expect("an externally tagged enum");
    let burn = match inner {
        Value::Object(fields) => fields.clone(),
        lr => Map::from_iter([("lr".to_string(), lr.clone())]),
    };
    ScheduleMeta {
        kind: kind(&spec.schedule),
        burn,
    }
}

/// Burn's scheduler for the spec, with `meta.schedule`; the values Burn refuses come back
/// as an error naming the config key, before any training step.
pub fn scheduler(spec: &Spec) -> Result<(ModuleLrScheduler, ScheduleMeta), String> {
    let config = config(spec);
    let held = held(spec, &config);
    let scheduler = ModuleLrSchedulerConfig::new(config)
        .init()
        .map_err(|reason| refusal(spec, &reason))?;
    Ok((scheduler, held))
}

/// Names the config key behind one of Burn's scheduler refusals (its messages in
/// `lr_scheduler/{linear,cosine,exponential,step}.rs`, `build()`).
fn refusal(spec: &Spec, reason: &str) -> String {
    let kind = kind(&spec.schedule);
    let at = |key: &str| format!("experiments.{}.{key}", spec.name);
    let key = [
        ("Final learning rate", "final_lr"),
        ("Minimum learning rate", "min_lr"),
        ("Number of iterations", "num_steps"),
        ("Gamma", "gamma"),
        ("Step size", "step_size"),
    ]
    .iter()
    .find(|(start, _)| reason.starts_with(start))
    .map(|(_, key)| *key);
    match key {
        Some(key) => format!(
            "{}: Burn's {kind} schedule refuses it: {reason}",
            at(&format!("schedule.{key}"))
        ),
        None if reason.starts_with("Initial learning rate") => format!(
            "{}: Burn's {kind} schedule refuses the initial lr ({} = {}): {reason}",
            at("schedule"),
            at("lr"),
            spec.lr()
        ),
        None => format!(
            "{}: Burn's {kind} schedule refuses it: {reason}",
            at("schedule")
        ),
    }
}
