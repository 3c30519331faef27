//! The layer record: each layer's output and input gradient at the probe steps.
//!
//! A layer whose input is token ids (an embedding's `Tensor<2, Int>`, [`Act::Tokens`]) has
//! no input gradient, as in PyTorch (no gradient with respect to integer inputs): its
//! record's input gradient is an empty list (inline `[]`; in a tensors file a tensor of shape
//! [0], `data_offsets` [o, o]), so that the record still has one input gradient per layer.

use burn::tensor::Gradients;

use super::Act;
use super::act::InputGrad;
use crate::measured::{Floats, LayerRecord, LayerValues};

/// Records each layer's output and the gradient of the loss with respect to each layer's
/// input, in a forward pass (when on). The input gradient comes from a zero leaf added to the
/// layer's input: adding an exact zero changes no value. On or off, it may also add a
/// layer fault's delta to one layer's output ([`Probe::perturbing`], fault.rs): the recorded
/// output and everything after it carry it.
pub struct Probe {
    on: bool,
    outputs: Vec<Vec<f64>>,
    leaves: Vec<InputGrad>,
    perturb: Option<Perturb>,
    failed: Option<String>,
}

/// `delta` added to element `index` (flat) of stage `layer`'s output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perturb {
    pub layer: usize,
    pub index: usize,
    pub delta: f64,
}

impl Perturb {
    /// Stage `k`'s output `out`, perturbed if `k` is the layer.
    pub fn apply(&self, k: usize, out: Act) -> Result<Act, String> {
        if k == self.layer {
            out.add_at(self.index, self.delta)
        } else {
            Ok(out)
        }
    }
}

impl Probe {
    /// A probe that records nothing and leaves the forward as it is.
    pub fn off() -> Probe {
        Probe {
            on: false,
            outputs: Vec::new(),
            leaves: Vec::new(),
            perturb: None,
            failed: None,
        }
    }

    pub fn on() -> Probe {
        Probe {
            on: true,
            ..Probe::off()
        }
    }

    /// This probe, also adding `perturb`'s delta to its layer's output.
    pub fn perturbing(self, perturb: Option<Perturb>) -> Probe {
        Probe { perturb, ..self }
    }

    /// Stage `k` (`f`) applied to `x`: when on, a zero leaf is added to its input (none to
    /// token ids, whose input gradient is recorded as an empty list: integer inputs have
    /// none) and its output is recorded, after the perturbation if `k` is its layer.
    pub fn stage(&mut self, k: usize, x: Act, f: impl FnOnce(Act) -> Act) -> Act {
        let x = if self.on {
            let (x, leaf) = x.with_zero_leaf();
            self.leaves.push(leaf);
            x
        } else {
            x
        };
        let mut out = f(x);
        if let Some(p) = self.perturb {
            out = match p.apply(k, out.clone()) {
                Ok(bumped) => bumped,
                Err(e) => {
                    self.failed.get_or_insert(format!("layer fault: {e}"));
                    out
                }
            };
        }
        if self.on {
            self.outputs.push(out.clone().values());
        }
        out
    }

    /// Why the perturbation could not be added (an index out of the output's range), if so:
    /// the forward's output is then not the faulted one.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
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
