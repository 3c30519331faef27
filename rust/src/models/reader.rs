//! The model's side read back in PyTorch's names and layouts: its parameters, their
//! gradients and its buffers, each in its declaration's order at the model's size; and a
//! parameter bumped in place (fault.rs).

use std::collections::HashMap;

use burn::module::{ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};

use super::{Entry, Layout, ParityModel, part_of, values};

/// Where a Burn parameter sits: its entry's index in `params`, its part, its layout.
#[derive(Debug, Clone, Copy)]
struct Slot {
    k: usize,
    part: usize,
    layout: Layout,
}

/// For each Burn parameter id, its [`Slot`] among `params` (the model's declaration).
fn by_id<M: ParityModel>(model: &M, params: &[Entry]) -> HashMap<ParamId, Slot> {
    let ids = model.param_ids();
    let slots: Vec<Slot> = params
        .iter()
        .enumerate()
        .flat_map(|(k, e)| {
            (0..e.parts).map(move |part| Slot {
                k,
                part,
                layout: e.layout,
            })
        })
        .collect();
    assert_eq!(
        ids.len(),
        slots.len(),
        "{}: one id per parameter part",
        M::NAME
    );
    ids.into_iter().zip(slots).collect()
}

/// Collects, per declared parameter, the flat values `read` gives for it in PyTorch's layout
/// (a packed one's parts joined in order).
struct Reader<'a, F> {
    slots: HashMap<ParamId, Slot>,
    out: Vec<Vec<Option<Vec<f64>>>>,
    read: &'a F,
}

/// What a [`Reader`] reads of a parameter: its value, or its gradient.
trait Read {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Tensor<D>;
}

struct ParamValue;

impl Read for ParamValue {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Tensor<D> {
        param.val()
    }
}

struct ParamGrad<'a>(&'a GradientsParams);

impl Read for ParamGrad<'_> {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Tensor<D> {
        self.0.get::<D>(param.id).expect("gradient")
    }
}

impl<F: Read> ModuleVisitor for Reader<'_, F> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(&Slot { k, part, layout }) = self.slots.get(&param.id) {
            self.out[k][part] = Some(values(layout.convert(self.read.read(param))));
        }
    }
}

fn read<M: ParityModel, F: Read>(model: &M, read: &F) -> Vec<Vec<f64>> {
    let params = M::params(&model.size());
    let mut reader = Reader {
        slots: by_id(model, &params),
        out: params.iter().map(|e| vec![None; e.parts]).collect(),
        read,
    };
    model.visit(&mut reader);
    // Joining the parts along PyTorch's first dimension concatenates their flat values.
    reader
        .out
        .into_iter()
        .zip(&params)
        .map(|(parts, e)| {
            parts
                .into_iter()
                .map(|v| v.unwrap_or_else(|| panic!("{}: {} not visited", M::NAME, e.name)))
                .collect::<Vec<_>>()
                .concat()
        })
        .collect()
}

/// Parameters in PyTorch's layouts, flattened, in `params` order.
pub fn param_values<M: ParityModel>(model: &M) -> Vec<Vec<f64>> {
    read(model, &ParamValue)
}

/// The gradient of each parameter in PyTorch's layouts, flattened, in `params` order.
pub fn grad_values<M: ParityModel>(model: &M, grads: &GradientsParams) -> Vec<Vec<f64>> {
    read(model, &ParamGrad(grads))
}

/// Buffers in PyTorch's layouts, flattened, in `buffers` order.
pub fn buffer_values<M: ParityModel>(model: &M) -> Vec<Vec<f64>> {
    model
        .buffer_tensors()
        .into_iter()
        .zip(M::buffers(&model.size()))
        .map(|(t, e)| {
            assert_eq!(e.parts, 1, "{}: buffers are not packed", e.name);
            values(e.layout.convert(t))
        })
        .collect()
}

/// Adds `delta` (a PyTorch-layout tensor filled by `make`) to one parameter, which stays a
/// leaf as the optimizer leaves it (each part of a packed one gets its block of `delta`).
pub fn add_to_param<M: ParityModel>(
    model: M,
    name: &str,
    make: &dyn Fn(&[usize]) -> Result<TensorData, String>,
) -> Result<M, String> {
    let params = M::params(&model.size());
    let k = params
        .iter()
        .position(|e| e.name == name)
        .ok_or_else(|| format!("model {} has no parameter {name}", M::NAME))?;
    struct Bump<'a> {
        entry: Entry,
        parts: HashMap<ParamId, usize>,
        make: &'a dyn Fn(&[usize]) -> Result<TensorData, String>,
        result: Result<(), String>,
    }
    impl ModuleMapper for Bump<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let Some(&part) = self.parts.get(&param.id) else {
                return param;
            };
            let device = param.val().device();
            let delta = (self.make)(&self.entry.shape).and_then(|data| {
                let flat: Vec<f64> = data
                    .convert::<f64>()
                    .try_to_vec()
                    .map_err(|e| format!("{e:?}"))?;
                let block = part_of(&flat, self.entry.parts, part);
                let shape: [usize; D] = self.entry.part_shape().try_into().expect("rank");
                Ok(Tensor::<D>::from_data(
                    TensorData::new(block, shape),
                    &device,
                ))
            });
            match delta {
                Ok(delta) => {
                    let delta = self.entry.layout.convert(delta);
                    param.map(|t| (t + delta).detach().require_grad())
                }
                Err(e) => {
                    self.result = Err(e);
                    param
                }
            }
        }
    }
    let parts = by_id(&model, &params)
        .into_iter()
        .filter(|(_, slot)| slot.k == k)
        .map(|(id, slot)| (id, slot.part))
        .collect();
    let mut bump = Bump {
        entry: params[k].clone(),
        parts,
        make,
        result: Ok(()),
    };
    let model = model.map(&mut bump);
    bump.result.map(|()| model)
}
