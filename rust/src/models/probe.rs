//! The layer record: each layer's output and input gradient at the probe steps.
//!
//! A layer whose input is token ids (an embedding's `Tensor<2, Int>`, [`Probe::tokens`]) has
//! no input gradient, as in PyTorch (no gradient with respect to integer inputs): its
//! record's input gradient is an empty list (inline `[]`; in a tensors file a tensor of shape
//! [0], `data_offsets` [o, o]), so that the record still has one input gradient per layer.

use burn::tensor::{Gradients, Int, Tensor};

use super::values;
use crate::runfile::{Floats, LayerRecord, LayerValues};

/// Records each layer's output and the gradient of the loss with respect to each layer's
/// input, in a forward pass (when on). The input gradient comes from a zero leaf added to the
/// layer's input: adding an exact zero changes no value.
pub struct Probe {
    on: bool,
    outputs: Vec<Vec<f64>>,
    leaves: Vec<InputGrad>,
}

/// Reads one layer's input gradient (the zero leaf's) from the step's gradients.
type InputGrad = Box<dyn Fn(&Gradients) -> Option<Vec<f64>>>;

impl Probe {
    /// A probe that records nothing and leaves the forward as it is.
    pub fn off() -> Probe {
        Probe {
            on: false,
            outputs: Vec::new(),
            leaves: Vec::new(),
        }
    }

    pub fn on() -> Probe {
        Probe {
            on: true,
            ..Probe::off()
        }
    }

    /// One layer `f` applied to `x`: when on, a zero leaf is added to its input and its
    /// output is recorded.
    pub fn layer<const A: usize, const B: usize>(
        &mut self,
        x: Tensor<A>,
        f: impl FnOnce(Tensor<A>) -> Tensor<B>,
    ) -> Tensor<B> {
        if !self.on {
            return f(x);
        }
        let zero = Tensor::<A>::zeros(x.dims(), &x.device()).require_grad();
        let leaf = zero.clone();
        self.leaves
            .push(Box::new(move |grads| leaf.grad(grads).map(values)));
        let out = f(x + zero);
        self.outputs.push(values(out.clone()));
        out
    }

    /// One layer `f` applied to token ids `x` (e.g. an embedding): when on, its output is
    /// recorded as any layer's, and its input gradient as an empty list (integer inputs
    /// have none; the zero leaf of [`Probe::layer`] cannot be added to them). The input
    /// goes to `f` untouched.
    pub fn tokens<const A: usize, const B: usize>(
        &mut self,
        x: Tensor<A, Int>,
        f: impl FnOnce(Tensor<A, Int>) -> Tensor<B>,
    ) -> Tensor<B> {
        if !self.on {
            return f(x);
        }
        self.leaves.push(Box::new(|_| Some(Vec::new())));
        let out = f(x);
        self.outputs.push(values(out.clone()));
        out
    }

    /// The layer record of one step, read from the step's gradients before they become the
    /// parameters' gradients.
    pub fn record(
        self,
        step: usize,
        names: &[String],
        grads: &Gradients,
    ) -> Result<LayerRecord, String> {
        assert_eq!(self.outputs.len(), names.len(), "one output per layer");
        assert_eq!(self.leaves.len(), names.len(), "one input per layer");
        let input_grads = self
            .leaves
            .iter()
            .zip(names)
            .map(|(leaf, name)| {
                leaf(grads)
                    .map(Floats)
                    .ok_or_else(|| format!("no gradient for the input of layer {name}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LayerRecord {
            step,
            names: names.to_vec(),
            values: Some(LayerValues {
                outputs: self.outputs.into_iter().map(Floats).collect(),
                input_grads,
            }),
        })
    }
}
