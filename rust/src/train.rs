//! One experiment trained with Burn, from the shared dataset file, on the spec's model.

use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Int, Tensor};

use crate::adam_factors::{burn_adam_factors, burn_adamw_bias_corrections};
use crate::by_hand;
use crate::config::{self, LossKind};
use crate::config::{BurnFix, ClipGrad};
use crate::dataset::Dataset;
use crate::groups::{Optimizers, burn_shapes};
use crate::loss::{self, Loss};
use crate::measured::{F64, Floats};
use crate::models::{self, ModelInput, ParityModel, Probe};
use crate::optimizers::{Built, Scalars, optimizer};
use crate::record::{Kind, Output, Recorded, Recorder};
use crate::run::Run;
use crate::runfile::{AdamFactors, BurnScalars, Final, Meta, RunBlock};
use crate::schedule;
use crate::tensors::Dtype;
use std::path::Path;

/// The dataset's inputs as the model's input type `I` ([`ModelInput`]: `x` checked for its
/// dtype and rank), and its labels flat ([N], or [N·T] for labels [N, T]), on `device`.
pub fn inputs<I: ModelInput>(
    data: &Dataset,
    device: &Device,
) -> Result<(I, Tensor<1, Int>), String> {
    Ok((I::read(data, device)?, models::labels(data, device)?))
}

/// Per-step series of the f32 scalars of `Scalars`, in the run file's form.
#[derive(Default)]
struct ScalarSeries {
    first: Vec<f64>,
    second: Vec<f64>,
}

impl ScalarSeries {
    fn push(&mut self, scalars: Scalars, time: i32) {
        let (a, b) = match scalars {
            Scalars::Adam {
                beta_1,
                beta_2,
                epsilon,
            } => burn_adam_factors(beta_1, beta_2, epsilon, time),
            Scalars::AdamW { beta_1, beta_2 } => burn_adamw_bias_corrections(beta_1, beta_2, time),
            Scalars::None | Scalars::Empty => return,
        };
        self.first.push(a as f64);
        self.second.push(b as f64);
    }

    /// The run block's `(adam_factors, burn_scalars)`: Adam's, AdamW's, `burn_scalars: {}`
    /// (AdaGrad, RMSProp, Muon), or neither (SGD).
    fn into_block(self, scalars: Scalars) -> (Option<AdamFactors>, Option<BurnScalars>) {
        let (first, second) = (Floats(self.first), Floats(self.second));
        match scalars {
            Scalars::None => (None, None),
            Scalars::Adam { .. } => (
                Some(AdamFactors {
                    combined_factor: first,
                    epsilon_bias_correction2_sqrt: second,
                }),
                None,
            ),
            Scalars::AdamW { .. } => (
                None,
                Some(BurnScalars::AdamW {
                    bias_correction1: first,
                    bias_correction2: second,
                }),
            ),
            Scalars::Empty => (None, Some(BurnScalars::None {})),
        }
    }
}

/// The final loss (unsmoothed), correct count and predictions on the whole dataset in eval
/// mode: [`evaluate_with`] the plain cross-entropy.
pub fn evaluate<M: ParityModel>(
    model: &M,
    data: &Dataset,
    device: &Device,
) -> Result<Evaluated, String> {
    evaluate_with(model, data, device, &CrossEntropyLossConfig::new().into())
}

/// What [`evaluate_with`] finds: the final loss, and for a classifier (cross-entropy) the
/// correct count and the predictions (a regression, mse, has neither).
pub type Evaluated = (f64, Option<i64>, Option<Vec<i64>>);

/// The samples the final evaluation takes at a time (the PyTorch side's `EVAL_CHUNK`,
/// src/torch_burn_parity/training/train_torch.py): the text's 11,973 blocks at once would
/// hold over 1.5 GB of activations.
pub const EVAL_CHUNK: usize = 512;

