//! The run's tensors file (src/tensors.rs, src/record.rs; the Python side's
//! io/run_tensors.py): what a run writes beside its run file, read back with the
//! `safetensors` crate's reader (which validates the header and every tensor's offsets) and
//! compared with what the trainer held.
//!
//! This process's Flex device is left at its default precision, F32 (no test here configures
//! it): the runs of the other test files (through `common::trained`) and the binary's run
//! below are f64.

#[path = "suite/common/mod.rs"]
mod common;
use burn::tensor::Device;
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::fault::Fault;
use parity_train::models::{self, Cnn1d, CnnBn, ParityModel, Transformer};
use parity_train::registry;
use parity_train::run::Run;
use parity_train::runfile::{RunTensors, TensorsFile};
use parity_train::train;
use safetensors::SafeTensors;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const STEPS: usize = 3;
const BATCH: usize = 16;
const ADAM: &str = "optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0";

fn device() -> Device {
    Device::flex().autodiff()
}

/// `experiment` with layer records at steps 1 and 3.
fn spec(experiment: &str) -> Spec {
    let experiment = format!("{experiment}, probe_steps: [3]");
    config::parse(&common::resolved(&experiment, STEPS, BATCH)).unwrap()
}

/// The names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A run of model `M` into a tensors file: the file holds exactly the run's keys, in the
/// run's dtype, PyTorch's shapes and the Python writer's order, and the values the trainer
/// held: the model's after the run, and every row and layer record the same run without a
/// file keeps inline.
fn writes_what_it_held<M: ParityModel>(experiment: &str, data: &Dataset) {
    let spec = spec(experiment);
    let out = common::scratch_run();
    let dir = out.parent().unwrap();
    let (block, model) = train::run::<M>(Run::new(&spec, data, &device()), Some(&out)).unwrap();
    // The tensors file only: no temporary file left (the run file is the binary's to write).
    assert_eq!(listing(dir), ["run.safetensors"]);
    let bytes = std::fs::read(dir.join("run.safetensors")).unwrap();
    let RunTensors::File { tensors } = &block.tensors else {
        panic!("a run with a run file keeps no tensor inline")
    };
    let want = TensorsFile {
        file: "run.safetensors".into(),
        dtype: "F32",
        steps: vec![1, 2, 3],
        bytes: bytes.len() as u64,
    };
    assert_eq!(tensors, &want);
    assert!(block.layers.iter().all(|r| r.values.is_none()));
    let file = SafeTensors::deserialize(&bytes).expect("a valid safetensors file");

    // The keys, in the data's order (the Python writer's), and each one's shape.
    let size = &spec.model_size;
    let (params, buffers) = (M::params(size), M::buffers(size));
    let (inline, _) = train::run::<M>(Run::new(&spec, data, &device()), None).unwrap();
    let mut want: Vec<(String, Vec<usize>)> = Vec::new();
    for (prefix, entries) in [("params", &params), ("buffers", &buffers)] {
        want.extend(
            entries
                .iter()
                .map(|e| (format!("{prefix}/{}", e.name), e.shape.clone())),
        );
    }
    for (kind, entries) in [
        ("params", &params),
        ("grads", &params),
        ("buffers", &buffers),
    ] {
        want.extend(entries.iter().map(|e| {
            let shape = [vec![STEPS], e.shape.clone()].concat();
            (format!("trajectory/{kind}/{}", e.name), shape)
        }));
    }
    assert_eq!(inline.layers.len(), 2, "probe steps 1 and 3");
    for record in &inline.layers {
        let values = record.values.as_ref().unwrap();
        for (field, lists) in [
            ("outputs", &values.outputs),
            ("input_grads", &values.input_grads),
        ] {
            assert_eq!(lists.len(), M::layers(size).len());
            want.extend(lists.iter().enumerate().map(|(k, list)| {
                (
                    format!("layers/{}/{field}/{k}", record.step),
                    vec![list.0.len()],
                )
            }));
        }
    }
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let keys: Vec<&String> = want.iter().map(|(k, _)| k).collect();
    assert_eq!(header.offset_keys().iter().collect::<Vec<_>>(), keys);
    for (key, shape) in &want {
        let view = file.tensor(key).unwrap();
        assert_eq!(
            (view.dtype(), view.shape()),
            (safetensors::Dtype::F32, &shape[..]),
            "{key}"
        );
    }

    // The values: the model's after the run, bit for bit; a trajectory's last row is them.
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let state = [
        ("params", &params, models::param_values(&model)),
        ("buffers", &buffers, models::buffer_values(&model)),
    ];
    for (prefix, entries, held) in state {
        for (e, held) in entries.iter().zip(held) {
            let last = common::values(&file.tensor(&format!("{prefix}/{}", e.name)).unwrap());
            assert_eq!(bits(&last), bits(&held), "{prefix}/{}", e.name);
            let rows = common::values(
                &file
                    .tensor(&format!("trajectory/{prefix}/{}", e.name))
                    .unwrap(),
            );
            assert_eq!(
                bits(&rows[rows.len() - held.len()..]),
                bits(&held),
                "{}",
                e.name
            );
        }
    }
    // Everything else: as the same run holds it inline (each row, each layer record).
    let attached = common::attach(common::json(block), &out);
    // The norms of this f32 run: summed in f64 from its values (an f32 sum would miss 1e-12).
    common::check_norms(&attached, &[1, 2, 3]);
    assert!(
        attached == common::json(inline),
        "{experiment}: the file and the inline run differ"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn each_model_writes_its_tensors_file_row_by_row() {
    let conv = common::CONV;
    writes_what_it_held::<Cnn1d>(ADAM, &common::dataset(common::cnn1d_arrays(conv)));
    let cnn_bn = common::dataset(common::cnn_bn_arrays(conv));
    writes_what_it_held::<CnnBn>(&format!("{ADAM}, model: cnn_bn"), &cnn_bn);
    let transformer = common::dataset(common::transformer_arrays(common::TRANSFORMER));
    writes_what_it_held::<Transformer>(&format!("{ADAM}, model: transformer"), &transformer);
}

#[test]
fn a_run_failing_after_its_first_steps_leaves_no_tensors_file() {
    let out = common::scratch_run();
    let data = common::dataset(common::cnn1d_arrays(common::CONV));
    // An index past fc.weight's elements: refused when it is applied, after step 2.
    let fault = Fault::parse("2:fc.weight:100000:0.25").unwrap();
    let err = registry::train(
        Run::new(&spec(ADAM), &data, &device()).with_fault(Some(&fault)),
        Some(&out),
    )
    .unwrap_err();
    assert!(err.contains("out of range"), "{err}");
    let dir = out.parent().unwrap();
    assert_eq!(listing(dir), Vec::<String>::new());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_binary_writes_its_run_file_with_the_tensors_file_beside_it() {
    let out = common::scratch_run();
    let dir = out.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let data = common::encode(&common::cnn_bn_arrays(common::CONV));
    std::fs::write(dir.join("cnn_bn.safetensors"), data).unwrap();
    let experiment = format!("{ADAM}, model: cnn_bn, probe_steps: [3]");
    std::fs::write(
        dir.join("spec.json"),
        common::resolved(&experiment, STEPS, BATCH),
    )
    .unwrap();
    let train = |out: &str, fault: &str| {
        Command::new(env!("CARGO_BIN_EXE_parity-train"))
            .args(["--dtype", "f64", "--spec"])
            .arg(dir.join("spec.json"))
            .arg("--data")
            .arg(dir.join("cnn_bn.safetensors"))
            .arg("--out")
            .arg(dir.join(out))
            .env(parity_train::fault::VARIABLE, fault)
            .output()
            .expect("parity-train runs")
    };
    let run = train("burn-f64.json", "");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(dir.join("burn-f64.json")).unwrap();
    // The Python side's order: losses, lrs, norms, final, tensors, layers, meta.
    let fields = [
        "{\"e\":{\"losses\":",
        ",\"lrs\":",
        ",\"norms\":",
        ",\"final\":",
        ",\"tensors\":",
        ",\"layers\":",
        ",\"meta\":",
    ];
    let at: Vec<usize> = fields.iter().map(|f| text.find(f).expect(f)).collect();
    assert!(at.is_sorted(), "{}", &text[..text.len().min(400)]);
    let block = serde_json::from_str::<Value>(&text).unwrap()["e"].take();
    let bytes = std::fs::metadata(dir.join("burn-f64.safetensors"))
        .unwrap()
        .len();
    let want =
        json!({"file": "burn-f64.safetensors", "dtype": "F64", "steps": [1, 2, 3], "bytes": bytes});
    assert_eq!(block["tensors"], want);
    assert_eq!(
        block["layers"],
        json!([{"step": 1, "names": ["conv", "bn", "gelu", "ln", "fc"]},
                                       {"step": 3, "names": ["conv", "bn", "gelu", "ln", "fc"]}])
    );
    // Read back (every tensor F64, the keys those of the block): the last rows are the final values.
    let block = common::attach(block, &dir.join("burn-f64.json"));
    for kind in ["params", "buffers"] {
        for (name, last) in block[kind].as_object().unwrap() {
            assert_eq!(block["trajectory"][kind][name][STEPS - 1], *last, "{name}");
        }
    }
    assert_eq!(block["buffers"].as_object().unwrap().len(), 2);
    // A run that fails after step 2 leaves neither file, nor a temporary one.
    let failed = train("failed.json", "2:fc.weight:100000:0.25");
    assert!(!failed.status.success());
    let files = [
        "burn-f64.json",
        "burn-f64.safetensors",
        "cnn_bn.safetensors",
        "spec.json",
    ];
    assert_eq!(listing(dir), files);
    std::fs::remove_dir_all(dir).unwrap();
}
