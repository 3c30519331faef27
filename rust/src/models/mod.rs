//! The models the trainer can run, as plug-ins: each declares its parameters and buffers in
//! PyTorch's names, order, shapes and layouts, builds itself from the dataset file, and runs
//! a forward that can record each layer.

mod cnn1d;
mod cnn_bn;
mod probe;
mod transformer;

pub use cnn_bn::CnnBn;
pub use cnn1d::Cnn1d;
pub use transformer::Transformer;

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use serde_json::Value;

use crate::dataset::{Array, Dataset, Values};
pub use probe::Probe;

/// The models a spec's `model` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Model {
    /// The seed's Conv1d → ReLU → Linear.
    #[default]
    Cnn1d,
    /// Conv1d → BatchNorm → GELU → LayerNorm → Linear.
    CnnBn,
    /// Linear embedding → one post-norm transformer encoder layer → Linear.
    Transformer,
}

impl Model {
    /// Every model, in the order the error messages list them.
    pub const ALL: [Model; 3] = [Model::Cnn1d, Model::CnnBn, Model::Transformer];
    /// The names the config uses, in `ALL`'s order.
    pub const NAMES: [&'static str; 3] = [Cnn1d::NAME, CnnBn::NAME, Transformer::NAME];

    /// The model of that name; found through `name()`, whose match is exhaustive.
    pub fn from_name(name: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Model::Cnn1d => Cnn1d::NAME,
            Model::CnnBn => CnnBn::NAME,
            Model::Transformer => Transformer::NAME,
        }
    }

    /// The model's parameters (PyTorch names, model order).
    pub fn params(self) -> &'static [Entry] {
        match self {
            Model::Cnn1d => Cnn1d::PARAMS,
            Model::CnnBn => CnnBn::PARAMS,
            Model::Transformer => Transformer::PARAMS,
        }
    }
}

/// How Burn holds an array relative to PyTorch's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The same shape and element order.
    Same,
    /// The transpose of PyTorch's matrix (Burn's Linear weight is [in, out]).
    Transposed,
}

impl Layout {
    /// PyTorch's layout → Burn's (an involution, so also Burn's → PyTorch's).
    pub fn convert<const D: usize>(self, t: Tensor<D>) -> Tensor<D> {
        match self {
            Layout::Same => t,
            Layout::Transposed => t.transpose(),
        }
    }
}

/// One parameter or buffer: PyTorch's name and shape, and how Burn holds it.
///
/// Burn holds it as `parts` tensors: PyTorch's array cut along its first dimension into
/// `parts` equal blocks (in order), each held in `layout`. One part is the array itself; more
/// is a packed array, e.g. nn.MultiheadAttention's in_proj_weight [3·d, d], whose rows
/// 0..d, d..2d, 2d..3d are the query, key and value weights, which Burn holds as three
/// Linear layers (each [d, d] transposed).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub name: &'static str,
    pub shape: &'static [usize],
    pub layout: Layout,
    pub parts: usize,
}

impl Entry {
    pub const fn same(name: &'static str, shape: &'static [usize]) -> Entry {
        Entry::packed_rows(name, shape, 1, Layout::Same)
    }

    pub const fn transposed(name: &'static str, shape: &'static [usize]) -> Entry {
        Entry::packed_rows(name, shape, 1, Layout::Transposed)
    }

    /// `parts` Burn tensors stacked along PyTorch's first dimension, each in `layout`.
    pub const fn packed_rows(
        name: &'static str,
        shape: &'static [usize],
        parts: usize,
        layout: Layout,
    ) -> Entry {
        assert!(
            parts >= 1 && shape[0].is_multiple_of(parts),
            "parts divide the rows"
        );
        Entry {
            name,
            shape,
            layout,
            parts,
        }
    }

    /// PyTorch's shape of one part (the whole shape for one part).
    pub fn part_shape(&self) -> Vec<usize> {
        let mut shape = self.shape.to_vec();
        shape[0] /= self.parts;
        shape
    }
}

