//! A run's tensors file, written row by row: the Burn side of the Python `TensorWriter`
//! (src/torch_burn_parity/io/run_tensors.py, whose module docstring is the specification).
//!
//! The file is safetensors' own format: an 8-byte little-endian header length, a JSON
//! header padded with spaces, then the data. The tensors whose shapes are known before
//! step 1 (the final params and buffers, each trajectory `[S, *shape]`) are *declared* when
//! the writer is created and placed in that order; each is then filled in place, a
//! trajectory one row per step, so the trainer never holds a trajectory. The *late* ones
//! (the layer record, whose sizes come only with it) are named up front and appended, flat,
//! after everything placed before them, as they come. The header's room is reserved at the
//! start for every key, with the widest shape and offsets it could hold; [`TensorWriter::close`]
//! writes the real header there, padded with spaces (any safetensors reader takes them).
//!
//! The file is written as `.{name}.tmp` beside its path and renamed into place by `close`,
//! after an fsync; a writer dropped before that (an error, a panic) removes it, so a failed
//! run leaves no file.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The header's `__metadata__.format`.
pub const FORMAT: &str = "torch-burn-parity run tensors";

/// The run's precision, as the file stores its values (little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F64,
}

impl Dtype {
    /// The precision of a Burn float tensor; another dtype is refused.
    pub fn of(dtype: burn::tensor::DType) -> Result<Dtype, String> {
        match dtype {
            burn::tensor::DType::F32 => Ok(Dtype::F32),
            burn::tensor::DType::F64 => Ok(Dtype::F64),
            other => Err(format!("tensors file: no run precision for {other:?}")),
        }
    }

    /// safetensors' name: `F32` or `F64`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "F32",
            Dtype::F64 => "F64",
        }
    }

    fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }
}

/// The tensors file beside a run file: the same name with `.safetensors`.
pub fn tensors_path(run_path: &Path) -> PathBuf {
    run_path.with_extension("safetensors")
}

/// One placed tensor: its key, shape and byte range in the data.
struct Placed {
    key: String,
    shape: Vec<usize>,
    begin: u64,
    end: u64,
}

/// A safetensors file being written: see the module's documentation.
pub struct TensorWriter {
    path: PathBuf,
    tmp: PathBuf,
    /// Whether `tmp` is this writer's to remove: created by it, not moved into place yet.
    owns_tmp: bool,
    /// Open until `close`.
    file: Option<File>,
    dtype: Dtype,
    /// In placement order (the data's and the header's order).
    placed: Vec<Placed>,
    index: HashMap<String, usize>,
    /// Late keys not added yet.
    pending: HashSet<String>,
    /// The header's `__metadata__`, in order.
    metadata: Box<[(String, String)]>,
    /// The header's room in bytes (a multiple of 8).
    reserved: u64,
    /// The data's end so far.
    end: u64,
    /// Reused for each write's bytes.
    bytes: Vec<u8>,
}

impl TensorWriter {
    /// Starts `path`'s file (as `.{name}.tmp` beside it) with the `declared` tensors (key,
    /// shape), placed in that order, and room in the header for the `late` keys too; its
    /// `__metadata__` is {"format": [`FORMAT`]}.
    pub fn create(
        path: &Path,
        declared: &[(String, Vec<usize>)],
        dtype: Dtype,
        late: &[String],
    ) -> Result<TensorWriter, String> {
        let metadata = [("format".to_string(), FORMAT.to_string())];
        TensorWriter::create_with(path, declared, dtype, late, &metadata)
    }

