//! One experiment trained with Burn, from the shared dataset file, on the spec's model.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData, s};

use crate::adam_factors::{burn_adam_factors, burn_adamw_bias_corrections};
use crate::config::Spec;
use crate::dataset::Dataset;
use crate::fault::Fault;
use crate::groups::{Optimizers, burn_shapes};
use crate::models::{self, Cnn1d, CnnBn, Model, ParityModel, Probe, Transformer, tensor};
use crate::optimizers::{Built, Scalars, optimizer};
use crate::record::{Kind, Output, Recorded, Recorder};
use crate::runfile::{AdamFactors, BurnScalars, F64, Final, Floats, Meta, RunBlock};
use crate::schedule;
use crate::tensors::Dtype;
use std::path::Path;

pub fn inputs(data: &Dataset, device: &Device) -> Result<(Tensor<3>, Tensor<1, Int>), String> {
    let (xs, x) = data.f32("x")?;
    let (ys, y) = data.i64("y")?;
    let y = Tensor::from_data(TensorData::new(y.to_vec(), [ys[0]]), device);
    Ok((tensor(x, xs, device), y))
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

/// Trains one experiment on `device` (an autodiff Flex or NdArray device, configured for the
/// dtype), with the spec's model: the run block, without the meta fields the binary adds
/// (`meta.provenance` is None).
/// `fault`: a perturbation injected after one step, for tests only (see fault.rs).
/// `out`: the run file to be. With it, the tensors go to the tensors file beside it as the
/// steps go (record.rs, tensors.rs) and the block names that file (`tensors`); without it
/// (tests), the block holds them inline (`params`, `buffers`, `trajectory`, layer values).
pub fn train(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    out: Option<&Path>,
) -> Result<RunBlock, String> {
    train_into(spec, data, device, fault, out.into())
}

/// [`train`] into `output`: also [`Output::Bare`], a run that records nothing per step (no
/// trajectory, no layer record, no norms): a block of `losses`, `lrs`, `final`, `layers`
/// (`[]`) and `meta` only (no `adam_factors` or `burn_scalars` either).
pub fn train_into(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    output: Output,
) -> Result<RunBlock, String> {
    let block = match spec.model {
        Model::Cnn1d => run_into::<Cnn1d>(spec, data, device, fault, output)?.0,
        Model::CnnBn => run_into::<CnnBn>(spec, data, device, fault, output)?.0,
        Model::Transformer => run_into::<Transformer>(spec, data, device, fault, output)?.0,
    };
    Ok(block)
}

/// The final loss, correct count and predictions on the whole dataset in eval mode:
/// `valid()` (inference behaviour, e.g. running statistics) without autodiff, like
/// `model.eval()` under `torch.no_grad()`.
pub fn evaluate<M: ParityModel>(
    model: &M,
    data: &Dataset,
    device: &Device,
) -> Result<(f64, i64, Vec<i64>), String> {
    let eval = model.valid();
    let inner = device.clone().inner();
    let (x, y) = inputs(data, &inner)?;
    let out = eval.forward(x, &mut Probe::off());
    let loss: f64 = CrossEntropyLossConfig::new()
        .init(&inner)
        .forward(out.clone(), y.clone())
        .into_scalar();
    let predictions = out.argmax(1).squeeze_dim::<1>(1);
    let correct: i64 = predictions.clone().equal(y).int().sum().into_scalar();
    let predictions: Vec<i64> = predictions
        .into_data()
        .convert::<i64>()
        .try_to_vec()
        .expect("int tensor");
    Ok((loss, correct, predictions))
}

/// [`train`] for model `M`; also returns the trained model.
pub fn run<M: ParityModel>(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    out: Option<&Path>,
) -> Result<(RunBlock, M), String> {
    run_into(spec, data, device, fault, out.into())
}

/// [`train_into`] for model `M`; also returns the trained model.
pub fn run_into<M: ParityModel>(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
    output: Output,
) -> Result<(RunBlock, M), String> {
    // The dataset's arrays must be the model's at the spec's size, before anything else.
    let size = spec.model_size;
    let mut model: M = models::build(&size, data, device)?;
    assert_eq!(model.size(), size, "{}: built at the spec's size", M::NAME);
    let (params, buffers) = (M::params(&size), M::buffers(&size));
    if let Some(f) = fault {
        f.check(M::NAME, &params)?;
    }
    let (x, y) = inputs(data, device)?;
    let n = x.dims()[0];
    let batches = n / spec.batch_size;
    if batches == 0 {
        return Err(format!(
            "batch_size {} is larger than the {n} samples",
            spec.batch_size
        ));
    }
    // Burn's refusals of a schedule come before any step.
    let (mut scheduler, schedule_held) = schedule::scheduler(spec)?;
    let ce = CrossEntropyLossConfig::new().init(device);
    let Built {
        optim,
        held,
        clip,
        scalars,
    } = optimizer(&spec.optimizer, &spec.burn_defaults, spec.clip_grad);
    // One Burn optimizer per parameter group, then the experiment's for the rest.
    let mut optims = Optimizers::new(spec, &model, optim)?;
    let mut losses = Vec::with_capacity(spec.steps);
    let mut lrs = Vec::with_capacity(spec.steps);
    let layer_names = M::layers(&size);
    // The values in the run's precision: the device's float dtype.
    let dtype = Dtype::of(x.dtype())?;
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
        let xb = x.clone().slice(s![i..i + spec.batch_size]);
        let yb = y.clone().slice(s![i..i + spec.batch_size]);
        let probed = recorder.probes(step);
        let mut probe = if probed { Probe::on() } else { Probe::off() };
        let loss = ce.forward(model.forward(xb, &mut probe), yb);
        losses.push(loss.clone().into_scalar::<f64>());
        let grads = loss.backward();
        if probed {
            recorder.layer(probe.record(step, &layer_names, &grads)?)?;
        }
        let grads = GradientsParams::from_grads(grads, &model);
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
    let (loss, correct, predictions) = evaluate(&model, data, device)?;
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
            loss: F64(loss),
            correct,
            predictions,
        },
        tensors,
        layers,
        meta: Meta {
            model: M::NAME.to_string(),
            model_size: model.size(),
            layer_hyperparameters: model.layer_hyperparameters(),
            optimizer: spec.optimizer.name().to_string(),
            hyperparameters: held,
            param_groups: optims.meta,
            kept_defaults: spec.burn_defaults.clone(),
            schedule: schedule_held,
            // Burn clips each parameter tensor on its own (module_optimizer.rs:453).
            clip_scope: clip.map(|_| "per parameter tensor"),
            clip_grad: clip,
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
