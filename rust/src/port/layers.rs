//! The recorded layers of a port's forward ([`Layers`]): the user's typed view of the
//! trainer's [`Probe`], so that a port records each layer without knowing [`Act`].

use burn::tensor::{Device, Int, Tensor};

use crate::models::{Act, Perturb, Probe};

/// What a recorded layer may take: a float tensor of rank 2, 3 or 4, or token ids [N, T]
/// (whose input gradient is recorded as an empty list, as PyTorch has none).
pub trait LayerInput: Into<Act> + Sized {
    /// The tensor back from the probe's value (the same kind it was given as).
    fn from_act(act: Act) -> Self;
}

/// What a recorded layer may give: a float tensor of rank 2, 3 or 4 (a layer's output is
/// recorded as floats; token ids are no output).
pub trait LayerOutput: LayerInput {}

impl LayerInput for Tensor<2> {
    fn from_act(act: Act) -> Self {
        act.r2()
    }
}

impl LayerInput for Tensor<3> {
    fn from_act(act: Act) -> Self {
        act.r3()
    }
}

impl LayerInput for Tensor<4> {
    fn from_act(act: Act) -> Self {
        act.r4()
    }
}

impl LayerInput for Tensor<2, Int> {
    fn from_act(act: Act) -> Self {
        act.tokens()
    }
}

impl LayerOutput for Tensor<2> {}
impl LayerOutput for Tensor<3> {}
impl LayerOutput for Tensor<4> {}

/// The layers a port's forward calls, in order, each through the trainer's probe: when the
/// probe is on, the layer's output and the gradient of the loss with respect to its input
/// are recorded (the run file's `layers`); a layer fault's delta is added to its layer's
/// output. The names called are kept, to be checked against the spec's `port.layers`. In
/// the local mode ([`Layers::local`]) each layer is run on PyTorch's recorded input instead.
pub struct Layers<'a> {
    probe: &'a mut Probe,
    local: Option<&'a mut LocalRun>,
    called: Vec<String>,
}

/// The local mode of one probe step (PaDiff's single step; local.rs for the built-in
/// models): each layer `k` the forward calls is run on PyTorch's recorded input to it, a
/// fresh autodiff leaf, and differentiated on PyTorch's recorded gradient at its output
/// (Σ out ⊙ g, backward on its own); its output goes on detached, so that no later layer's
/// gradient flows into it. A port records both (its layers need not run one after the
/// other: a residual, a branch), so no layer's input is taken for its predecessor's output.
pub(crate) struct LocalRun {
    /// PyTorch's input of each layer and gradient at its output, flat, in call order.
    pub inputs: Vec<Vec<f64>>,
    pub output_grads: Vec<Vec<f64>>,
    /// A layer fault of this step (fault.rs): Burn's layer is then the wrong one.
    pub perturb: Option<Perturb>,
    pub device: Device,
    /// Each layer's local output and input gradient (empty for token ids, or where PyTorch
    /// recorded no gradient at its output).
    pub outputs: Vec<Vec<f64>>,
    pub input_grads: Vec<Vec<f64>>,
    /// The first thing that went wrong, with the layer's name.
    pub failed: Option<String>,
}

