//! The recorded layers of a port's forward ([`Layers`]): the user's typed view of the
//! trainer's [`Probe`], so that a port records each layer without knowing [`Act`].

use burn::tensor::{Int, Tensor};

use crate::models::{Act, Probe};

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
/// output. The names called are kept, to be checked against the spec's `port.layers`.
pub struct Layers<'a> {
    probe: &'a mut Probe,
    called: Vec<String>,
}

impl<'a> Layers<'a> {
    pub(crate) fn new(probe: &'a mut Probe) -> Self {
        Layers {
            probe,
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
        O::from_act(self.probe.stage(k, x.into(), |x| f(I::from_act(x)).into()))
    }

    /// The names of the layers called so far, in order.
    pub fn called(&self) -> &[String] {
        &self.called
    }
}

/// Refuses, on one line, layers called in the forward (`called`) other than the spec's
/// `port.layers` (`declared`), naming both lists and the first difference.
pub(crate) fn check_layers(
    port: &str,
    declared: &[String],
    called: &[String],
) -> Result<(), String> {
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
