//! Parameter groups: cnn1d trained with a Muon group on `fc.weight` and the experiment's
//! AdamW on the rest, on the seed's dataset and an F64 device.
//!
//! The group's optimizer holds what it was given and steps `fc.weight` by Burn's Muon rule
//! (checked by hand at step 1); the parameters in no group follow the experiment's optimizer
//! exactly as they would without the group (replayed on their recorded gradients); a group
//! takes its own lr under a constant schedule and the scheduled lr otherwise; and the
//! trainer refuses, on one line, a group Burn could not step.

use crate::common;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use parity_train::config::{self, Spec};
use parity_train::dataset::Dataset;
use parity_train::models::{self, Cnn1d, ModelSize, ParityModel};
use parity_train::optimizers;
use serde_json::{Value, json};

const STEPS: usize = 6;

const ADAMW: &str = "optimizer: adamw, lr: 0.01, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.01, amsgrad: false";
const SGD: &str =
    "optimizer: sgd, lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false";
/// Muon's hyperparameters as the spec writes them (PyTorch's defaults, lr 0.02).
const MUON: &str = "{lr: 0.02, weight_decay: 0.0, momentum: 0.95, nesterov: true, ns_coefficients: [3.4445, -4.775, 2.0315], eps: 1.0e-7, ns_steps: 5, adjust_lr_fn: original}";

/// The process's F64 Flex device, with autodiff.
fn device() -> Device {
    common::f64_device().autodiff()
}

fn dataset() -> Dataset {
    common::dataset(common::cnn1d_arrays(common::CONV))
}

fn spec(experiment: &str) -> Result<Spec, String> {
    config::parse(&common::resolved(experiment, STEPS, 4))
}

fn try_run(experiment: &str) -> Result<Value, String> {
    common::trained(&spec(experiment).unwrap(), &dataset(), &device(), None)
}

fn run(experiment: &str) -> Value {
    try_run(experiment).unwrap()
}

/// `experiment` with one group: `optimizer` with `hyperparameters` on `params`.
fn grouped(experiment: &str, params: &str, optimizer: &str, hyperparameters: &str) -> String {
    format!(
        "{experiment}, param_groups: [{{params: [{params}], optimizer: {optimizer}, hyperparameters: {hyperparameters}}}]"
    )
}

fn muon_on_fc(experiment: &str, muon: &str) -> String {
    grouped(experiment, "fc.weight", "muon", muon)
}

fn widened(x: f64) -> f64 {
    x as f32 as f64
}

/// A parameter's recorded values after step `step` (1-based).
fn param_at(block: &Value, name: &str, step: usize) -> Vec<f64> {
    common::list(&block["trajectory"]["params"][name][step - 1])
}

fn grad_at(block: &Value, name: &str, step: usize) -> Vec<f64> {
    common::list(&block["trajectory"]["grads"][name][step - 1])
}

/// The initial values of a cnn1d parameter (PyTorch's layout).
fn initial(name: &str) -> Vec<f64> {
    let data = dataset();
    let (_, values) = data.f32(name).unwrap();
    values.iter().map(|&x| x as f64).collect()
}

