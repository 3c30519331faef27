//! A port's spec, as the Python side resolves one (src/torch_burn_parity/models/port.py).

/// A spec of port `tiny_mlp` declaring `params` (PyTorch names and shapes, in model order;
/// a `running_mean` or `running_var` a buffer, as the Python side tells them) and `layers`
/// (SGD, 4 steps of 8, probe steps 1 and 3).
pub fn spec_text(params: &[(&str, Vec<usize>)], layers: &[&str]) -> String {
    spec_with(
        "optimizer: sgd, lr: 0.1, momentum: 0.0, dampening: 0.0, weight_decay: 0.0, nesterov: false, model: port, data: file, probe_steps: [1, 3]",
        4,
        8,
        params,
        layers,
    )
}

/// The spec of experiment `e` (common::resolved's), its model port `tiny_mlp` declaring
/// `params` (parameters and buffers, told apart by name) and `layers`.
pub fn spec_with(
    e: &str,
    steps: usize,
    batch_size: usize,
    params: &[(&str, Vec<usize>)],
    layers: &[&str],
) -> String {
    let text = super::resolved(e, steps, batch_size);
    let mut spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    let buffer = |name: &str| name.ends_with(".running_mean") || name.ends_with(".running_var");
    let entries = |want: bool| -> Vec<serde_json::Value> {
        params
            .iter()
            .filter(|(name, _)| buffer(name) == want)
            .map(|(name, shape)| serde_json::json!({"name": name, "shape": shape}))
            .collect()
    };
    spec["port"] = serde_json::json!({
        "name": "tiny_mlp", "params": entries(false), "buffers": entries(true), "layers": layers
    });
    spec.to_string()
}
