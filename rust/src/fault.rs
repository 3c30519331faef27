//! Fault injection for tests: proves the verdicts catch a difference nobody explained.
//!
//! `PARITY_FAULT=STEP:PARAMETER:INDEX:DELTA` (e.g. `3:fc.weight:67:1e-9`) adds DELTA to one
//! parameter element (PyTorch name and flat PyTorch index) right after optimizer step STEP
//! (1-based) of every Burn run of the process. Off unless the variable is set; a run that
//! had a fault injected records it in `meta.fault`, and the report says so.

use burn::tensor::TensorData;
use serde::Serialize;

use crate::models::{self, Entry, Model, ModelSize, ParityModel};

pub const VARIABLE: &str = "PARITY_FAULT";

/// One perturbation; the run file's `meta.fault` in the same form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fault {
    /// The optimizer step (1-based) after which it is added.
    pub step: usize,
    /// The parameter's PyTorch name.
    pub parameter: String,
    /// The element's flat index in PyTorch's layout.
    pub index: usize,
    /// What is added to it.
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
        // The model and its size are not known yet: a parameter some model has at some size
        // is accepted here (see `check`).
        if !Model::ALL.iter().any(|m| m.may_have_param(parameter)) {
            let mut known: Vec<String> = Vec::new();
            for model in Model::ALL {
                for e in model.params(&ModelSize::default_for(model)) {
                    if !known.contains(&e.name) {
                        known.push(e.name);
                    }
                }
            }
            return Err(bad(&format!(
                "PARAMETER must be one of {} (or, for a transformer of several layers, enc.layers.I.NAME for enc.NAME; for gpt, blocks.I.NAME for blocks.0.NAME)",
                known.join(", ")
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

    /// Refuses a PARAMETER the model does not have.
    pub fn check(&self, model: &str, params: &[Entry]) -> Result<(), String> {
        if params.iter().any(|e| e.name == self.parameter) {
            return Ok(());
        }
        let names: Vec<&str> = params.iter().map(|e| e.name.as_str()).collect();
        Err(format!(
            "{VARIABLE}: model {model} has no parameter {} (it has {})",
            self.parameter,
            names.join(", ")
        ))
    }

    /// `model` with DELTA added to the chosen element (PyTorch's flat index; a leaf again,
    /// as the optimizer left it).
    pub fn apply<M: ParityModel>(&self, model: M) -> Result<M, String> {
        models::add_to_param(model, &self.parameter, &|dims: &[usize]| {
            let size: usize = dims.iter().product();
            if self.index >= size {
                return Err(format!(
                    "{VARIABLE}: index {} is out of range for {} ({size} elements)",
                    self.index, self.parameter
                ));
            }
            let mut values = vec![0.0f64; size];
            values[self.index] = self.delta;
            Ok(TensorData::new(values, dims.to_vec()))
        })
    }
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
            "3:enc.layers.x.norm1.weight:0:1",
            "3:enc.layers.0.conv.weight:0:1",
        ] {
            assert!(Fault::parse(bad).is_err(), "{bad}");
        }
        // A parameter of a transformer of several layers.
        let f = Fault::parse("1:enc.layers.11.self_attn.in_proj_weight:0:1").unwrap();
        assert_eq!(f.parameter, "enc.layers.11.self_attn.in_proj_weight");
    }
}
