//! Reader of the shared dataset file written by
//! `src/torch_burn_parity/training/make_data.py` (the format is documented in
//! `src/torch_burn_parity/io/parity_io.py`): a safetensors file, one per model, holding the
//! inputs `x` (F32 samples of any rank ≥ 2, e.g. the sine data's [N, 1, 16] or the digits'
//! [N, 1, 8, 8]; or I64 token ids [N, T]), the targets `y` (I64 class labels, [N] or
//! [N, T]; or, for the mse loss, F32 values [N] or [N, K]), then the
//! model's parameters and buffers (F32, in PyTorch's names and shapes).
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

/// The dtypes array `name` may have in the format: x's F32 or I64, y's I64 (class labels)
/// or F32 (mse's targets), every other one's F32.
fn dtypes_of(name: &str) -> &'static [Dtype] {
    match name {
        "x" | "y" => &[Dtype::F32, Dtype::I64],
        _ => &[Dtype::F32],
    }
}

/// Decodes a dataset file's bytes; refuses, on one line, bytes that are not a safetensors
/// file, a file without x or y, an array of another dtype than the format's, an x of rank
/// below 2, and a y that is not [N] or [N, T] of x's N samples.
pub fn decode(bytes: Vec<u8>) -> Result<Dataset, String> {
    let file = SafeTensors::deserialize(&bytes)
        .map_err(|e| format!("not a safetensors file, or truncated ({e})"))?;
    let mut arrays = BTreeMap::new();
    for (name, view) in file.iter() {
        let want = dtypes_of(name);
        if !want.contains(&view.dtype()) {
            let want: Vec<String> = want.iter().map(|d| d.to_string()).collect();
            return Err(format!(
                "array '{name}' is {}, expected {}",
                view.dtype(),
                want.join(" or ")
            ));
        }
        // Little-endian, as safetensors stores them; the data need not be aligned.
        let data = view.data();
        let values = match view.dtype() {
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
    let (x, y) = (&arrays["x"].shape, &arrays["y"].shape);
    if x.len() < 2 {
        return Err(format!(
            "array 'x' has shape {x:?}, expected [N, …] of rank 2 or more"
        ));
    }
    if !(1..=2).contains(&y.len()) || y[0] != x[0] {
        return Err(format!(
            "array 'y' has shape {y:?}, expected [N] or [N, T] of x's N = {}",
            x[0]
        ));
    }
    let sha256 = crate::provenance::hex_sha256(&bytes);
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

/// The arrays as a dataset file (each in its own dtype: x F32 or I64, y I64, the rest F32;
/// `model` in the metadata, as make_data.py writes it), for the tests.
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
        assert_eq!(data.sha256(), crate::provenance::hex_sha256(&bytes));
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
        // An F32 y is mse's targets: taken, as F32.
        let mut targets = arrays();
        targets[1].1.values = Values::F32(vec![2.0]);
        let decoded = decode(encode(&targets, "cnn1d")).unwrap();
        assert_eq!(decoded.f32("y").unwrap().1, [2.0]);
        let mut wrong = arrays();
        wrong[2].1.values = Values::I64(vec![0]);
        assert_eq!(
            refused(&encode(&wrong, "cnn1d")),
            "array 'conv.weight' is I64, expected F32"
        );
    }

    fn i64s(shape: &[usize], values: Vec<i64>) -> Array {
        Array {
            shape: shape.to_vec(),
            values: Values::I64(values),
        }
    }

    #[test]
    fn takes_token_ids_and_a_label_per_position_and_refuses_other_shapes() {
        // x token ids [2, 3], y a label per position [2, 3]: a language model's.
        let tokens = || {
            vec![
                ("x".to_string(), i64s(&[2, 3], vec![0, 1, 2, 3, 4, 5])),
                ("y".to_string(), i64s(&[2, 3], vec![1, 2, 3, 4, 5, 0])),
            ]
        };
        let data = decode(encode(&tokens(), "gpt")).unwrap();
        assert_eq!(
            data.i64("x").unwrap(),
            (&[2, 3][..], &[0, 1, 2, 3, 4, 5][..])
        );
        assert_eq!(data.i64("y").unwrap().0, [2, 3]);
        let refused = |arrays: &[(String, Array)]| decode(encode(arrays, "t")).unwrap_err();
        let mut wrong = tokens();
        wrong[1].1 = i64s(&[3], vec![0, 1, 2]);
        assert_eq!(
            refused(&wrong),
            "array 'y' has shape [3], expected [N] or [N, T] of x's N = 2"
        );
        wrong[1].1 = i64s(&[2, 3, 1], vec![0; 6]);
        assert_eq!(
            refused(&wrong),
            "array 'y' has shape [2, 3, 1], expected [N] or [N, T] of x's N = 2"
        );
        let mut wrong = tokens();
        wrong[0].1 = f32s(&[2], vec![0.0, 1.0]);
        wrong[1].1 = i64s(&[2], vec![0, 1]);
        assert_eq!(
            refused(&wrong),
            "array 'x' has shape [2], expected [N, …] of rank 2 or more"
        );
        // x in a dtype of neither kind.
        let data = 0f64.to_le_bytes().repeat(2);
        let y = 0i64.to_le_bytes().repeat(2);
        let views = [
            (
                "x",
                safetensors::tensor::TensorView::new(Dtype::F64, vec![2, 1], &data).unwrap(),
            ),
            (
                "y",
                safetensors::tensor::TensorView::new(Dtype::I64, vec![2], &y).unwrap(),
            ),
        ];
        let bytes = safetensors::serialize(views, None).unwrap();
        assert_eq!(
            decode(bytes).unwrap_err(),
            "array 'x' is F64, expected F32 or I64"
        );
    }
}
