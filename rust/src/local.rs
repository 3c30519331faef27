//! The local mode (PaDiff's single-step mode): each Burn layer run on PyTorch's recorded
//! input to that layer (forward) and PyTorch's recorded gradient at its output (backward),
//! so that a difference shows where it is *introduced*, not where it has piled up.
//!
//! For each probe step s of the spec (those of 1..=steps), with the model built from the
//! dataset and its parameters and buffers set to the PyTorch run's after step s − 1 (its
//! trajectory's row of step s − 1; at s = 1 the dataset's initial values), on the batch of
//! step s (the trainer's rotation) in train mode (an autodiff device: BatchNorm takes the
//! batch's statistics):
//!
//! * Burn's own forward of the batch once, for each layer's output shape;
//! * for each layer k, input = PyTorch's recorded output of layer k − 1 (layer 0: the batch)
//!   in the shape Burn's output k − 1 has (the flat orders are the same, as the layer record
//!   assumes), as a fresh autodiff leaf (not token ids);
//! * `local/{s}/outputs/{k}`: stage k of that input (with a layer fault's delta if the
//!   fault is of layer k at step s: Burn's layer is then the wrong one);
//! * `local/{s}/input_grads/{k}`: the gradient with respect to that input of Σ out_k ⊙ g, g
//!   PyTorch's recorded gradient at layer k's output (its `input_grads` of layer k + 1); for
//!   the last layer, of the run's loss (the spec's cross-entropy, train.rs) of out_k against
//!   the batch's labels. Empty ([0]) for token ids.
//!
//! The file is a safetensors file in the run's dtype, written atomically (tensors.rs), its
//! tensors flat, for each step its outputs then its input gradients, and `__metadata__`
//! {"format": [`FORMAT`], "steps": "[1, 100]", "names": "[\"conv\", ...]"} (JSON texts).

use std::path::Path;

use burn::tensor::{DType, Device, Tensor, TensorData, s};
use serde_json::Value;

use crate::config::LossKind;
use crate::config::Spec;
use crate::dataset::Dataset;
use crate::models::{self, Act, ModelInput, ParityModel};
use crate::run::Run;
use crate::tensors::{Dtype, TensorReader, TensorWriter};
use crate::train;

/// The local file's `__metadata__.format`.
pub const FORMAT: &str = "torch-burn-parity local layers";

/// What [`local`] wrote: the probe steps, the layers' names, the file's size.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub steps: Vec<usize>,
    pub names: Vec<String>,
    pub bytes: u64,
}

