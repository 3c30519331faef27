//! The spec's `loss`: which loss the experiment trains with (loss.rs computes it).

use serde::Deserialize;

/// The spec's `loss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// Burn's `CrossEntropyLoss` (PyTorch's `cross_entropy`), over class labels.
    #[default]
    CrossEntropy,
    /// Burn's `MseLoss` with `Reduction::Mean` (PyTorch's `mse_loss`): mean over every
    /// element of (out − y)², over float targets.
    Mse,
}

impl LossKind {
    pub fn name(self) -> &'static str {
        match self {
            LossKind::CrossEntropy => "cross_entropy",
            LossKind::Mse => "mse",
        }
    }
}
