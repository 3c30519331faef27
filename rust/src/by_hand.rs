//! What a porter writes by hand where Burn 0.22.1 has no setting for PyTorch's behaviour (the
//! spec's `burn_fixes`, which the proving runs set: config/proving.py on the Python side):
//!
//! - `clip_by_global_norm`: Burn's `GradientClippingConfig::Norm` clips each parameter tensor
//!   by its own norm (module_optimizer.rs:453); PyTorch's `clip_grad_norm_` scales every
//!   gradient by one factor from the norm of all of them. The fix attaches no clipping to
//!   Burn's optimizer and scales the gradients itself before its step, as PyTorch does:
//!   `coef = min(1, max / (‖g‖ + 1e-6))`, ‖g‖ = sqrt(Σ over tensors of Σ g²), in the
//!   run's dtype.
//! - `muon_lr_per_parameter`: Burn's Muon scales the lr by a factor of the shape of each
//!   tensor it holds (a Linear weight is [in, out], a packed one several blocks), PyTorch's
//!   by the shape it holds. The fix gives each Muon tensor of Burn's the lr that makes Burn's
//!   lr × factor PyTorch's, through Burn's own per-parameter lrs (`ModuleLrScheduler` with a
//!   `ParamGroup` per tensor). Burn's Muon also decays with that lr (muon.rs:410), so with a
//!   weight decay the decay moves by the same scale: the fix is exact without one.
//! - `smoothed_targets_in_dtype`: Burn's `CrossEntropyLossConfig::with_smoothing` holds ε as
//!   an f32 and weighs its targets with f32 roundings of 1 − ε and ε/C, which do not add up
//!   to 1 (loss.rs); the fix builds the targets one_hot·(1 − ε) + ε/C in the run's dtype and
//!   takes −mean(Σ log_softmax(logits)·targets) itself ([`smoothed_cross_entropy`]).
//! - `pytorch_schedule`: Burn's schedulers compute linear, cosine and step schedules in
//!   closed form and seed the exponential one with initial/γ; PyTorch's scale the previous
//!   lr, recursively, so the two sequences part by ulps. The fix is PyTorch's recursion
//!   written as a Burn `LrScheduler` ([`TorchSchedule`]), whose lr of each step goes to Burn's
//!   `step(lr, …)` as a scheduler's does.

use std::collections::HashMap;

use burn::lr_scheduler::module_lr_scheduler::{ModuleLearningRate, ModuleLrScheduler};
use burn::lr_scheduler::{LrScheduler, LrSchedulerRecord};
use burn::module::{ModuleVisitor, Param, ParamGroup, ParamId};
use burn::optim::GradientsParams;
use burn::optim::LearningRate;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

use crate::config::{AdjustLr, Schedule};
use crate::models::ParityModel;

/// `meta.clip_scope` of a run whose gradients this module clips.
pub const GLOBAL_SCOPE: &str = "all parameters (one norm), by hand before Burn's step";

/// PyTorch's `clip_grad_norm_` ε, added to the total norm before dividing (torch/nn/utils/
/// clip_grad.py).
const TORCH_EPS: f64 = 1e-6;

/// The gradients scaled by `min(1, max_norm / (‖g‖ + 1e-6))`, ‖g‖ the norm of all of them.
pub fn clip_by_global_norm<M: ParityModel>(
    model: &M,
    grads: GradientsParams,
    max_norm: f64,
) -> GradientsParams {
    struct SumOfSquares<'a> {
        grads: &'a GradientsParams,
        sum: Option<Tensor<1>>,
    }
    impl ModuleVisitor for SumOfSquares<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.get::<D>(param.id) {
                let squares = g.clone().mul(g).sum();
                self.sum = Some(match self.sum.take() {
                    Some(sum) => sum.add(squares),
                    None => squares,
                });
            }
        }
    }
    struct Scale {
        grads: GradientsParams,
        coef: Tensor<1>,
    }
    impl ModuleVisitor for Scale {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.remove::<D>(param.id) {
                let coef = self.coef.clone().reshape([1; D]);
                self.grads.register::<D>(param.id, g.mul(coef));
            }
        }
    }
    let mut total = SumOfSquares {
        grads: &grads,
        sum: None,
    };
    model.visit(&mut total);
    let Some(sum) = total.sum else {
        return grads;
    };
    let coef = sum
        .sqrt()
        .add_scalar(TORCH_EPS)
        .recip()
        .mul_scalar(max_norm)
        .clamp_max(1.0);
    let mut scale = Scale { grads, coef };
    model.visit(&mut scale);
    scale.grads
}

/// Muon's lr factor of a shape [A, B, …] (Burn's `AdjustLrFn::adjustment_ratio`, muon.rs:
/// 66–86, private there; PyTorch's `_adjust_lr` alike): 1 below rank 2.
pub fn adjustment_ratio(adjust: AdjustLr, shape: &[usize]) -> f64 {
    if shape.len() < 2 {
        return 1.0;
    }
    let (a, b) = (shape[0] as f64, shape[1] as f64);
    match adjust {
        AdjustLr::Original => (a / b).max(1.0).sqrt(),
        AdjustLr::MatchRmsAdamW => 0.2 * a.max(b).sqrt(),
    }
}