    /// [`TensorWriter::create`] with this `__metadata__` (string keys and values, in order).
    pub fn create_with(
        path: &Path,
        declared: &[(String, Vec<usize>)],
        dtype: Dtype,
        late: &[String],
        metadata: &[(String, String)],
    ) -> Result<TensorWriter, String> {
        let name = path
            .file_name()
            .ok_or_else(|| format!("{}: not a file path", path.display()))?;
        let tmp = path.with_file_name(format!(".{}.tmp", name.to_string_lossy()));
        let mut writer = TensorWriter {
            path: path.to_path_buf(),
            tmp,
            owns_tmp: false,
            file: None,
            dtype,
            placed: Vec::new(),
            index: HashMap::new(),
            pending: late.iter().cloned().collect(),
            metadata: metadata.into(),
            reserved: 0,
            end: 0,
            bytes: Vec::new(),
        };
        for (key, shape) in declared {
            if writer.index.contains_key(key) || writer.pending.contains(key) {
                return Err(format!("{}: tensor {key} declared twice", path.display()));
            }
            writer.place(key, shape.clone());
        }
        // The widest header: every key with (at least) 4 dimensions of 10^15 and offsets
        // of 10^18, as the Python writer reserves it.
        const DIM: u64 = 10u64.pow(15);
        const OFFSET: u64 = 10u64.pow(18);
        let widest = declared
            .iter()
            .map(|(key, shape)| (key.as_str(), vec![DIM; shape.len().max(4)]))
            .chain(late.iter().map(|key| (key.as_str(), vec![DIM; 4])))
            .map(|(key, shape)| (key, shape, OFFSET, OFFSET));
        writer.reserved = writer.header(widest).len() as u64;
        let tmp = writer.tmp.clone();
        let io = |e: std::io::Error| format!("{}: {e}", tmp.display());
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let file = File::create(&tmp).map_err(io)?;
        writer.owns_tmp = true; // from here on, dropping the writer removes the file
        writer.file = Some(file);
        let size = 8 + writer.reserved + writer.end; // zeros until written
        let file = writer.file.as_ref().expect("open");
        file.set_len(size).map_err(io)?;
        Ok(writer)
    }

    fn place(&mut self, key: &str, shape: Vec<usize>) -> usize {
        let numel: u64 = shape.iter().map(|&d| d as u64).product();
        let begin = self.end;
        self.end += numel * self.dtype.size();
        self.index.insert(key.to_string(), self.placed.len());
        self.placed.push(Placed {
            key: key.to_string(),
            shape,
            begin,
            end: self.end,
        });
        self.placed.len() - 1
    }

