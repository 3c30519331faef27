//! Reader of the shared dataset file written by `workflow/scripts/make_data.py`.
//! The format is documented in `workflow/scripts/parity_io.py`. One file per model: `x`,
//! `y`, then the model's parameters and buffers.

use std::collections::BTreeMap;
use std::path::Path;

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

#[derive(Debug, Clone)]
pub struct Dataset {
    pub arrays: BTreeMap<String, Array>,
    /// SHA-256 of the exact bytes read, hex.
    pub sha256: String,
}

const MAGIC: &[u8; 8] = b"PARITYDS";
/// The arrays every dataset has; the others are the model's (checked by `models::Arrays`).
const REQUIRED: [&str; 2] = ["x", "y"];

struct Cursor<'a> {
    blob: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.blob.len());
        let end = end.ok_or("truncated dataset file")?;
        let bytes = &self.blob[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
}

pub fn decode(blob: &[u8]) -> Result<Dataset, String> {
    if blob.len() < 16 || &blob[..8] != MAGIC {
        return Err("not a parity dataset file (bad magic)".into());
    }
    let mut cur = Cursor { blob, pos: 8 };
    let version = cur.u32()?;
    if version != 1 {
        return Err(format!("dataset version {version}, expected 1"));
    }
    let count = cur.u32()?;
    let mut arrays = BTreeMap::new();
    for _ in 0..count {
        let name_len = cur.u32()? as usize;
        let name = String::from_utf8(cur.take(name_len)?.to_vec()).map_err(|e| e.to_string())?;
        let dtype = cur.u8()?;
        let ndim = cur.u8()? as usize;
        let shape = (0..ndim)
            .map(|_| cur.u32().map(|d| d as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let n: usize = shape.iter().product();
        let values = match dtype {
            1 => Values::F32(
                cur.take(4 * n)?
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            2 => Values::I64(
                cur.take(8 * n)?
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            other => return Err(format!("array {name}: unknown dtype code {other}")),
        };
        arrays.insert(name, Array { shape, values });
    }
    if cur.pos != blob.len() {
        return Err(format!(
            "{} trailing bytes after the last array",
            blob.len() - cur.pos
        ));
    }
    if let Some(missing) = REQUIRED.iter().find(|a| !arrays.contains_key(**a)) {
        return Err(format!("missing array {missing}"));
    }
    let sha256 = crate::hex_sha256(blob);
    Ok(Dataset { arrays, sha256 })
}

pub fn read(path: &Path) -> Result<Dataset, String> {
    let blob = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    decode(&blob).map_err(|e| format!("{}: {e}", path.display()))
}

impl Dataset {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn array(name: &str, dtype: u8, shape: &[u32], payload: &[u8]) -> Vec<u8> {
        let mut out = (name.len() as u32).to_le_bytes().to_vec();
        out.extend(name.as_bytes());
        out.extend([dtype, shape.len() as u8]);
        shape.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(payload);
        out
    }

    fn blob() -> Vec<u8> {
        let mut out = b"PARITYDS".to_vec();
        out.extend(1u32.to_le_bytes());
        out.extend(6u32.to_le_bytes());
        let tiny = f32::from_bits(1); // a subnormal: must come back bit for bit
        out.extend(array(
            "x",
            1,
            &[1, 1, 2],
            &[0.1f32.to_le_bytes(), tiny.to_le_bytes()].concat(),
        ));
        out.extend(array("y", 2, &[1], &2i64.to_le_bytes()));
        for name in ["conv.weight", "conv.bias", "fc.weight", "fc.bias"] {
            out.extend(array(name, 1, &[1], &(-0.0f32).to_le_bytes()));
        }
        out
    }

    #[test]
    fn decodes_bit_for_bit() {
        let data = decode(&blob()).unwrap();
        let (shape, x) = data.f32("x").unwrap();
        assert_eq!(shape, [1, 1, 2]);
        assert_eq!(x[0].to_bits(), 0.1f32.to_bits());
        assert_eq!(x[1].to_bits(), 1);
        assert_eq!(data.i64("y").unwrap().1, [2]);
        assert_eq!(
            data.f32("fc.bias").unwrap().1[0].to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(data.sha256.len(), 64);
    }

    #[test]
    fn refuses_truncated_and_foreign_files() {
        let full = blob();
        assert!(
            decode(&full[..full.len() - 1])
                .unwrap_err()
                .contains("truncated")
        );
        assert!(decode(b"NOTADATASETFILE!").unwrap_err().contains("magic"));
        let mut extra = full.clone();
        extra.push(0);
        assert!(decode(&extra).unwrap_err().contains("trailing"));
    }
}