/// The final loss (`loss`'s), correct count and predictions on the whole dataset in eval
/// mode: `valid()` (inference behaviour, e.g. running statistics) without autodiff, like
/// `model.eval()` under `torch.no_grad()`. Over the forward's rows: a prediction (the argmax
/// of the classes) per sample, or per position for labels [N, T]; none for mse.
///
/// The dataset is taken [`EVAL_CHUNK`] samples at a time, as the PyTorch side's `evaluate`
/// does: per chunk the mean loss (as f64) and its rows (samples · positions). The loss is
/// the chunk's own mean when the dataset is one chunk (sine's 96 samples: the whole
/// dataset's forward, unsliced), else Σ (mean · rows) / Σ rows in f64, summed in chunk
/// order; the correct counts and the predictions are the chunks' in order.
pub fn evaluate_with<M: ParityModel>(
    model: &M,
    data: &Dataset,
    device: &Device,
    loss: &Loss,
) -> Result<Evaluated, String> {
    let eval = model.valid();
    let inner = device.clone().inner();
    let x = M::Input::read(data, &inner)?;
    let y = loss::targets(data, &inner, loss.kind())?;
    let criterion = loss.init(&inner);
    let n = x.samples();
    let per = models::labels_per_sample(data);
    let (mut means, mut rows) = (Vec::new(), Vec::new());
    let (mut correct, mut predictions) = (0i64, Vec::new());
    for start in (0..n).step_by(EVAL_CHUNK) {
        let end = (start + EVAL_CHUNK).min(n);
        let (xc, yc) = if start == 0 && end == n {
            (x.clone(), y.clone())
        } else {
            (x.rows(start..end), y.samples(start, end, per))
        };
        let out = eval.forward(xc, &mut Probe::off());
        rows.push(out.dims()[0]);
        let mean = criterion.forward(out.clone(), &yc, M::NAME)?;
        means.push(mean.into_scalar::<f64>());
        if let loss::Targets::Labels(labels) = yc {
            let predicted = out.argmax(1).squeeze_dim::<1>(1);
            correct += predicted
                .clone()
                .equal(labels)
                .int()
                .sum()
                .into_scalar::<i64>();
            predictions.extend(
                predicted
                    .into_data()
                    .convert::<i64>()
                    .try_to_vec::<i64>()
                    .expect("int tensor"),
            );
        }
    }
    let mean = chunked_mean(&means, &rows);
    Ok(match y {
        loss::Targets::Labels(_) => (mean, Some(correct), Some(predictions)),
        loss::Targets::Values(_) => (mean, None, None),
    })
}

/// The mean over every row of chunks of `rows[c]` rows whose means are `means[c]`: the one
/// chunk's own mean, else Σ (mean · rows) / Σ rows in f64, in chunk order (the PyTorch
/// side's `evaluate`).
pub fn chunked_mean(means: &[f64], rows: &[usize]) -> f64 {
    assert_eq!(means.len(), rows.len(), "a row count per chunk");
    if let [mean] = means {
        return *mean;
    }
    let total: f64 = means.iter().zip(rows).map(|(m, &r)| m * r as f64).sum();
    total / rows.iter().sum::<usize>() as f64
}

/// Trains `run`'s experiment on model `M` (`registry::train` finds `M` by the spec's
/// model): the run block and the trained model.
pub fn run<M: ParityModel>(run: Run, out: Option<&Path>) -> Result<(RunBlock, M), String> {
    run_into(run, out.into())
}

