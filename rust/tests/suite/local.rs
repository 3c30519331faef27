//! The local mode (local.rs): each Burn layer on a reference run's recorded input and
//! output gradient. Against a reference made by Burn itself (the trainer's run, read as if it
//! were PyTorch's), every local output and input gradient is the reference's (the same
//! framework on the same inputs); a layer fault moves that layer's local output by its
//! delta and leaves the layers after it on the reference's inputs; and the refusals.

use crate::common;

use burn::tensor::Device;
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::fault::Fault;
use parity_train::local::FORMAT;
use parity_train::models::{GptSize, TransformerSize};
use parity_train::registry;
use parity_train::run::Run;
use parity_train::runfile::RunFile;
use safetensors::SafeTensors;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SGD: &str =
    "optimizer: sgd, lr: 0.05, momentum: 0.9, dampening: 0, weight_decay: 0, nesterov: false";

fn device() -> Device {
    common::f64_device().autodiff()
}

fn spec(experiment: &str, steps: usize, batch: usize) -> Spec {
    config::parse(&common::resolved(experiment, steps, batch)).unwrap()
}

/// Trains `spec` as the binary does into a run file and its tensors file (the reference, as
/// a PyTorch run would be); the run file's path.
fn reference(spec: &Spec, data: &Dataset, fault: Option<&Fault>) -> PathBuf {
    let out = common::scratch_run();
    let block = registry::train(
        Run::new(spec, data, &device()).with_fault(fault),
        Some(&out),
    )
    .unwrap();
    let file = RunFile {
        experiment: spec.name.clone(),
        block,
    };
    std::fs::write(&out, serde_json::to_string(&file).unwrap()).unwrap();
    out
}

/// A safetensors file's tensors (flat, f64) and its metadata.
fn read(path: &Path) -> (BTreeMap<String, Vec<f64>>, BTreeMap<String, String>) {
    let bytes = std::fs::read(path).unwrap();
    let tensors = SafeTensors::deserialize(&bytes).unwrap();
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let meta = header.metadata().clone().unwrap_or_default();
    let values = tensors
        .names()
        .into_iter()
        .map(|k| (k.to_string(), common::values(&tensors.tensor(k).unwrap())))
        .collect();
    (values, meta.into_iter().collect())
}

/// The local mode of `spec` against the run file `run`: the file's tensors, checked for its
/// metadata and keys.
fn run_local(
    spec: &Spec,
    data: &Dataset,
    run: &Path,
    fault: Option<&Fault>,
    names: &[&str],
    steps: &[usize],
) -> BTreeMap<String, Vec<f64>> {
    let out = run.with_file_name("local.safetensors");
    let written =
        registry::local(Run::new(spec, data, &device()).with_fault(fault), run, &out).unwrap();
    assert_eq!(written.steps, steps);
    assert_eq!(written.names, names);
    assert!(!out.with_file_name(".local.safetensors.tmp").exists());
    let (tensors, meta) = read(&out);
    assert_eq!(meta["format"], FORMAT);
    let listed: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
    assert_eq!(meta["steps"], format!("[{}]", listed.join(", ")));
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    assert_eq!(meta["names"], format!("[{}]", quoted.join(", ")));
    assert_eq!(meta.len(), 3);
    assert_eq!(tensors.len(), 2 * steps.len() * names.len());
    tensors
}

/// The largest |a − b|, or infinity for lengths that differ.
fn gap(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    common::max_gap(a, b)
}

/// Every local tensor is the reference's recorded one, to `tol`.
fn equal_to_reference(
    local: &BTreeMap<String, Vec<f64>>,
    reference: &BTreeMap<String, Vec<f64>>,
    tol: f64,
) {
    for (key, values) in local {
        let recorded = &reference[&key.replacen("local/", "layers/", 1)];
        let g = gap(values, recorded);
        assert!(g <= tol, "{key}: {g:e} from the reference's");
        assert!(recorded.iter().all(|x| x.is_finite()));
    }
}

/// The local mode against the trainer's own run at several probe steps (their predecessors
/// recorded), in f64: every output and input gradient the reference's to 1e-12.
fn same_as_reference(experiment: &str, data: &Dataset, names: &[&str], batch: usize) {
    let spec = spec(&format!("{experiment}, probe_steps: [1, 3, 6]"), 6, batch);
    let run = reference(&spec, data, None);
    let local = run_local(&spec, data, &run, None, names, &[1, 3, 6]);
    let (recorded, _) = read(&run.with_extension("safetensors"));
    equal_to_reference(&local, &recorded, 1e-12);
    std::fs::remove_dir_all(run.parent().unwrap()).unwrap();
}

fn cnn1d() -> Dataset {
    common::dataset(common::cnn1d_arrays(common::CONV))
}

