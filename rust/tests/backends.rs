//! The `burn_backend` setting end to end: the binary trains a short Adam run on NdArray in
//! f32 and in f64, and on Flex in f64, each in its own process (a device's float dtype can be
//! set only once per process), and each run file records the backend it used.
//!
//! f64 must really be f64 on NdArray (`Device::configure(FloatDType::F64)` as for Flex): its
//! final parameters agree with Flex's f64 run to f64 rounding, where the f32 run is f32
//! rounding away.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const STEPS: usize = 5;

/// Appends one array in the dataset format (workflow/scripts/parity_io.py).
fn array(out: &mut Vec<u8>, name: &str, shape: &[u32], values: Values) {
    out.extend((name.len() as u32).to_le_bytes());
    out.extend(name.as_bytes());
    let code = match values {
        Values::F32(_) => 1u8,
        Values::I64(_) => 2u8,
    };
    out.extend([code, shape.len() as u8]);
    for d in shape {
        out.extend(d.to_le_bytes());
    }
    match values {
        Values::F32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        Values::I64(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
    }
}

enum Values {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// The seed's data and weights, shrunk: 12 sequences of length 8, Conv1d(1→2, k=3), 3 classes.
fn dataset_bytes() -> Vec<u8> {
    let (n, len, channels, kernel, classes) = (12usize, 8usize, 2usize, 3usize, 3usize);
    let flat = channels * (len - kernel + 1);
    let f32s = |count: usize, f: &dyn Fn(usize) -> f64| -> Values {
        Values::F32((0..count).map(|i| f(i) as f32).collect())
    };
    let mut out = b"PARITYDS".to_vec();
    out.extend(1u32.to_le_bytes());
    out.extend(6u32.to_le_bytes());
    let x = f32s(n * len, &|i| {
        let (k, t) = ((i / len) as f64, (i % len) as f64);
        let f = 0.3 * ((k as usize % classes) as f64 + 1.0);
        (f * t + 0.37 * k).sin() + 0.3 * (2.3 * t + 1.1 * k).sin()
    });
    array(&mut out, "x", &[n as u32, 1, len as u32], x);
    let y = Values::I64((0..n as i64).map(|k| k % classes as i64).collect());
    array(&mut out, "y", &[n as u32], y);
    let conv = f32s(channels * kernel, &|i| 0.4 * (i as f64 + 1.0).sin());
    array(
        &mut out,
        "conv.weight",
        &[channels as u32, 1, kernel as u32],
        conv,
    );
    let bias = f32s(channels, &|o| 0.02 * o as f64 - 0.03);
    array(&mut out, "conv.bias", &[channels as u32], bias);
    let fc = f32s(classes * flat, &|i| 0.15 * (i as f64 + 1.0).cos());
    array(&mut out, "fc.weight", &[classes as u32, flat as u32], fc);
    array(
        &mut out,
        "fc.bias",
        &[classes as u32],
        f32s(classes, &|_| 0.0),
    );
    out
}

const ADAM: &str = "optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.0";

/// A scratch folder with the dataset and a config of two Adam experiments, one per backend.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parity-backends-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("data.bin"), dataset_bytes()).unwrap();
    let config = format!(
        "steps: {STEPS}\nbatch_size: 4\nthreads: 1\nexperiments:\n  on_flex: {{{ADAM}}}\n  on_ndarray: {{{ADAM}, burn_backend: ndarray}}\n"
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    dir
}

/// Runs the binary for one experiment and dtype; the run block of its run file.
fn run(dir: &Path, experiment: &str, dtype: &str) -> Value {
    let out = dir.join(format!("{experiment}-{dtype}.json"));
    let status = Command::new(env!("CARGO_BIN_EXE_parity-train"))
        .args(["--experiment", experiment, "--dtype", dtype])
        .arg("--config")
        .arg(dir.join("config.yaml"))
        .arg("--data")
        .arg(dir.join("data.bin"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("parity-train runs");
    assert!(
        status.status.success(),
        "{experiment} {dtype}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()[experiment].take()
}

fn params(block: &Value) -> Vec<f64> {
    let map = block["params"].as_object().expect("params");
    map.values()
        .flat_map(|v| v.as_array().expect("flat list").iter())
        .map(|x| x.as_f64().expect("finite"))
        .collect()
}

#[test]
fn ndarray_trains_in_f32_and_f64_and_records_its_backend() {
    let dir = scratch();
    let f32_run = run(&dir, "on_ndarray", "f32");
    let f64_run = run(&dir, "on_ndarray", "f64");
    let flex_f64 = run(&dir, "on_flex", "f64");
    std::fs::remove_dir_all(&dir).unwrap();

    for (block, dtype) in [(&f32_run, "f32"), (&f64_run, "f64")] {
        assert_eq!(block["meta"]["backend"], "ndarray");
        assert_eq!(block["meta"]["dtype"], dtype);
        assert_eq!(block["losses"].as_array().unwrap().len(), STEPS);
    }
    assert_eq!(flex_f64["meta"]["backend"], "flex");

    let (p32, p64, flex) = (params(&f32_run), params(&f64_run), params(&flex_f64));
    let gap = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    };
    assert!(gap(&p64, &flex) < 1e-12, "f64: {:e}", gap(&p64, &flex));
    assert!(
        gap(&p32, &flex) > 1e-9,
        "f32 vs f64: {:e}",
        gap(&p32, &flex)
    );
}
