//! The seed's 1-D CNN trained with Burn, from the shared dataset file.

use burn::module::{Module, Param};
use burn::nn::conv::{Conv1d, Conv1dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::{Device, Int, Tensor, TensorData, s};
use serde_json::{Map, Value, json};

use crate::adam_factors::burn_adam_factors;
use crate::config::{Optimizer, Spec};
use crate::dataset::Dataset;
use crate::fault::Fault;
use crate::runfile::{float, floats};

pub const PARAM_NAMES: [&str; 4] = ["conv.weight", "conv.bias", "fc.weight", "fc.bias"];

#[derive(Module, Debug)]
pub struct Cnn {
    pub conv: Conv1d,
    pub fc: Linear,
    pub relu: Relu,
}

impl Cnn {
    pub fn forward(&self, x: Tensor<3>) -> Tensor<2> {
        self.fc
            .forward(self.relu.forward(self.conv.forward(x)).flatten(1, 2))
    }
}

/// f32 values onto the device; `from_data` casts to the device's float dtype, so on an
/// F64 device this is an exact widening and f64 runs start from the same numbers.
fn tensor<const D: usize>(values: &[f32], shape: &[usize], device: &Device) -> Tensor<D> {
    let shape: [usize; D] = shape.try_into().expect("array rank");
    Tensor::from_data(TensorData::new(values.to_vec(), shape), device)
}

pub fn inputs(data: &Dataset, device: &Device) -> Result<(Tensor<3>, Tensor<1, Int>), String> {
    let (xs, x) = data.f32("x")?;
    let (ys, y) = data.i64("y")?;
    let y = Tensor::from_data(TensorData::new(y.to_vec(), [ys[0]]), device);
    Ok((tensor(x, xs, device), y))
}

pub fn build(data: &Dataset, device: &Device) -> Result<Cnn, String> {
    let (ws, w1) = data.f32("conv.weight")?;
    let (bs, b1) = data.f32("conv.bias")?;
    let (fs, w2) = data.f32("fc.weight")?;
    let (gs, b2) = data.f32("fc.bias")?;
    let (channels, kernel, classes, flat) = (ws[0], ws[2], fs[0], fs[1]);
    let mut m = Cnn {
        conv: Conv1dConfig::new(1, channels, kernel).init(device),
        fc: LinearConfig::new(flat, classes).init(device),
        relu: Relu::new(),
    };
    m.conv.weight = Param::from_tensor(tensor(w1, ws, device));
    m.conv.bias = Some(Param::from_tensor(tensor(b1, bs, device)));
    // Burn's Linear weight is [in, out]; the file holds PyTorch's [out, in].
    m.fc.weight = Param::from_tensor(tensor::<2>(w2, fs, device).transpose());
    m.fc.bias = Some(Param::from_tensor(tensor(b2, gs, device)));
    Ok(m)
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    // f32 → f64 is exact, like PyTorch's tolist().
    t.into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .expect("float tensor")
}

/// Parameters in PyTorch's names and layouts, flattened.
pub fn param_values(m: &Cnn) -> [Vec<f64>; 4] {
    [
        values(m.conv.weight.val()),
        values(m.conv.bias.as_ref().expect("conv bias").val()),
        values(m.fc.weight.val().transpose()),
        values(m.fc.bias.as_ref().expect("fc bias").val()),
    ]
}

/// The gradient of each parameter, in PyTorch's layouts.
fn grad_values(m: &Cnn, grads: &GradientsParams) -> [Vec<f64>; 4] {
    let get1 = |p: &Param<Tensor<1>>| values(grads.get::<1>(p.id).expect("gradient"));
    [
        values(grads.get::<3>(m.conv.weight.id).expect("gradient")),
        get1(m.conv.bias.as_ref().expect("conv bias")),
        values(
            grads
                .get::<2>(m.fc.weight.id)
                .expect("gradient")
                .transpose(),
        ),
        get1(m.fc.bias.as_ref().expect("fc bias")),
    ]
}

/// The Burn optimizer for a spec, and the hyperparameters as Burn holds them.
///
/// Burn stores Adam's betas and epsilon, the weight-decay penalty and the momentum as f32:
/// the recorded values are those f32 values widened to f64. Hyperparameters listed in
/// `keep_defaults.burn` are not passed, so Burn's own defaults apply.
pub fn optimizer(spec: &Spec) -> (ModuleOptimizer, Value, Option<[f32; 3]>) {
    let f32_held = |x: f64| x as f32 as f64;
    match spec.optimizer {
        Optimizer::Sgd {
            lr,
            momentum,
            dampening,
            weight_decay,
            nesterov,
        } => {
            let mut config = SgdConfig::new();
            if weight_decay != 0.0 && !spec.keeps_default("weight_decay") {
                config =
                    config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
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
                "weight_decay": stored["weight_decay"]["penalty"].as_f64().map_or(0.0, f32_held),
            });
            (config.init(), held, None)
        }
        Optimizer::Adam {
            lr,
            betas,
            eps,
            weight_decay,
        } => {
            let mut config = AdamConfig::new();
            if !spec.keeps_default("betas") {
                config = config
                    .with_beta_1(betas[0] as f32)
                    .with_beta_2(betas[1] as f32);
            }
            if !spec.keeps_default("eps") {
                config = config.with_epsilon(eps as f32);
            }
            if weight_decay != 0.0 && !spec.keeps_default("weight_decay") {
                config =
                    config.with_weight_decay(Some(WeightDecayConfig::new(weight_decay as f32)));
            }
            // Read back what the config holds (defaults included) through its serde form.
            let stored = serde_json::to_value(&config).expect("AdamConfig serialises");
            let get = |k: &str| stored[k].as_f64().expect("f32 field") as f32;
            let (beta_1, beta_2, epsilon) = (get("beta_1"), get("beta_2"), get("epsilon"));
            let penalty = stored["weight_decay"]["penalty"]
                .as_f64()
                .map_or(0.0, |p| p as f32);
            let held = json!({"lr": lr, "betas": [beta_1 as f64, beta_2 as f64],
                "eps": epsilon as f64, "weight_decay": penalty as f64});
            (config.init(), held, Some([beta_1, beta_2, epsilon]))
        }
    }
}

