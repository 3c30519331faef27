//! The measured values of a run as its run file writes them: floats that may be non-finite
//! ([`F64`], [`Floats`], read back by [`read_float`]) and one step's layer record
//! ([`LayerRecord`], models/probe.rs).

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// A measured float: a number, or "NaN", "Infinity", "-Infinity" when not finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct F64(pub f64);

impl Serialize for F64 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        if x.is_finite() {
            serializer.serialize_f64(x)
        } else if x.is_nan() {
            serializer.serialize_str("NaN")
        } else if x > 0.0 {
            serializer.serialize_str("Infinity")
        } else {
            serializer.serialize_str("-Infinity")
        }
    }
}

/// A list of measured floats, each written as [`F64`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Floats(pub Vec<f64>);

impl Serialize for Floats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for &x in &self.0 {
            seq.serialize_element(&F64(x))?;
        }
        seq.end()
    }
}

/// One step's layer record (models/probe.rs): each layer's output and the gradient of the
/// loss with respect to its input, flat, in the order of `names`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerRecord {
    /// The step (1-based).
    pub step: usize,
    /// The model's layers in forward order (`ParityModel::layers`).
    pub names: Vec<String>,
    /// Inline only: in a tensors file, its `layers/{step}/…` tensors.
    #[serde(flatten)]
    pub values: Option<LayerValues>,
}

/// A layer record's values, one flat list per layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerValues {
    pub outputs: Vec<Floats>,
    pub input_grads: Vec<Floats>,
}

/// Reads a float written as [`F64`].
pub fn read_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}