/// The flat values of part `part` of `parts` of a row-major array: a block of rows is a
/// contiguous run of the flat values.
fn part_of<T: Clone>(values: &[T], parts: usize, part: usize) -> Vec<T> {
    let size = values.len() / parts;
    values[part * size..(part + 1) * size].to_vec()
}

/// A model as the trainer drives it.
pub trait ParityModel: Module + Sized {
    /// The spec's and run file's name of the model.
    const NAME: &'static str;
    /// Trainable parameters, in PyTorch's order.
    const PARAMS: &'static [Entry];
    /// Buffers (running statistics), in PyTorch's order.
    const BUFFERS: &'static [Entry];
    /// The recorded layers, in forward order.
    const LAYERS: &'static [&'static str];
    /// The shape of one input sample ([channels, length]).
    const SAMPLE: [usize; 2];

    /// The model with the arrays' values (already checked by [`Arrays::new`]).
    fn build(arrays: &Arrays) -> Self;

    /// The ids of the Burn parameters, in `PARAMS` order: one per entry, or an entry's
    /// `parts` ids in a row, in its parts' order.
    fn param_ids(&self) -> Vec<ParamId>;

    /// The buffers' current values, in `BUFFERS` order (Burn's layout).
    fn buffers(&self) -> Vec<Tensor<1>>;

    /// The forward pass; `probe` records each layer when it is on.
    fn forward(&self, x: Tensor<3>, probe: &mut Probe) -> Tensor<2>;

    /// `meta.layer_hyperparameters`: the layers' settings as the module holds them.
    fn layer_hyperparameters(&self) -> Value;
}

/// Flat f64 values of a tensor (f32 → f64 is exact, like PyTorch's tolist()).
pub fn values<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .expect("float tensor")
}

/// f32 values onto the device; `from_data` casts to the device's float dtype, so on an
/// F64 device this is an exact widening and f64 runs start from the same numbers.
pub fn tensor<const D: usize>(values: &[f32], shape: &[usize], device: &Device) -> Tensor<D> {
    let shape: [usize; D] = shape.try_into().expect("array rank");
    Tensor::from_data(TensorData::new(values.to_vec(), shape), device)
}

/// A dataset's parameter and buffer arrays, checked against a model's declaration.
pub struct Arrays<'a> {
    data: &'a Dataset,
    entries: Vec<Entry>,
    device: &'a Device,
}

impl<'a> Arrays<'a> {
    /// Refuses, naming the model and the array, unless the arrays other than `x` and `y` are
    /// exactly `M`'s parameters and buffers with their shapes, and `x` is [N, channels, length].
    pub fn new<M: ParityModel>(data: &'a Dataset, device: &'a Device) -> Result<Self, String> {
        let model = M::NAME;
        let entries: Vec<Entry> = M::PARAMS.iter().chain(M::BUFFERS).copied().collect();
        for e in &entries {
            let Some(Array { shape, values }) = data.arrays.get(e.name) else {
                return Err(format!(
                    "model {model}: the dataset has no array '{}' (the Burn module needs it, shape {:?})",
                    e.name, e.shape
                ));
            };
            if shape != e.shape {
                return Err(format!(
                    "model {model}: array '{}' has shape {shape:?} in the dataset, the Burn module's is {:?}",
                    e.name, e.shape
                ));
            }
            if !matches!(values, Values::F32(_)) {
                return Err(format!(
                    "model {model}: array '{}' is not f32 in the dataset",
                    e.name
                ));
            }
        }
        let known =
            |name: &str| name == "x" || name == "y" || entries.iter().any(|e| e.name == name);
        if let Some(extra) = data.arrays.keys().find(|name| !known(name)) {
            return Err(format!(
                "model {model}: the dataset holds '{extra}', which the Burn module does not have"
            ));
        }
        let x = data.arrays.get("x").map_or(&[][..], |a| &a.shape[..]);
        if x.len() != 3 || x[1..] != M::SAMPLE {
            return Err(format!(
                "model {model}: array 'x' has shape {x:?} in the dataset, the Burn module takes [N, {}, {}]",
                M::SAMPLE[0],
                M::SAMPLE[1]
            ));
        }
        Ok(Arrays {
            data,
            entries,
            device,
        })
    }

