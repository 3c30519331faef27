//! A model's sizes: the spec's `model_size` (an object of positive integers holding exactly
//! the model's size keys) and the run file's `meta.model_size` (read back from the built
//! modules, in the same key order).

use serde::Serialize;
use serde_json::{Map, Value};

use super::{LENGTH, Model};

/// The sizes of cnn1d and cnn_bn: Conv1d(1 → `channels`, `kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConvSize {
    pub channels: usize,
    pub kernel: usize,
}

impl ConvSize {
    /// The convolution's output length (no padding, stride 1): 16 − kernel + 1.
    pub fn positions(&self) -> usize {
        LENGTH - self.kernel + 1
    }
}

/// The sizes of the transformer: `layers` post-norm encoder layers of width `d_model`, with
/// `heads` attention heads and a feed-forward of width `d_ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TransformerSize {
    pub d_model: usize,
    pub heads: usize,
    pub layers: usize,
    pub d_ff: usize,
}

/// The sizes of lenet: Conv2d(1 → `conv1`), Conv2d(`conv1` → `conv2`), Linear(`conv2`·4 →
/// `hidden`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LeNetSize {
    pub conv1: usize,
    pub conv2: usize,
    pub hidden: usize,
}

/// The sizes of gpt: token and position embeddings of width `d_model` (`vocab` tokens,
/// `context` positions), `layers` pre-norm blocks of `heads` attention heads and a
/// feed-forward of width `d_ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GptSize {
    pub d_model: usize,
    pub heads: usize,
    pub layers: usize,
    pub d_ff: usize,
    pub context: usize,
    pub vocab: usize,
}

/// A port's size: none. A port's shapes are its spec's declaration (`port.params`), not
/// sizes; it is written `{}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PortSize {}

/// One model's sizes, checked ([`ModelSize::parse`]); written as the plain object of its
/// keys, in the order of [`ModelSize::keys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ModelSize {
    /// cnn1d and cnn_bn.
    Conv(ConvSize),
    Transformer(TransformerSize),
    LeNet(LeNetSize),
    Gpt(GptSize),
    /// A user's own port (src/port): no size keys.
    Port(PortSize),
}

