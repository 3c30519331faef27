//! A layer's input or output as a value ([`Act`]): what one recorded stage of a model takes
//! and gives ([`ParityModel::stage`](super::ParityModel::stage)), so that the trainer's
//! forward (the stages folded through the probe) and the local mode's single stage
//! (local.rs) run the same code.

use burn::tensor::{Gradients, Int, Tensor, TensorData};

use super::values;

/// Reads one layer's input gradient (its zero leaf's) from a step's gradients.
pub(super) type InputGrad = Box<dyn Fn(&Gradients) -> Option<Vec<f64>>>;

/// One stage's input or output: a float tensor of rank 2, 3 or 4, or token ids [N, T].
#[derive(Debug, Clone)]
pub enum Act {
    R2(Tensor<2>),
    R3(Tensor<3>),
    R4(Tensor<4>),
    /// Token ids: the input of an embedding; they have no gradient.
    Tokens(Tensor<2, Int>),
}

impl From<Tensor<2>> for Act {
    fn from(t: Tensor<2>) -> Act {
        Act::R2(t)
    }
}

impl From<Tensor<3>> for Act {
    fn from(t: Tensor<3>) -> Act {
        Act::R3(t)
    }
}

impl From<Tensor<4>> for Act {
    fn from(t: Tensor<4>) -> Act {
        Act::R4(t)
    }
}

impl From<Tensor<2, Int>> for Act {
    fn from(t: Tensor<2, Int>) -> Act {
        Act::Tokens(t)
    }
}

/// `$body` on the float tensor `$t` of any rank; `$other` on token ids `$tokens`.
macro_rules! each_float {
    ($act:expr, $t:ident => $body:expr, $tokens:ident => $other:expr) => {
        match $act {
            Act::R2($t) => $body,
            Act::R3($t) => $body,
            Act::R4($t) => $body,
            Act::Tokens($tokens) => $other,
        }
    };
}

/// A float tensor of rank `D` with `values` (flat, row-major) and `dims` on `device`.
fn float<const D: usize>(
    values: &[f64],
    dims: &[usize],
    device: &burn::tensor::Device,
) -> Tensor<D> {
    let shape: [usize; D] = dims.try_into().expect("rank checked");
    Tensor::from_data(TensorData::new(values.to_vec(), shape), device)
}

/// `t` with `delta` added to its element of flat index `index`.
fn bumped<const D: usize>(t: Tensor<D>, index: usize, delta: f64) -> Tensor<D> {
    let dims = t.dims();
    let mut bump = vec![0.0f64; dims.iter().product()];
    bump[index] = delta;
    let bump = Tensor::<D>::from_data(TensorData::new(bump, dims), &t.device());
    t + bump
}

/// Σ t ⊙ g, g the flat `weights` in t's shape: [1].
fn weighted<const D: usize>(t: Tensor<D>, weights: &[f64]) -> Tensor<1> {
    let g = float::<D>(weights, &t.dims(), &t.device());
    (t * g).sum()
}

impl Act {
    /// The shape.
    pub fn dims(&self) -> Vec<usize> {
        each_float!(self, t => t.dims().to_vec(), t => t.dims().to_vec())
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.dims().iter().product()
    }

    /// Whether these are token ids.
    pub fn is_tokens(&self) -> bool {
        matches!(self, Act::Tokens(_))
    }

    /// A float tensor of `dims` (rank 2, 3 or 4) from flat row-major `values`, on `device`
    /// in its float dtype.
    pub fn from_values(
        values: &[f64],
        dims: &[usize],
        device: &burn::tensor::Device,
    ) -> Result<Act, String> {
        let numel: usize = dims.iter().product();
        if values.len() != numel {
            return Err(format!(
                "{} values cannot fill a tensor of shape {dims:?} ({numel} elements)",
                values.len()
            ));
        }
        match dims.len() {
            2 => Ok(Act::R2(float(values, dims, device))),
            3 => Ok(Act::R3(float(values, dims, device))),
            4 => Ok(Act::R4(float(values, dims, device))),
            rank => Err(format!("no stage takes a float tensor of rank {rank}")),
        }
    }

    /// The flat values of a float tensor (f64, exact for f32); token ids are no layer output.
    pub fn values(self) -> Vec<f64> {
        each_float!(self, t => values(t), _t => panic!("token ids are no layer output"))
    }

