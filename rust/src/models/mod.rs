//! The models the trainer can run, as plug-ins: each declares, as functions of its size (the
//! spec's `model_size`), its parameters and buffers in PyTorch's names, order, shapes and
//! layouts, is loaded from the dataset file (burn-store, [`build`], the packed arrays and by
//! default the Linear weights from the arrays; or wholly from the arrays,
//! [`build_from_arrays`]), and runs a forward that can record each layer, on its own input
//! type ([`ModelInput`]: float samples of any rank, or token ids). Each is known by its
//! declarations ([`Declared`]); the built-in ones by name ([`builtins`]). A binary trains the
//! models of its registry (registry.rs).

mod act;
mod arrays;
mod cnn1d;
mod cnn_bn;
mod declared;
mod gpt;
mod input;
mod lenet;
mod probe;
mod reader;
mod size;
mod store;
mod transformer;

pub use act::Act;
pub use arrays::{Arrays, build_from_arrays};
pub use cnn_bn::CnnBn;
pub use cnn1d::Cnn1d;
pub use declared::{Declared, builtin, builtins, declared};
pub use gpt::Gpt;
pub use input::{ModelInput, dtype_name, labels, labels_per_sample};
pub use lenet::LeNet;
pub use probe::{Perturb, Probe};
pub use reader::{
    add_to_param, buffer_values, grad_norms, grad_values, param_norms, param_values, set_params,
};
pub use size::{ConvSize, GptSize, LeNetSize, ModelSize, SizeKeys, TransformerSize};
pub(crate) use store::from_arrays;
pub use store::{LinearWeights, load as build, load_with as build_with};
pub use transformer::Transformer;

use burn::module::{Module, ParamId};
use burn::tensor::{Device, Tensor, TensorData};
use serde_json::Value;

/// The length of every sample of the sine data (cnn1d's, cnn_bn's and the transformer's
/// input): `x` is [N, 1, 16].
pub const LENGTH: usize = 16;
/// The classes of the sine data (those models' output is [N, 3]).
pub const CLASSES: usize = 3;

/// The name of a port's entry (port/mod.rs): a port's spec names its model by the port's
/// own name (`port.name`) or by this.
pub const PORT: &str = "port";

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub shape: Vec<usize>,
    pub layout: Layout,
    pub parts: usize,
}

impl Entry {
    pub fn same(name: impl Into<String>, shape: &[usize]) -> Entry {
        Entry::packed_rows(name, shape, 1, Layout::Same)
    }

    pub fn transposed(name: impl Into<String>, shape: &[usize]) -> Entry {
        Entry::packed_rows(name, shape, 1, Layout::Transposed)
    }

    /// `parts` Burn tensors stacked along PyTorch's first dimension, each in `layout`.
    pub fn packed_rows(
        name: impl Into<String>,
        shape: &[usize],
        parts: usize,
        layout: Layout,
    ) -> Entry {
        assert!(
            parts >= 1 && shape[0].is_multiple_of(parts),
            "parts divide the rows"
        );
        Entry {
            name: name.into(),
            shape: shape.to_vec(),
            layout,
            parts,
        }
    }

