//! A port's spec, as the Python side resolves one (src/torch_burn_parity/models/port.py).

/// A spec of port `tiny_mlp` declaring `params` (PyTorch names and shapes, in model order)
/// and `layers` (SGD, 4 steps of 8, probe steps 1 and 3).
pub fn spec_text(params: &[(&str, Vec<usize>)], layers: &[&str]) -> String {
    let text = super::resolved(
        "optimizer: sgd, lr: 0.1, momentum: 0.0, dampening: 0.0, weight_decay: 0.0, nesterov: false, model: port, data: file, probe_steps: [1, 3]",
        4,
        8,
    );
    let mut spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    let params: Vec<serde_json::Value> = params
        .iter()
        .map(|(name, shape)| serde_json::json!({"name": name, "shape": shape}))
        .collect();
    spec["port"] = serde_json::json!({"name": "tiny_mlp", "params": params, "layers": layers});
    spec.to_string()
}
