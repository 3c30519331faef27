//! One experiment trained with Burn, from the shared dataset file, on the spec's model.

use burn::grad_clipping::GradientClippingConfig;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{
    AdaGradConfig, AdamConfig, AdamWConfig, GradientsParams, ModuleOptimizer, RmsPropConfig,
    SgdConfig,
};
use burn::tensor::{Device, Int, Tensor, TensorData, s};
use serde_json::{Map, Value, json};

use crate::adam_factors::{burn_adam_factors, burn_adamw_bias_corrections};
use crate::config::{ClipGrad, Optimizer, Spec};
use crate::dataset::Dataset;
use crate::fault::Fault;
use crate::models::{self, Cnn1d, CnnBn, Entry, Model, ParityModel, Probe, Transformer, tensor};
use crate::runfile::{float, floats};
use crate::schedule;

pub fn inputs(data: &Dataset, device: &Device) -> Result<(Tensor<3>, Tensor<1, Int>), String> {
    let (xs, x) = data.f32("x")?;
    let (ys, y) = data.i64("y")?;
    let y = Tensor::from_data(TensorData::new(y.to_vec(), [ys[0]]), device);
    Ok((tensor(x, xs, device), y))
}

/// What the run records per step besides parameters and gradients: the scalars Burn
/// computes in f32 inside its update (see adam_factors.rs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalars {
    /// SGD: nothing.
    None,
    /// Adam: `adam_factors` (combined factor and ε·sqrt(1 − β₂^t)).
    Adam {
        beta_1: f32,
        beta_2: f32,
        epsilon: f32,
    },
    /// AdamW: `burn_scalars.{bias_correction1, bias_correction2}`.
    AdamW { beta_1: f32, beta_2: f32 },
    /// AdaGrad and RMSProp: `burn_scalars` is empty; their per-step scalars are f64
    /// (AdaGrad's lr / (1 + (t − 1)·lr_decay), adagrad.rs:134) or constants.
    Empty,
}

/// A Burn optimizer built from a spec, with what the run file records about it.
pub struct Built {
    pub optim: ModuleOptimizer,
    /// `meta.hyperparameters`: every hyperparameter of the optimizer as Burn holds it.
    pub held: Value,
    /// `meta.clip_grad`: the clipping Burn's config holds, or null.
    pub clip: Value,
    pub scalars: Scalars,
}

/// An f32 field of a Burn config as it is applied to an f64 tensor: exactly widened.
fn f32_held(x: f64) -> f64 {
    x as f32 as f64
}

/// An f32 field read back from a config's serde form (serde_json writes the f32's shortest
/// form, so widen it again).
fn stored_f32(stored: &Value, key: &str) -> f64 {
    f32_held(stored[key].as_f64().expect("f32 field"))
}

/// The penalty of an `Option<WeightDecayConfig>` field (f32), 0 when absent.
fn stored_penalty(stored: &Value) -> f64 {
    stored["weight_decay"]["penalty"]
        .as_f64()
        .map_or(0.0, f32_held)
}

/// Burn's clipping for the spec: a threshold stored as f32 (grad_clipping/base.rs:10–16).
fn clipping(spec: &Spec) -> Option<GradientClippingConfig> {
    spec.clip_grad.map(|clip| match clip {
        ClipGrad::Norm(x) => GradientClippingConfig::Norm(x as f32),
        ClipGrad::Value(x) => GradientClippingConfig::Value(x as f32),
    })
}

/// `meta.clip_grad` from a config's serde form (`{"Norm": x}` / `{"Value": x}` / null).
fn clip_held(stored: &Value) -> Value {
    match stored.as_object().and_then(|o| o.iter().next()) {
        Some((kind, x)) => json!({kind.to_lowercase(): f32_held(x.as_f64().expect("f32"))}),
        None => Value::Null,
    }
}

