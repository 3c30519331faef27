//! The experiment spec, read from config.yaml (or the pipeline's per-experiment JSON copy).
//!
//! Every hyperparameter of the named optimizer must be present; an experiment may list
//! some under `keep_defaults.burn`, and those are then left at Burn's own defaults.

use serde_yaml::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum Optimizer {
    Sgd {
        lr: f64,
        momentum: f64,
        dampening: f64,
        weight_decay: f64,
        nesterov: bool,
    },
    Adam {
        lr: f64,
        betas: [f64; 2],
        eps: f64,
        weight_decay: f64,
    },
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub optimizer: Optimizer,
    /// Hyperparameters left at Burn's defaults (`keep_defaults.burn`).
    pub burn_defaults: Vec<String>,
    pub steps: usize,
    pub batch_size: usize,
    pub threads: usize,
}

impl Spec {
    pub fn keeps_default(&self, key: &str) -> bool {
        self.burn_defaults.iter().any(|k| k == key)
    }

    pub fn lr(&self) -> f64 {
        match self.optimizer {
            Optimizer::Sgd { lr, .. } | Optimizer::Adam { lr, .. } => lr,
        }
    }
}

const SGD_KEYS: [&str; 5] = ["lr", "momentum", "dampening", "weight_decay", "nesterov"];
const ADAM_KEYS: [&str; 4] = ["lr", "betas", "eps", "weight_decay"];

pub fn load(path: &Path, experiment: &str) -> Result<Spec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: Value = serde_yaml::from_str(&text)
        .map_err(|e| format!("{}: not valid YAML ({e})", path.display()))?;
    parse(&config, experiment)
}

