//! A run's tensors file read back in the tests: the run block in the inline form, from the
//! tensors file beside its run file (as run_tensors.py's `attach` reads it), checked with the
//! `safetensors` crate's reader.

use burn::tensor::Device;
use parity_train::config::Spec;
use parity_train::dataset::Dataset;
use parity_train::fault::Fault;
use parity_train::measured::Floats;
use parity_train::registry;
use parity_train::run::Run;
use parity_train::tensors;
use safetensors::{self as st, SafeTensors, tensor::TensorView};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::json;

/// A fresh run file path, in a folder of its own under Cargo's scratch folder for tests.
pub fn scratch_run() -> PathBuf {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("run-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("run.json")
}

/// A run trained as the binary trains it, its tensors written to the tensors file beside a
/// run file (`train::train` with an output path), read back in the inline form ([`attach`]).
/// A failed run must leave nothing in the run's folder.
pub fn trained(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
) -> Result<Value, String> {
    let out = scratch_run();
    let dir = out.parent().unwrap().to_path_buf();
    let block = registry::train(Run::new(spec, data, device).with_fault(fault), Some(&out));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    let block = match block {
        Ok(block) => {
            assert_eq!(
                left,
                ["run.safetensors"],
                "the tensors file, no temporary file"
            );
            Ok(attach(json(block), &out))
        }
        Err(e) => {
            assert!(left.is_empty(), "a failed run left {left:?}");
            Err(e)
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    block
}

/// The flat values of a tensor of the file, as f64 (exact for F32).
pub fn values(view: &TensorView) -> Vec<f64> {
    match view.dtype() {
        st::Dtype::F32 => view
            .data()
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        st::Dtype::F64 => view
            .data()
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        other => panic!("a run's tensor in {other:?}"),
    }
}

/// A list of floats as the run file writes it (non-finite ones as strings).
fn floats(values: &[f64]) -> Value {
    serde_json::to_value(Floats(values.to_vec())).unwrap()
}

/// The block of the run file `run_path` (written with a tensors file) in the inline form, as
/// run_tensors.py's `attach` reads it: `params`, `buffers`, `trajectory` and each layer
/// record's `outputs` and `input_grads` read from the tensors file its `tensors` names, which
/// is checked (a valid safetensors file of that size, dtype and steps, with exactly the
/// keys of the block's parameters, buffers and layer records) and removed.
pub fn attach(mut block: Value, run_path: &Path) -> Value {
    let map = block.as_object_mut().expect("a run block");
    for inline in ["params", "buffers", "trajectory"] {
        assert!(!map.contains_key(inline), "{inline} beside a tensors file");
    }
    let spec = map.remove("tensors").expect("a block with a tensors file");
    let file = spec["file"].as_str().unwrap();
    assert_eq!(
        file,
        run_path
            .with_extension("safetensors")
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
    );
    let bytes = std::fs::read(run_path.with_file_name(file)).unwrap();
    assert_eq!(
        Some(bytes.len() as u64),
        spec["bytes"].as_u64(),
        "the file's size"
    );
    let tensors = SafeTensors::deserialize(&bytes).expect("a valid safetensors file");
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let format = HashMap::from([("format".to_string(), tensors::FORMAT.to_string())]);
    assert_eq!(header.metadata(), &Some(format));
    let steps: Vec<u64> = serde_json::from_value(spec["steps"].clone()).unwrap();
    assert!(
        steps.first().is_none_or(|&s| s >= 1) && steps.is_sorted_by(|a, b| a < b),
        "recorded steps {steps:?}: 1-based, sorted, without repeats"
    );
    let mut keys: BTreeSet<String> = tensors.names().into_iter().map(String::from).collect();
    let mut take = |key: &str| {
        assert!(keys.remove(key), "no tensor {key}");
        let view = tensors.tensor(key).unwrap();
        assert_eq!(
            Some(format!("{:?}", view.dtype()).as_str()),
            spec["dtype"].as_str()
        );
        view
    };
    // The final params and buffers, in the file's order (the model's).
    let mut state = |prefix: &str| {
        let names: Vec<String> = header
            .offset_keys()
            .into_iter()
            .filter_map(|k| k.strip_prefix(prefix).map(String::from))
            .collect();
        let flat: Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), floats(&values(&take(&format!("{prefix}{n}"))))))
            .collect();
        (names, flat)
    };
    let (params, params_flat) = state("params/");
    let (buffers, buffers_flat) = state("buffers/");
    let mut trajectory = Map::new();
    for (kind, names) in [
        ("params", &params),
        ("grads", &params),
        ("buffers", &buffers),
    ] {
        let mut series = Map::new();
        for name in names {
            let view = take(&format!("trajectory/{kind}/{name}"));
            assert_eq!(view.shape()[0], steps.len(), "a row per recorded step");
            let width: usize = view.shape()[1..].iter().product();
            let all = values(&view);
            let rows = all.chunks(width.max(1)).map(floats).collect();
            series.insert(name.clone(), Value::Array(rows));
        }
        trajectory.insert(kind.into(), Value::Object(series));
    }
    for record in map["layers"].as_array_mut().unwrap() {
        let record = record.as_object_mut().unwrap();
        assert_eq!(
            record.len(),
            2,
            "a layer record of step and names only: {record:?}"
        );
        let (step, layers) = (
            record["step"].clone(),
            record["names"].as_array().unwrap().len(),
        );
        for field in ["outputs", "input_grads"] {
            let lists = (0..layers)
                .map(|k| {
                    let view = take(&format!("layers/{step}/{field}/{k}"));
                    assert_eq!(view.shape().len(), 1, "flat");
                    floats(&values(&view))
                })
                .collect();
            record.insert(field.into(), Value::Array(lists));
        }
    }
    assert!(
        keys.is_empty(),
        "keys of no parameter, buffer or layer record: {keys:?}"
    );
    map.insert("params".into(), Value::Object(params_flat));
    map.insert("buffers".into(), Value::Object(buffers_flat));
    map.insert("trajectory".into(), Value::Object(trajectory));
    block
}