    pub fn device(&self) -> &Device {
        self.device
    }

    fn entry(&self, name: &str) -> Entry {
        *self
            .entries
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("'{name}' is not declared by the model"))
    }

    /// A declared array of one part in Burn's layout.
    pub fn tensor<const D: usize>(&self, name: &str) -> Tensor<D> {
        let entry = self.entry(name);
        assert_eq!(entry.parts, 1, "'{name}' is packed: read it by part");
        self.part(name, 0)
    }

    /// Part `part` of a declared array, in Burn's layout.
    pub fn part<const D: usize>(&self, name: &str, part: usize) -> Tensor<D> {
        let entry = self.entry(name);
        assert!(part < entry.parts, "'{name}' has {} parts", entry.parts);
        let (_, values) = self.data.f32(name).expect("checked in Arrays::new");
        let values = part_of(values, entry.parts, part);
        entry
            .layout
            .convert(tensor(&values, &entry.part_shape(), self.device))
    }

    /// A declared parameter of one part in Burn's layout.
    pub fn param<const D: usize>(&self, name: &str) -> Param<Tensor<D>> {
        Param::from_tensor(self.tensor(name))
    }

    /// Part `part` of a declared packed parameter, in Burn's layout.
    pub fn param_part<const D: usize>(&self, name: &str, part: usize) -> Param<Tensor<D>> {
        Param::from_tensor(self.part(name, part))
    }
}

/// The model built from the dataset, after the arrays are checked.
pub fn build<M: ParityModel>(data: &Dataset, device: &Device) -> Result<M, String> {
    Ok(M::build(&Arrays::new::<M>(data, device)?))
}

/// Where a Burn parameter sits: its entry's index in `PARAMS`, its part, its layout.
#[derive(Debug, Clone, Copy)]
struct Slot {
    k: usize,
    part: usize,
    layout: Layout,
}

/// For each Burn parameter id, its [`Slot`].
fn by_id<M: ParityModel>(model: &M) -> HashMap<ParamId, Slot> {
    let ids = model.param_ids();
    let slots: Vec<Slot> = M::PARAMS
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
    let mut reader = Reader {
        slots: by_id(model),
        out: M::PARAMS.iter().map(|e| vec![None; e.parts]).collect(),
        read,
    };
    model.visit(&mut reader);
    // Joining the parts along PyTorch's first dimension concatenates their flat values.
    reader
        .out
        .into_iter()
        .zip(M::PARAMS)
        .map(|(parts, e)| {
            parts
                .into_iter()
                .map(|v| v.unwrap_or_else(|| panic!("{}: {} not visited", M::NAME, e.name)))
                .collect::<Vec<_>>()
                .concat()
        })
        .collect()
}

/// Parameters in PyTorch's layouts, flattened, in `PARAMS` order.
pub fn param_values<M: ParityModel>(model: &M) -> Vec<Vec<f64>> {
    read(model, &ParamValue)
}

/// The gradient of each parameter in PyTorch's layouts, flattened, in `PARAMS` order.
pub fn grad_values<M: ParityModel>(model: &M, grads: &GradientsParams) -> Vec<Vec<f64>> {
    read(model, &ParamGrad(grads))
}

/// Buffers in PyTorch's layouts, flattened, in `BUFFERS` order.
pub fn buffer_values<M: ParityModel>(model: &M) -> Vec<Vec<f64>> {
    model
        .buffers()
        .into_iter()
        .zip(M::BUFFERS)
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
    let k = M::PARAMS
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
            let delta = (self.make)(self.entry.shape).and_then(|data| {
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
    let parts = by_id(&model)
        .into_iter()
        .filter(|(_, slot)| slot.k == k)
        .map(|(id, slot)| (id, slot.part))
        .collect();
    let mut bump = Bump {
        entry: M::PARAMS[k],
        parts,
        make,
        result: Ok(()),
    };
    let model = model.map(&mut bump);
    bump.result.map(|()| model)
}