    /// The header of these (key, shape, begin, end), compact, padded with spaces to 8 bytes.
    fn header<'a, S: AsRef<[T]>, T: std::fmt::Display>(
        &self,
        tensors: impl IntoIterator<Item = (&'a str, S, u64, u64)>,
    ) -> Vec<u8> {
        let quoted = |s: &str| serde_json::to_string(s).expect("a string");
        let metadata: Vec<String> = self
            .metadata
            .iter()
            .map(|(k, v)| format!("{}:{}", quoted(k), quoted(v)))
            .collect();
        let mut text = format!(r#"{{"__metadata__":{{{}}}"#, metadata.join(","));
        for (key, shape, begin, end) in tensors {
            let dims: Vec<String> = shape.as_ref().iter().map(|d| d.to_string()).collect();
            text += &format!(
                r#",{}:{{"dtype":"{}","shape":[{}],"data_offsets":[{begin},{end}]}}"#,
                quoted(key),
                self.dtype.name(),
                dims.join(",")
            );
        }
        text.push('}');
        let mut bytes = text.into_bytes();
        bytes.resize(bytes.len().next_multiple_of(8), b' ');
        bytes
    }

    /// Writes `values` over bytes `begin..end` of the data (within placed tensor `k`).
    fn put(&mut self, k: usize, begin: u64, end: u64, values: &[f64]) -> Result<(), String> {
        let key = &self.placed[k].key;
        if values.len() as u64 * self.dtype.size() != end - begin {
            return Err(format!(
                "{}: {key}: {} values do not fill {} bytes",
                self.path.display(),
                values.len(),
                end - begin
            ));
        }
        self.bytes.clear();
        match self.dtype {
            // The values of an f32 run are f32 widened: narrowing them back is exact.
            Dtype::F32 => values
                .iter()
                .for_each(|&x| self.bytes.extend((x as f32).to_le_bytes())),
            Dtype::F64 => values
                .iter()
                .for_each(|&x| self.bytes.extend(x.to_le_bytes())),
        }
        let file = self.file.as_mut().expect("open until closed");
        file.seek(SeekFrom::Start(8 + self.reserved + begin))
            .and_then(|_| file.write_all(&self.bytes))
            .map_err(|e| format!("{}: {e}", self.tmp.display()))
    }

    fn declared(&self, key: &str) -> Result<usize, String> {
        self.index
            .get(key)
            .copied()
            .ok_or_else(|| format!("{}: no declared tensor {key}", self.path.display()))
    }

    /// Declared tensor `key`'s values, flat.
    pub fn write(&mut self, key: &str, values: &[f64]) -> Result<(), String> {
        let k = self.declared(key)?;
        let (begin, end) = (self.placed[k].begin, self.placed[k].end);
        self.put(k, begin, end, values)
    }

    /// Row `row` (an index of its first dimension) of declared tensor `key`, flat.
    pub fn write_row(&mut self, key: &str, row: usize, values: &[f64]) -> Result<(), String> {
        let k = self.declared(key)?;
        let Placed { shape, begin, .. } = &self.placed[k];
        if shape.first().is_none_or(|&rows| row >= rows) {
            return Err(format!("{}: {key} has no row {row}", self.path.display()));
        }
        let width: u64 = shape[1..].iter().map(|&d| d as u64).product::<u64>() * self.dtype.size();
        let begin = begin + row as u64 * width;
        self.put(k, begin, begin + width, values)
    }

    /// Late tensor `key`, flat, after everything placed so far.
    pub fn add(&mut self, key: &str, values: &[f64]) -> Result<(), String> {
        if !self.pending.remove(key) {
            return Err(format!(
                "{}: {key}: not a late tensor of this file, or added twice",
                self.path.display()
            ));
        }
        let k = self.place(key, vec![values.len()]);
        let (begin, end) = (self.placed[k].begin, self.placed[k].end);
        self.put(k, begin, end, values)
    }

    /// Writes the header, syncs and moves the file into place; its size in bytes.
    pub fn close(mut self) -> Result<u64, String> {
        if !self.pending.is_empty() {
            let mut missing: Vec<&String> = self.pending.iter().collect();
            missing.sort();
            return Err(format!(
                "{}: late tensors never added: {:?}",
                self.path.display(),
                &missing[..missing.len().min(3)]
            ));
        }
        let placed = self.placed.iter();
        let mut header = self.header(placed.map(|p| (p.key.as_str(), &p.shape, p.begin, p.end)));
        if header.len() as u64 > self.reserved {
            return Err(format!(
                "{}: a header of {} bytes overflows the {} reserved",
                self.path.display(),
                header.len(),
                self.reserved
            ));
        }
        header.resize(self.reserved as usize, b' ');
        let size = 8 + self.reserved + self.end;
        let mut file = self.file.take().expect("open until closed");
        let written = (|| {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&self.reserved.to_le_bytes())?;
            file.write_all(&header)?;
            file.set_len(size)?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&self.tmp, &self.path)
        })();
        // On failure, Drop removes the temporary file.
        written.map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.owns_tmp = false; // moved into place
        Ok(size)
    }
}

/// One tensor of a file as its header declares it.
#[derive(Debug, Clone)]
struct Declared {
    dtype: String,
    shape: Vec<usize>,
    begin: u64,
    end: u64,
}

/// A safetensors file of F32 or F64 tensors (a run's tensors file), read one tensor or one
/// row at a time: only the header is held.
pub struct TensorReader {
    path: PathBuf,
    file: File,
    data_start: u64,
    size: u64,
    tensors: HashMap<String, Declared>,
}