#[test]
fn a_muon_group_holds_what_it_was_given_and_the_meta_names_burns_shapes() {
    let block = run(&muon_on_fc(ADAMW, MUON));
    let meta = &block["meta"];
    assert_eq!(
        meta["param_groups"],
        json!([{"params": ["fc.weight"], "optimizer": "muon", "hyperparameters": {
            "lr": 0.02, "weight_decay": 0.0, "momentum": widened(0.95), "nesterov": true,
            "ns_coefficients": [widened(3.4445), widened(-4.775), widened(2.0315)],
            "eps": widened(1e-7), "ns_steps": 5, "adjust_lr_fn": "original"}}])
    );
    assert_eq!(widened(0.95), 0.949999988079071);
    // The experiment's own optimizer is still the one the meta describes.
    assert_eq!(meta["optimizer"], "adamw");
    assert_eq!(meta["hyperparameters"]["lr"], json!(0.01));
    assert_eq!(
        block["burn_scalars"]["bias_correction1"]
            .as_array()
            .unwrap()
            .len(),
        STEPS
    );
    let shapes = json!({"conv.weight": [[4, 1, 5]], "conv.bias": [[4]], "fc.weight": [[48, 3]],
        "fc.bias": [[3]]});
    assert_eq!(meta["burn_shapes"], shapes);
    // Without groups: an empty list, the same shapes.
    let plain = run(ADAMW);
    assert_eq!(plain["meta"]["param_groups"], json!([]));
    assert_eq!(plain["meta"]["burn_shapes"], shapes);
    // Kept at Burn's defaults: Muon's own (muon.rs:136–159), in f32 where Burn holds f32.
    let kept = run(&format!(
        "{ADAMW}, param_groups: [{{params: [fc.weight], optimizer: muon, hyperparameters: {}, keep_defaults: {{torch: [], burn: [momentum, nesterov, eps, ns_steps]}}}}]",
        MUON.replace("momentum: 0.95", "momentum: 0.5")
            .replace("nesterov: true", "nesterov: false")
            .replace("eps: 1.0e-7", "eps: 0.001")
            .replace("ns_steps: 5", "ns_steps: 2"),
    ));
    let held = &kept["meta"]["param_groups"][0]["hyperparameters"];
    assert_eq!(
        (
            &held["momentum"],
            &held["nesterov"],
            &held["eps"],
            &held["ns_steps"]
        ),
        (
            &json!(widened(0.95)),
            &json!(true),
            &json!(widened(1e-7)),
            &json!(5)
        )
    );
}

#[test]
fn the_transformers_burn_shapes_show_its_packed_parts() {
    let data = common::dataset(common::transformer_arrays(common::TRANSFORMER));
    let spec = spec(&format!("{SGD}, model: transformer")).unwrap();
    let block = common::trained(&spec, &data, &device(), None).unwrap();
    let shapes = &block["meta"]["burn_shapes"];
    assert_eq!(
        shapes["enc.self_attn.in_proj_weight"],
        json!([[8, 8], [8, 8], [8, 8]])
    );
    assert_eq!(shapes["enc.self_attn.in_proj_bias"], json!([[8], [8], [8]]));
    assert_eq!(shapes["fc.weight"], json!([[128, 3]]));
    assert_eq!(shapes.as_object().unwrap().len(), 16);
}

#[test]
fn the_parameters_in_no_group_follow_the_experiments_optimizer() {
    let grouped = run(&muon_on_fc(ADAMW, MUON));
    let plain = run(ADAMW);
    let rest = ["conv.weight", "conv.bias", "fc.bias"];
    // Step 1 starts from the same weights: the same gradients, the same AdamW updates.
    for name in rest {
        assert_eq!(
            grad_at(&grouped, name, 1),
            grad_at(&plain, name, 1),
            "{name}"
        );
        assert_eq!(
            param_at(&grouped, name, 1),
            param_at(&plain, name, 1),
            "{name}"
        );
    }
    // fc.weight moves by Muon's rule, not AdamW's; from step 2 on the gradients differ.
    assert_ne!(
        param_at(&grouped, "fc.weight", 1),
        param_at(&plain, "fc.weight", 1)
    );
    assert_ne!(
        grad_at(&grouped, "conv.bias", 2),
        grad_at(&plain, "conv.bias", 2)
    );

    // Every step: the experiment's AdamW, given the recorded gradients of the parameters in
    // no group, gives the recorded parameters to the last bit.
    let spec = spec(&muon_on_fc(ADAMW, MUON)).unwrap();
    let built = optimizers::optimizer(&spec.optimizer, &spec.burn_defaults, spec.clip_grad);
    let mut optim = built.optim;
    let device = device();
    let inner = device.clone().inner();
    let size = ModelSize::from(common::CONV);
    let mut model: Cnn1d = models::build(&size, &dataset(), &device).unwrap();
    let ids = model.param_ids();
    let params = Cnn1d::params(&size);
    for step in 1..=STEPS {
        let mut grads = GradientsParams::new();
        for (k, entry) in params.iter().enumerate() {
            let g = grad_at(&grouped, &entry.name, step);
            match entry.name.as_str() {
                "conv.weight" => grads.register::<3>(
                    ids[k],
                    Tensor::from_data(TensorData::new(g, entry.shape.clone()), &inner),
                ),
                "conv.bias" | "fc.bias" => grads.register::<1>(
                    ids[k],
                    Tensor::from_data(TensorData::new(g, entry.shape.clone()), &inner),
                ),
                _ => {} // fc.weight: Muon's
            }
        }
        model = optim.step(0.01, model, grads);
        for (entry, values) in params.iter().zip(models::param_values(&model)) {
            if entry.name != "fc.weight" {
                assert_eq!(
                    values,
                    param_at(&grouped, &entry.name, step),
                    "{} step {step}",
                    entry.name
                );
            }
        }
    }
}

