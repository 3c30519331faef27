//! The `burn_backend` setting end to end: the binary trains a short Adam run on NdArray in
//! f32 and in f64, and on Flex in f64, each in its own process (a device's float dtype can be
//! set only once per process), and each run file records the backend it used; for both
//! models.
//!
//! f64 must really be f64 on NdArray (`Device::configure(FloatDType::F64)` as for Flex): its
//! final parameters agree with Flex's f64 run to f64 rounding, where the f32 run is f32
//! rounding away.

use crate::common;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const STEPS: usize = 5;

const ADAM: &str = "optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.0";

/// A scratch folder with both models' datasets and a resolved spec of an Adam experiment per
/// backend and model.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parity-backends-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cnn1d.safetensors"),
        common::encode(&common::cnn1d_arrays(common::CONV)),
    )
    .unwrap();
    std::fs::write(
        dir.join("cnn_bn.safetensors"),
        common::encode(&common::cnn_bn_arrays(common::CONV)),
    )
    .unwrap();
    let experiments = [
        ("on_flex", ADAM.to_string()),
        ("on_ndarray", format!("{ADAM}, burn_backend: ndarray")),
        ("bn_on_flex", format!("{ADAM}, model: cnn_bn")),
        (
            "bn_on_ndarray",
            format!("{ADAM}, model: cnn_bn, burn_backend: ndarray"),
        ),
    ];
    for (name, experiment) in experiments {
        let mut spec: Value =
            serde_json::from_str(&common::resolved(&experiment, STEPS, 4)).unwrap();
        spec["name"] = Value::from(name);
        std::fs::write(dir.join(format!("{name}.json")), spec.to_string()).unwrap();
    }
    dir
}

/// Runs the binary for one experiment and dtype; the run block of its run file.
fn run(dir: &Path, experiment: &str, dtype: &str) -> Value {
    let data = if experiment.starts_with("bn_") {
        "cnn_bn.safetensors"
    } else {
        "cnn1d.safetensors"
    };
    let out = dir.join(format!("{experiment}-{dtype}.json"));
    let status = Command::new(env!("CARGO_BIN_EXE_parity-train"))
        .arg("--spec")
        .arg(dir.join(format!("{experiment}.json")))
        .args(["--dtype", dtype])
        .arg("--data")
        .arg(dir.join(data))
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
    let block = serde_json::from_str::<Value>(&text).unwrap()[experiment].take();
    // Its tensors from the tensors file beside it, in the run's precision.
    assert_eq!(block["tensors"]["dtype"], dtype.to_uppercase());
    common::attach(block, &out)
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
    let dir = scratch("cnn1d");
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
    assert!(
        common::max_gap(&p64, &flex) < 1e-12,
        "f64: {:e}",
        common::max_gap(&p64, &flex)
    );
    assert!(
        common::max_gap(&p32, &flex) > 1e-9,
        "f32 vs f64: {:e}",
        common::max_gap(&p32, &flex)
    );
}

/// Layer `k`'s record at step 1: `outputs` or `input_grads`.
fn layer(block: &Value, key: &str, k: usize) -> Vec<f64> {
    let list = block["layers"][0][key][k]
        .as_array()
        .expect("a layer's list");
    list.iter().map(|x| x.as_f64().expect("finite")).collect()
}

#[test]
fn cnn_bn_runs_on_both_backends_and_ndarray_differentiates_gelu_by_its_tanh_form() {
    let dir = scratch("cnn_bn");
    let runs = [
        run(&dir, "bn_on_ndarray", "f32"),
        run(&dir, "bn_on_ndarray", "f64"),
        run(&dir, "bn_on_flex", "f64"),
    ];
    std::fs::remove_dir_all(&dir).unwrap();
    for (block, backend) in runs.iter().zip(["ndarray", "ndarray", "flex"]) {
        assert_eq!(block["meta"]["backend"], backend);
        assert_eq!(block["meta"]["model"], "cnn_bn");
        assert_eq!(block["losses"].as_array().unwrap().len(), STEPS);
        for name in ["bn.running_mean", "bn.running_var"] {
            assert_eq!(block["buffers"][name].as_array().unwrap().len(), 4);
            let series = block["trajectory"]["buffers"][name].as_array().unwrap();
            assert_eq!(series.len(), STEPS);
        }
    }
    let (ndarray, flex) = (&runs[1], &runs[2]);
    // f64, step 1: the same forward on both backends (the GELU forward is erf on both).
    for k in 0..5 {
        let g = common::max_gap(&layer(ndarray, "outputs", k), &layer(flex, "outputs", k));
        assert!(g < 1e-12, "output of layer {k}: {g:e}");
    }
    // The same backward down to GELU's output (fc, ln); through GELU NdArray uses
    // burn-backend's default gelu_backward, the derivative of the tanh approximation with
    // 6-digit constants (up to ~9e-4 off the exact derivative), where Flex's is exact.
    for k in [3, 4] {
        let g = common::max_gap(
            &layer(ndarray, "input_grads", k),
            &layer(flex, "input_grads", k),
        );
        assert!(g < 1e-12, "input gradient of layer {k}: {g:e}");
    }
    let g = common::max_gap(
        &layer(ndarray, "input_grads", 2),
        &layer(flex, "input_grads", 2),
    );
    assert!(g > 1e-6, "GELU's input gradient: {g:e}");
}
