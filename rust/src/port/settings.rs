//! A port's layers' settings as its Burn modules hold them, read from the module's own
//! `Display` (burn-core src/module/display.rs): the only view of a module's configuration
//! that needs no per-type code, since a derived module prints each field by name, nested as
//! the module is, and each of Burn's layers prints its settings (burn-nn: BatchNorm's
//! `num_features`, `momentum`, `epsilon`; Linear's `d_input`, `d_output`, `bias`; …):
//!
//! ```text
//! Net {
//!   blocks: Vec<0..2> {
//!     0: Block {
//!       bn: BatchNorm {num_features: 3, momentum: 0.2, epsilon: 0.00001, params: 12}
//!       act: Gelu {
//!         approximate: false
//!       }
//!     }
//!   }
//!   head: Linear {d_input: 4, d_output: 2, bias: true, params: 10}
//! }
//! ```
//!
//! A field's path is its names from the root joined by dots (`blocks.0.bn`), burn-store's
//! module path; an `Option` prints its module in place.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// One module of the display: its path, its type and the settings it prints (name → the
/// value as printed), `params` (a count, not a setting) left out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shown {
    pub path: String,
    pub kind: String,
    pub settings: BTreeMap<String, String>,
}

/// Every module of a module's display below its root, in the display's order.
pub(crate) fn modules(display: &str) -> Vec<Shown> {
    let mut found: Vec<Shown> = Vec::new();
    // The paths of the modules open on several lines, the innermost last, each with the
    // index of its entry in `found`.
    let mut open: Vec<(String, Option<usize>)> = Vec::new();
    for line in display.lines() {
        let text = line.trim();
        if text == "}" {
            open.pop();
            continue;
        }
        let Some((name, rest)) = text.split_once(": ") else {
            // the root's first line, `Net {`
            if text.ends_with('{') {
                open.push((String::new(), None));
            }
            continue;
        };
        let parent = open.last().map(|(p, _)| p.as_str()).unwrap_or("");
        let path = if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}.{name}")
        };
        if let Some(kind) = rest.strip_suffix(" {") {
            found.push(Shown {
                path: path.clone(),
                kind: kind.to_string(),
                settings: BTreeMap::new(),
            });
            open.push((path, Some(found.len() - 1)));
        } else if let Some((kind, inner)) = rest.split_once(" {") {
            let settings = split_top(inner.strip_suffix('}').unwrap_or(inner))
                .into_iter()
                .filter_map(|pair| pair.split_once(": "))
                .filter(|(k, _)| *k != "params")
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            found.push(Shown {
                path,
                kind: kind.to_string(),
                settings,
            });
        } else if let Some(k) = open.last().and_then(|(_, k)| *k) {
            // a setting printed on its own line, within its module's braces
            if name != "params" {
                found[k].settings.insert(name.to_string(), rest.to_string());
            }
        } else if name != "params" {
            // a module that prints no settings (`act: Relu`) at the root
            found.push(Shown {
                path,
                kind: rest.to_string(),
                settings: BTreeMap::new(),
            });
        }
    }
    found
}