/// Burn's Newton–Schulz orthogonalisation (muon.rs:305–352) of a wide `rows` × `cols`
/// matrix, in f64, with the f32 coefficients and epsilon widened.
fn newton_schulz(g: &[f64], rows: usize, cols: usize, eps: f64) -> Vec<f64> {
    assert!(
        rows <= cols,
        "a wide matrix: Burn transposes a tall one first"
    );
    let (a, b, c) = (widened(3.4445), widened(-4.775), widened(2.0315));
    let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt().max(eps);
    let mut x: Vec<f64> = g.iter().map(|v| v / norm).collect();
    let matmul = |p: &[f64], q: &[f64], n: usize, m: usize, l: usize| -> Vec<f64> {
        let mut out = vec![0.0; n * l];
        for i in 0..n {
            for j in 0..l {
                out[i * l + j] = (0..m).map(|k| p[i * m + k] * q[k * l + j]).sum();
            }
        }
        out
    };
    for _ in 0..5 {
        let xt: Vec<f64> = (0..cols * rows)
            .map(|i| x[(i % rows) * cols + i / rows])
            .collect();
        let am = matmul(&x, &xt, rows, cols, rows);
        let a2 = matmul(&am, &am, rows, rows, rows);
        let bm: Vec<f64> = am.iter().zip(&a2).map(|(p, q)| b * p + c * q).collect();
        let bx = matmul(&bm, &x, rows, rows, cols);
        x = x.iter().zip(&bx).map(|(p, q)| a * p + q).collect();
    }
    x
}

/// Step 1 of a Muon group on fc.weight, by hand: velocity = g (no state yet), Nesterov's
/// g + m·g (momentum.rs:63–74), orthogonalised, then p·(1 − lr·wd) − lr·ratio·update, the
/// ratio from the shape Burn holds, [48, 3] (muon.rs:403–419). `clip` is the clipping the
/// experiment asks for, applied to the gradient first.
fn check_muon_step_1(muon: &str, extra: &str, wd: f64, ratio: f64, clip: impl Fn(f64) -> f64) {
    let block = run(&format!("{}{extra}", muon_on_fc(ADAMW, muon)));
    let g: Vec<f64> = grad_at(&block, "fc.weight", 1)
        .into_iter()
        .map(clip)
        .collect();
    let m = widened(0.95);
    let nesterov: Vec<f64> = g.iter().map(|x| x * m + x).collect();
    // PyTorch's [3, 48] is the wide matrix Burn orthogonalises after transposing its [48, 3].
    let update = newton_schulz(&nesterov, 3, 48, widened(1e-7));
    let (lr, before, after) = (0.02, initial("fc.weight"), param_at(&block, "fc.weight", 1));
    let decay = 1.0 - lr * widened(wd);
    for i in 0..update.len() {
        let want = before[i] * decay - update[i] * (lr * ratio);
        assert!(
            (after[i] - want).abs() <= 1e-14,
            "{muon}{extra}: fc.weight[{i}] {} vs {want}",
            after[i]
        );
    }
    // The update is really orthogonalised: far from a step along the gradient.
    assert!(update.iter().map(|u| u.abs()).fold(0.0, f64::max) > 0.1);
}

