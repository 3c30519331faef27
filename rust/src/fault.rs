//! Fault injection for tests: proves the verdicts catch a difference nobody explained.
//!
//! `PARITY_FAULT=STEP:PARAMETER:INDEX:DELTA` (e.g. `3:fc.weight:67:1e-9`) adds DELTA to one
//! parameter element (PyTorch name and flat PyTorch index) right after optimizer step STEP
//! (1-based) of every Burn run of the process.
//!
//! `PARITY_FAULT=STEP:layer:LAYER:INDEX:DELTA` (e.g. `1:layer:relu:3:1e-6`) adds DELTA to one
//! element (flat index) of recorded layer LAYER's forward output in step STEP's forward: in
//! training (through the probe, so the recorded output and everything after it carry it),
//! and in the local mode's stage of that layer at that step (local.rs): Burn's layer is
//! the one that is wrong.
//!
//! Off unless the variable is set; a run that had a fault injected records it in
//! `meta.fault` (`{"step", "parameter", "index", "delta"}`, or `{"step", "layer", "index",
//! "delta"}`), and the report says so.

use burn::tensor::TensorData;
use serde::Serialize;

use crate::models::{self, Entry, ParityModel, Perturb};

pub const VARIABLE: &str = "PARITY_FAULT";

/// One perturbation; the run file's `meta.fault` in the same form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fault {
    /// The optimizer step (1-based) after which a parameter's is added; the step in whose
    /// forward a layer output's is.
    pub step: usize,
    /// What is perturbed: `"parameter": NAME` or `"layer": NAME` in the JSON.
    #[serde(flatten)]
    pub target: Target,
    /// The element's flat index: in PyTorch's layout for a parameter; in the layer's output
    /// (its shape as the layer record flattens it) for a layer.
    pub index: usize,
    /// What is added to it.
    pub delta: f64,
}

/// What a [`Fault`] perturbs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// A parameter's PyTorch name: after the optimizer step.
    Parameter(String),
    /// A recorded layer's name: its forward output.
    Layer(String),
}

/// Whether some built-in model at some size has a recorded layer `name`: a layer of its
/// default size, or one of its several-layer names (`attn.{i}` for `attn` or `attn.0`).
fn may_have_layer(name: &str) -> bool {
    let builtins = models::builtins();
    let known = |n: &str| {
        builtins
            .iter()
            .any(|m| (m.layers)(&m.default_size()).iter().any(|l| l == n))
    };
    if known(name) {
        return true;
    }
    match name.rsplit_once('.') {
        Some((base, i)) if i.parse::<usize>().is_ok() => known(base) || known(&format!("{base}.0")),
        _ => false,
    }
}

impl Fault {
    /// The fault the environment asks for, if any; for `a port`'s binary its PARAMETER or
    /// LAYER is checked against the port once its spec is read ([`Fault::check`]), for
    /// `parity-train`'s against the built-in models at once ([`Fault::parse`]).
    pub fn from_env(port: bool) -> Result<Option<Fault>, String> {
        match std::env::var(VARIABLE) {
            Ok(text) if !text.is_empty() && port => Fault::parse_fields(&text).map(Some),
            Ok(text) if !text.is_empty() => Fault::parse(&text).map(Some),
            _ => Ok(None),
        }
    }

    /// The fault of `text`, its PARAMETER or LAYER one that some built-in model has.
    pub fn parse(text: &str) -> Result<Fault, String> {
        let fault = Fault::parse_fields(text)?;
        let bad = |why: &str| {
            format!(
                "{VARIABLE}={text}: {why} (expected STEP:PARAMETER:INDEX:DELTA, e.g. 3:fc.weight:67:1e-9, or STEP:layer:LAYER:INDEX:DELTA, e.g. 1:layer:relu:3:1e-6)"
            )
        };
        // The model and its size are not known yet: a parameter or layer some built-in model
        // has at some size is accepted here (see `check`).
        let builtins = models::builtins();
        match &fault.target {
            Target::Parameter(parameter)
                if !builtins.iter().any(|m| (m.may_have_param)(parameter)) =>
            {
                let mut known: Vec<String> = Vec::new();
                for model in &builtins {
                    for e in (model.params)(&model.default_size()) {
                        if !known.contains(&e.name) {
                            known.push(e.name);
                        }
                    }
                }
                Err(bad(&format!(
                    "PARAMETER must be one of {} (or, for a transformer of several layers, enc.layers.I.NAME for enc.NAME; for gpt, blocks.I.NAME for blocks.0.NAME)",
                    known.join(", ")
                )))
            }
            Target::Layer(layer) if !may_have_layer(layer) => {
                let mut known: Vec<String> = Vec::new();
                for model in &builtins {
                    for l in (model.layers)(&model.default_size()) {
                        if !known.contains(&l) {
                            known.push(l);
                        }
                    }
                }
                Err(bad(&format!(
                    "LAYER must be one of {} (or NAME.I for the I-th of several)",
                    known.join(", ")
                )))
            }
            _ => Ok(fault),
        }
    }