/// `text` split at each ", " outside brackets and parentheses (`stride: [1, 1]`, `padding:
/// Explicit(1, 1)` are one setting each).
fn split_top(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => depth -= 1,
            b',' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(&text[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Each module of a known layer type with its settings under PyTorch's names and in
/// PyTorch's terms (models/port_torch.py `layer_settings` reads the same from the PyTorch
/// module), in the display's order: Linear's `bias`; a convolution's `stride`, `dilation`,
/// `groups` and `padding` (symmetric padding as PyTorch's per-dimension list, `same`, or
/// Burn's own asymmetric form); a norm's `eps` (and BatchNorm's `momentum`, and the
/// variance its running variance is updated with: burn-nn norm/batch.rs `forward_train`
/// takes the batch's biased variance); LayerNorm's `bias`; GELU's `approximate` (`none` or
/// `tanh`); dropout's `p`.
pub(crate) fn layer_settings(shown: &[Shown]) -> Vec<(String, Vec<(String, Value)>)> {
    shown
        .iter()
        .flat_map(|m| {
            let get = |name: &str| m.settings.get(name).map(String::as_str);
            let number = |name: &str| {
                get(name)
                    .and_then(|v| v.parse::<f64>().ok())
                    .map(|v| json!(v))
            };
            let flag = |name: &str| get(name).map(|v| json!(v == "true"));
            // a convolution's per-dimension setting: [2, 2] (Conv2d), or 1 (Conv1d's usize)
            let list = |name: &str| {
                let v = serde_json::from_str::<Value>(get(name)?).ok()?;
                Some(if v.is_array() { v } else { json!([v]) })
            };
            let dims = if m.kind == "Conv2d" { 2 } else { 1 };
            let found: Vec<(&str, Option<Value>)> = match m.kind.as_str() {
                "Linear" => vec![("bias", flag("bias"))],
                "Conv1d" | "Conv2d" => vec![
                    ("stride", list("stride")),
                    ("dilation", list("dilation")),
                    (
                        "groups",
                        get("groups")
                            .and_then(|v| v.parse::<u64>().ok())
                            .map(|v| json!(v)),
                    ),
                    ("padding", get("padding").map(|p| padding(p, dims))),
                ],
                "BatchNorm" => vec![
                    ("eps", number("epsilon")),
                    ("momentum", number("momentum")),
                    ("running_var_estimator", Some(json!("biased"))),
                ],
                "LayerNorm" => vec![("eps", number("epsilon")), ("bias", flag("bias"))],
                "RmsNorm" => vec![("eps", number("epsilon"))],
                "Gelu" => vec![(
                    "approximate",
                    get("approximate").map(|v| json!(if v == "true" { "tanh" } else { "none" })),
                )],
                "Dropout" => vec![("p", number("prob"))],
                // two Linears its display does not print (burn-nn activation/swiglu.rs): its
                // `bias` is both's
                "SwiGlu" => {
                    let found = vec![("bias", flag("bias"))];
                    return ["linear_inner", "linear_outer"]
                        .map(|linear| (format!("{}.{linear}", m.path), known(found.clone())))
                        .to_vec();
                }
                _ => return Vec::new(),
            };
            vec![(m.path.clone(), known(found))]
        })
        .collect()
}

/// The settings a module's display prints, by name.
fn known(found: Vec<(&str, Option<Value>)>) -> Vec<(String, Value)> {
    found
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
}

/// Burn's padding as PyTorch writes it, for a convolution of `dims` spatial dimensions:
/// `Explicit(1, 1)` (1-D: left, right) → [1], `Explicit(1, 2, 1, 2)` (2-D: top, left,
/// bottom, right) → [1, 2] when symmetric; `Valid` → zeros; `Same` → "same"; asymmetric
/// padding as Burn prints it.
fn padding(text: &str, dims: usize) -> Value {
    if text == "Same" {
        return json!("same");
    }
    if text == "Valid" {
        return json!(vec![0; dims]);
    }
    let inner = text
        .strip_prefix("Explicit(")
        .and_then(|t| t.strip_suffix(')'));
    let values: Option<Vec<u64>> =
        inner.and_then(|t| t.split(", ").map(|v| v.parse().ok()).collect::<Option<_>>());
    match values.as_deref() {
        Some([l, r]) if l == r => json!([l]),
        Some([t, l, b, r]) if t == b && l == r => json!([t, l]),
        _ => json!(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The setting `name` of the module at `path` as a number.
    fn number(shown: &[Shown], path: &str, name: &str) -> Option<f64> {
        shown
            .iter()
            .find(|m| m.path == path)?
            .settings
            .get(name)?
            .parse()
            .ok()
    }

    const DISPLAY: &str = "Net {
  blocks: Vec<0..2> {
    0: Block {
      bn: BatchNorm {num_features: 3, momentum: 0.2, epsilon: 0.00001, params: 12}
      act: Gelu {
        approximate: false
      }
      params: 36
    }
    1: Block {
      bn: BatchNorm {num_features: 3, momentum: 0.2, epsilon: 0.00001, params: 12}
      act: Gelu {
        approximate: true
      }
      params: 36
    }
  }
  head: Linear {d_input: 4, d_output: 2, bias: true, params: 10}
  bn: BatchNorm {num_features: 2, momentum: 0.1, epsilon: 0.00001, params: 8}
  params: 90
}";

    #[test]
    fn reads_each_modules_path_type_and_settings_at_any_depth() {
        let shown = modules(DISPLAY);
        let paths: Vec<&str> = shown.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "blocks",
                "blocks.0",
                "blocks.0.bn",
                "blocks.0.act",
                "blocks.1",
                "blocks.1.bn",
                "blocks.1.act",
                "head",
                "bn"
            ]
        );
        assert_eq!(number(&shown, "blocks.1.bn", "momentum"), Some(0.2));
        assert_eq!(number(&shown, "bn", "momentum"), Some(0.1));
        assert_eq!(number(&shown, "bn", "epsilon"), Some(1e-5));
        assert_eq!(shown[6].settings["approximate"], "true");
        assert_eq!(shown[3].settings["approximate"], "false");
        assert_eq!(shown[7].kind, "Linear");
        assert_eq!(shown[7].settings["d_output"], "2");
        assert!(!shown[1].settings.contains_key("params"));
        assert_eq!(number(&shown, "head", "momentum"), None);
    }

    #[test]
    fn reads_a_convolutions_bracketed_settings_and_names_them_as_pytorch_does() {
        let display = "Net {
  conv: Conv2d {ch_in: 1, ch_out: 4, stride: [2, 2], kernel_size: [3, 3], dilation: [1, 1], groups: 1, padding: Explicit(1, 1, 1, 1), params: 40}
  side: Conv1d {ch_in: 1, ch_out: 4, stride: [1], kernel_size: [3], dilation: [1], groups: 1, padding: Explicit(0, 1), params: 16}
  act: Gelu {
    approximate: true
  }
  ln: LayerNorm {d_model: 4, epsilon: 0.001, bias: false, params: 4}
}";
        let settings = layer_settings(&modules(display));
        let of = |path: &str| -> Value {
            let (_, found) = settings.iter().find(|(p, _)| p == path).unwrap();
            Value::Object(found.iter().cloned().collect())
        };
        assert_eq!(
            of("conv"),
            json!({"stride": [2, 2], "dilation": [1, 1], "groups": 1, "padding": [1, 1]})
        );
        assert_eq!(of("side")["padding"], json!("Explicit(0, 1)"));
        assert_eq!(of("act"), json!({"approximate": "tanh"}));
        assert_eq!(of("ln"), json!({"eps": 0.001, "bias": false}));
    }

    #[test]
    fn gives_a_swiglus_bias_to_each_of_its_two_linears() {
        let display = "Net {
  mlp: SwiGlu {d_input: 4, d_output: 8, bias: false, params: 64}
}";
        let settings = layer_settings(&modules(display));
        let paths: Vec<&str> = settings.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["mlp.linear_inner", "mlp.linear_outer"]);
        for (_, found) in &settings {
            assert_eq!(found, &[("bias".to_string(), json!(false))]);
        }
    }
}
