//! The experiment's loss (the spec's `loss`), as Burn computes it: the cross-entropy over
//! class labels (an I64 `y`), or the mean squared error over float targets (an F32 `y`, a
//! port's own data: a regression), each the mean over the forward's output.

use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig, MseLoss, Reduction};
use burn::tensor::{Device, Int, Tensor, TensorData, s};

use crate::config::LossKind;
use crate::dataset::Dataset;
use crate::models;
use crate::runfile::LossMeta;

/// The dataset's `y` as the loss takes it: class labels flat ([N], or [N·T] for labels
/// [N, T]), or float targets [N, K] (an F32 y [N] is [N, 1]).
#[derive(Debug, Clone)]
pub enum Targets {
    Labels(Tensor<1, Int>),
    Values(Tensor<2>),
}

impl Targets {
    /// The targets of samples `start..end` (T label rows a sample for labels [N, T]).
    pub fn samples(&self, start: usize, end: usize, per: usize) -> Targets {
        match self {
            Targets::Labels(y) => Targets::Labels(y.clone().slice(s![start * per..end * per])),
            Targets::Values(y) => Targets::Values(y.clone().slice(s![start..end])),
        }
    }

    /// How many rows of the forward's output the targets are for.
    fn rows(&self) -> usize {
        match self {
            Targets::Labels(y) => y.dims()[0],
            Targets::Values(y) => y.dims()[0],
        }
    }
}

/// The dataset's targets for `kind` on `device`, refused on one line when `y`'s dtype is not
/// the loss's (I64 labels for cross_entropy, F32 values for mse).
pub fn targets(data: &Dataset, device: &Device, kind: LossKind) -> Result<Targets, String> {
    match kind {
        LossKind::CrossEntropy => models::labels(data, device)
            .map(Targets::Labels)
            .map_err(|_| {
                "loss cross_entropy: y holds F32 values, not I64 class labels (mse takes float targets)".into()
            }),
        LossKind::Mse => {
            let (shape, y) = data.f32("y").map_err(|_| {
                "loss mse: y holds I64 class labels, not F32 targets (cross_entropy takes labels)"
            })?;
            let width = shape[1..].iter().product::<usize>();
            Ok(Targets::Values(Tensor::from_data(
                TensorData::new(y.to_vec(), [shape[0], width]),
                device,
            )))
        }
    }
}

/// The loss as Burn computes it.
#[derive(Debug)]
pub enum Criterion {
    CrossEntropy(Box<CrossEntropyLoss>),
    /// The smoothed cross-entropy computed by hand in the run's dtype (by_hand.rs), ε.
    SmoothedByHand(f64),
    Mse(MseLoss),
}

impl Criterion {
    /// The mean loss of the forward's `out` [rows, outputs] against `targets`; refused on one
    /// line when they are not for the same rows (or, for mse, the same outputs), before
    /// Burn's loss asserts it. `model`: the name the refusal gives.
    pub fn forward(
        &self,
        out: Tensor<2>,
        targets: &Targets,
        model: &str,
    ) -> Result<Tensor<1>, String> {
        let (rows, want) = (out.dims()[0], targets.rows());
        if rows != want {
            return Err(format!(
                "model {model}: the forward gives {rows} rows of classes where the labels are {want}"
            ));
        }
        match (self, targets) {
            (Criterion::CrossEntropy(ce), Targets::Labels(y)) => Ok(ce.forward(out, y.clone())),
            (Criterion::SmoothedByHand(eps), Targets::Labels(y)) => {
                Ok(crate::by_hand::smoothed_cross_entropy(out, y.clone(), *eps))
            }
            (Criterion::Mse(mse), Targets::Values(y)) => {
                if out.dims() != y.dims() {
                    return Err(format!(
                        "model {model}: the forward gives {:?} where the targets are {:?}",
                        out.dims(),
                        y.dims()
                    ));
                }
                Ok(mse.forward(out, y.clone(), Reduction::Mean))
            }
            _ => Err("the loss and its targets disagree".into()),
        }
    }