    /// The float tensor as an autodiff leaf (tracked, so that its gradient can be read); token
    /// ids as they are.
    pub fn require_grad(self) -> Act {
        match self {
            Act::R2(t) => Act::R2(t.require_grad()),
            Act::R3(t) => Act::R3(t.require_grad()),
            Act::R4(t) => Act::R4(t.require_grad()),
            tokens => tokens,
        }
    }

    /// This leaf's gradient in `grads`, flat; none for token ids.
    pub fn grad(&self, grads: &Gradients) -> Option<Vec<f64>> {
        each_float!(self, t => t.grad(grads).map(values), _t => None)
    }

    /// The float tensor plus a zero leaf that requires its gradient (adding an exact zero
    /// changes no value), and a reader of that leaf's gradient: the gradient with respect
    /// to this tensor. Token ids are returned as they are, with a reader of an empty list.
    pub(super) fn with_zero_leaf(self) -> (Act, InputGrad) {
        macro_rules! leaf {
            ($wrap:path, $t:expr) => {{
                let t = $t;
                let zero = Tensor::zeros(t.dims(), &t.device()).require_grad();
                let leaf = zero.clone();
                let read: InputGrad = Box::new(move |grads| leaf.grad(grads).map(values));
                ($wrap(t + zero), read)
            }};
        }
        match self {
            Act::R2(t) => leaf!(Act::R2, t),
            Act::R3(t) => leaf!(Act::R3, t),
            Act::R4(t) => leaf!(Act::R4, t),
            Act::Tokens(t) => (Act::Tokens(t), Box::new(|_| Some(Vec::new()))),
        }
    }

    /// The float tensor cut from the autodiff graph (its values kept); token ids as they are.
    pub fn detach(self) -> Act {
        match self {
            Act::R2(t) => Act::R2(t.detach()),
            Act::R3(t) => Act::R3(t.detach()),
            Act::R4(t) => Act::R4(t.detach()),
            tokens => tokens,
        }
    }

    /// `delta` added to the element of flat index `index` (a layer fault, fault.rs).
    pub fn add_at(self, index: usize, delta: f64) -> Result<Act, String> {
        let numel = self.numel();
        if index >= numel || self.is_tokens() {
            return Err(format!(
                "index {index} is out of range for an output of shape {:?} ({numel} elements)",
                self.dims()
            ));
        }
        Ok(match self {
            Act::R2(t) => Act::R2(bumped(t, index, delta)),
            Act::R3(t) => Act::R3(bumped(t, index, delta)),
            Act::R4(t) => Act::R4(bumped(t, index, delta)),
            Act::Tokens(_) => unreachable!("refused above"),
        })
    }

    /// Σ self ⊙ g with g the flat `weights` in this shape: the scalar whose gradient with
    /// respect to the stage's input is the vector-Jacobian product with g.
    pub fn weighted_sum(self, weights: &[f64]) -> Result<Tensor<1>, String> {
        if weights.len() != self.numel() {
            return Err(format!(
                "{} weights for an output of shape {:?}",
                weights.len(),
                self.dims()
            ));
        }
        each_float!(self, t => Ok(weighted(t, weights)), _t => Err("token ids have no weighted sum".into()))
    }

    fn rank_error(&self, want: &str) -> String {
        let what = if self.is_tokens() {
            "token ids"
        } else {
            "a float tensor"
        };
        format!(
            "a stage expected {want}, got {what} of shape {:?}",
            self.dims()
        )
    }

    /// The float tensor of rank 2; panics on another (a model's stages chained wrongly).
    pub fn r2(self) -> Tensor<2> {
        match self {
            Act::R2(t) => t,
            other => panic!("{}", other.rank_error("rank 2")),
        }
    }

    pub fn r3(self) -> Tensor<3> {
        match self {
            Act::R3(t) => t,
            other => panic!("{}", other.rank_error("rank 3")),
        }
    }

    pub fn r4(self) -> Tensor<4> {
        match self {
            Act::R4(t) => t,
            other => panic!("{}", other.rank_error("rank 4")),
        }
    }

    pub fn tokens(self) -> Tensor<2, Int> {
        match self {
            Act::Tokens(t) => t,
            other => panic!("{}", other.rank_error("token ids")),
        }
    }
}