const TWO_LAYERS: TransformerSize = common::store::TWO_LAYERS;
const SMALL_GPT: GptSize = common::store::SMALL_GPT;

fn transformer_experiment() -> String {
    let s = TWO_LAYERS;
    format!(
        "{SGD}, model: transformer, model_size: {{d_model: {}, heads: {}, layers: {}, d_ff: {}}}",
        s.d_model, s.heads, s.layers, s.d_ff
    )
}

fn gpt_experiment() -> String {
    let s = SMALL_GPT;
    format!(
        "{SGD}, model: gpt, model_size: {{d_model: {}, heads: {}, layers: {}, d_ff: {}, context: {}, vocab: {}}}",
        s.d_model, s.heads, s.layers, s.d_ff, s.context, s.vocab
    )
}

#[test]
fn cnn1d_layers_on_the_references_inputs_are_the_references() {
    same_as_reference(SGD, &cnn1d(), &["conv", "relu", "fc"], 16);
}

#[test]
fn cnn_bn_layers_in_train_mode_are_the_references() {
    let data = common::dataset(common::cnn_bn_arrays(common::CONV));
    let names = ["conv", "bn", "gelu", "ln", "fc"];
    same_as_reference(&format!("{SGD}, model: cnn_bn"), &data, &names, 16);
}

#[test]
fn residual_transformer_layers_are_the_references() {
    let data = common::dataset(common::transformer_arrays(TWO_LAYERS));
    let names = [
        "embed", "attn.0", "norm1.0", "ff.0", "norm2.0", "attn.1", "norm1.1", "ff.1", "norm2.1",
        "fc",
    ];
    same_as_reference(&transformer_experiment(), &data, &names, 16);
}

#[test]
fn lenet_layers_with_label_smoothing_are_the_references() {
    let data = common::dataset(common::lenet_arrays(common::LENET));
    let names = [
        "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "fc1", "relu3", "fc2",
    ];
    let experiment = format!("{SGD}, model: lenet, label_smoothing: 0.1");
    same_as_reference(&experiment, &data, &names, 12);
}

#[test]
fn gpt_layers_on_token_ids_are_the_references() {
    let data = common::dataset(common::gpt_arrays(SMALL_GPT, common::store::GPT_N));
    let names = [
        "embed", "attn.0", "ff.0", "attn.1", "ff.1", "attn.2", "ff.2", "ln_f", "head",
    ];
    let spec = spec(&format!("{}, probe_steps: [1, 5]", gpt_experiment()), 5, 4);
    let run = reference(&spec, &data, None);
    let local = run_local(&spec, &data, &run, None, &names, &[1, 5]);
    let (recorded, _) = read(&run.with_extension("safetensors"));
    equal_to_reference(&local, &recorded, 1e-12);
    // The embedding's input is token ids: an empty input gradient, as in the record.
    assert!(local["local/1/input_grads/0"].is_empty());
    assert!(!local["local/1/input_grads/1"].is_empty());
    std::fs::remove_dir_all(run.parent().unwrap()).unwrap();
}

/// A layer fault at step 1 on layer `layer` (index k of `names`), element `index` (by default
/// that layer's largest output in the reference): the local
/// output of layer k is the reference's but for ≈ delta there; the local outputs after it
/// stay the reference's (they take its inputs); the faulted run's own recorded outputs
/// after k differ from the reference's (carried).
fn fault_stays_local(
    experiment: &str,
    data: &Dataset,
    names: &[&str],
    layer: &str,
    index: Option<usize>,
    batch: usize,
) {
    let delta = 1e-6;
    let spec = spec(&format!("{experiment}, probe_steps: [1]"), 2, batch);
    let k = names.iter().position(|n| *n == layer).unwrap();
    let run = reference(&spec, data, None);
    let (recorded, _) = read(&run.with_extension("safetensors"));
    // By default the layer's largest output: positive, so a ReLU after it passes the delta on.
    let index = index.unwrap_or_else(|| {
        let out = &recorded[&format!("layers/1/outputs/{k}")];
        (0..out.len())
            .max_by(|&a, &b| out[a].total_cmp(&out[b]))
            .unwrap()
    });
    let fault = Fault::parse(&format!("1:layer:{layer}:{index}:{delta}")).unwrap();
    let local = run_local(&spec, data, &run, Some(&fault), names, &[1]);
    let key = |prefix: &str, field: &str, j: usize| format!("{prefix}/1/{field}/{j}");
    for j in 0..names.len() {
        let (l, r) = (
            &local[&key("local", "outputs", j)],
            &recorded[&key("layers", "outputs", j)],
        );
        if j == k {
            assert!(((l[index] - r[index]) - delta).abs() < 1e-12, "the delta");
            let mut bumped = r.clone();
            bumped[index] = l[index];
            assert!(gap(l, &bumped) <= 1e-12, "only element {index} moved");
        } else {
            assert!(gap(l, r) <= 1e-12, "layer {}: the reference's", names[j]);
        }
    }
    // The faulted run carries the fault through every layer after k.
    let faulted = reference(&spec, data, Some(&fault));
    let (carried, _) = read(&faulted.with_extension("safetensors"));
    let out = |t: &BTreeMap<String, Vec<f64>>, j: usize| t[&key("layers", "outputs", j)].clone();
    assert!(gap(&out(&carried, k), &out(&recorded, k)) > 0.5 * delta);
    for (j, name) in names.iter().enumerate().skip(k + 1) {
        let g = gap(&out(&carried, j), &out(&recorded, j));
        assert!(g > 1e-12, "layer {name}: the fault carried ({g:e})");
    }
    for j in 0..k {
        assert_eq!(out(&carried, j), out(&recorded, j), "before the fault");
    }
    // The run file records the fault.
    let text = std::fs::read_to_string(&faulted).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        file["e"]["meta"]["fault"],
        serde_json::json!({"step": 1, "layer": layer, "index": index, "delta": delta})
    );
    for p in [run, faulted] {
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }
}

