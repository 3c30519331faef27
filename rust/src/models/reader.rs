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

/// Collects, per declared parameter, what `T` makes of each of its parts as `read` gives
/// them.
struct Reader<'a, F, T: Take> {
    slots: HashMap<ParamId, Slot>,
    out: Vec<Vec<Option<T::Part>>>,
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

/// What a [`Reader`] makes of a parameter's parts: their flat values, or their norm.
trait Take {
    /// Of one part (one Burn tensor, in `layout`).
    type Part;
    /// Of the whole parameter, from its parts in order.
    type Whole;
    fn part<const D: usize>(t: Tensor<D>, layout: Layout) -> Self::Part;
    fn whole(parts: Vec<Self::Part>) -> Self::Whole;
}

/// The flat values in PyTorch's layout: a packed parameter's parts joined along PyTorch's
/// first dimension, which concatenates their flat values.
enum Values {}

impl Take for Values {
    type Part = Vec<f64>;
    type Whole = Vec<f64>;
    fn part<const D: usize>(t: Tensor<D>, layout: Layout) -> Vec<f64> {
        values(layout.convert(t))
    }
    fn whole(parts: Vec<Vec<f64>>) -> Vec<f64> {
        parts.concat()
    }
}

/// The L2 norm sqrt(Σx²), summed in f64 (an f32 run's values widened exactly), over the
/// parts in Burn's layout: a sum of squares does not depend on the layout but for rounding.
enum Norm {}

impl Take for Norm {
    type Part = f64;
    type Whole = f64;
    fn part<const D: usize>(t: Tensor<D>, _: Layout) -> f64 {
        sum_of_squares(&t.into_data())
    }
    fn whole(parts: Vec<f64>) -> f64 {
        parts.into_iter().sum::<f64>().sqrt()
    }
}

/// Σx² of a float tensor's values, in f64, in their order.
fn sum_of_squares(data: &TensorData) -> f64 {
    if let Ok(xs) = data.as_slice::<f64>() {
        xs.iter().map(|&x| x * x).sum()
    } else if let Ok(xs) = data.as_slice::<f32>() {
        xs.iter().map(|&x| f64::from(x) * f64::from(x)).sum()
    } else {
        data.iter::<f64>().map(|x| x * x).sum()
    }
}

impl<F: Read, T: Take> ModuleVisitor for Reader<'_, F, T> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(&Slot { k, part, layout }) = self.slots.get(&param.id) {
            self.out[k][part] = Some(T::part(self.read.read(param), layout));
        }
    }
}

fn read<M: ParityModel, F: Read, T: Take>(model: &M, read: &F) -> Vec<T::Whole> {
    let params = M::params(&model.size());
    let mut reader = Reader::<F, T> {
        slots: by_id(model, &params),
        out: params
            .iter()
            .map(|e| (0..e.parts).map(|_| None).collect())
            .collect(),
        read,
    };
    model.visit(&mut reader);
    reader
        .out
        .into_iter()
        .zip(&params)
        .map(|(parts, e)| {
            T::whole(
                parts
                    .into_iter()
                    .map(|v| v.unwrap_or_else(|| panic!("{}: {} not visited", M::NAME, e.name)))
                    .collect(),
            )
        })
        .collect()
}

/// Parameters in PyTorch's layouts, flattened, in `params` order.
pub fn param_values<M: ParityModel>(model: &M) -> Vec<Vec<f64>> {
    read::<M, _, Values>(model, &ParamValue)
}

/// The gradient of each parameter in PyTorch's layouts, flattened, in `params` order.
pub fn grad_values<M: ParityModel>(model: &M, grads: &GradientsParams) -> Vec<Vec<f64>> {
    read::<M, _, Values>(model, &ParamGrad(grads))
}

/// The L2 norm of each parameter (sqrt(Σx²) in f64 of all its values), in `params` order.
pub fn param_norms<M: ParityModel>(model: &M) -> Vec<f64> {
    read::<M, _, Norm>(model, &ParamValue)
}

/// The L2 norm of each parameter's gradient (sqrt(Σx²) in f64), in `params` order.
pub fn grad_norms<M: ParityModel>(model: &M, grads: &GradientsParams) -> Vec<f64> {
    read::<M, _, Norm>(model, &ParamGrad(grads))
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

/// The model with every parameter replaced by `values` (flat, PyTorch's layouts, in `params`
/// order, e.g. another run's trajectory row), each a leaf that requires its gradient as the
/// optimizer leaves them; a packed parameter's parts each get their block. One line naming
/// the parameter where a list has not its number of elements.
pub fn set_params<M: ParityModel>(model: M, values: &[Vec<f64>]) -> Result<M, String> {
    let params = M::params(&model.size());
    if values.len() != params.len() {
        return Err(format!(
            "model {}: {} parameter lists for {} parameters",
            M::NAME,
            values.len(),
            params.len()
        ));
    }
    for (e, v) in params.iter().zip(values) {
        let numel: usize = e.shape.iter().product();
        if v.len() != numel {
            return Err(format!(
                "model {}: {} values for parameter {} of shape {:?}",
                M::NAME,
                v.len(),
                e.name,
                e.shape
            ));
        }
    }
    struct Set<'a> {
        slots: HashMap<ParamId, Slot>,
        params: &'a [Entry],
        values: &'a [Vec<f64>],
    }
    impl ModuleMapper for Set<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let Some(&Slot { k, part, layout }) = self.slots.get(&param.id) else {
                return param;
            };
            let entry = &self.params[k];
            let block = part_of(&self.values[k], entry.parts, part);
            let shape: [usize; D] = entry.part_shape().try_into().expect("rank");
            param.map(|t| {
                let new = Tensor::<D>::from_data(TensorData::new(block, shape), &t.device());
                layout.convert(new).require_grad()
            })
        }
    }
    let mut set = Set {
        slots: by_id(&model, &params),
        params: &params,
        values,
    };
    Ok(model.map(&mut set))
}