fn sgd(spec: &Spec) -> Built {
    let Optimizer::Sgd {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
    } = spec.optimizer
    else {
        unreachable!("an SGD spec")
    };
    let mut config = SgdConfig::new().with_gradient_clipping(clipping(spec));
    if weight_decay != 0.0 && !spec.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    // Burn's SGD has momentum only when given a MomentumConfig (default dampening 0.1).
    if momentum != 0.0 && !spec.keeps_default("momentum") {
        let mut m = MomentumConfig::new().with_momentum(momentum);
        if !spec.keeps_default("dampening") {
            m = m.with_dampening(dampening);
        }
        if !spec.keeps_default("nesterov") {
            m = m.with_nesterov(nesterov);
        }
        config = config.with_momentum(Some(m));
    }
    // Read back what the config holds (defaults included) through its serde form.
    let stored = serde_json::to_value(&config).expect("SgdConfig serialises");
    let m = &stored["momentum"];
    let held = json!({
        "lr": lr,
        // Burn's Momentum keeps the momentum factor as f32, the dampening as f64.
        "momentum": m["momentum"].as_f64().map_or(0.0, f32_held),
        "dampening": m["dampening"].as_f64().unwrap_or(0.0),
        "nesterov": m["nesterov"].as_bool().unwrap_or(false),
        "weight_decay": stored_penalty(&stored),
    });
    let clip = clip_held(&stored["gradient_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::None,
    }
}

fn adam(spec: &Spec) -> Built {
    let Optimizer::Adam {
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad,
    } = spec.optimizer
    else {
        unreachable!("an Adam spec")
    };
    let mut config = AdamConfig::new().with_grad_clipping(clipping(spec));
    if !spec.keeps_default("betas") {
        config = config
            .with_beta_1(betas[0] as f32)
            .with_beta_2(betas[1] as f32);
    }
    if !spec.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    // Coupled L2 decay, grad + penalty·p (decay.rs:46), only when asked for.
    if weight_decay != 0.0 && !spec.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    if !spec.keeps_default("amsgrad") {
        config = config.with_amsgrad(amsgrad);
    }
    // Read back what the config holds (defaults included) through its serde form.
    let stored = serde_json::to_value(&config).expect("AdamConfig serialises");
    let get = |k: &str| stored_f32(&stored, k) as f32;
    let (beta_1, beta_2, epsilon) = (get("beta_1"), get("beta_2"), get("epsilon"));
    let held = json!({"lr": lr, "betas": [beta_1 as f64, beta_2 as f64],
        "eps": epsilon as f64, "weight_decay": stored_penalty(&stored),
        "amsgrad": stored["amsgrad"].as_bool().expect("bool field")});
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::Adam {
            beta_1,
            beta_2,
            epsilon,
        },
    }
}

fn adamw(spec: &Spec) -> Built {
    let Optimizer::AdamW {
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad,
    } = spec.optimizer
    else {
        unreachable!("an AdamW spec")
    };
    let mut config = AdamWConfig::new().with_grad_clipping(clipping(spec));
    if !spec.keeps_default("betas") {
        config = config
            .with_beta_1(betas[0] as f32)
            .with_beta_2(betas[1] as f32);
    }
    if !spec.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    // Decoupled decay p·(1 − lr·wd), a plain f32 field (default 1e-4), passed even when 0.
    if !spec.keeps_default("weight_decay") {
        config = config.with_weight_decay(weight_decay as f32);
    }
    if !spec.keeps_default("amsgrad") {
        config = config.with_amsgrad(amsgrad);
    }
    let stored = serde_json::to_value(&config).expect("AdamWConfig serialises");
    let get = |k: &str| stored_f32(&stored, k) as f32;
    let (beta_1, beta_2) = (get("beta_1"), get("beta_2"));
    let held = json!({"lr": lr, "betas": [beta_1 as f64, beta_2 as f64],
        "eps": stored_f32(&stored, "epsilon"), "weight_decay": stored_f32(&stored, "weight_decay"),
        "amsgrad": stored["amsgrad"].as_bool().expect("bool field")});
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::AdamW { beta_1, beta_2 },
    }
}