#[test]
fn a_cnn1d_layer_fault_stays_in_its_layer_locally_and_carries_in_training() {
    let names = ["conv", "relu", "fc"];
    fault_stays_local(SGD, &cnn1d(), &names, "relu", None, 16);
    fault_stays_local(SGD, &cnn1d(), &names, "conv", None, 16);
    // The last layer's: its logits, into the loss.
    fault_stays_local(SGD, &cnn1d(), &names, "fc", Some(0), 16);
}

#[test]
fn a_transformer_layer_fault_stays_in_its_layer_locally_and_carries_in_training() {
    let data = common::dataset(common::transformer_arrays(TWO_LAYERS));
    let names = [
        "embed", "attn.0", "norm1.0", "ff.0", "norm2.0", "attn.1", "norm1.1", "ff.1", "norm2.1",
        "fc",
    ];
    fault_stays_local(
        &transformer_experiment(),
        &data,
        &names,
        "ff.0",
        Some(5),
        16,
    );
}

#[test]
fn a_lenet_layer_fault_stays_in_its_layer_locally_and_carries_in_training() {
    let data = common::dataset(common::lenet_arrays(common::LENET));
    let names = [
        "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "fc1", "relu3", "fc2",
    ];
    fault_stays_local(
        &format!("{SGD}, model: lenet"),
        &data,
        &names,
        "conv2",
        None,
        12,
    );
}

#[test]
fn a_layer_fault_out_of_range_or_of_another_model_is_refused_on_one_line() {
    let data = cnn1d();
    let spec = spec(SGD, 2, 16);
    let fault = Fault::parse("1:layer:fc:48:1e-6").unwrap();
    let e = registry::train(
        Run::new(&spec, &data, &device()).with_fault(Some(&fault)),
        None,
    )
    .unwrap_err();
    assert!(
        e.contains("index 48 is out of range") && !e.contains('\n'),
        "{e}"
    );
    let fault = Fault::parse("1:layer:gelu:0:1e-6").unwrap();
    let e = registry::train(
        Run::new(&spec, &data, &device()).with_fault(Some(&fault)),
        None,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "PARITY_FAULT: model cnn1d has no layer gelu (it records conv, relu, fc)"
    );
}

/// The local mode's refusal of `spec` against `run`: one line, no file left.
fn refused(spec: &Spec, data: &Dataset, run: &Path, fault: Option<&Fault>) -> String {
    let out = run.with_file_name("refused.safetensors");
    let e =
        registry::local(Run::new(spec, data, &device()).with_fault(fault), run, &out).unwrap_err();
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(!out.exists());
    e
}

#[test]
fn a_parameter_fault_does_not_act_in_the_local_mode() {
    // The local mode starts every probe step from the reference's parameters, so a fault of
    // Burn's parameters (which the reference run here does not carry) leaves it unchanged.
    let data = cnn1d();
    let spec = spec(&format!("{SGD}, probe_steps: [1, 3]"), 4, 16);
    let run = reference(&spec, &data, None);
    let names = ["conv", "relu", "fc"];
    let clean = run_local(&spec, &data, &run, None, &names, &[1, 3]);
    let fault = Fault::parse("1:fc.weight:0:1e-6").unwrap();
    let faulted = run_local(&spec, &data, &run, Some(&fault), &names, &[1, 3]);
    assert_eq!(clean, faulted);
    std::fs::remove_dir_all(run.parent().unwrap()).unwrap();
}

