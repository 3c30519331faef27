//! One experiment as the trainer's modes take it (train.rs, local.rs, a port's, through the
//! registry and the command line): its spec, its dataset, the device it runs on and the
//! fault a test injects, if any.

use burn::tensor::Device;

use crate::config::Spec;
use crate::dataset::Dataset;
use crate::fault::Fault;

#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    pub spec: &'a Spec,
    pub data: &'a Dataset,
    /// An autodiff Flex or NdArray device, configured for the run's dtype.
    pub device: &'a Device,
    /// A perturbation injected after one step (a parameter's) or in one step's forward (a
    /// layer output's), for tests only (fault.rs).
    pub fault: Option<&'a Fault>,
}

impl<'a> Run<'a> {
    /// The run without a fault.
    pub fn new(spec: &'a Spec, data: &'a Dataset, device: &'a Device) -> Self {
        Run {
            spec,
            data,
            device,
            fault: None,
        }
    }

    /// Its spec, dataset, device and fault, for a body that reads them by name.
    pub fn parts(self) -> (&'a Spec, &'a Dataset, &'a Device, Option<&'a Fault>) {
        (self.spec, self.data, self.device, self.fault)
    }

    /// The same run with `fault` injected.
    pub fn with_fault(self, fault: Option<&'a Fault>) -> Self {
        Run { fault, ..self }
    }
}