    /// `meta.loss`: the loss as Burn holds it (the cross-entropy's f32 α widened; 0 without
    /// smoothing, and for mse).
    pub fn meta(&self) -> LossMeta {
        match self {
            Criterion::CrossEntropy(ce) => LossMeta {
                name: LossKind::CrossEntropy.name(),
                label_smoothing: ce.smoothing.map_or(0.0, f64::from),
                by_hand: false,
            },
            Criterion::SmoothedByHand(eps) => LossMeta {
                name: LossKind::CrossEntropy.name(),
                label_smoothing: *eps,
                by_hand: true,
            },
            Criterion::Mse(_) => LossMeta {
                name: LossKind::Mse.name(),
                label_smoothing: 0.0,
                by_hand: false,
            },
        }
    }
}

/// The cross-entropy of the spec's `label_smoothing` ε: Burn's `CrossEntropyLoss` with no
/// smoothing at ε = 0 (its plain path, `forward_default`: −mean of log_softmax gathered at
/// the labels), with `smoothing: Some(ε as f32)` otherwise.
///
/// How Burn computes the smoothed loss (burn-nn 0.22.1 src/loss/cross_entropy.rs): it holds
/// α as an `f32` (`smoothing: Option<f32>`, lines 38 and 88), also in an f64 run, and
/// `forward_smoothed` (lines 138–169) multiplies log_softmax(z) (line 146) by the targets of
/// `compute_smoothed_targets` (lines 202–216), q = onehot(y)·a + b with a = 1 − α and
/// b = α/C computed in f32 (line 215: `1. - alpha`, `alpha / nr_classes as f32`) and widened
/// exactly to the run's dtype, sums over the classes (line 167) and takes −mean over the
/// rows (line 233):
///
/// ```text
/// loss = mean_n [ a·(−log p_{n,y}) + b·Σ_c (−log p_{n,c}) ]
/// ```
///
/// PyTorch's `CrossEntropyLoss(label_smoothing=ε)` is (1 − ε)·nll + ε·mean_c(−log p_c): the
/// same with a = 1 − ε, b = ε/C. In an f64 run Burn's a and b are f32 roundings (ε 0.1: α
/// 0.10000000149011612, a 0.8999999761581421, b 0.009999999776482582; a + C·b = 1 − 2.6e-8),
/// so its loss is ~2.6e-8 relative from PyTorch's f64 one (tests/lenet.rs).
pub fn loss_config(label_smoothing: f64) -> CrossEntropyLossConfig {
    let config = CrossEntropyLossConfig::new();
    if label_smoothing > 0.0 {
        config.with_smoothing(Some(label_smoothing as f32))
    } else {
        config
    }
}

/// A loss as configured, before it is put on a device ([`Loss::init`]): the cross-entropy
/// of a config (label smoothing), or the mean squared error.
#[derive(Debug, Clone)]
pub enum Loss {
    CrossEntropy(CrossEntropyLossConfig),
    /// With `burn_fixes: [smoothed_targets_in_dtype]`: the smoothed loss by hand, ε.
    SmoothedByHand(f64),
    Mse,
}

impl From<CrossEntropyLossConfig> for Loss {
    fn from(config: CrossEntropyLossConfig) -> Loss {
        Loss::CrossEntropy(config)
    }
}

impl Loss {
    /// The spec's loss: `kind` with label smoothing ε.
    pub fn of(kind: LossKind, label_smoothing: f64) -> Loss {
        match kind {
            LossKind::CrossEntropy => loss_config(label_smoothing).into(),
            LossKind::Mse => Loss::Mse,
        }
    }

    pub fn kind(&self) -> LossKind {
        match self {
            Loss::CrossEntropy(_) | Loss::SmoothedByHand(_) => LossKind::CrossEntropy,
            Loss::Mse => LossKind::Mse,
        }
    }

    pub fn init(&self, device: &Device) -> Criterion {
        match self {
            Loss::CrossEntropy(config) => Criterion::CrossEntropy(Box::new(config.init(device))),
            Loss::SmoothedByHand(eps) => Criterion::SmoothedByHand(*eps),
            Loss::Mse => Criterion::Mse(MseLoss::new()),
        }
    }
}