    /// The fault of `text`, its fields' syntax checked (not its names: a port's are its own).
    pub fn parse_fields(text: &str) -> Result<Fault, String> {
        let bad = |why: &str| {
            format!(
                "{VARIABLE}={text}: {why} (expected STEP:PARAMETER:INDEX:DELTA, e.g. 3:fc.weight:67:1e-9, or STEP:layer:LAYER:INDEX:DELTA, e.g. 1:layer:relu:3:1e-6)"
            )
        };
        let parts: Vec<&str> = text.split(':').collect();
        let (step, target, index, delta) = match parts[..] {
            [step, parameter, index, delta] => {
                (step, Target::Parameter(parameter.to_string()), index, delta)
            }
            [step, "layer", layer, index, delta] => {
                (step, Target::Layer(layer.to_string()), index, delta)
            }
            _ => {
                return Err(bad(
                    "four fields separated by ':', or five with 'layer' second",
                ));
            }
        };
        let step: usize = step
            .parse()
            .map_err(|_| bad("STEP is not a positive integer"))?;
        if step == 0 {
            return Err(bad("STEP counts from 1"));
        }
        let index: usize = index.parse().map_err(|_| bad("INDEX is not an integer"))?;
        let delta: f64 = delta.parse().map_err(|_| bad("DELTA is not a number"))?;
        Ok(Fault {
            step,
            target,
            index,
            delta,
        })
    }

    /// The parameter's name, for a parameter fault.
    pub fn parameter(&self) -> Option<&str> {
        match &self.target {
            Target::Parameter(p) => Some(p),
            Target::Layer(_) => None,
        }
    }

    /// The layer's name, for a layer fault.
    pub fn layer(&self) -> Option<&str> {
        match &self.target {
            Target::Layer(l) => Some(l),
            Target::Parameter(_) => None,
        }
    }

    /// A layer fault's perturbation of step `step`'s forward, given the model's recorded
    /// layers (checked by [`Fault::check`]); none for a parameter fault or another step.
    pub fn perturb(&self, step: usize, layers: &[String]) -> Option<Perturb> {
        let layer = self.layer().filter(|_| self.step == step)?;
        let k = layers.iter().position(|l| l == layer)?;
        Some(Perturb {
            layer: k,
            index: self.index,
            delta: self.delta,
        })
    }

    /// Refuses a PARAMETER the model does not have, or a LAYER it does not record.
    pub fn check(&self, model: &str, params: &[Entry], layers: &[String]) -> Result<(), String> {
        match &self.target {
            Target::Parameter(parameter) => {
                if params.iter().any(|e| &e.name == parameter) {
                    return Ok(());
                }
                let names: Vec<&str> = params.iter().map(|e| e.name.as_str()).collect();
                Err(format!(
                    "{VARIABLE}: model {model} has no parameter {parameter} (it has {})",
                    names.join(", ")
                ))
            }
            Target::Layer(layer) => {
                if layers.contains(layer) {
                    return Ok(());
                }
                Err(format!(
                    "{VARIABLE}: model {model} has no layer {layer} (it records {})",
                    layers.join(", ")
                ))
            }
        }
    }

    /// `model` with DELTA added to the chosen element (PyTorch's flat index; a leaf again,
    /// as the optimizer left it).
    /// A layer fault leaves the model as it is.
    pub fn apply<M: ParityModel>(&self, model: M) -> Result<M, String> {
        let Some(parameter) = self.parameter() else {
            return Ok(model);
        };
        models::add_to_param(model, parameter, &|dims: &[usize]| {
            let size: usize = dims.iter().product();
            if self.index >= size {
                return Err(format!(
                    "{VARIABLE}: index {} is out of range for {parameter} ({size} elements)",
                    self.index
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
                target: Target::Parameter("fc.weight".into()),
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
        assert_eq!(
            f.parameter(),
            Some("enc.layers.11.self_attn.in_proj_weight")
        );
    }

    #[test]
    fn parses_a_layer_fault_and_checks_it_against_the_model() {
        let f = Fault::parse("1:layer:relu:3:1e-6").unwrap();
        assert_eq!(
            f,
            Fault {
                step: 1,
                target: Target::Layer("relu".into()),
                index: 3,
                delta: 1e-6
            }
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"step":1,"layer":"relu","index":3,"delta":1e-6}"#
        );
        let p = Fault::parse("3:fc.weight:67:1e-9").unwrap();
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"step":3,"parameter":"fc.weight","index":67,"delta":1e-9}"#
        );
        // Several layers' names.
        assert!(Fault::parse("2:layer:attn.3:0:1").is_ok());
        assert!(Fault::parse("2:layer:norm1.1:0:1").is_ok());
        for bad in [
            "1:layer:relux:3:1e-6",
            "1:layer:relu:3",
            "0:layer:relu:3:1e-6",
            "1:layer:relu:x:1e-6",
            "1:layers:relu:3:1e-6",
        ] {
            let e = Fault::parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        let layers: Vec<String> = ["conv", "relu", "fc"].map(String::from).to_vec();
        assert!(f.check("cnn1d", &[], &layers).is_ok());
        let e = Fault::parse("1:layer:gelu:0:1")
            .unwrap()
            .check("cnn1d", &[], &layers)
            .unwrap_err();
        assert_eq!(
            e,
            "PARITY_FAULT: model cnn1d has no layer gelu (it records conv, relu, fc)"
        );
        assert_eq!(
            f.perturb(1, &layers),
            Some(Perturb {
                layer: 1,
                index: 3,
                delta: 1e-6
            })
        );
        assert_eq!(f.perturb(2, &layers), None);
        assert_eq!(p.perturb(3, &layers), None);
    }
}