impl LocalRun {
    /// Layer `k` (`name`) on PyTorch's input in place of `x`, recorded; its output, detached.
    fn layer(&mut self, k: usize, name: &str, x: Act, f: impl FnOnce(Act) -> Act) -> Act {
        let mut fail = |why: String| {
            self.failed.get_or_insert(format!("layer {name}: {why}"));
        };
        let input = match self.inputs.get(k) {
            _ if x.is_tokens() => x, // the batch's token ids: the same on both sides
            Some(values) => Act::from_values(values, &x.dims(), &self.device)
                .unwrap_or_else(|e| {
                    fail(format!(
                        "PyTorch's input: {e} (Burn's input is {:?})",
                        x.dims()
                    ));
                    x
                })
                .require_grad(),
            None => {
                fail("PyTorch recorded no input".into());
                x
            }
        };
        let mut out = f(input.clone());
        if let Some(p) = self.perturb {
            match p.apply(k, out.clone()) {
                Ok(bumped) => out = bumped,
                Err(e) => fail(format!("{}: {e}", crate::fault::VARIABLE)),
            }
        }
        self.outputs.push(out.clone().values());
        let g = self.output_grads.get(k).cloned().unwrap_or_default();
        let grad = if input.is_tokens() || g.is_empty() {
            Vec::new()
        } else {
            match out.clone().weighted_sum(&g) {
                Ok(scalar) => input.grad(&scalar.backward()).unwrap_or_default(),
                Err(e) => {
                    fail(format!("PyTorch's gradient at its output: {e}"));
                    Vec::new()
                }
            }
        };
        self.input_grads.push(grad);
        out.detach()
    }
}

impl<'a> Layers<'a> {
    pub(crate) fn new(probe: &'a mut Probe) -> Self {
        Layers {
            probe,
            local: None,
            called: Vec::new(),
        }
    }

    /// The local mode's layers: each run on `run`'s recorded input ([`LocalRun`]).
    pub(crate) fn local(probe: &'a mut Probe, run: &'a mut LocalRun) -> Self {
        Layers {
            probe,
            local: Some(run),
            called: Vec::new(),
        }
    }

    /// Layer `name` (the next of the spec's `port.layers`) of `x`: `f(x)`, recorded.
    ///
    /// ```text
    /// let h = layers.layer("fc1", x, |x| self.fc1.forward(x));
    /// let h = layers.layer("act", h, |h| self.act.forward(h));
    /// ```
    pub fn layer<I: LayerInput, O: LayerOutput>(
        &mut self,
        name: &str,
        x: I,
        f: impl FnOnce(I) -> O,
    ) -> O {
        let k = self.called.len();
        self.called.push(name.to_string());
        if let Some(run) = self.local.as_deref_mut() {
            return O::from_act(run.layer(k, name, x.into(), |x| f(I::from_act(x)).into()));
        }
        O::from_act(self.probe.stage(k, x.into(), |x| f(I::from_act(x)).into()))
    }

    /// The names of the layers called so far, in order.
    pub fn called(&self) -> &[String] {
        &self.called
    }
}

/// Whether a spec's `port.layers` entry is a glob (`*`, `?`, `[…]`).
fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// One name segment against one pattern segment, as Python's `fnmatch.fnmatchcase`: `*`
/// any run of characters, `?` one, `[…]` one of a set (ranges `a-z`, `!` negates).
fn segment_matches(name: &[char], pattern: &[char]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len()).any(|k| segment_matches(&name[k..], &pattern[1..])),
        Some('?') => !name.is_empty() && segment_matches(&name[1..], &pattern[1..]),
        Some('[') => match pattern
            .iter()
            .position(|&c| c == ']')
            .filter(|&end| end > 1)
        {
            Some(end) if !name.is_empty() => {
                let set = &pattern[1..end];
                let (negated, set) = match set.first() {
                    Some('!') => (true, &set[1..]),
                    _ => (false, set),
                };
                let c = name[0];
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= c && c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                hit != negated && segment_matches(&name[1..], &pattern[end + 1..])
            }
            _ => name.first() == Some(&'[') && segment_matches(&name[1..], &pattern[1..]),
        },
        Some(c) => name.first() == Some(c) && segment_matches(&name[1..], &pattern[1..]),
    }
}

/// Whether submodule `name` is matched by `pattern`, segment by segment: as many dotted
/// segments, each matched (src/torch_burn_parity/models/layer_names.py, the same rule).
pub(crate) fn matches(name: &str, pattern: &str) -> bool {
    let (names, patterns): (Vec<&str>, Vec<&str>) =
        (name.split('.').collect(), pattern.split('.').collect());
    names.len() == patterns.len()
        && names.iter().zip(&patterns).all(|(n, p)| {
            segment_matches(
                &n.chars().collect::<Vec<_>>(),
                &p.chars().collect::<Vec<_>>(),
            )
        })
}

