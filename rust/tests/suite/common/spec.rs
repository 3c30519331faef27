//! A resolved spec written for the tests, as the Python side writes one.

use parity_train::models::{self, ModelSize};

/// An experiment `e` written as a short YAML flow mapping (the optimizer, its
/// hyperparameters, any other experiment keys), resolved as the Python side resolves it
/// (src/torch_burn_parity/config/resolve.py): every default filled in. Its `param_groups`
/// (none by default) are written with `params`, `optimizer` and every hyperparameter in
/// `hyperparameters`; their `keep_defaults` and `requested` are filled in when left out. Its
/// `model_size` is written as given, the model's seed sizes when left out; its `data` as
/// given, the model's (`digits` for lenet, `text` for gpt, `sine` for the others) when left
/// out; its `label_smoothing` as given, 0 when left out; its `record_steps` as given, every step
/// (1..=`steps`) when left out.
pub fn resolved(experiment: &str, steps: usize, batch_size: usize) -> String {
    let exp: serde_yaml::Mapping = serde_yaml::from_str(&format!("{{{experiment}}}")).unwrap();
    let exp: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(serde_json::to_value(exp).unwrap()).unwrap();
    const NOT_HYPERPARAMETERS: [&str; 13] = [
        "optimizer",
        "record_steps",
        "keep_defaults",
        "schedule",
        "clip_grad",
        "burn_backend",
        "model",
        "model_size",
        "data",
        "label_smoothing",
        "probe_steps",
        "description",
        "param_groups",
    ];
    let optimizer = exp["optimizer"].clone();
    let mut hyperparameters: serde_json::Map<String, serde_json::Value> = exp
        .iter()
        .filter(|(k, _)| !NOT_HYPERPARAMETERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if optimizer == "adam" {
        hyperparameters.entry("amsgrad").or_insert(false.into());
    }
    let keep = exp.get("keep_defaults").cloned().unwrap_or_default();
    let listed = |fw: &str| keep.get(fw).cloned().unwrap_or(serde_json::json!([]));
    let mut probe_steps: Vec<u64> = exp
        .get("probe_steps")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|s| s.as_u64()).collect())
        .unwrap_or_default();
    let mut groups = exp
        .get("param_groups")
        .cloned()
        .unwrap_or(serde_json::json!([]));
    for group in groups.as_array_mut().expect("a list of groups") {
        let group = group.as_object_mut().expect("a group mapping");
        group
            .entry("keep_defaults")
            .or_insert(serde_json::json!({"torch": [], "burn": []}));
        group
            .entry("requested")
            .or_insert(serde_json::json!({"torch": {}, "burn": {}}));
    }
    let model = exp.get("model").cloned().unwrap_or("cnn1d".into());
    let model_size = exp.get("model_size").cloned().unwrap_or_else(|| {
        // A port (no built-in model) has no size keys.
        let model = models::builtin(model.as_str().expect("a model name"));
        serde_json::to_value(model.map_or_else(ModelSize::default, |m| m.default_size())).unwrap()
    });
    let data = exp.get("data").cloned().unwrap_or_else(|| {
        match model.as_str() {
            Some("lenet") => "digits",
            Some("gpt") => "text",
            _ => "sine",
        }
        .into()
    });
    let label_smoothing = exp
        .get("label_smoothing")
        .cloned()
        .unwrap_or(serde_json::json!(0.0));
    probe_steps.push(1);
    probe_steps.sort_unstable();
    probe_steps.dedup();
    serde_json::json!({
        "name": "e",
        "optimizer": optimizer,
        "hyperparameters": hyperparameters,
        "keep_defaults": {"torch": listed("torch"), "burn": listed("burn")},
        "schedule": exp.get("schedule").cloned().unwrap_or(serde_json::json!({"kind": "constant"})),
        "clip_grad": exp.get("clip_grad").cloned().unwrap_or(serde_json::Value::Null),
        "burn_backend": exp.get("burn_backend").cloned().unwrap_or("flex".into()),
        "model": model,
        "model_size": model_size,
        "data": data,
        "label_smoothing": label_smoothing,
        "probe_steps": probe_steps,
        "record_steps": exp
            .get("record_steps")
            .cloned()
            .unwrap_or_else(|| (1..=steps).collect()),
        "steps": steps,
        "batch_size": batch_size,
        "threads": 1,
        "cpu_path": "native",
        "requested": {},
        "param_groups": groups,
    })
    .to_string()
}