/// [`run`] into `output` (`registry::train_into`).
pub fn run_into<M: ParityModel>(run: Run, output: Output) -> Result<(RunBlock, M), String> {
    let (spec, data, device, fault) = run.parts();
    // The dataset's arrays must be the model's at the spec's size, before anything else.
    let size = &spec.model_size;
    let mut model: M = models::build(size, data, device)?;
    assert_eq!(&model.size(), size, "{}: built at the spec's size", M::NAME);
    let (params, buffers) = (M::params(size), M::buffers(size));
    let layer_names = M::layers(size);
    if let Some(f) = fault {
        f.check(M::NAME, &params, &layer_names)?;
    }
    let x = M::Input::read(data, device)?;
    let y = loss::targets(data, device, spec.loss)?;
    let n = x.samples();
    // Labels per sample: 1 for y [N], T for y [N, T] (flat in `y`).
    let per = models::labels_per_sample(data);
    let batches = n / spec.batch_size;
    if batches == 0 {
        return Err(format!(
            "batch_size {} is larger than the {n} samples",
            spec.batch_size
        ));
    }
    // Burn's refusals of a schedule come before any step.
    let (mut scheduler, schedule_held) = schedule::scheduler(spec)?;
    if spec.applies(BurnFix::PytorchSchedule) {
        // PyTorch's recursion by hand, its lr of each step passed to Burn's step (by_hand.rs).
        scheduler = ModuleLrScheduler::new(by_hand::TorchSchedule::new(spec.schedule, spec.lr()));
    }
    let loss = match spec.loss {
        // Burn's smoothing in f32 replaced by the loss by hand (by_hand.rs).
        LossKind::CrossEntropy
            if spec.label_smoothing > 0.0 && spec.applies(BurnFix::SmoothedTargetsInDtype) =>
        {
            Loss::SmoothedByHand(spec.label_smoothing)
        }
        kind => Loss::of(kind, spec.label_smoothing),
    };
    let criterion = loss.init(device);
    let Built {
        optim,
        held,
        clip,
        scalars,
    } = optimizer(&spec.optimizer, &spec.burn_defaults, spec.attached_clip());
    // The clipping the trainer applies itself, by one norm of all gradients (by_hand.rs).
    let by_hand = match spec.clip_grad {
        Some(ClipGrad::Norm(max)) if spec.applies(BurnFix::ClipByGlobalNorm) => Some(max),
        _ => None,
    };
    // One Burn optimizer per parameter group, then the experiment's for the rest.
    let mut optims = Optimizers::new(spec, &model, optim)?;
    let mut losses = Vec::with_capacity(spec.steps);
    let mut lrs = Vec::with_capacity(spec.steps);
    // The values in the run's precision: the device's float dtype (that of the float
    // inputs; token ids are integers).
    let dtype = Dtype::of(DType::from(device.settings().float_dtype))?;
    let mut recorder = Recorder::new(
        output,
        dtype,
        &params,
        &buffers,
        spec.steps,
        &spec.record_steps,
        &spec.probe_steps,
        layer_names.len(),
    )?;
    let norms = recorder.keeps_norms();
    let mut series = ScalarSeries::default();
    for step in 1..=spec.steps {
        // As Burn's Learner: one scheduler step per iteration, before the optimizer step,
        // whose result that step uses (the first call gives the initial lr).
        let lr = scheduler.step();
        lrs.push(lr.base());
        let i = ((step - 1) % batches) * spec.batch_size; // no shuffling: the batches in rotation
        let xb = x.rows(i..i + spec.batch_size);
        let yb = y.samples(i, i + spec.batch_size, per);
        let probed = recorder.probes(step);
        let probe = if probed { Probe::on() } else { Probe::off() };
        // A layer fault of this step: its delta added to the layer's output in the forward.
        let mut probe = probe.perturbing(fault.and_then(|f| f.perturb(step, &layer_names)));
        let out = model.forward(xb, &mut probe);
        if let Some(e) = probe.failure() {
            return Err(format!("{}: {e}", crate::fault::VARIABLE));
        }
        let step_loss = criterion.forward(out, &yb, M::NAME)?;
        losses.push(step_loss.clone().into_scalar::<f64>());
        let grads = step_loss.backward();
        if probed {
            recorder.layer(probe.record(step, &layer_names, &grads)?)?;
        }
        let mut grads = GradientsParams::from_grads(grads, &model);
        if let Some(max) = by_hand {
            grads = by_hand::clip_by_global_norm(&model, grads, max);
        }
        // Read back from the device only what is recorded: the norms at every step, the
        // tensors at the recorded steps.
        let recorded = recorder.records(step);
        if norms {
            recorder.norms(Kind::Grads, models::grad_norms(&model, &grads));
        }
        if recorded {
            for (k, g) in models::grad_values(&model, &grads).into_iter().enumerate() {
                recorder.row(Kind::Grads, k, step, g)?;
            }
        }
        model = optims.step(&lr, model, grads);
        if let Some(f) = fault.filter(|f| f.step == step) {
            model = f.apply(model)?;
        }
        if norms {
            recorder.norms(Kind::Params, models::param_norms(&model));
        }
        if recorded {
            for (k, p) in models::param_values(&model).into_iter().enumerate() {
                recorder.row(Kind::Params, k, step, p)?;
            }
            for (k, b) in models::buffer_values(&model).into_iter().enumerate() {
                recorder.row(Kind::Buffers, k, step, b)?;
            }
        }
        series.push(scalars, step as i32);
    }
    let (final_loss, correct, predictions) = evaluate_with(&model, data, device, &loss)?;
    let bare = output == Output::Bare;
    let (final_params, final_buffers) = if bare {
        (Vec::new(), Vec::new())
    } else {
        (models::param_values(&model), models::buffer_values(&model))
    };
    let Recorded {
        tensors,
        layers,
        norms,
    } = recorder.finish(final_params, final_buffers)?;
    let (adam_factors, burn_scalars) = if bare {
        (None, None)
    } else {
        series.into_block(scalars)
    };
    let block = RunBlock {
        losses: Floats(losses),
        lrs: Floats(lrs),
        norms,
        r#final: Final {
            loss: F64(final_loss),
            correct,
            predictions,
        },
        tensors,
        layers,
        meta: Meta {
            // A port's own name (the spec's `port.name`), a built-in model's NAME.
            model: spec
                .port
                .as_ref()
                .map_or_else(|| M::NAME.to_string(), |p| p.name.clone()),
            model_size: model.size(),
            data: spec.data.name().to_string(),
            layer_hyperparameters: config::with_gelu_backward(
                model.layer_hyperparameters(),
                spec.backend,
            ),
            loss: criterion.meta(),
            optimizer: spec.optimizer.name().to_string(),
            hyperparameters: held,
            param_groups: optims.meta,
            kept_defaults: spec.burn_defaults.clone(),
            schedule: schedule_held,
            // Burn clips each parameter tensor on its own (module_optimizer.rs:453).
            clip_scope: match by_hand {
                Some(_) => Some(by_hand::GLOBAL_SCOPE),
                None => clip.map(|_| "per parameter tensor"),
            },
            clip_grad: by_hand.map_or(clip, |_| spec.clip_grad),
            burn_fixes: spec.burn_fixes.clone(),
            lr_scales: optims.lr_scales,
            steps: spec.steps,
            batch_size: spec.batch_size,
            threads: spec.threads,
            input_sha256: data.sha256().to_string(),
            burn_shapes: burn_shapes(&model),
            fault: fault.cloned(),
            provenance: None,
        },
        adam_factors,
        burn_scalars,
    };
    Ok((block, model))
}