impl TensorReader {
    /// Opens `path` and reads its header; one line otherwise (no such file, not safetensors,
    /// a tensor past the file's end).
    pub fn open(path: &Path) -> Result<TensorReader, String> {
        use std::io::Read;
        let err = |why: String| format!("{}: {why}", path.display());
        let mut file = File::open(path).map_err(|e| err(e.to_string()))?;
        let size = file.metadata().map_err(|e| err(e.to_string()))?.len();
        let mut len = [0u8; 8];
        file.read_exact(&mut len)
            .map_err(|_| err("not a safetensors file (no header length)".into()))?;
        let n = u64::from_le_bytes(len);
        if n > size.saturating_sub(8) || n > 1 << 30 {
            return Err(err(format!(
                "not a safetensors file (a header of {n} bytes)"
            )));
        }
        let mut header = vec![0u8; n as usize];
        file.read_exact(&mut header)
            .map_err(|e| err(format!("not a safetensors file ({e})")))?;
        let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&header)
            .map_err(|e| err(format!("not a safetensors file (its header: {e})")))?;
        let data_start = 8 + n;
        let mut tensors = HashMap::new();
        for (key, v) in header {
            if key == "__metadata__" {
                continue;
            }
            let parsed = (|| {
                let dtype = v["dtype"].as_str()?.to_string();
                let shape = v["shape"]
                    .as_array()?
                    .iter()
                    .map(|d| d.as_u64().map(|d| d as usize))
                    .collect::<Option<Vec<usize>>>()?;
                let offsets = v["data_offsets"].as_array()?;
                let (begin, end) = (offsets.first()?.as_u64()?, offsets.get(1)?.as_u64()?);
                Some(Declared {
                    dtype,
                    shape,
                    begin,
                    end,
                })
            })()
            .ok_or_else(|| err(format!("tensor {key}: not a safetensors entry")))?;
            if parsed.begin > parsed.end || data_start + parsed.end > size {
                return Err(err(format!(
                    "tensor {key}: its data is past the file's end"
                )));
            }
            tensors.insert(key, parsed);
        }
        Ok(TensorReader {
            path: path.to_path_buf(),
            file,
            data_start,
            size,
            tensors,
        })
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the file holds tensor `key`.
    pub fn has(&self, key: &str) -> bool {
        self.tensors.contains_key(key)
    }

    /// Tensor `key`'s shape and dtype (`F32`, `F64`, …).
    pub fn shape(&self, key: &str) -> Result<(Vec<usize>, &str), String> {
        let t = self.declared(key)?;
        Ok((t.shape.clone(), t.dtype.as_str()))
    }

    fn declared(&self, key: &str) -> Result<&Declared, String> {
        self.tensors
            .get(key)
            .ok_or_else(|| format!("{}: no tensor {key}", self.path.display()))
    }

    /// Tensor `key`'s values, flat, as f64 (exact for F32).
    pub fn read(&mut self, key: &str) -> Result<Vec<f64>, String> {
        let t = self.declared(key)?.clone();
        self.read_range(key, &t.dtype, t.begin, t.end)
    }

    /// Row `row` (an index of its first dimension) of tensor `key`, flat, as f64.
    pub fn read_row(&mut self, key: &str, row: usize) -> Result<Vec<f64>, String> {
        let t = self.declared(key)?.clone();
        if t.shape.first().is_none_or(|&rows| row >= rows) {
            return Err(format!(
                "{}: {key} of shape {:?} has no row {row}",
                self.path.display(),
                t.shape
            ));
        }
        let width = (t.end - t.begin) / t.shape[0] as u64;
        let begin = t.begin + row as u64 * width;
        self.read_range(key, &t.dtype, begin, begin + width)
    }

    fn read_range(
        &mut self,
        key: &str,
        dtype: &str,
        begin: u64,
        end: u64,
    ) -> Result<Vec<f64>, String> {
        use std::io::Read;
        let size = match dtype {
            "F32" => 4,
            "F64" => 8,
            other => {
                return Err(format!(
                    "{}: {key} is {other}, not F32 or F64",
                    self.path.display()
                ));
            }
        };
        let mut bytes = vec![0u8; (end - begin) as usize];
        self.file
            .seek(SeekFrom::Start(self.data_start + begin))
            .and_then(|_| self.file.read_exact(&mut bytes))
            .map_err(|e| format!("{}: {key}: {e}", self.path.display()))?;
        Ok(if size == 4 {
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect()
        } else {
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        })
    }
}

impl Drop for TensorWriter {
    /// A writer not closed (an error on the way, a panic) removes its temporary file.
    fn drop(&mut self) {
        drop(self.file.take());
        if self.owns_tmp {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests;