    /// PyTorch's shape of one part (the whole shape for one part).
    pub fn part_shape(&self) -> Vec<usize> {
        let mut shape = self.shape.clone();
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

/// A model as the trainer drives it. Its declarations (`params`, `buffers`, `layers`) are
/// functions of its size, so that a dataset can be checked against them before the model
/// is built ([`Arrays::new`]); a built model reads its size back from its modules (`size`).
pub trait ParityModel: Module + Sized {
    /// The spec's and run file's name of the model.
    const NAME: &'static str;
    /// What the forward takes: the dataset's `x` ([`ModelInput`]), e.g. `Tensor<3>` for
    /// float samples [N, 1, 16], `Tensor<2, Int>` for token ids [N, T].
    type Input: ModelInput;
    /// The size keys, in the spec's and the run file's order (`model_size`), each with its
    /// default: the size the model had before it was configurable ([`ModelSize::defaults`]).
    /// None for a port.
    const SIZE: SizeKeys;

    /// Refuses, on one line naming the key, a size the model cannot be built at by a rule
    /// over its keys (a zero is refused for every model, [`ModelSize::check`]), e.g. heads
    /// that do not divide d_model. None by default.
    fn check_size(_size: &ModelSize) -> Result<(), String> {
        Ok(())
    }

    /// The parameter `name` stands for at the default size ([`ParityModel::SIZE`]): `name`
    /// itself, unless the model's names depend on its size (the transformer's of several
    /// layers, `enc.layers.{i}.…`, are one layer's `enc.…`; gpt's `blocks.{i}.…` are its
    /// first block's `blocks.0.…`).
    fn param_at_default_size(name: &str) -> String {
        name.to_string()
    }

    /// Whether the model has a parameter `name` at some size: its
    /// [`param_at_default_size`](ParityModel::param_at_default_size) is a parameter at the
    /// default size (a fault names a parameter before the spec's size is known, fault.rs).
    fn may_have_param(name: &str) -> bool {
        let name = Self::param_at_default_size(name);
        let size = ModelSize::defaults(Self::SIZE);
        Self::params(&size).iter().any(|e| e.name == name)
    }

    /// The shape of one input sample at `size` (`x` is [N, ..sample]), checked against the
    /// dataset's `x` ([`Arrays::new`]).
    fn sample(size: &ModelSize) -> Vec<usize>;

    /// Trainable parameters at `size`, in PyTorch's order.
    fn params(size: &ModelSize) -> Vec<Entry>;
    /// Buffers (running statistics) at `size`, in PyTorch's order.
    fn buffers(size: &ModelSize) -> Vec<Entry>;
    /// The recorded layers at `size`, in forward order.
    fn layers(size: &ModelSize) -> Vec<String>;

    /// The model at `size`, every tensor at Burn's initializer's values (the dataset's
    /// replace them all).
    fn init(size: &ModelSize, device: &Device) -> Self;

    /// burn-store's key remapping of the dataset's names (PyTorch's) to the model's Burn
    /// module paths at `size`: (regex, replacement) pairs, each applied in turn to every
    /// name (`KeyRemapper`). The adapter already takes a norm's `weight`/`bias` for its
    /// `gamma`/`beta`; names the same on both sides need no pair. A packed array
    /// ([`Entry::parts`] > 1) has no Burn path: it is loaded from the arrays, by part and
    /// parameter id (models/store.rs), like the Linear weights by default.
    fn pytorch_keys(size: &ModelSize) -> Vec<(String, String)>;

    /// Whether the trainer loads the model through burn-store ([`build`](super::build)):
    /// every built-in model, and a port whose arrays burn-store maps by itself; else wholly
    /// from the arrays ([`ParityModel::build`]), a port that maps some parameter itself.
    fn through_store() -> bool {
        true
    }

    /// The model with every value from the arrays (already checked by [`Arrays::new`]
    /// against the declarations at [`Arrays::size`]), none through burn-store: the path the
    /// burn-store load is checked against, bit for bit (tests/burn_store.rs).
    fn build(arrays: &Arrays) -> Self;

    /// The size as the built modules hold it (`meta.model_size`): the size it was built at.
    fn size(&self) -> ModelSize;

    /// The ids of the Burn parameters, in `params` order: one per entry, or an entry's
    /// `parts` ids in a row, in its parts' order.
    fn param_ids(&self) -> Vec<ParamId>;

    /// The buffers' current values, in `buffers` order (Burn's layout).
    fn buffer_tensors(&self) -> Vec<Tensor<1>>;

    /// Replaces the buffers by `buffers` (Burn's layout, in `buffers` order): the running
    /// statistics another run recorded (the local mode, local.rs). No buffers by default.
    fn set_buffers(&mut self, buffers: Vec<Tensor<1>>) {
        assert!(buffers.is_empty(), "{} has no buffers", Self::NAME);
    }

    /// Recorded layer `k` (of [`ParityModel::layers`], in forward order) alone on `x`, which
    /// has the shape of layer k − 1's output (layer 0: the batch, [`ModelInput`]), as the
    /// PyTorch side's `stages()` cut the forward (a flatten before a Linear is the Linear
    /// stage's). The forward is these stages folded; the local mode runs one at a time.
    fn stage(&self, k: usize, x: Act) -> Act;

    /// The forward pass of a batch of B samples: the stages folded, each through `probe`,
    /// which records each layer when it is on (and adds a layer fault's delta). Its output is
    /// [rows, classes]: rows = B for a classifier (labels [N]), B·T for a model that predicts
    /// at every one of T positions (labels [N, T], flattened sample by sample). The loss, the
    /// correct count and the predictions are over those rows.
    fn forward(&self, x: Self::Input, probe: &mut Probe) -> Tensor<2> {
        let stages = Self::layers(&self.size()).len();
        let mut h: Act = x.into();
        for k in 0..stages {
            h = probe.stage(k, h, |h| self.stage(k, h));
        }
        h.r2()
    }

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