#[test]
fn the_local_mode_refuses_another_run_on_one_line() {
    let data = cnn1d();
    let base = spec(&format!("{SGD}, probe_steps: [1, 3]"), 4, 16);
    let run = reference(&base, &data, None);
    // Another number of steps, batch size, model size or model.
    let e = refused(
        &spec(&format!("{SGD}, probe_steps: [1, 3]"), 5, 16),
        &data,
        &run,
        None,
    );
    assert!(e.contains("a run of steps 4, the spec's is 5"), "{e}");
    let e = refused(
        &spec(&format!("{SGD}, probe_steps: [1, 3]"), 4, 8),
        &data,
        &run,
        None,
    );
    assert!(e.contains("batch_size"), "{e}");
    let other = format!("{SGD}, probe_steps: [1, 3], model_size: {{channels: 3, kernel: 5}}");
    let small = common::dataset(common::cnn1d_arrays(parity_train::models::ConvSize {
        channels: 3,
        kernel: 5,
    }));
    let e = refused(&spec(&other, 4, 16), &small, &run, None);
    assert!(e.contains("model_size"), "{e}");
    let bn = common::dataset(common::cnn_bn_arrays(common::CONV));
    let e = refused(
        &spec(&format!("{SGD}, probe_steps: [1, 3], model: cnn_bn"), 4, 16),
        &bn,
        &run,
        None,
    );
    assert!(
        e.contains(r#"a run of model "cnn1d", the spec's is "cnn_bn""#),
        "{e}"
    );
    // A probe step the run did not record.
    let e = refused(
        &spec(&format!("{SGD}, probe_steps: [1, 4]"), 4, 16),
        &data,
        &run,
        None,
    );
    assert!(e.contains("no layer record of probe step 4"), "{e}");
    // A parameter fault of a parameter the model does not have is refused; one it has does
    // not act here (the parameters are the reference's): see the_local_mode_ignores_….
    let fault = Fault::parse("1:bn.weight:0:1e-6").unwrap();
    let e = refused(&base, &data, &run, Some(&fault));
    assert!(e.contains("bn.weight"), "{e}");
    // A missing run file, then a missing tensors file.
    let e = refused(&base, &data, &run.with_file_name("none.json"), None);
    assert!(e.contains("none.json"), "{e}");
    std::fs::remove_file(run.with_extension("safetensors")).unwrap();
    let e = refused(&base, &data, &run, None);
    assert!(
        e.contains("its tensors file") && e.contains("is missing"),
        "{e}"
    );
    std::fs::remove_dir_all(run.parent().unwrap()).unwrap();
    // A probe step whose predecessor was not recorded.
    let sparse = spec(
        &format!("{SGD}, probe_steps: [1, 3], record_steps: [1, 4]"),
        4,
        16,
    );
    let run = reference(&sparse, &data, None);
    let e = refused(&base, &data, &run, None);
    assert!(
        e.contains("probe step 3's predecessor 2 was not recorded"),
        "{e}"
    );
    std::fs::remove_dir_all(run.parent().unwrap()).unwrap();
}

#[test]
fn the_binary_runs_the_local_mode_and_refuses_with_exit_code_2() {
    let data_arrays = common::cnn1d_arrays(common::CONV);
    let data = common::dataset(data_arrays.clone());
    let text = common::resolved(&format!("{SGD}, probe_steps: [1, 2]"), 3, 16);
    let run = reference(&config::parse(&text).unwrap(), &data, None);
    let dir = run.parent().unwrap();
    let (spec_path, data_path) = (dir.join("spec.json"), dir.join("data.safetensors"));
    std::fs::write(&spec_path, &text).unwrap();
    std::fs::write(&data_path, common::encode(&data_arrays)).unwrap();
    let local = |torch_run: &Path, dtype: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_parity-train"))
            .arg("local")
            .args(["--spec".as_ref(), spec_path.as_os_str()])
            .args(["--data".as_ref(), data_path.as_os_str()])
            .args(["--torch-run".as_ref(), torch_run.as_os_str()])
            .args(["--dtype", dtype])
            .args(["--out".as_ref(), dir.join("local.safetensors").as_os_str()])
            .env_remove("PARITY_FAULT")
            .output()
            .unwrap()
    };
    let ok = local(&run, "f64");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let (tensors, meta) = read(&dir.join("local.safetensors"));
    assert_eq!(meta["steps"], "[1, 2]");
    assert_eq!(tensors.len(), 2 * 2 * 3);
    for (run, dtype, why) in [
        (run.clone(), "f32", "a run in \"F64\", this one is F32"),
        (dir.join("none.json"), "f64", "none.json"),
    ] {
        let refused = local(&run, dtype);
        assert_eq!(refused.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.starts_with("parity-train local: "), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
