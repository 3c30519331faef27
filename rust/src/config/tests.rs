use super::*;
use std::sync::LazyLock;

/// An Adam experiment of 100 steps, each recorded (`record_steps` 1..=100).
static ADAM: LazyLock<String> = LazyLock::new(|| {
    let every: Vec<String> = (1..=100).map(|s| s.to_string()).collect();
    ADAM_WITHOUT_RECORD_STEPS.replace(
        r#""steps": 100"#,
        &format!(r#""record_steps": [{}], "steps": 100"#, every.join(", ")),
    )
});

const ADAM_WITHOUT_RECORD_STEPS: &str = r#"{"name": "adam", "optimizer": "adam",
    "hyperparameters": {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-08,
                        "weight_decay": 0, "amsgrad": false},
    "keep_defaults": {"torch": [], "burn": ["eps"]},
    "schedule": {"kind": "linear", "final_lr": 0.001, "num_steps": 50},
    "clip_grad": {"norm": 1.0}, "burn_backend": "ndarray", "model": "cnn_bn",
    "model_size": {"channels": 4, "kernel": 5}, "data": "sine", "label_smoothing": 0.0,
    "probe_steps": [1, 100], "steps": 100, "batch_size": 16, "threads": 1,
    "cpu_path": "native", "requested": {"torch": {}, "burn": {}}, "param_groups": []}"#;

/// A Muon group on fc.weight, as the Python side writes it.
const MUON_GROUP: &str = r#"{"params": ["fc.weight"], "optimizer": "muon",
    "hyperparameters": {"lr": 0.02, "weight_decay": 0.0, "momentum": 0.95, "nesterov": true,
                        "ns_coefficients": [3.4445, -4.775, 2.0315], "eps": 1e-07,
                        "ns_steps": 5, "adjust_lr_fn": "original"},
    "keep_defaults": {"torch": [], "burn": ["eps"]},
    "requested": {"torch": {}, "burn": {}}}"#;