pub fn parse(config: &Value, experiment: &str) -> Result<Spec, String> {
    let experiments = config
        .get("experiments")
        .and_then(Value::as_mapping)
        .ok_or("experiments: missing or not a mapping")?;
    let exp = experiments
        .get(experiment)
        .ok_or_else(|| format!("unknown experiment '{experiment}'"))?;
    let at = |key: &str| format!("experiments.{experiment}.{key}");
    let optimizer_name = exp
        .get("optimizer")
        .and_then(Value::as_str)
        .unwrap_or("<missing>");
    let keys: &[&str] = match optimizer_name {
        "sgd" => &SGD_KEYS,
        "adam" => &ADAM_KEYS,
        other => {
            return Err(format!(
                "{}: unknown optimizer '{other}' (known: sgd, adam)",
                at("optimizer")
            ));
        }
    };
    for key in keys {
        if exp.get(*key).is_none() {
            return Err(format!(
                "{}: missing hyperparameter for {optimizer_name}",
                at(key)
            ));
        }
    }
    let number = |key: &str| -> Result<f64, String> {
        exp.get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("{}: expected a number", at(key)))
    };
    let optimizer = if optimizer_name == "sgd" {
        Optimizer::Sgd {
            lr: number("lr")?,
            momentum: number("momentum")?,
            dampening: number("dampening")?,
            weight_decay: number("weight_decay")?,
            nesterov: exp
                .get("nesterov")
                .and_then(Value::as_bool)
                .ok_or_else(|| format!("{}: expected true or false", at("nesterov")))?,
        }
    } else {
        let betas = exp
            .get("betas")
            .and_then(Value::as_sequence)
            .filter(|s| s.len() == 2)
            .and_then(|s| Some([s[0].as_f64()?, s[1].as_f64()?]))
            .ok_or_else(|| format!("{}: expected two numbers", at("betas")))?;
        Optimizer::Adam {
            lr: number("lr")?,
            betas,
            eps: number("eps")?,
            weight_decay: number("weight_decay")?,
        }
    };
    let burn_defaults = match exp.get("keep_defaults").and_then(|k| k.get("burn")) {
        None => Vec::new(),
        Some(list) => list
            .as_sequence()
            .ok_or_else(|| format!("{}: expected a list", at("keep_defaults.burn")))?
            .iter()
            .map(|v| {
                let key = v.as_str().unwrap_or_default();
                if keys.contains(&key) && key != "lr" {
                    Ok(key.to_string())
                } else {
                    Err(format!(
                        "{}: '{key}' has no Burn default for {optimizer_name}",
                        at("keep_defaults.burn")
                    ))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    let positive = |key: &str, default: Option<u64>| -> Result<usize, String> {
        match config.get(key).map(Value::as_u64) {
            None => default
                .map(|d| d as usize)
                .ok_or_else(|| format!("{key}: missing")),
            Some(Some(n)) if n > 0 => Ok(n as usize),
            Some(_) => Err(format!("{key}: must be a positive integer")),
        }
    };
    Ok(Spec {
        name: experiment.to_string(),
        optimizer,
        burn_defaults,
        steps: positive("steps", None)?,
        batch_size: positive("batch_size", None)?,
        threads: positive("threads", Some(1))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(experiment: &str) -> Value {
        serde_yaml::from_str(&format!(
            "steps: 3\nbatch_size: 16\nexperiments:\n  e:\n{experiment}"
        ))
        .unwrap()
    }

    #[test]
    fn reads_an_adam_experiment() {
        let c = config(
            "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n    keep_defaults: {burn: [eps]}\n",
        );
        let spec = parse(&c, "e").unwrap();
        assert_eq!(
            spec.optimizer,
            Optimizer::Adam {
                lr: 0.01,
                betas: [0.9, 0.999],
                eps: 1e-8,
                weight_decay: 0.0
            }
        );
        assert!(spec.keeps_default("eps"));
        assert_eq!((spec.steps, spec.batch_size, spec.threads), (3, 16, 1));
    }

    #[test]
    fn refuses_an_unknown_optimizer_naming_it() {
        let err = parse(&config("    optimizer: rmsprop\n    lr: 0.1\n"), "e").unwrap_err();
        assert!(
            err.contains("experiments.e.optimizer") && err.contains("rmsprop"),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_missing_hyperparameter_naming_it() {
        let c = config(
            "    optimizer: sgd\n    lr: 0.1\n    momentum: 0\n    weight_decay: 0\n    nesterov: false\n",
        );
        let err = parse(&c, "e").unwrap_err();
        assert!(err.contains("experiments.e.dampening"), "{err}");
    }

    #[test]
    fn refuses_an_unknown_experiment() {
        let err = parse(&config("    optimizer: sgd\n"), "nope").unwrap_err();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn keeps_only_the_listed_defaults_and_reads_lr_of_either_optimizer() {
        let adam = config(
            "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n",
        );
        let spec = parse(&adam, "e").unwrap();
        assert!(!spec.keeps_default("eps") && spec.burn_defaults.is_empty());
        assert_eq!(spec.lr(), 0.01);
        let sgd = config(
            "    optimizer: sgd\n    lr: 0.5\n    momentum: 0.9\n    dampening: 0\n    weight_decay: 0\n    nesterov: false\n    keep_defaults: {burn: [dampening]}\n",
        );
        let spec = parse(&sgd, "e").unwrap();
        assert!(spec.keeps_default("dampening") && !spec.keeps_default("momentum"));
        assert_eq!(spec.lr(), 0.5);
    }

    #[test]
    fn refuses_keeping_a_default_burn_does_not_have() {
        // lr has no default, and nesterov is no Adam hyperparameter.
        for key in ["lr", "nesterov"] {
            let c = config(&format!(
                "    optimizer: adam\n    lr: 0.01\n    betas: [0.9, 0.999]\n    eps: 1.0e-8\n    weight_decay: 0\n    keep_defaults: {{burn: [{key}]}}\n"
            ));
            assert_eq!(
                parse(&c, "e").unwrap_err(),
                format!("experiments.e.keep_defaults.burn: '{key}' has no Burn default for adam")
            );
        }
    }

    #[test]
    fn steps_batch_size_and_threads_must_be_positive() {
        let exp = "experiments:\n  e:\n    optimizer: sgd\n    lr: 0.1\n    momentum: 0\n    dampening: 0\n    weight_decay: 0\n    nesterov: false\n";
        let read = |head: &str| parse(&serde_yaml::from_str(&format!("{head}{exp}")).unwrap(), "e");
        let spec = read("steps: 1\nbatch_size: 1\nthreads: 1\n").unwrap();
        assert_eq!((spec.steps, spec.batch_size, spec.threads), (1, 1, 1));
        for (head, key) in [
            ("steps: 0\nbatch_size: 16\n", "steps"),
            ("steps: 3\nbatch_size: 0\n", "batch_size"),
            ("steps: 3\nbatch_size: 16\nthreads: 0\n", "threads"),
        ] {
            assert_eq!(
                read(head).unwrap_err(),
                format!("{key}: must be a positive integer")
            );
        }
        assert_eq!(read("batch_size: 16\n").unwrap_err(), "steps: missing");
    }
}