/// The lr scale of each Muon tensor of Burn's: PyTorch's factor of the parameter's shape
/// over Burn's factor of the tensor's (1 where they agree), by tensor id.
pub type LrScales = Vec<(ParamId, f64)>;

/// Burn's per-parameter lrs: `lr` for every parameter, `lr × scale` for the scaled ones.
pub fn scaled_lr(lr: f64, scales: &LrScales) -> ModuleLearningRate {
    let mut scheduler = scales
        .iter()
        .fold(ModuleLrScheduler::new(lr), |s, &(id, scale)| {
            s.with_group(ParamGroup::from_ids(vec![id]), lr * scale)
        });
    scheduler.step()
}

/// The shape of each float tensor of `model`, by id.
pub fn tensor_shapes<M: ParityModel>(model: &M) -> HashMap<ParamId, Vec<usize>> {
    struct Shapes(HashMap<ParamId, Vec<usize>>);
    impl ModuleVisitor for Shapes {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.insert(param.id, param.val().dims().to_vec());
        }
    }
    let mut shapes = Shapes(HashMap::new());
    model.visit(&mut shapes);
    shapes.0
}

/// The cross-entropy with label smoothing `eps` of logits `out` [rows, classes] against
/// labels `y` [rows], every weight in the run's dtype: −mean over the rows of
/// Σ_c log_softmax(out)_c · (one_hot(y)_c·(1 − ε) + ε/C), as PyTorch's
/// (1 − ε)·nll + ε·mean_c(−log p_c).
pub fn smoothed_cross_entropy(out: Tensor<2>, y: Tensor<1, Int>, eps: f64) -> Tensor<1> {
    let classes = out.dims()[1];
    let targets = y
        .one_hot::<2>(classes)
        .float()
        .mul_scalar(1.0 - eps)
        .add_scalar(eps / classes as f64);
    log_softmax(out, 1).mul(targets).sum_dim(1).mean().neg()
}

/// PyTorch's schedulers as torch/optim/lr_scheduler.py steps them (`get_lr`, the recursive
/// form), every operation in f64 in Python's order: `step()` gives the lr of the current
/// epoch (the initial lr first, as PyTorch's `group["lr"]` before its first
/// `scheduler.step()`), then advances one epoch. `base_lr` is the optimizer's lr.
#[derive(Clone, Debug)]
pub struct TorchSchedule {
    schedule: Schedule,
    base_lr: f64,
    lr: f64,
    last_epoch: usize,
}

impl TorchSchedule {
    pub fn new(schedule: Schedule, base_lr: f64) -> Self {
        Self {
            schedule,
            base_lr,
            lr: base_lr,
            last_epoch: 0,
        }
    }

    /// The lr of epoch `k` ≥ 1 from that of epoch k − 1 (`lr`).
    fn next(&self, lr: f64, k: usize) -> f64 {
        let pi = std::f64::consts::PI;
        match self.schedule {
            Schedule::Constant => lr,
            // LinearLR(start_factor=1.0, end_factor=final_lr / lr, total_iters=num_steps).
            Schedule::Linear {
                final_lr,
                num_steps,
            } => {
                let (start, end) = (1.0, final_lr / self.base_lr);
                if k > num_steps {
                    return lr;
                }
                let denominator = num_steps as f64 * start + (k - 1) as f64 * (end - start);
                lr * (1.0 + (end - start) / denominator)
            }
            // CosineAnnealingLR(T_max=num_steps, eta_min=min_lr).
            Schedule::Cosine { min_lr, num_steps } => {
                let t = num_steps as f64;
                let restart = (k as i64 - 1 - num_steps as i64).rem_euclid(2 * num_steps as i64);
                if restart == 0 {
                    return lr + (self.base_lr - min_lr) * (1.0 - (pi / t).cos()) / 2.0;
                }
                (1.0 + (pi * k as f64 / t).cos()) / (1.0 + (pi * (k - 1) as f64 / t).cos())
                    * (lr - min_lr)
                    + min_lr
            }
            Schedule::Exponential { gamma } => lr * gamma,
            Schedule::Step { step_size, gamma } if k.is_multiple_of(step_size) => lr * gamma,
            Schedule::Step { .. } => lr,
        }
    }
}

impl LrScheduler for TorchSchedule {
    fn step(&mut self) -> LearningRate {
        let lr = self.lr;
        self.last_epoch += 1;
        self.lr = self.next(lr, self.last_epoch);
        lr
    }

    fn to_record(&self) -> LrSchedulerRecord {
        LrSchedulerRecord::new()
            .with_scalar("lr", self.lr)
            .with_scalar("last_epoch", self.last_epoch as u64)
    }

    fn load_record(&mut self, record: LrSchedulerRecord) {
        if let (Some(lr), Some(epoch)) = (record.scalar("lr"), record.scalar::<u64>("last_epoch")) {
            self.lr = lr;
            self.last_epoch = epoch as usize;
        }
    }
}