fn with_group(group: &str) -> Result<Spec, String> {
    parse(&ADAM.replace(
        r#""param_groups": []"#,
        &format!(r#""param_groups": [{group}]"#),
    ))
}

#[test]
fn reads_every_field_of_a_resolved_spec() {
    let spec = parse(&ADAM).unwrap();
    assert_eq!(spec.name, "adam");
    assert_eq!(
        spec.optimizer,
        Optimizer::Adam {
            lr: 0.01,
            betas: [0.9, 0.999],
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false
        }
    );
    assert!(spec.keeps_default("eps") && !spec.keeps_default("betas"));
    assert_eq!(
        spec.schedule,
        Schedule::Linear {
            final_lr: 0.001,
            num_steps: 50
        }
    );
    assert_eq!(spec.clip_grad, Some(ClipGrad::Norm(1.0)));
    assert_eq!(spec.backend, Backend::NdArray);
    assert_eq!(spec.model, "cnn_bn");
    assert_eq!(
        spec.model_size,
        ModelSize::from(crate::models::ConvSize {
            channels: 4,
            kernel: 5
        })
    );
    assert_eq!(spec.probe_steps, vec![1, 100]);
    assert_eq!(spec.record_steps, (1..=100).collect::<Vec<_>>());
    assert_eq!((spec.steps, spec.batch_size, spec.threads), (100, 16, 1));
    assert_eq!(spec.lr(), 0.01);
    assert_eq!(spec.param_groups, vec![]);
}

#[test]
fn reads_a_muon_group() {
    let spec = with_group(MUON_GROUP).unwrap();
    assert_eq!(
        spec.param_groups,
        vec![ParamGroup {
            params: vec!["fc.weight".into()],
            optimizer: Optimizer::Muon {
                lr: 0.02,
                weight_decay: 0.0,
                momentum: 0.95,
                nesterov: true,
                ns_coefficients: [3.4445, -4.775, 2.0315],
                eps: 1e-7,
                ns_steps: 5,
                adjust_lr_fn: AdjustLr::Original,
            },
            burn_defaults: vec!["eps".into()],
        }]
    );
    assert_eq!(spec.param_groups[0].optimizer.lr(), 0.02);
    assert_eq!(spec.param_groups[0].optimizer.name(), "muon");
    // The experiment's own optimizer is untouched.
    assert_eq!(spec.optimizer.name(), "adam");
    let moonshot = with_group(&MUON_GROUP.replace("original", "match_rms_adamw")).unwrap();
    let Optimizer::Muon { adjust_lr_fn, .. } = moonshot.param_groups[0].optimizer else {
        panic!("a Muon group")
    };
    assert_eq!(adjust_lr_fn, AdjustLr::MatchRmsAdamW);
    assert_eq!(
        (AdjustLr::Original.name(), adjust_lr_fn.name()),
        ("original", "match_rms_adamw")
    );
}

#[test]
fn refuses_a_wrong_group_on_one_line() {
    let refused = |from: &str, to: &str| with_group(&MUON_GROUP.replace(from, to)).unwrap_err();
    for (error, start) in [
        (
            refused(r#""original""#, r#""adamw""#),
            "param_groups[0]: hyperparameters of muon: unknown variant `adamw`, expected `original` or `match_rms_adamw`",
        ),
        (
            refused(r#""optimizer": "muon""#, r#""optimizer": "lion""#),
            "param_groups[0]: unknown optimizer 'lion'",
        ),
        (
            refused(r#""ns_steps": 5, "#, ""),
            "param_groups[0]: hyperparameters of muon: missing field `ns_steps`",
        ),
    ] {
        assert!(error.starts_with(start), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }
    assert!(refused(r#""params""#, r#""lr": 1, "params""#).contains("unknown field `lr`"));
    // `param_groups` is always written.
    let without = ADAM.replace(r#", "param_groups": []"#, "");
    assert!(
        parse(&without)
            .unwrap_err()
            .starts_with("missing field `param_groups`")
    );
}

#[test]
fn each_optimizer_and_backend_is_named_as_the_spec_names_it() {
    for name in Optimizer::NAMES {
        let spec = parse(&ADAM.replace(r#""optimizer": "adam""#, &format!(r#""optimizer": "{name}""#))
            .replace(r#""hyperparameters": {"#, r#""hyperparameters": {"momentum": 0, "dampening": 0, "nesterov": false, "lr_decay": 0, "initial_accumulator_value": 0, "alpha": 0.99, "centered": false, "ns_coefficients": [3.4445, -4.775, 2.0315], "ns_steps": 5, "adjust_lr_fn": "original", "#));
        // every optimizer's keys are there; serde ignores the other optimizers' keys
        assert_eq!(spec.map(|s| s.optimizer.name()), Ok(name));
    }
    assert_eq!(Backend::Flex.name(), "flex");
    assert_eq!(Backend::NdArray.name(), "ndarray");
    assert_eq!(Backend::NAMES, ["flex", "ndarray"]);
}

#[test]
fn names_what_is_wrong_on_one_line() {
    let refused = |from: &str, to: &str| parse(&ADAM.replace(from, to)).unwrap_err();
    assert_eq!(
        refused(r#""optimizer": "adam""#, r#""optimizer": "lion""#),
        "unknown optimizer 'lion' (known: sgd, adam, adamw, adagrad, rmsprop, muon)"
    );
    assert!(
        refused(r#""model": "cnn_bn""#, r#""model": "mlp""#).starts_with(
            "unknown model 'mlp' (known: cnn1d, cnn_bn, transformer, lenet, gpt, or a port's name \
             with its `port`)"
        )
    );
    assert!(
        refused(r#""eps": 1e-08,"#, "").starts_with("hyperparameters of adam: missing field `eps`")
    );
    assert!(refused(r#""steps": 100"#, r#""steps": 100, "extra": 1"#).contains("`extra`"));
    for error in [
        refused(r#""optimizer": "adam""#, r#""optimizer": "lion""#),
        refused(r#""burn_backend": "ndarray""#, r#""burn_backend": "tch""#),
    ] {
        assert!(!error.contains('\n'), "{error}");
    }
}

#[test]
fn reads_the_model_size_and_names_a_wrong_key_on_one_line() {
    // Every check, per key, is models/size.rs's; here the spec's key itself.
    let sized = |size: &str| {
        parse(
            &ADAM
                .replace(r#""model": "cnn_bn""#, r#""model": "transformer""#)
                .replace(r#"{"channels": 4, "kernel": 5}"#, size),
        )
    };
    let size = sized(r#"{"d_model": 12, "heads": 3, "layers": 2, "d_ff": 20}"#)
        .map(|spec| serde_json::to_string(&spec.model_size).unwrap());
    assert_eq!(
        size.as_deref(),
        Ok(r#"{"d_model":12,"heads":3,"layers":2,"d_ff":20}"#)
    );
    assert_eq!(
        sized(r#"{"d_model": 8, "heads": 3, "layers": 1, "d_ff": 16}"#).unwrap_err(),
        "model_size.heads: 3 does not divide d_model 8"
    );
    // `model_size` is always written.
    let without = ADAM.replace(r#""model_size": {"channels": 4, "kernel": 5},"#, "");
    assert!(
        parse(&without)
            .unwrap_err()
            .starts_with("missing field `model_size`")
    );
}

#[test]
fn reads_the_data_and_the_label_smoothing_and_refuses_wrong_ones_on_one_line() {
    let spec = parse(&ADAM).unwrap();
    assert_eq!((spec.data, spec.label_smoothing), (Data::Sine, 0.0));
    let with = |data: &str, smoothing: &str| {
        parse(
            &ADAM
                .replace(r#""data": "sine""#, &format!(r#""data": {data}"#))
                .replace(
                    r#""label_smoothing": 0.0"#,
                    &format!(r#""label_smoothing": {smoothing}"#),
                ),
        )
    };
    let spec = with(r#""digits""#, "0.1").unwrap();
    assert_eq!((spec.data, spec.label_smoothing), (Data::Digits, 0.1));
    assert_eq!(with(r#""text""#, "0").unwrap().data, Data::Text);
    assert_eq!(with(r#""sine""#, "0.999").unwrap().label_smoothing, 0.999);
    assert_eq!(
        Data::ALL.map(Data::name),
        ["sine", "digits", "text", "file"],
        "the names the spec and meta.data use"
    );
    for (data, smoothing, error) in [
        (
            r#""mnist""#,
            "0",
            r#"data: "mnist" is not a known dataset (known: sine, digits, text, file)"#,
        ),
        (
            "3",
            "0",
            "data: 3 is not a known dataset (known: sine, digits, text, file)",
        ),
        (
            "null",
            "0",
            "data: null is not a known dataset (known: sine, digits, text, file)",
        ),
        (
            r#""sine""#,
            "1",
            "label_smoothing: 1 is not a number in [0, 1)",
        ),
        (
            r#""sine""#,
            "1.0",
            "label_smoothing: 1.0 is not a number in [0, 1)",
        ),
        (
            r#""sine""#,
            "-0.1",
            "label_smoothing: -0.1 is not a number in [0, 1)",
        ),
        (
            r#""sine""#,
            r#""0.1""#,
            r#"label_smoothing: "0.1" is not a number in [0, 1)"#,
        ),
        (
            r#""sine""#,
            "null",
            "label_smoothing: null is not a number in [0, 1)",
        ),
    ] {
        assert_eq!(with(data, smoothing).unwrap_err(), error);
    }
    // Both are always written.
    for (key, field) in [
        (r#""data": "sine", "#, "data"),
        (r#""label_smoothing": 0.0,"#, "label_smoothing"),
    ] {
        let error = parse(&ADAM.replace(key, "")).unwrap_err();
        assert!(
            error.starts_with(&format!("missing field `{field}`")),
            "{error}"
        );
    }
}

#[test]
fn reads_record_steps_and_refuses_any_not_sorted_distinct_steps_of_the_run() {
    let with = |list: &str| {
        parse(&ADAM_WITHOUT_RECORD_STEPS.replace(
            r#""steps": 100"#,
            &format!(r#""record_steps": {list}, "steps": 100"#),
        ))
    };
    assert_eq!(
        with("[1, 2, 50, 100]").unwrap().record_steps,
        [1, 2, 50, 100]
    );
    assert_eq!(with("[]").unwrap().record_steps, Vec::<usize>::new());
    for (list, error) in [
        ("[0, 1]", "record_steps: 0 is not a step of 1..=100"),
        ("[1, 101]", "record_steps: 101 is not a step of 1..=100"),
        ("[1, -2]", "record_steps: -2 is not a step of 1..=100"),
        ("[1, 2.5]", "record_steps: 2.5 is not a step of 1..=100"),
        ("[1, \"2\"]", "record_steps: \"2\" is not a step of 1..=100"),
        (
            "[1, 5, 3]",
            "record_steps: 3 after 5 (the steps must be sorted, without repeats)",
        ),
        (
            "[1, 2, 2]",
            "record_steps: 2 after 2 (the steps must be sorted, without repeats)",
        ),
        ("7", "record_steps: 7 is not a list of steps"),
        ("null", "record_steps: null is not a list of steps"),
    ] {
        assert_eq!(with(list).unwrap_err(), error, "{list}");
    }
    // `record_steps` is always written.
    assert!(
        parse(ADAM_WITHOUT_RECORD_STEPS)
            .unwrap_err()
            .starts_with("missing field `record_steps`")
    );
}

#[test]
fn an_exact_gelus_backward_is_recorded_as_its_backend_computes_it() {
    let settings =
        serde_json::json!({"gelu.approximate": "none", "act.approximate": "tanh", "bn.eps": 1e-5});
    let flex = super::with_gelu_backward(settings.clone(), Backend::Flex);
    let ndarray = super::with_gelu_backward(settings, Backend::NdArray);
    assert_eq!(flex["gelu.backward"], "none");
    assert_eq!(ndarray["gelu.backward"], "tanh");
    // a tanh GELU is differentiated as what it computes: no backward of its own
    assert!(ndarray.get("act.backward").is_none());
    assert_eq!(ndarray["bn.eps"], 1e-5);
}