/// Trains one experiment on `device` (an autodiff Flex device, configured for the dtype).
/// `fault`: a perturbation injected after one step, for tests only (see fault.rs).
pub fn train(
    spec: &Spec,
    data: &Dataset,
    device: &Device,
    fault: Option<&Fault>,
) -> Result<Value, String> {
    let (x, y) = inputs(data, device)?;
    let n = x.dims()[0];
    let batches = n / spec.batch_size;
    if batches == 0 {
        return Err(format!(
            "batch_size {} is larger than the {n} samples",
            spec.batch_size
        ));
    }
    let ce = CrossEntropyLossConfig::new().init(device);
    let mut model = build(data, device)?;
    let (mut optim, held, adam) = optimizer(spec);
    let lr = spec.lr();
    let mut losses = Vec::with_capacity(spec.steps);
    let mut traj_params: [Vec<Value>; 4] = Default::default();
    let mut traj_grads: [Vec<Value>; 4] = Default::default();
    let (mut combined, mut eps_term) = (Vec::new(), Vec::new());
    for step in 0..spec.steps {
        let i = (step % batches) * spec.batch_size; // no shuffling: the batches in rotation
        let xb = x.clone().slice(s![i..i + spec.batch_size]);
        let yb = y.clone().slice(s![i..i + spec.batch_size]);
        let loss = ce.forward(model.forward(xb), yb);
        losses.push(loss.clone().into_scalar::<f64>());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        for (k, g) in grad_values(&model, &grads).iter().enumerate() {
            traj_grads[k].push(floats(g));
        }
        model = optim.step(lr, model, grads);
        if let Some(f) = fault.filter(|f| f.step == step + 1) {
            model = f.apply(model, device)?;
        }
        for (k, p) in param_values(&model).iter().enumerate() {
            traj_params[k].push(floats(p));
        }
        if let Some([b1, b2, eps]) = adam {
            let (c, e) = burn_adam_factors(b1, b2, eps, step as i32 + 1);
            combined.push(c as f64);
            eps_term.push(e as f64);
        }
    }
    // Evaluation without autodiff, like model.eval() under torch.no_grad().
    let eval = model.valid();
    let inner = device.clone().inner();
    let (x, y) = inputs(data, &inner)?;
    let out = eval.forward(x);
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

    let named = |series: [Vec<Value>; 4]| -> Map<String, Value> {
        PARAM_NAMES
            .iter()
            .map(|n| n.to_string())
            .zip(series.into_iter().map(Value::Array))
            .collect()
    };
    let final_params: Map<String, Value> = PARAM_NAMES
        .iter()
        .map(|n| n.to_string())
        .zip(param_values(&model).iter().map(|p| floats(p)))
        .collect();
    let mut block = json!({
        "losses": floats(&losses),
        "final": {"loss": float(loss), "correct": correct, "predictions": predictions},
        "params": final_params,
        "trajectory": {"params": named(traj_params), "grads": named(traj_grads)},
        "meta": {
            "optimizer": match spec.optimizer { Optimizer::Sgd { .. } => "sgd", Optimizer::Adam { .. } => "adam" },
            "hyperparameters": held,
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
    if adam.is_some() {
        block["adam_factors"] = json!({
            "combined_factor": floats(&combined),
            "epsilon_bias_correction2_sqrt": floats(&eps_term),
        });
    }
    Ok(block)
}