fn adagrad(spec: &Spec) -> Built {
    let Optimizer::AdaGrad {
        lr,
        lr_decay,
        eps,
        weight_decay,
        ..
    } = spec.optimizer
    else {
        unreachable!("an AdaGrad spec")
    };
    let mut config = AdaGradConfig::new().with_grad_clipping(clipping(spec));
    if !spec.keeps_default("lr_decay") {
        config = config.with_lr_decay(lr_decay);
    }
    if !spec.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    if weight_decay != 0.0 && !spec.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    let stored = serde_json::to_value(&config).expect("AdaGradConfig serialises");
    let held = json!({"lr": lr,
        // lr_decay is an f64 field; the clr lr / (1 + (t − 1)·lr_decay) is f64 (adagrad.rs:134).
        "lr_decay": stored["lr_decay"].as_f64().expect("f64 field"),
        "eps": stored_f32(&stored, "epsilon"), "weight_decay": stored_penalty(&stored),
        // No such field: the sum of squares starts at the first g² (adagrad.rs:131), i.e. 0.
        "initial_accumulator_value": 0.0});
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::Empty,
    }
}

fn rmsprop(spec: &Spec) -> Built {
    let Optimizer::RmsProp {
        lr,
        alpha,
        eps,
        weight_decay,
        momentum,
        centered,
    } = spec.optimizer
    else {
        unreachable!("an RMSProp spec")
    };
    let mut config = RmsPropConfig::new().with_grad_clipping(clipping(spec));
    if !spec.keeps_default("alpha") {
        config = config.with_alpha(alpha as f32);
    }
    if !spec.keeps_default("eps") {
        config = config.with_epsilon(eps as f32);
    }
    // Burn's default momentum is 0.9 (PyTorch: 0): passed even when 0.
    if !spec.keeps_default("momentum") {
        config = config.with_momentum(momentum as f32);
    }
    if !spec.keeps_default("centered") {
        config = config.with_centered(centered);
    }
    if weight_decay != 0.0 && !spec.keeps_default("weight_decay") {
        config = config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
    }
    let stored = serde_json::to_value(&config).expect("RmsPropConfig serialises");
    let held = json!({"lr": lr, "alpha": stored_f32(&stored, "alpha"),
        "eps": stored_f32(&stored, "epsilon"), "weight_decay": stored_penalty(&stored),
        "momentum": stored_f32(&stored, "momentum"),
        "centered": stored["centered"].as_bool().expect("bool field")});
    let clip = clip_held(&stored["grad_clipping"]);
    Built {
        optim: config.init(),
        held,
        clip,
        scalars: Scalars::Empty,
    }
}

/// The Burn optimizer for a spec, and the hyperparameters as Burn holds them.
///
/// Burn stores betas, epsilon, alpha, the RMSProp and SGD momentum and the weight-decay
/// penalty as f32: the recorded values are those f32 values widened to f64. Hyperparameters
/// listed in `keep_defaults.burn` are not passed, so Burn's own defaults apply. Clipping is
/// attached through the config (`with_grad_clipping`), which only `init()` applies.
pub fn optimizer(spec: &Spec) -> Built {
    match spec.optimizer {
        Optimizer::Sgd { .. } => sgd(spec),
        Optimizer::Adam { .. } => adam(spec),
        Optimizer::AdamW { .. } => adamw(spec),
        Optimizer::AdaGrad { .. } => adagrad(spec),
        Optimizer::RmsProp { .. } => rmsprop(spec),
    }
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

    /// `(key, value)` for the run block: `adam_factors` or `burn_scalars`, or nothing (SGD).
    fn into_json(self, scalars: Scalars) -> Option<(&'static str, Value)> {
        let (first, second) = (floats(&self.first), floats(&self.second));
        match scalars {
            Scalars::None => None,
            Scalars::Adam { .. } => Some((
                "adam_factors",
                json!({"combined_factor": first, "epsilon_bias_correction2_sqrt": second}),
            )),
            Scalars::AdamW { .. } => Some((
                "burn_scalars",
                json!({"bias_correction1": first, "bias_correction2": second}),
            )),
            Scalars::Empty => Some(("burn_scalars", json!({}))),
        }
    }
}

