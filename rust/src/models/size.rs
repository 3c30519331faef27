//! A model's sizes: the spec's `model_size` (an object of positive integers holding exactly
//! the model's size keys, [`ParityModel::SIZE`]) and the run file's `meta.model_size` (read
//! back from the built modules, in the same key order). The models read them through typed
//! views ([`ConvSize`], [`TransformerSize`], [`LeNetSize`], [`GptSize`]).

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::{LENGTH, ParityModel};

/// A model's size declaration ([`ParityModel::SIZE`]): its size keys in the spec's and the
/// run file's order, each with its default.
pub type SizeKeys = &'static [(&'static str, usize)];

/// One model's sizes: its size keys and their values, in the model's order; written as the
/// plain object of them, in that order (a port's, without keys: `{}`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelSize(Vec<(&'static str, usize)>);

impl Serialize for ModelSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

impl ModelSize {
    /// The size of these keys and values, in this order.
    pub fn new(pairs: impl IntoIterator<Item = (&'static str, usize)>) -> ModelSize {
        ModelSize(pairs.into_iter().collect())
    }

    /// The defaults of a declaration: the sizes the models had before they were
    /// configurable. The spec always gives the size; these only name parameters before a
    /// spec is read (fault.rs), and serve tests.
    pub fn defaults(keys: SizeKeys) -> ModelSize {
        ModelSize::new(keys.iter().copied())
    }

    /// The keys, in order.
    pub fn keys(&self) -> Vec<&'static str> {
        self.0.iter().map(|&(key, _)| key).collect()
    }

    /// The value of `key`; panics on a size without it (the spec pairs a model with its own
    /// size).
    pub fn get(&self, key: &str) -> usize {
        self.0
            .iter()
            .find(|&&(k, _)| k == key)
            .map(|&(_, n)| n)
            .unwrap_or_else(|| panic!("model size {self:?} has no key {key}"))
    }

    /// The size of `model`, sized by `keys`, in the spec's `model_size` object; one line
    /// naming the key otherwise (an unknown key, a missing one, one that is not a positive
    /// integer). The model's rules over several keys are its own
    /// ([`ParityModel::check_size`]).
    pub fn parse(
        model: &str,
        keys: SizeKeys,
        object: &Map<String, Value>,
    ) -> Result<ModelSize, String> {
        let sizes = || match keys {
            [] => "no keys".to_string(),
            _ => keys.iter().map(|&(k, _)| k).collect::<Vec<_>>().join(", "),
        };
        if let Some(key) = object.keys().find(|k| !keys.iter().any(|&(d, _)| d == *k)) {
            return Err(format!(
                "model_size.{key}: unknown key (model {model} is sized by {})",
                sizes()
            ));
        }
        let get = |key: &str| match object.get(key) {
            None => Err(format!(
                "model_size.{key}: missing (model {model} is sized by {})",
                sizes()
            )),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("model_size.{key}: {v} is not a positive integer")),
        };
        let size = keys
            .iter()
            .map(|&(key, _)| Ok((key, get(key)?)))
            .collect::<Result<_, String>>()
            .map(ModelSize)?;
        size.positive()?;
        Ok(size)
    }

    /// Refuses, on one line naming the key, a zero, then what `M` refuses of its keys
    /// together ([`ParityModel::check_size`]: a kernel longer than the input, heads that do
    /// not divide d_model).
    pub fn check<M: ParityModel>(&self) -> Result<(), String> {
        self.positive()?;
        M::check_size(self)
    }

    /// Refuses, on one line naming the key, a zero.
    fn positive(&self) -> Result<(), String> {
        match self.0.iter().find(|&&(_, n)| n == 0) {
            Some((key, _)) => Err(format!("model_size.{key}: 0 is not a positive integer")),
            None => Ok(()),
        }
    }
}

/// A typed view of a model's sizes: its fields read from a [`ModelSize`] (panics without
/// one of its keys), and back into one, in the fields' order (the model's key order).
macro_rules! view {
    ($view:ident { $($key:ident),+ }) => {
        impl From<&ModelSize> for $view {
            fn from(size: &ModelSize) -> $view {
                $view { $($key: size.get(stringify!($key))),+ }
            }
        }

        impl From<$view> for ModelSize {
            fn from(view: $view) -> ModelSize {
                ModelSize::new([$((stringify!($key), view.$key)),+])
            }
        }
    };
}

/// The sizes of cnn1d and cnn_bn: Conv1d(1 → `channels`, `kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvSize {
    pub channels: usize,
    pub kernel: usize,
}
view!(ConvSize { channels, kernel });

impl ConvSize {
    /// The convolution's output length (no padding, stride 1): 16 − kernel + 1.
    pub fn positions(&self) -> usize {
        LENGTH - self.kernel + 1
    }

    /// Refuses a kernel longer than the input.
    pub fn check(&self) -> Result<(), String> {
        if self.kernel > LENGTH {
            return Err(format!(
                "model_size.kernel: {} is longer than the input ({LENGTH})",
                self.kernel
            ));
        }
        Ok(())
    }
}

/// The sizes of the transformer: `layers` post-norm encoder layers of width `d_model`, with
/// `heads` attention heads and a feed-forward of width `d_ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransformerSize {
    pub d_model: usize,
    pub heads: usize,
    pub layers: usize,
    pub d_ff: usize,
}
view!(TransformerSize {
    d_model,
    heads,
    layers,
    d_ff
});

