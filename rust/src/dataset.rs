//! Reader of the shared dataset file written by
//! `src/torch_burn_parity/training/make_data.py` (the format is documented in
//! `src/torch_burn_parity/io/parity_io.py`): a safetensors file, one per model, holding `x`
//! [N, 1, 16] F32, `y` [N] I64, then the model's parameters and buffers (F32, in PyTorch's
//! names and shapes).
//!
//! Every array is decoded here, for the checks of the model's declaration against the file
//! (`models::Arrays`, before any step) and for the inputs. The model's weights are loaded
//! from the file's own bytes ([`Dataset::bytes`]) by burn-store's `SafetensorsStore`
//! (`models/store.rs`), as Burn's users load PyTorch's.

use std::collections::BTreeMap;
use std::path::Path;

use safetensors::{Dtype, SafeTensors};

#[derive(Debug, Clone)]
pub enum Values {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

#[derive(Debug, Clone)]
pub struct Array {
    pub shape: Vec<usize>,
    pub values: Values,
}

/// A dataset file as read: its bytes, and their arrays and SHA-256. Made only by
/// [`decode`], so that the arrays checked are always those of the bytes burn-store loads.
#[derive(Debug, Clone)]
pub struct Dataset {
    arrays: BTreeMap<String, Array>,
    bytes: Vec<u8>,
    sha256: String,
}

/// The arrays every dataset has; the others are the model's (checked by `models::Arrays`).
const REQUIRED: [&str; 2] = ["x", "y"];

/// The dtype of array `name` in the format: y's I64, every other one's F32.
fn dtype_of(name: &str) -> Dtype {
    if name == "y" { Dtype::I64 } else { Dtype::F32 }
}

/// Decodes a dataset file's bytes; refuses, on one line, bytes that are not a safetensors
/// file, a file without x or y, and an array of another dtype than the format's.
pub fn decode(bytes: Vec<u8>) -> Result<Dataset, String> {
    let file = SafeTensors::deserialize(&bytes)
        .map_err(|e| format!("not a safetensors file, or truncated ({e})"))?;
    let mut arrays = BTreeMap::new();
    for (name, view) in file.iter() {
        let want = dtype_of(name);
        if view.dtype() != want {
            return Err(format!(
                "array '{name}' is {}, expected {want}",
                view.dtype()
            ));
        }
        // Little-endian, as safetensors stores them; the data need not be aligned.
        let data = view.data();
        let values = match want {
            Dtype::I64 => Values::I64(
                data.chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            _ => Values::F32(
                data.chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
        };
        let shape = view.shape().to_vec();
        arrays.insert(name.to_string(), Array { shape, values });
    }
    let missing: Vec<&str> = REQUIRED
        .into_iter()
        .filter(|a| !arrays.contains_key(*a))
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing arrays {missing:?}"));
    }
    let sha256 = crate::hex_sha256(&bytes);
    Ok(Dataset {
        arrays,
        bytes,
        sha256,
    })
}

pub fn read(path: &Path) -> Result<Dataset, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    decode(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

impl Dataset {
    /// Every array of the file by name.
    pub fn arrays(&self) -> &BTreeMap<String, Array> {
        &self.arrays
    }

    /// The file's exact bytes, which burn-store loads the weights from.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// SHA-256 of the file's exact bytes, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    pub fn f32(&self, name: &str) -> Result<(&[usize], &[f32]), String> {
        match &self.arrays[name] {
            Array {
                shape,
                values: Values::F32(v),
            } => Ok((shape, v)),
            _ => Err(format!("array {name}: expected f32")),
        }
    }

    pub fn i64(&self, name: &str) -> Result<(&[usize], &[i64]), String> {
        match &self.arrays[name] {
            Array {
                shape,
                values: Values::I64(v),
            } => Ok((shape, v)),
            _ => Err(format!("array {name}: expected i64")),
        }
    }
}

/// The arrays as a dataset file (x and the rest F32, y I64; `model` in the metadata, as
/// make_data.py writes it), for the tests.
pub fn encode(arrays: &[(String, Array)], model: &str) -> Vec<u8> {
    let raw: Vec<(Dtype, Vec<u8>)> = arrays
        .iter()
        .map(|(_, array)| match &array.values {
            Values::F32(v) => (Dtype::F32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            Values::I64(v) => (Dtype::I64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        })
        .collect();
    let views = arrays
        .iter()
        .zip(&raw)
        .map(|((name, array), (dtype, data))| {
            let view = safetensors::tensor::TensorView::new(*dtype, array.shape.clone(), data)
                .unwrap_or_else(|e| panic!("array {name}: {e}"));
            (name.as_str(), view)
        });
    let metadata = [
        (
            "format".to_string(),
            "torch-burn-parity dataset".to_string(),
        ),
        ("model".to_string(), model.to_string()),
    ];
    safetensors::serialize(views, Some(metadata.into_iter().collect())).expect("serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[usize], values: Vec<f32>) -> Array {
        Array {
            shape: shape.to_vec(),
            values: Values::F32(values),
        }
    }

    fn arrays() -> Vec<(String, Array)> {
        let tiny = f32::from_bits(1); // a subnormal: must come back bit for bit
        let mut out = vec![
            ("x".to_string(), f32s(&[1, 1, 2], vec![0.1, tiny])),
            (
                "y".to_string(),
                Array {
                    shape: vec![1],
                    values: Values::I64(vec![2]),
                },
            ),
        ];
        for name in ["conv.weight", "conv.bias", "fc.weight", "fc.bias"] {
            out.push((name.to_string(), f32s(&[1], vec![-0.0])));
        }
        out
    }

    #[test]
    fn decodes_bit_for_bit() {
        let bytes = encode(&arrays(), "cnn1d");
        let data = decode(bytes.clone()).unwrap();
        let (shape, x) = data.f32("x").unwrap();
        assert_eq!(shape, [1, 1, 2]);
        assert_eq!(x[0].to_bits(), 0.1f32.to_bits());
        assert_eq!(x[1].to_bits(), 1);
        assert_eq!(data.i64("y").unwrap().1, [2]);
        assert_eq!(
            data.f32("fc.bias").unwrap().1[0].to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(data.sha256(), crate::hex_sha256(&bytes));
        assert_eq!(data.bytes(), bytes);
        assert_eq!(data.arrays().len(), 6);
    }

    #[test]
    fn refuses_truncated_foreign_and_incomplete_files() {
        let full = encode(&arrays(), "cnn1d");
        let refused = |bytes: &[u8]| decode(bytes.to_vec()).unwrap_err();
        assert!(
            refused(&full[..full.len() - 1]).starts_with("not a safetensors file, or truncated")
        );
        assert!(refused(b"PARITYDS\x01\0\0\0\x06\0\0\0").contains("not a safetensors file"));
        let mut extra = full.clone();
        extra.push(0);
        assert!(refused(&extra).contains("not a safetensors file"));
        let no_y: Vec<_> = arrays().into_iter().filter(|(n, _)| n != "y").collect();
        assert_eq!(refused(&encode(&no_y, "cnn1d")), r#"missing arrays ["y"]"#);
        let mut wrong = arrays();
        wrong[1].1.values = Values::F32(vec![2.0]);
        assert_eq!(
            refused(&encode(&wrong, "cnn1d")),
            "array 'y' is F32, expected I64"
        );
        let mut wrong = arrays();
        wrong[2].1.values = Values::I64(vec![0]);
        assert_eq!(
            refused(&encode(&wrong, "cnn1d")),
            "array 'conv.weight' is I64, expected F32"
        );
    }
}