/// Trains one experiment on `device` (an autodiff Flex or NdArray device, configured for the
/// dtype), with the spec's model.
/// `fault`: a perturbation injected after one step, for tests only (see fault.rs).
pub fn train(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
) -> Result<Value, String> {
    match spec.model {
        Model::Cnn1d => run::<Cnn1d>(spec, data, device, fault).map(|(block, _)| block),
        Model::CnnBn => run::<CnnBn>(spec, data, device, fault).map(|(block, _)| block),
        Model::Transformer => run::<Transformer>(spec, data, device, fault).map(|(block, _)| block),
    }
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
) -> Result<(Value, M), String> {
    // The dataset's arrays must be the model's, before anything else.
    let mut model: M = models::build(data, device)?;
    if let Some(f) = fault {
        f.check(M::NAME, M::PARAMS)?;
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
        mut optim,
        held,
        clip,
        scalars,
    } = optimizer(spec);
    let mut losses = Vec::with_capacity(spec.steps);
    let mut lrs = Vec::with_capacity(spec.steps);
    let mut traj_params = vec![Vec::new(); M::PARAMS.len()];
    let mut traj_grads = vec![Vec::new(); M::PARAMS.len()];
    let mut traj_buffers = vec![Vec::new(); M::BUFFERS.len()];
    let mut layers = Vec::with_capacity(spec.probe_steps.len());
    let mut series = ScalarSeries::default();
    for step in 0..spec.steps {
        // As Burn's Learner: one scheduler step per iteration, before the optimizer step,
        // whose result that step uses (the first call gives the initial lr).
        let lr = scheduler.step();
        lrs.push(lr.base());
        let i = (step % batches) * spec.batch_size; // no shuffling: the batches in rotation
        let xb = x.clone().slice(s![i..i + spec.batch_size]);
        let yb = y.clone().slice(s![i..i + spec.batch_size]);
        let mut probe = if spec.probe_steps.contains(&(step + 1)) {
            Probe::on()
        } else {
            Probe::off()
        };
        let loss = ce.forward(model.forward(xb, &mut probe), yb);
        losses.push(loss.clone().into_scalar::<f64>());
        let grads = loss.backward();
        if spec.probe_steps.contains(&(step + 1)) {
            layers.push(probe.record(step + 1, M::LAYERS, &grads)?);
        }
        let grads = GradientsParams::from_grads(grads, &model);
        for (k, g) in models::grad_values(&model, &grads).iter().enumerate() {
            traj_grads[k].push(floats(g));
        }
        model = optim.step(lr, model, grads);
        if let Some(f) = fault.filter(|f| f.step == step + 1) {
            model = f.apply(model)?;
        }
        for (k, p) in models::param_values(&model).iter().enumerate() {
            traj_params[k].push(floats(p));
        }
        for (k, b) in models::buffer_values(&model).iter().enumerate() {
            traj_buffers[k].push(floats(b));
        }
        series.push(scalars, step as i32 + 1);
    }
    let (loss, correct, predictions) = evaluate(&model, data, device)?;

    let named = |entries: &[Entry], values: Vec<Value>| -> Map<String, Value> {
        entries
            .iter()
            .map(|e| e.name.to_string())
            .zip(values)
            .collect()
    };
    let lists = |s: Vec<Vec<Value>>| s.into_iter().map(Value::Array).collect();
    let last = |v: Vec<Vec<f64>>| v.iter().map(|p| floats(p)).collect();
    // Burn clips each parameter tensor on its own (module_optimizer.rs:453).
    let clip_scope = (!clip.is_null()).then_some("per parameter tensor");
    let mut block = json!({
        "losses": floats(&losses),
        "lrs": floats(&lrs),
        "final": {"loss": float(loss), "correct": correct, "predictions": predictions},
        "params": named(M::PARAMS, last(models::param_values(&model))),
        "buffers": named(M::BUFFERS, last(models::buffer_values(&model))),
        "trajectory": {
            "params": named(M::PARAMS, lists(traj_params)),
            "grads": named(M::PARAMS, lists(traj_grads)),
            "buffers": named(M::BUFFERS, lists(traj_buffers)),
        },
        "layers": layers,
        "meta": {
            "model": M::NAME,
            "layer_hyperparameters": model.layer_hyperparameters(),
            "optimizer": spec.optimizer.name(),
            "hyperparameters": held,
            "schedule": schedule_held,
            "clip_grad": &clip,
            "clip_scope": clip_scope,
            "kept_defaults": spec.burn_defaults,
            "steps": spec.steps,
            "batch_size": spec.batch_size,
            "threads": spec.threads,
            "input_sha256": data.sha256,
        },
    });
    if let Some(f) = fault {
        block["meta"]["fault"] = f.to_json();
    }
    if let Some((key, value)) = series.into_json(scalars) {
        block[key] = value;
    }
    Ok((block, model))
}
