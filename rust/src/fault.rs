//! Fault injection for tests: proves the verdicts catch a difference nobody explained.
//!
//! `PARITY_FAULT=STEP:PARAMETER:INDEX:DELTA` (e.g. `3:fc.weight:67:1e-9`) adds DELTA to one
//! parameter element (PyTorch name and flat PyTorch index) right after optimizer step STEP
//! (1-based) of every Burn run of the process. Off unless the variable is set; a run that
//! had a fault injected records it in `meta.fault`, and the report says so.

use burn::module::Param;
use burn::tensor::{Device, Tensor, TensorData};
use serde_json::{Value, json};

use crate::train::{Cnn, PARAM_NAMES};

pub const VARIABLE: &str = "PARITY_FAULT";

#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub step: usize,
    pub parameter: String,
    pub index: usize,
    pub delta: f64,
}

impl Fault {
    /// The fault the environment asks for, if any.
    pub fn from_env() -> Result<Option<Fault>, String> {
        match std::env::var(VARIABLE) {
            Ok(text) if !text.is_empty() => Fault::parse(&text).map(Some),
            _ => Ok(None),
        }
    }

    pub fn parse(text: &str) -> Result<Fault, String> {
        let bad = |why: &str| {
            format!(
                "{VARIABLE}={text}: {why} (expected STEP:PARAMETER:INDEX:DELTA, e.g. 3:fc.weight:67:1e-9)"
            )
        };
        let parts: Vec<&str> = text.split(':').collect();
        let [step, parameter, index, delta] = parts[..] else {
            return Err(bad("four fields separated by ':'"));
        };
        let step: usize = step
            .parse()
            .map_err(|_| bad("STEP is not a positive integer"))?;
        if step == 0 {
            return Err(bad("STEP counts from 1"));
        }
        if !PARAM_NAMES.contains(&parameter) {
            return Err(bad(&format!(
                "PARAMETER must be one of {}",
                PARAM_NAMES.join(", ")
            )));
        }
        let index: usize = index.parse().map_err(|_| bad("INDEX is not an integer"))?;
        let delta: f64 = delta.parse().map_err(|_| bad("DELTA is not a number"))?;
        Ok(Fault {
            step,
            parameter: parameter.to_string(),
            index,
            delta,
        })
    }

    pub fn to_json(&self) -> Value {
        json!({"step": self.step, "parameter": self.parameter, "index": self.index, "delta": self.delta})
    }

    /// `model` with DELTA added to the chosen element (a leaf again, as the optimizer left it).
    pub fn apply(&self, mut model: Cnn, device: &Device) -> Result<Cnn, String> {
        let bump = |p: Param<Tensor<2>>, transposed: bool| -> Result<Param<Tensor<2>>, String> {
            let dims = p.val().dims();
            // PyTorch's [out, in] order for the index; Burn's Linear holds [in, out].
            let torch_dims = if transposed { [dims[1], dims[0]] } else { dims };
            let delta = self.delta_tensor::<2>(torch_dims, device)?;
            let delta = if transposed { delta.transpose() } else { delta };
            Ok(p.map(|t| leaf(t + delta)))
        };
        match self.parameter.as_str() {
            "conv.weight" => {
                let dims = model.conv.weight.val().dims();
                let delta = self.delta_tensor::<3>(dims, device)?;
                model.conv.weight = model.conv.weight.map(|t| leaf(t + delta));
            }
            "fc.weight" => model.fc.weight = bump(model.fc.weight, true)?,
            "conv.bias" | "fc.bias" => {
                let bias = if self.parameter == "conv.bias" {
                    &mut model.conv.bias
                } else {
                    &mut model.fc.bias
                };
                let p = bias.take().ok_or("the layer has no bias")?;
                let delta = self.delta_tensor::<1>(p.val().dims(), device)?;
                *bias = Some(p.map(|t| leaf(t + delta)));
            }
            other => return Err(format!("{VARIABLE}: unknown parameter {other}")),
        }
        Ok(model)
    }

    fn delta_tensor<const D: usize>(
        &self,
        dims: [usize; D],
        device: &Device,
    ) -> Result<Tensor<D>, String> {
        let size: usize = dims.iter().product();
        if self.index >= size {
            return Err(format!(
                "{VARIABLE}: index {} is out of range for {} ({size} elements)",
                self.index, self.parameter
            ));
        }
        let mut values = vec![0.0f64; size];
        values[self.index] = self.delta;
        Ok(Tensor::from_data(TensorData::new(values, dims), device))
    }
}

/// A detached tensor that requires grad again: a parameter as the optimizer returns it.
fn leaf<const D: usize>(t: Tensor<D>) -> Tensor<D> {
    t.detach().require_grad()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_fault_and_refuses_bad_ones() {
        let f = Fault::parse("3:fc.weight:67:1e-9").unwrap();
        assert_eq!(
            f,
            Fault {
                step: 3,
                parameter: "fc.weight".into(),
                index: 67,
                delta: 1e-9
            }
        );
        for bad in [
            "3:fc.weight:67",
            "0:fc.weight:67:1e-9",
            "3:fc.weights:67:1e-9",
            "3:fc.weight:x:1e-9",
            "3:fc.weight:67:big",
        ] {
            assert!(Fault::parse(bad).is_err(), "{bad}");
        }
    }
}
