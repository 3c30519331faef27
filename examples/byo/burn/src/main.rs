//! `byo-parity`: the example port, TinyMlp (examples/byo/torch/tiny_mlp.py) written as an
//! ordinary Burn module, trained by parity-train's trainer with parity-train's command line:
//!
//! ```text
//! byo-parity --spec S --dtype f32|f64 --data D --out O [--bare]
//! byo-parity local --spec S --data D --torch-run R --dtype f32|f64 --out O
//! ```

use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig, Tanh};
use burn::prelude::*;
use parity_train::port::{Layers, Port};
use std::process::ExitCode;

/// fc1 (Linear 64 → 32) → act (tanh) → norm (LayerNorm, eps 1e-5) → fc2 (Linear 32 → 10).
/// The field names are PyTorch's, so no key remapping is needed: burn-store's adapter takes
/// the norm's weight/bias for gamma/beta and transposes the Linear weights.
#[derive(Module, Debug)]
pub struct TinyMlp {
    fc1: Linear,
    act: Tanh,
    norm: LayerNorm,
    fc2: Linear,
}

impl Port for TinyMlp {
    /// Float features [N, 64].
    type Input = Tensor<2>;

    fn init(device: &Device) -> Self {
        TinyMlp {
            fc1: LinearConfig::new(64, 32).init(device),
            act: Tanh::new(),
            norm: LayerNormConfig::new(32).with_epsilon(1e-5).init(device),
            fc2: LinearConfig::new(32, 10).init(device),
        }
    }

    /// The layers recorded: fc1, act, norm, fc2 (the spec's `port.layers`).
    fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let x = layers.layer("fc1", x, |x| self.fc1.forward(x));
        let x = layers.layer("act", x, |x| self.act.forward(x));
        let x = layers.layer("norm", x, |x| self.norm.forward(x));
        layers.layer("fc2", x, |x| self.fc2.forward(x))
    }
}

fn main() -> ExitCode {
    parity_train::port::main::<TinyMlp>()
}