impl ModelSize {
    /// The size keys of `model`, in the spec's and the run file's order.
    pub fn keys(model: Model) -> &'static [&'static str] {
        match model {
            Model::Cnn1d | Model::CnnBn => &["channels", "kernel"],
            Model::Transformer => &["d_model", "heads", "layers", "d_ff"],
            Model::LeNet => &["conv1", "conv2", "hidden"],
            Model::Gpt => &["d_model", "heads", "layers", "d_ff", "context", "vocab"],
            Model::Port => &[],
        }
    }

    /// The sizes the models had before they were configurable. The spec always gives the
    /// size; these only name parameters before a spec is read (fault.rs), and serve tests.
    pub fn default_for(model: Model) -> ModelSize {
        match model {
            Model::Cnn1d | Model::CnnBn => ModelSize::Conv(ConvSize {
                channels: 4,
                kernel: 5,
            }),
            Model::Transformer => ModelSize::Transformer(TransformerSize {
                d_model: 8,
                heads: 2,
                layers: 1,
                d_ff: 16,
            }),
            Model::LeNet => ModelSize::LeNet(LeNetSize {
                conv1: 6,
                conv2: 16,
                hidden: 32,
            }),
            Model::Gpt => ModelSize::Gpt(GptSize {
                d_model: 32,
                heads: 2,
                layers: 2,
                d_ff: 128,
                context: 32,
                vocab: 84,
            }),
            Model::Port => ModelSize::Port(PortSize {}),
        }
    }

    /// `model`'s size in the spec's `model_size` object; one line naming the key otherwise
    /// (an unknown key, a missing one, one that is not a positive integer, a failed
    /// [`check`](ModelSize::check)).
    pub fn parse(model: Model, object: &Map<String, Value>) -> Result<ModelSize, String> {
        let keys = ModelSize::keys(model);
        let sizes = || match keys {
            [] => "no keys".to_string(),
            _ => keys.join(", "),
        };
        if let Some(key) = object.keys().find(|k| !keys.contains(&k.as_str())) {
            return Err(format!(
                "model_size.{key}: unknown key (model {} is sized by {})",
                model.name(),
                sizes()
            ));
        }
        let get = |key: &str| match object.get(key) {
            None => Err(format!(
                "model_size.{key}: missing (model {} is sized by {})",
                model.name(),
                sizes()
            )),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("model_size.{key}: {v} is not a positive integer")),
        };
        let size = match model {
            Model::Cnn1d | Model::CnnBn => ModelSize::Conv(ConvSize {
                channels: get("channels")?,
                kernel: get("kernel")?,
            }),
            Model::Transformer => ModelSize::Transformer(TransformerSize {
                d_model: get("d_model")?,
                heads: get("heads")?,
                layers: get("layers")?,
                d_ff: get("d_ff")?,
            }),
            Model::LeNet => ModelSize::LeNet(LeNetSize {
                conv1: get("conv1")?,
                conv2: get("conv2")?,
                hidden: get("hidden")?,
            }),
            Model::Gpt => ModelSize::Gpt(GptSize {
                d_model: get("d_model")?,
                heads: get("heads")?,
                layers: get("layers")?,
                d_ff: get("d_ff")?,
                context: get("context")?,
                vocab: get("vocab")?,
            }),
            Model::Port => ModelSize::Port(PortSize {}),
        };
        size.check()?;
        Ok(size)
    }

    /// Refuses, on one line naming the key, a zero size, a kernel longer than the input, and
    /// heads that do not divide d_model (the transformer's and gpt's; lenet's sizes need only
    /// be positive).
    pub fn check(&self) -> Result<(), String> {
        let pairs: Vec<(&str, usize)> = match *self {
            ModelSize::Conv(s) => vec![("channels", s.channels), ("kernel", s.kernel)],
            ModelSize::Transformer(s) => vec![
                ("d_model", s.d_model),
                ("heads", s.heads),
                ("layers", s.layers),
                ("d_ff", s.d_ff),
            ],
            ModelSize::LeNet(s) => {
                vec![("conv1", s.conv1), ("conv2", s.conv2), ("hidden", s.hidden)]
            }
            ModelSize::Gpt(s) => vec![
                ("d_model", s.d_model),
                ("heads", s.heads),
                ("layers", s.layers),
                ("d_ff", s.d_ff),
                ("context", s.context),
                ("vocab", s.vocab),
            ],
            ModelSize::Port(_) => Vec::new(),
        };
        if let Some((key, _)) = pairs.iter().find(|(_, n)| *n == 0) {
            return Err(format!("model_size.{key}: 0 is not a positive integer"));
        }
        match *self {
            ModelSize::Conv(s) if s.kernel > LENGTH => Err(format!(
                "model_size.kernel: {} is longer than the input ({LENGTH})",
                s.kernel
            )),
            ModelSize::Transformer(s) if !s.d_model.is_multiple_of(s.heads) => Err(format!(
                "model_size.heads: {} does not divide d_model {}",
                s.heads, s.d_model
            )),
            ModelSize::Gpt(s) if !s.d_model.is_multiple_of(s.heads) => Err(format!(
                "model_size.heads: {} does not divide d_model {}",
                s.heads, s.d_model
            )),
            _ => Ok(()),
        }
    }

    /// The conv models' sizes; panics on another model's (the spec pairs a model with its
    /// own size).
    pub fn conv(&self) -> ConvSize {
        match *self {
            ModelSize::Conv(s) => s,
            _ => panic!("a conv model's size (channels, kernel), not {self:?}"),
        }
    }

    /// lenet's sizes; panics on another model's.
    pub fn lenet(&self) -> LeNetSize {
        match *self {
            ModelSize::LeNet(s) => s,
            _ => panic!("lenet's size (conv1, conv2, hidden), not {self:?}"),
        }
    }

    /// gpt's sizes; panics on another model's.
    pub fn gpt(&self) -> GptSize {
        match *self {
            ModelSize::Gpt(s) => s,
            _ => panic!("gpt's size (d_model, heads, layers, d_ff, context, vocab), not {self:?}"),
        }
    }

    /// The transformer's sizes; panics on another model's.
    pub fn transformer(&self) -> TransformerSize {
        match *self {
            ModelSize::Transformer(s) => s,
            _ => panic!("a transformer's size (d_model, heads, layers, d_ff), not {self:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(model: Model, json: &str) -> Result<ModelSize, String> {
        ModelSize::parse(model, &serde_json::from_str(json).unwrap())
    }

    #[test]
    fn reads_checks_and_writes_each_models_size_in_key_order() {
        for model in Model::ALL {
            let size = ModelSize::default_for(model);
            let text = serde_json::to_string(&size).unwrap();
            assert_eq!(parse(model, &text), Ok(size));
            let keys: Vec<String> = text[1..]
                .split(',')
                .map(|kv| kv.split(':').next().unwrap().trim_matches('"').to_string())
                .collect();
            assert_eq!(keys, ModelSize::keys(model), "{text}");
        }
        assert_eq!(
            serde_json::to_string(&ModelSize::default_for(Model::Transformer)).unwrap(),
            r#"{"d_model":8,"heads":2,"layers":1,"d_ff":16}"#
        );
        let refused = |model, json| parse(model, json).unwrap_err();
        for (error, want) in [
            (
                refused(Model::CnnBn, r#"{"channels": 0, "kernel": 5}"#),
                "model_size.channels: 0 is not a positive integer",
            ),
            (
                refused(Model::Cnn1d, r#"{"channels": 4, "kernel": 2.5}"#),
                "model_size.kernel: 2.5 is not a positive integer",
            ),
            (
                refused(Model::Cnn1d, r#"{"channels": 4, "kernel": 17}"#),
                "model_size.kernel: 17 is longer than the input (16)",
            ),
            (
                refused(Model::Cnn1d, r#"{"channels": 4}"#),
                "model_size.kernel: missing (model cnn1d is sized by channels, kernel)",
            ),
            (
                refused(
                    Model::Transformer,
                    r#"{"d_model": 8, "heads": 3, "layers": 1, "d_ff": 16}"#,
                ),
                "model_size.heads: 3 does not divide d_model 8",
            ),
            (
                refused(
                    Model::Transformer,
                    r#"{"d_model": 8, "heads": 2, "layers": -1, "d_ff": 16}"#,
                ),
                "model_size.layers: -1 is not a positive integer",
            ),
            (
                refused(Model::Transformer, r#"{"channels": 4, "kernel": 5}"#),
                "model_size.channels: unknown key (model transformer is sized by d_model, heads, layers, d_ff)",
            ),
        ] {
            assert_eq!(error, want);
        }
        assert!(parse(Model::Cnn1d, r#"{"channels": 4, "kernel": 16}"#).is_ok());
    }

    #[test]
    fn reads_lenets_size_and_names_a_wrong_key() {
        assert_eq!(
            serde_json::to_string(&ModelSize::default_for(Model::LeNet)).unwrap(),
            r#"{"conv1":6,"conv2":16,"hidden":32}"#
        );
        assert_eq!(
            parse(Model::LeNet, r#"{"conv1": 3, "conv2": 5, "hidden": 7}"#),
            Ok(ModelSize::LeNet(LeNetSize {
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
            assert_eq!(parse(Model::LeNet, json).unwrap_err(), want, "{json}");
        }
    }
}