#[test]
fn muon_steps_fc_weight_by_burns_rule() {
    // Original: sqrt(max(1, 48/3)) = 4 on Burn's [48, 3] (PyTorch's [3, 48] would give 1).
    check_muon_step_1(MUON, "", 0.0, 4.0, |g| g);
    let moonshot = MUON
        .replace("original", "match_rms_adamw")
        .replace("weight_decay: 0.0", "weight_decay: 0.1");
    check_muon_step_1(&moonshot, "", 0.1, 0.2 * 48f64.sqrt(), |g| g);
    // The experiment's clipping applies to the group's gradients too.
    let threshold = widened(0.001);
    check_muon_step_1(MUON, ", clip_grad: {value: 0.001}", 0.0, 4.0, |g| {
        g.clamp(-threshold, threshold)
    });
    let clipped = run(&format!(
        "{}, clip_grad: {{value: 0.001}}",
        muon_on_fc(ADAMW, MUON)
    ));
    assert!(
        grad_at(&clipped, "fc.weight", 1)
            .iter()
            .any(|g| g.abs() > threshold)
    );
}

/// SGD (no momentum) steps `name` by −lr·g at every step.
fn check_sgd(block: &Value, name: &str, lr: impl Fn(usize) -> f64) {
    let mut before = initial(name);
    for step in 1..=STEPS {
        let (g, after) = (grad_at(block, name, step), param_at(block, name, step));
        for i in 0..g.len() {
            let want = before[i] - lr(step) * g[i];
            assert!((after[i] - want).abs() <= 1e-15, "{name} step {step}");
        }
        before = after;
    }
}

#[test]
fn a_group_takes_its_own_lr_under_a_constant_schedule_and_the_scheduled_lr_otherwise() {
    let sgd = "{lr: 0.05, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false}";
    // Two groups holding every parameter: the experiment's optimizer steps none.
    let both = |experiment: &str| {
        format!(
            "{experiment}, param_groups: [{{params: [fc.weight], optimizer: muon, hyperparameters: {MUON}}}, {{params: [conv.weight, conv.bias, fc.bias], optimizer: sgd, hyperparameters: {sgd}}}]"
        )
    };
    let block = run(&both(ADAMW));
    assert_eq!(common::list(&block["lrs"]), vec![0.01; STEPS]);
    check_sgd(&block, "conv.bias", |_| 0.05);
    check_sgd(&block, "conv.weight", |_| 0.05);
    let groups = block["meta"]["param_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[1]["optimizer"], "sgd");
    assert_eq!(
        groups[1]["params"],
        json!(["conv.weight", "conv.bias", "fc.bias"])
    );
    // A step schedule: every group steps with the scheduled lr.
    let scheduled = run(&grouped(
        &format!("{ADAMW}, schedule: {{kind: step, step_size: 2, gamma: 0.5}}"),
        "conv.bias",
        "sgd",
        &sgd.replace("0.05", "0.01"),
    ));
    let lrs = common::list(&scheduled["lrs"]);
    assert_eq!(lrs, [0.01, 0.01, 0.005, 0.005, 0.0025, 0.0025]);
    check_sgd(&scheduled, "conv.bias", |step| lrs[step - 1]);
}

#[test]
fn refuses_a_group_burn_cannot_step_on_one_line() {
    let refused = |experiment: String| {
        let error = try_run(&experiment).unwrap_err();
        assert!(!error.contains('\n'), "{error}");
        error
    };
    assert_eq!(
        refused(grouped(ADAMW, "conv.bias", "muon", MUON)),
        "param_groups[0]: Burn's Muon steps 2-D parameters only, and conv.bias is [4]"
    );
    assert_eq!(
        refused(grouped(ADAMW, "fc.weight, head.weight", "muon", MUON)),
        "param_groups[0]: model cnn1d has no parameter head.weight"
    );
    let twice = format!(
        "{ADAMW}, param_groups: [{{params: [fc.weight], optimizer: muon, hyperparameters: {MUON}}}, {{params: [fc.weight], optimizer: muon, hyperparameters: {MUON}}}]"
    );
    assert_eq!(
        refused(twice),
        "param_groups[1]: fc.weight is in param_groups[0] already"
    );
    // Muon as the experiment's own optimizer would step the biases.
    let muon_rest = format!("optimizer: muon, {}", &MUON[1..MUON.len() - 1]);
    assert_eq!(
        refused(muon_rest),
        "optimizer: Burn's Muon steps 2-D parameters only, and conv.weight is [4, 1, 5]"
    );
}
