//! What a run records: the trajectories' rows at the spec's `record_steps` only, the norms of
//! every parameter and gradient at every step, and nothing per step in a bare run
//! (`parity-train --bare`). Every run here is f64 (this process's device, and the binary's).

use crate::common;
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::measured::Floats;
use parity_train::record::Output;
use parity_train::registry;
use parity_train::run::Run;
use parity_train::runfile::{RunBlock, RunTensors};
use safetensors::SafeTensors;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const STEPS: usize = 6;
const BATCH: usize = 16;
const ADAM: &str = "optimizer: adam, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0";
const SPARSE: [usize; 4] = [1, 2, 5, 6];

fn device() -> burn::tensor::Device {
    common::f64_device().autodiff()
}

fn spec(experiment: &str) -> Spec {
    config::parse(&common::resolved(experiment, STEPS, BATCH)).unwrap()
}

/// The experiments of each model: cnn_bn (with buffers and clipping) and the transformer
/// (packed parameters), with a layer record at step 5 (and 1).
fn experiments() -> [(String, Dataset); 2] {
    [
        (
            format!("{ADAM}, model: cnn_bn, probe_steps: [5], clip_grad: {{norm: 0.05}}"),
            common::dataset(common::cnn_bn_arrays(common::CONV)),
        ),
        (
            format!("{ADAM}, model: transformer, probe_steps: [5]"),
            common::dataset(common::transformer_arrays(common::TRANSFORMER)),
        ),
    ]
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

/// A trajectory's rows, flat, per parameter or buffer (the inline form).
fn rows(block: &RunBlock) -> Vec<(String, Vec<Vec<u64>>)> {
    let RunTensors::Inline { trajectory, .. } = &block.tensors else {
        panic!("an inline run")
    };
    [
        ("params", &trajectory.params),
        ("grads", &trajectory.grads),
        ("buffers", &trajectory.buffers),
    ]
    .into_iter()
    .flat_map(|(kind, named)| {
        named.0.iter().map(move |(name, rows)| {
            let rows = rows.iter().map(|Floats(r)| bits(r)).collect();
            (format!("{kind}/{name}"), rows)
        })
    })
    .collect()
}

/// A run into a tensors file beside a scratch run file: its block and the file's bytes.
fn into_file(spec: &Spec, data: &Dataset) -> (RunBlock, Vec<u8>) {
    let out = common::scratch_run();
    let block = registry::train(Run::new(spec, data, &device()), Some(&out)).unwrap();
    let bytes = std::fs::read(out.with_extension("safetensors")).unwrap();
    std::fs::remove_dir_all(out.parent().unwrap()).unwrap();
    (block, bytes)
}

#[test]
fn record_steps_keep_those_rows_of_an_every_step_run_bit_for_bit() {
    for (experiment, data) in experiments() {
        let every = spec(&experiment);
        let sparse = spec(&format!("{experiment}, record_steps: {SPARSE:?}"));
        assert_eq!(every.record_steps, (1..=STEPS).collect::<Vec<_>>());
        assert_eq!(sparse.record_steps, SPARSE);

        // Inline: one list per recorded step, those of the every-step run.
        let all = registry::train_into(Run::new(&every, &data, &device()), Output::Inline).unwrap();
        let some =
            registry::train_into(Run::new(&sparse, &data, &device()), Output::Inline).unwrap();
        let (all_rows, some_rows) = (rows(&all), rows(&some));
        assert_eq!(
            all_rows.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            some_rows.iter().map(|(k, _)| k).collect::<Vec<_>>()
        );
        for ((key, all), (_, some)) in all_rows.iter().zip(&some_rows) {
            assert_eq!(all.len(), STEPS, "{key}");
            let picked: Vec<&Vec<u64>> = SPARSE.iter().map(|&s| &all[s - 1]).collect();
            assert_eq!(some.iter().collect::<Vec<_>>(), picked, "{key}");
        }
        // Everything else is the same run's: losses, lrs, norms, final state, layer records.
        let (mut all, mut some) = (common::json(all), common::json(some));
        for block in [&mut all, &mut some] {
            block.as_object_mut().unwrap().remove("trajectory");
        }
        assert!(all == some, "{experiment}: only the trajectories differ");

        // Into the file: trajectories of 4 rows, the every-step file's rows 0, 1, 4, 5, byte
        // for byte; every other tensor the same bytes; `tensors.steps` the recorded steps.
        let (all, all_bytes) = into_file(&every, &data);
        let (some, some_bytes) = into_file(&sparse, &data);
        let RunTensors::File { tensors } = &some.tensors else {
            panic!("a tensors file")
        };
        assert_eq!(tensors.steps, SPARSE);
        let RunTensors::File { tensors } = &all.tensors else {
            panic!("a tensors file")
        };
        assert_eq!(tensors.steps, (1..=STEPS).collect::<Vec<_>>());
        let (all_file, some_file) = (
            SafeTensors::deserialize(&all_bytes).unwrap(),
            SafeTensors::deserialize(&some_bytes).unwrap(),
        );
        let mut keys = all_file.names();
        keys.sort();
        let mut some_keys = some_file.names();
        some_keys.sort();
        assert_eq!(keys, some_keys);
        let mut trajectories = 0;
        for key in keys {
            let (a, s) = (
                all_file.tensor(key).unwrap(),
                some_file.tensor(key).unwrap(),
            );
            if key.starts_with("trajectory/") {
                trajectories += 1;
                assert_eq!(a.shape()[0], STEPS, "{key}");
                assert_eq!(s.shape()[0], SPARSE.len(), "{key}");
                assert_eq!(a.shape()[1..], s.shape()[1..], "{key}");
                let width = a.data().len() / STEPS;
                for (i, &step) in SPARSE.iter().enumerate() {
                    assert!(
                        s.data()[i * width..(i + 1) * width]
                            == a.data()[(step - 1) * width..step * width],
                        "{key}: row {i} is step {step}'s"
                    );
                }
            } else {
                assert_eq!(a.shape(), s.shape(), "{key}");
                assert!(a.data() == s.data(), "{key}");
            }
        }
        assert!(trajectories > 0);
        // Read back as the Python side reads it (`attach`), the norms check against the rows.
        let block = common::trained(&sparse, &data, &device(), None).unwrap();
        common::check_norms(&block, &SPARSE);
        assert_eq!(
            block["layers"].as_array().unwrap().len(),
            2,
            "steps 1 and 5"
        );
    }
}

#[test]
fn a_run_recording_no_step_has_trajectories_of_no_row() {
    let data = common::dataset(common::cnn1d_arrays(common::CONV));
    let none = spec(&format!("{ADAM}, record_steps: []"));
    let block = common::trained(&none, &data, &device(), None).unwrap();
    for (name, rows) in block["trajectory"]["params"].as_object().unwrap() {
        assert_eq!(rows, &json!([]), "{name}");
    }
    // The final state and the norms are there all the same.
    common::check_norms(&block, &[]);
    assert_eq!(block["params"].as_object().unwrap().len(), 4);
}

#[test]
fn record_steps_of_no_step_of_the_run_or_out_of_order_are_refused_naming_the_key() {
    for (list, why) in [
        ("[0, 1]", "0 is not a step of 1..=6"),
        ("[1, 7]", "7 is not a step of 1..=6"),
        ("[1, 3, 2]", "2 after 3"),
        ("[1, 2, 2]", "2 after 2"),
    ] {
        let text = common::resolved(&format!("{ADAM}, record_steps: {list}"), STEPS, BATCH);
        let error = config::parse(&text).unwrap_err();
        assert!(
            error.starts_with(&format!("record_steps: {why}")),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }
    // Built by hand past the config's checks, the trainer refuses it too.
    let mut spec = spec(ADAM);
    spec.record_steps = vec![2, 1];
    let data = common::dataset(common::cnn1d_arrays(common::CONV));
    let error = registry::train(Run::new(&spec, &data, &device()), None).unwrap_err();
    assert!(error.starts_with("record_steps [2, 1]"), "{error}");
}

#[test]
fn norms_are_each_tensors_l2_norm_at_every_step() {
    for (experiment, data) in experiments() {
        let spec = spec(&experiment);
        let block = common::json(registry::train(Run::new(&spec, &data, &device()), None).unwrap());
        common::check_norms(&block, &spec.record_steps);
        // The gradients' norms are those before clipping: cnn_bn clips each tensor to 0.05.
        if experiment.contains("clip_grad") {
            let grads = block["norms"]["grads"].as_object().unwrap();
            assert!(
                grads
                    .values()
                    .flat_map(|s| s.as_array().unwrap())
                    .any(|n| common::float(n) > 0.05)
            );
        }
        // The same norms whichever steps are recorded, bit for bit.
        let sparse = config::parse(&common::resolved(
            &format!("{experiment}, record_steps: [3]"),
            STEPS,
            BATCH,
        ))
        .unwrap();
        let sparse =
            common::json(registry::train(Run::new(&sparse, &data, &device()), None).unwrap());
        assert_eq!(block["norms"], sparse["norms"]);
        common::check_norms(&sparse, &[3]);
    }
}

#[test]
fn a_bare_run_records_nothing_per_step_and_trains_the_same() {
    for (experiment, data) in experiments() {
        let spec = spec(&experiment);
        let recorded = registry::train(Run::new(&spec, &data, &device()), None).unwrap();
        let bare = registry::train_into(Run::new(&spec, &data, &device()), Output::Bare).unwrap();
        assert_eq!(bare.tensors, RunTensors::Bare {});
        assert_eq!((bare.norms.as_ref(), bare.layers.len()), (None, 0));
        for (a, b) in [(&recorded.losses, &bare.losses), (&recorded.lrs, &bare.lrs)] {
            assert_eq!(bits(&a.0), bits(&b.0));
        }
        assert_eq!(recorded.r#final, bare.r#final);
        assert_eq!(recorded.meta, bare.meta);
        let json = common::json(bare);
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        keys.sort();
        assert_eq!(keys, ["final", "layers", "losses", "lrs", "meta"]);
    }
}

/// `parity-train` on the spec `spec.json` and dataset `data.safetensors` in `dir`, into `out`.
fn parity_train(dir: &Path, out: &str, bare: bool) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parity-train"));
    command
        .args(["--dtype", "f64", "--spec"])
        .arg(dir.join("spec.json"))
        .arg("--data")
        .arg(dir.join("data.safetensors"))
        .arg("--out")
        .arg(dir.join(out));
    if bare {
        command.arg("--bare");
    }
    command.output().expect("parity-train runs")
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

fn block(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["e"].take()
}

#[test]
fn the_binarys_bare_run_writes_no_tensors_file_and_the_same_losses() {
    let dir = common::scratch_run().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let arrays = common::cnn_bn_arrays(common::CONV);
    std::fs::write(dir.join("data.safetensors"), common::encode(&arrays)).unwrap();
    let experiment = format!("{ADAM}, model: cnn_bn, probe_steps: [5], record_steps: [2, 6]");
    let text = common::resolved(&experiment, STEPS, BATCH);
    std::fs::write(dir.join("spec.json"), text).unwrap();
    let ok = |run: std::process::Output| {
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    };
    ok(parity_train(&dir, "recorded.json", false));
    // A bare run over a recorded one: the older tensors file goes too.
    ok(parity_train(&dir, "bare.json", false));
    assert!(dir.join("bare.safetensors").is_file());
    ok(parity_train(&dir, "bare.json", true));
    assert_eq!(
        listing(&dir),
        [
            "bare.json",
            "data.safetensors",
            "recorded.json",
            "recorded.safetensors",
            "spec.json"
        ]
    );
    let (recorded, bare) = (
        block(&dir.join("recorded.json")),
        block(&dir.join("bare.json")),
    );
    // The recorded run: its norms after its lrs, its tensors file of the recorded steps.
    let text = std::fs::read_to_string(dir.join("recorded.json")).unwrap();
    let fields = [
        "{\"e\":{\"losses\":",
        ",\"lrs\":",
        ",\"norms\":{\"params\":{\"conv.weight\":",
        ",\"final\":",
        ",\"tensors\":",
        ",\"layers\":",
        ",\"meta\":",
    ];
    let at: Vec<usize> = fields.iter().map(|f| text.find(f).expect(f)).collect();
    assert!(at.is_sorted(), "{}", &text[..text.len().min(400)]);
    assert_eq!(recorded["tensors"]["steps"], json!([2, 6]));
    assert_eq!(recorded["layers"].as_array().unwrap().len(), 2);
    let attached = common::attach(recorded.clone(), &dir.join("recorded.json"));
    common::check_norms(&attached, &[2, 6]);
    // The bare run: losses, lrs, final, layers (none) and meta, in that order.
    let text = std::fs::read_to_string(dir.join("bare.json")).unwrap();
    let fields = [
        "{\"e\":{\"losses\":",
        ",\"lrs\":",
        ",\"final\":",
        ",\"layers\":[]",
        ",\"meta\":",
    ];
    let at: Vec<usize> = fields.iter().map(|f| text.find(f).expect(f)).collect();
    assert!(at.is_sorted(), "{}", &text[..text.len().min(400)]);
    let mut keys: Vec<&String> = bare.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["final", "layers", "losses", "lrs", "meta"]);
    let floats = |block: &Value, key: &str| -> Vec<u64> {
        let list = block[key].as_array().unwrap();
        list.iter().map(|x| common::float(x).to_bits()).collect()
    };
    assert_eq!(floats(&bare, "losses").len(), STEPS);
    for key in ["losses", "lrs"] {
        assert_eq!(floats(&bare, key), floats(&recorded, key), "{key}");
    }
    assert_eq!(bare["final"], recorded["final"]);
    // The same meta, but for the provenance's git state (the project may change meanwhile).
    let mut metas = [bare["meta"].clone(), recorded["meta"].clone()];
    for meta in &mut metas {
        meta.as_object_mut().unwrap().remove("git");
    }
    assert_eq!(metas[0], metas[1]);

    // Bad record_steps: refused before any step, on one line naming the key, no file.
    let text = common::resolved(&format!("{ADAM}, record_steps: [3, 3]"), STEPS, BATCH);
    std::fs::write(dir.join("spec.json"), text).unwrap();
    let refused = parity_train(&dir, "refused.json", false);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("record_steps: 3 after 3"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!listing(&dir).iter().any(|f| f.starts_with("refused")));
    std::fs::remove_dir_all(&dir).unwrap();
}
