//! A port's local mode: each of its recorded layers run on PyTorch's recorded input to it
//! and differentiated on PyTorch's recorded gradient at its output ([`LocalRun`]), with
//! PyTorch's parameters and buffers of that step, on the step's batch in train mode — the
//! built-in models' local mode (local.rs), through the port's own forward: its
//! `layers.layer(name, x, f)` calls are where PyTorch's inputs are put in. The file is the
//! built-in models' (`local/{step}/{outputs,input_grads}/{k}`), so the layers table reads
//! which layer *introduces* a difference for a port as for any model.

use std::path::Path;

use burn::tensor::DType;

use super::layers::{Layers, LocalRun};
use super::{Port, declared};
use crate::local::{self, Reference, Written};
use crate::models::{ModelInput, ParityModel, Probe};
use crate::run::Run;
use crate::tensors::Dtype;

/// The local file of port `P` (declared: [`super::prepare`] ran) against the PyTorch run
/// `torch_run`, written to `out`. One line on any refusal.
pub(super) fn local_port<P: Port>(
    run: Run,
    torch_run: &Path,
    out: &Path,
) -> Result<Written, String> {
    let (spec, data, device, fault) = run.parts();
    let declared = declared::<P>();
    let params = <P as ParityModel>::params(&spec.model_size);
    let names = declared.layers.clone();
    if let Some(f) = fault {
        f.check(&declared.name, &params, &names)?;
    }
    // Every step starts from the reference run's parameters: a parameter fault has nothing
    // to perturb here, only a layer fault acts.
    let fault = fault.filter(|f| f.layer().is_some());
    let dtype = Dtype::of(DType::from(device.settings().float_dtype))?;
    let mut reference = Reference::open(spec, torch_run, dtype, &declared.name, &names)?;
    let x = <<P as Port>::Input as ModelInput>::read(data, device)?;
    let batches = x.samples() / spec.batch_size;
    if batches == 0 {
        return Err(format!(
            "batch_size {} is larger than the {} samples",
            spec.batch_size,
            x.samples()
        ));
    }
    let steps = local::probe_steps(spec);
    let mut tensors: Vec<(String, Vec<f64>)> = Vec::new();
    for &step in &steps {
        let model: P = reference.model_at(spec, data, device, step)?;
        let mut run = LocalRun {
            inputs: Vec::with_capacity(names.len()),
            output_grads: Vec::with_capacity(names.len()),
            perturb: fault.and_then(|f| f.perturb(step, &names)),
            device: device.clone(),
            outputs: Vec::new(),
            input_grads: Vec::new(),
            failed: None,
        };
        for k in 0..names.len() {
            run.inputs.push(reference.layer(step, "inputs", k)?);
            run.output_grads
                .push(reference.layer(step, "output_grads", k)?);
        }
        // The batch of the step, as the trainer takes it (no shuffling: in rotation).
        let i = ((step - 1) % batches) * spec.batch_size;
        let mut probe = Probe::off();
        let mut layers = Layers::local(&mut probe, &mut run);
        let _ = <P as Port>::forward(&model, x.rows(i..i + spec.batch_size), &mut layers);
        if layers.called() != names.as_slice() {
            return Err(format!(
                "port {}: at step {step} the forward records the layers [{}], PyTorch's run [{}]",
                declared.name,
                layers.called().join(", "),
                names.join(", ")
            ));
        }
        if let Some(why) = run.failed {
            return Err(format!("port {}: step {step}: {why}", declared.name));
        }
        for (field, lists) in [("outputs", run.outputs), ("input_grads", run.input_grads)] {
            for (k, list) in lists.into_iter().enumerate() {
                tensors.push((format!("local/{step}/{field}/{k}"), list));
            }
        }
    }
    local::write(out, dtype, steps, names, &tensors)
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::{Device, Tensor, TensorData};

    use super::super::layers::{Layers, LocalRun};
    use crate::models::{Perturb, Probe};

    /// fc (Linear 2→2, weight [[1, 2], [3, 4]] as Burn holds it, [in, out], bias [0.5, −1])
    /// then a residual add, so that the second layer's input is not the first's output.
    #[derive(Module, Debug)]
    struct Residual {
        fc: Linear,
    }

    fn residual(device: &Device) -> Residual {
        let mut fc = LinearConfig::new(2, 2).init(device);
        fc.weight = fc
            .weight
            .map(|_| Tensor::from_data(TensorData::new(vec![1.0, 2.0, 3.0, 4.0], [2, 2]), device));
        fc.bias = fc
            .bias
            .map(|b| b.map(|_| Tensor::from_data([0.5, -1.0], device)));
        Residual { fc }
    }

    fn run(perturb: Option<Perturb>, device: &Device) -> LocalRun {
        LocalRun {
            // PyTorch's inputs of fc and of the add, and its gradients at their outputs
            inputs: vec![vec![1.0, 0.0], vec![10.0, 20.0]],
            output_grads: vec![vec![1.0, 0.0], vec![0.5, 0.5]],
            perturb,
            device: device.clone(),
            outputs: Vec::new(),
            input_grads: Vec::new(),
            failed: None,
        }
    }

    fn forward(model: &Residual, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
        let h = layers.layer("fc", x.clone(), |x| model.fc.forward(x));
        layers.layer("add", h, |h| h + x)
    }

    #[test]
    fn each_layer_runs_on_pytorchs_input_and_output_gradient() {
        let device = Device::default().autodiff();
        let model = residual(&device);
        let mut local = run(None, &device);
        let x = Tensor::from_data([[7.0, 7.0]], &device); // Burn's own batch: not used
        let mut probe = Probe::off();
        let mut layers = Layers::local(&mut probe, &mut local);
        let _ = forward(&model, x, &mut layers);
        assert_eq!(layers.called(), ["fc", "add"]);
        assert!(local.failed.is_none(), "{:?}", local.failed);
        // fc on PyTorch's [1, 0]: [1, 2] + bias; its input gradient W·g = [1, 3]
        assert_eq!(local.outputs[0], [1.5, 1.0]);
        assert_eq!(local.input_grads[0], [1.0, 3.0]);
        // the add on PyTorch's [10, 20] plus the batch: its input gradient is g itself
        assert_eq!(local.outputs[1], [17.0, 27.0]);
        assert_eq!(local.input_grads[1], [0.5, 0.5]);
    }

    #[test]
    fn a_layer_fault_changes_that_layers_local_output_only() {
        let device = Device::default().autodiff();
        let model = residual(&device);
        let fault = Perturb {
            layer: 1,
            index: 0,
            delta: 0.5,
        };
        let mut local = run(Some(fault), &device);
        let mut probe = Probe::off();
        let mut layers = Layers::local(&mut probe, &mut local);
        let _ = forward(
            &model,
            Tensor::from_data([[7.0, 7.0]], &device),
            &mut layers,
        );
        assert_eq!(local.outputs[0], [1.5, 1.0]);
        assert_eq!(local.outputs[1], [17.5, 27.0]);
    }
}
