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
            let settings = inner
                .trim_end_matches('}')
                .split(", ")
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

/// The setting `name` of the module at `path` as a number, from [`modules`].
pub(crate) fn number(shown: &[Shown], path: &str, name: &str) -> Option<f64> {
    shown
        .iter()
        .find(|m| m.path == path)?
        .settings
        .get(name)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