impl TransformerSize {
    /// Refuses heads that do not divide d_model.
    pub fn check(&self) -> Result<(), String> {
        heads_divide(self.heads, self.d_model)
    }
}

/// The sizes of lenet: Conv2d(1 → `conv1`), Conv2d(`conv1` → `conv2`), Linear(`conv2`·4 →
/// `hidden`); they need only be positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeNetSize {
    pub conv1: usize,
    pub conv2: usize,
    pub hidden: usize,
}
view!(LeNetSize {
    conv1,
    conv2,
    hidden
});

/// The sizes of gpt: token and position embeddings of width `d_model` (`vocab` tokens,
/// `context` positions), `layers` pre-norm blocks of `heads` attention heads and a
/// feed-forward of width `d_ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GptSize {
    pub d_model: usize,
    pub heads: usize,
    pub layers: usize,
    pub d_ff: usize,
    pub context: usize,
    pub vocab: usize,
}
view!(GptSize {
    d_model,
    heads,
    layers,
    d_ff,
    context,
    vocab
});

impl GptSize {
    /// Refuses heads that do not divide d_model.
    pub fn check(&self) -> Result<(), String> {
        heads_divide(self.heads, self.d_model)
    }
}

/// Refuses `heads` attention heads that do not divide `d_model`.
fn heads_divide(heads: usize, d_model: usize) -> Result<(), String> {
    if !d_model.is_multiple_of(heads) {
        return Err(format!(
            "model_size.heads: {heads} does not divide d_model {d_model}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{Declared, builtin, builtins};

    fn model(name: &str) -> Declared {
        builtin(name).unwrap()
    }

    fn parse(name: &str, json: &str) -> Result<ModelSize, String> {
        model(name).parse_size(&serde_json::from_str(json).unwrap())
    }

    #[test]
    fn reads_checks_and_writes_each_models_size_in_key_order() {
        for model in builtins() {
            let size = model.default_size();
            let text = serde_json::to_string(&size).unwrap();
            assert_eq!(parse(model.name, &text), Ok(size.clone()));
            let keys: Vec<String> = text[1..]
                .split(',')
                .map(|kv| kv.split(':').next().unwrap().trim_matches('"').to_string())
                .collect();
            assert_eq!(keys, size.keys(), "{text}");
        }
        assert_eq!(
            serde_json::to_string(&model("transformer").default_size()).unwrap(),
            r#"{"d_model":8,"heads":2,"layers":1,"d_ff":16}"#
        );
        let refused = |model, json| parse(model, json).unwrap_err();
        for (error, want) in [
            (
                refused("cnn_bn", r#"{"channels": 0, "kernel": 5}"#),
                "model_size.channels: 0 is not a positive integer",
            ),
            (
                refused("cnn1d", r#"{"channels": 4, "kernel": 2.5}"#),
                "model_size.kernel: 2.5 is not a positive integer",
            ),
            (
                refused("cnn1d", r#"{"channels": 4, "kernel": 17}"#),
                "model_size.kernel: 17 is longer than the input (16)",
            ),
            (
                refused("cnn1d", r#"{"channels": 4}"#),
                "model_size.kernel: missing (model cnn1d is sized by channels, kernel)",
            ),
            (
                refused(
                    "transformer",
                    r#"{"d_model": 8, "heads": 3, "layers": 1, "d_ff": 16}"#,
                ),
                "model_size.heads: 3 does not divide d_model 8",
            ),
            (
                refused(
                    "transformer",
                    r#"{"d_model": 8, "heads": 2, "layers": -1, "d_ff": 16}"#,
                ),
                "model_size.layers: -1 is not a positive integer",
            ),
            (
                refused("transformer", r#"{"channels": 4, "kernel": 5}"#),
                "model_size.channels: unknown key (model transformer is sized by d_model, heads, layers, d_ff)",
            ),
        ] {
            assert_eq!(error, want);
        }
        assert!(parse("cnn1d", r#"{"channels": 4, "kernel": 16}"#).is_ok());
    }

    #[test]
    fn reads_lenets_size_and_names_a_wrong_key() {
        assert_eq!(
            serde_json::to_string(&model("lenet").default_size()).unwrap(),
            r#"{"conv1":6,"conv2":16,"hidden":32}"#
        );
        assert_eq!(
            parse("lenet", r#"{"conv1": 3, "conv2": 5, "hidden": 7}"#),
            Ok(ModelSize::from(LeNetSize {
                conv1: 3,
                conv2: 5,
                hidden: 7
            }))
        );
        for (json, want) in [
            (
                r#"{"conv1": 6, "conv2": 0, "hidden": 32}"#,
                "model_size.conv2: 0 is not a positive integer",
            ),
            (
                r#"{"conv1": 6, "conv2": 16, "hidden": 1.5}"#,
                "model_size.hidden: 1.5 is not a positive integer",
            ),
            (
                r#"{"conv1": 6, "conv2": 16}"#,
                "model_size.hidden: missing (model lenet is sized by conv1, conv2, hidden)",
            ),
            (
                r#"{"conv1": 6, "conv2": 16, "hidden": 32, "kernel": 3}"#,
                "model_size.kernel: unknown key (model lenet is sized by conv1, conv2, hidden)",
            ),
        ] {
            assert_eq!(parse("lenet", json).unwrap_err(), want, "{json}");
        }
    }
}