/// Refuses, on one line, layers called in the forward (`called`) that the spec's
/// `port.layers` (`declared`) do not name: with no glob among them, the two lists must be
/// the same; with globs, each called layer must match an entry, and each entry some called
/// layer (PyTorch's hooks record the same names: the pipeline's check_port compares them).
pub(crate) fn check_layers(
    port: &str,
    declared: &[String],
    called: &[String],
) -> Result<(), String> {
    if !declared.iter().any(|d| is_glob(d)) {
        return check_same(port, declared, called);
    }
    if let Some(name) = called
        .iter()
        .find(|c| !declared.iter().any(|d| matches(c, d)))
    {
        return Err(format!(
            "port {port}: the forward records the layer {name}, which no entry of the spec's port.layers [{}] matches",
            declared.join(", ")
        ));
    }
    if let Some(entry) = declared
        .iter()
        .find(|d| !called.iter().any(|c| matches(c, d)))
    {
        return Err(format!(
            "port {port}: the spec's port.layers entry {entry} matches no layer the forward records ([{}])",
            called.join(", ")
        ));
    }
    Ok(())
}

/// Refuses, on one line, layers called in the forward (`called`) other than the spec's
/// `port.layers` (`declared`), naming both lists and the first difference.
fn check_same(port: &str, declared: &[String], called: &[String]) -> Result<(), String> {
    if declared == called {
        return Ok(());
    }
    let first = (0..declared.len().max(called.len()))
        .find(|&k| declared.get(k) != called.get(k))
        .expect("the lists differ");
    let name = |list: &[String]| list.get(first).cloned().unwrap_or_else(|| "nothing".into());
    Err(format!(
        "port {port}: the forward records the layers [{}], the spec's port.layers are [{}] (layer {first}: the forward's is {}, the spec's {})",
        called.join(", "),
        declared.join(", "),
        name(called),
        name(declared),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn globs_match_segment_by_segment_as_fnmatch_does() {
        assert!(matches("transformer.h.3", "transformer.h.*"));
        assert!(!matches("transformer.h.3.mlp", "transformer.h.*"));
        assert!(matches("layer1.0.bn1", "layer*.*.bn?"));
        assert!(!matches("layer1.0.bn12", "layer*.*.bn?"));
        assert!(matches("layer1.0.bn2", "layer[12].0.bn[0-9]"));
        assert!(!matches("layer3.0.bn2", "layer[12].0.bn[0-9]"));
        assert!(matches("layer3.0.bn2", "layer[!12].0.bn2"));
        assert!(matches("fc", "fc") && !matches("fc1", "fc") && !matches("fc", "fc1"));
        assert!(matches("a[b", "a[b"), "an unclosed set is a literal [");
    }

    #[test]
    fn globs_accept_the_layers_they_match_and_name_what_they_do_not() {
        let called = names(&["blocks.0", "blocks.1", "head"]);
        assert_eq!(
            check_layers("p", &names(&["blocks.*", "head"]), &called),
            Ok(())
        );
        assert_eq!(
            check_layers("p", &names(&["blocks.*"]), &called),
            Err("port p: the forward records the layer head, which no entry of the spec's port.layers [blocks.*] matches".into())
        );
        assert_eq!(
            check_layers("p", &names(&["blocks.*", "head", "norm?"]), &called),
            Err("port p: the spec's port.layers entry norm? matches no layer the forward records ([blocks.0, blocks.1, head])".into())
        );
        // without a glob, the lists must be the same, in order
        assert!(check_layers("p", &names(&["blocks.1", "blocks.0", "head"]), &called).is_err());
    }
}