/// A JSON list as `[1, 100]` / `["conv", "relu"]` (Python's `json.dumps` spacing).
fn json_list(items: impl IntoIterator<Item = Value>) -> String {
    let items: Vec<String> = items.into_iter().map(|v| v.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// The reference run: its block, checked against the spec, and its open tensors file.
pub(crate) struct Reference {
    tensors: TensorReader,
    /// The recorded steps (the trajectories' rows).
    steps: Vec<usize>,
}

impl Reference {
    /// The PyTorch run at `path` of model `model` (a built-in model's name, or a port's),
    /// checked against the spec: its model, size, steps, batch, dtype, and a layer record
    /// of each probe step with the layers `names`, whose predecessor's state it recorded.
    pub(crate) fn open(
        spec: &Spec,
        path: &Path,
        dtype: Dtype,
        model: &str,
        names: &[String],
    ) -> Result<Self, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let file: Value =
            serde_json::from_str(&text).map_err(|e| format!("{shown}: not JSON ({e})"))?;
        let block = match file.as_object() {
            Some(map) if map.len() == 1 => map.values().next().expect("one"),
            _ => return Err(format!("{shown}: not a run file (one experiment's block)")),
        };
        let meta = &block["meta"];
        let size = serde_json::to_value(&spec.model_size).expect("a size serialises");
        for (key, want) in [
            ("model", Value::from(model)),
            ("model_size", size),
            ("steps", Value::from(spec.steps)),
            ("batch_size", Value::from(spec.batch_size)),
        ] {
            if meta[key] != want {
                return Err(format!(
                    "{shown}: a run of {key} {}, the spec's is {want}",
                    meta[key]
                ));
            }
        }
        let tensors = &block["tensors"];
        let Some(name) = tensors["file"].as_str() else {
            return Err(format!("{shown}: the run names no tensors file"));
        };
        if tensors["dtype"].as_str() != Some(dtype.name()) {
            return Err(format!(
                "{shown}: a run in {}, this one is {}",
                tensors["dtype"],
                dtype.name()
            ));
        }
        let steps: Vec<usize> = serde_json::from_value(tensors["steps"].clone())
            .map_err(|_| format!("{shown}: tensors.steps is not a list of steps"))?;
        let tensors_path = path.with_file_name(name);
        if !tensors_path.is_file() {
            return Err(format!(
                "{shown}: its tensors file {} is missing",
                tensors_path.display()
            ));
        }
        let reader = TensorReader::open(&tensors_path)?;
        if let Some(bytes) = tensors["bytes"].as_u64()
            && bytes != reader.size()
        {
            return Err(format!(
                "{}: {} bytes, the run file says {bytes}",
                tensors_path.display(),
                reader.size()
            ));
        }
        // The layer records' steps and names.
        let recorded: Vec<usize> = block["layers"]
            .as_array()
            .map(|records| {
                records
                    .iter()
                    .filter(|r| r["names"] == serde_json::json!(names))
                    .filter_map(|r| r["step"].as_u64().map(|s| s as usize))
                    .collect()
            })
            .unwrap_or_default();
        for step in probe_steps(spec) {
            if !recorded.contains(&step) {
                return Err(format!(
                    "{shown}: no layer record of probe step {step} (with the layers {})",
                    names.join(", ")
                ));
            }
            if step > 1 && !steps.contains(&(step - 1)) {
                return Err(format!(
                    "{shown}: probe step {step}'s predecessor {} was not recorded (recorded steps: {} of them)",
                    step - 1,
                    steps.len()
                ));
            }
        }
        Ok(Reference {
            tensors: reader,
            steps,
        })
    }

    /// Each parameter (`kind` "params") or buffer ("buffers") after 1-based `step`, flat.
    pub(crate) fn row(
        &mut self,
        kind: &str,
        names: &[String],
        step: usize,
    ) -> Result<Vec<Vec<f64>>, String> {
        let row = self
            .steps
            .iter()
            .position(|&s| s == step)
            .ok_or_else(|| format!("step {step} was not recorded"))?;
        names
            .iter()
            .map(|n| {
                self.tensors
                    .read_row(&format!("trajectory/{kind}/{n}"), row)
            })
            .collect()
    }

    /// Model `M` as the reference run held it before `step`: built from the dataset, its
    /// parameters and buffers set to the run's after step − 1 (at step 1, the dataset's).
    pub(crate) fn model_at<M: ParityModel>(
        &mut self,
        spec: &Spec,
        data: &Dataset,
        device: &Device,
        step: usize,
    ) -> Result<M, String> {
        let size = &spec.model_size;
        let mut model: M = models::build(size, data, device)?;
        if step > 1 {
            let (params, buffers) = (M::params(size), M::buffers(size));
            let names = |entries: &[models::Entry]| -> Vec<String> {
                entries.iter().map(|e| e.name.clone()).collect()
            };
            let values = self.row("params", &names(&params), step - 1)?;
            model = models::set_params(model, &values)?;
            let values = self.row("buffers", &names(&buffers), step - 1)?;
            let tensors = values.into_iter().zip(&buffers).map(|(v, e)| {
                let n = v.len();
                e.layout
                    .convert(Tensor::from_data(TensorData::new(v, [n]), device))
            });
            model.set_buffers(tensors.collect());
        }
        Ok(model)
    }

    /// Layer `k`'s recorded `field` (outputs, input_grads; a port's inputs, output_grads)
    /// at `step`.
    pub(crate) fn layer(&mut self, step: usize, field: &str, k: usize) -> Result<Vec<f64>, String> {
        self.tensors.read(&format!("layers/{step}/{field}/{k}"))
    }
}

/// The spec's probe steps within 1..=steps, sorted, without repeats (as the recorder takes
/// them).
pub(crate) fn probe_steps(spec: &Spec) -> Vec<usize> {
    let mut steps: Vec<usize> = spec
        .probe_steps
        .iter()
        .copied()
        .filter(|s| (1..=spec.steps).contains(s))
        .collect();
    steps.sort_unstable();
    steps.dedup();
    steps
}

/// [`local`] for model `M`.
pub(crate) fn local_for<M: ParityModel>(
    run: Run,
    torch_run: &Path,
    out: &Path,
) -> Result<Written, String> {
    let (spec, data, device, fault) = run.parts();
    // The last layer's input gradient is the cross-entropy's (mse: a port's only, and a
    // port has no stages to run here).
    if spec.loss != LossKind::CrossEntropy {
        return Err(format!(
            "the local mode runs the cross-entropy only (loss {})",
            spec.loss.name()
        ));
    }
    let size = &spec.model_size;
    let params = M::params(size);
    let names = M::layers(size);
    if let Some(f) = fault {
        f.check(M::NAME, &params, &names)?;
    }
    // A parameter fault perturbs Burn's parameters after a step; here every step starts from
    // the reference run's parameters, so it has nothing to perturb: only a layer fault acts.
    let fault = fault.filter(|f| f.layer().is_some());
    let dtype = Dtype::of(DType::from(device.settings().float_dtype))?;
    let mut reference = Reference::open(spec, torch_run, dtype, M::NAME, &names)?;
    let (x, y) = train::inputs::<M::Input>(data, device)?;
    let per = models::labels_per_sample(data);
    let batches = x.samples() / spec.batch_size;
    if batches == 0 {
        return Err(format!(
            "batch_size {} is larger than the {} samples",
            spec.batch_size,
            x.samples()
        ));
    }
    let ce = crate::loss::loss_config(spec.label_smoothing).init(device);
    let steps = probe_steps(spec);
    let last = names.len() - 1;
    let mut tensors: Vec<(String, Vec<f64>)> = Vec::new();
    for &step in &steps {
        let model: M = reference.model_at(spec, data, device, step)?;
        // The batch of the step, as the trainer takes it (no shuffling: in rotation).
        let i = ((step - 1) % batches) * spec.batch_size;
        let xb = x.rows(i..i + spec.batch_size);
        let yb = y.clone().slice(s![i * per..(i + spec.batch_size) * per]);
        // Burn's own forward, for each layer's output shape.
        let mut dims = Vec::with_capacity(names.len());
        let mut h: Act = xb.clone().into();
        for k in 0..names.len() {
            h = model.stage(k, h);
            dims.push(h.dims());
        }
        let perturb = fault.and_then(|f| f.perturb(step, &names));
        let (mut outputs, mut input_grads) = (Vec::new(), Vec::new());
        for (k, name) in names.iter().enumerate() {
            let input: Act = if k == 0 {
                xb.clone().into()
            } else {
                let values = reference.layer(step, "outputs", k - 1)?;
                Act::from_values(&values, &dims[k - 1], device).map_err(|e| {
                    format!(
                        "step {step}: the reference's output of layer {}: {e} (Burn's output)",
                        names[k - 1]
                    )
                })?
            };
            let tokens = input.is_tokens();
            let input = input.require_grad();
            let mut out = model.stage(k, input.clone());
            if let Some(p) = perturb {
                out = p
                    .apply(k, out)
                    .map_err(|e| format!("{}: {e}", crate::fault::VARIABLE))?;
            }
            outputs.push(out.clone().values());
            if tokens {
                input_grads.push(Vec::new());
                continue;
            }
            let scalar = if k == last {
                let logits = out.r2();
                let rows = logits.dims()[0];
                if rows != yb.dims()[0] {
                    return Err(format!(
                        "model {}: the forward gives {rows} rows of classes where the labels are {}",
                        M::NAME,
                        yb.dims()[0]
                    ));
                }
                ce.forward(logits, yb.clone())
            } else {
                let g = reference.layer(step, "input_grads", k + 1)?;
                out.weighted_sum(&g).map_err(|e| {
                    format!(
                        "step {step}: the reference's input gradient of layer {}: {e} (layer {name}'s, Burn's)",
                        names[k + 1]
                    )
                })?
            };
            let grads = scalar.backward();
            let grad = input
                .grad(&grads)
                .ok_or_else(|| format!("step {step}: no gradient for the input of layer {name}"))?;
            input_grads.push(grad);
        }
        for (field, lists) in [("outputs", outputs), ("input_grads", input_grads)] {
            for (k, list) in lists.into_iter().enumerate() {
                tensors.push((format!("local/{step}/{field}/{k}"), list));
            }
        }
    }
    write(out, dtype, steps, names, &tensors)
}

/// The local file: `tensors` (`local/{step}/{outputs,input_grads}/{k}`, flat) in `dtype`,
/// with the probe steps and the layers' names as metadata, written atomically.
pub(crate) fn write(
    out: &Path,
    dtype: Dtype,
    steps: Vec<usize>,
    names: Vec<String>,
    tensors: &[(String, Vec<f64>)],
) -> Result<Written, String> {
    let declared: Vec<(String, Vec<usize>)> = tensors
        .iter()
        .map(|(key, v)| (key.clone(), vec![v.len()]))
        .collect();
    let metadata = [
        ("format".to_string(), FORMAT.to_string()),
        (
            "steps".to_string(),
            json_list(steps.iter().map(|&s| Value::from(s))),
        ),
        (
            "names".to_string(),
            json_list(names.iter().map(|n| Value::from(n.as_str()))),
        ),
    ];
    let mut writer = TensorWriter::create_with(out, &declared, dtype, &[], &metadata)?;
    for (key, values) in tensors {
        writer.write(key, values)?;
    }
    let bytes = writer.close()?;
    Ok(Written {
        steps,
        names,
        bytes,
    })
}
