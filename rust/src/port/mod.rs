//! A user's own Burn port of their PyTorch module, trained by the same trainer as the
//! built-in models: the user implements [`Port`] for their module and writes a binary of
//! one line, `parity_train::port::main::<MyModule>()`, which takes the same command line as
//! `parity-train` (cli.rs).
//!
//! ```text
//! use burn::nn::{Linear, LinearConfig};
//! use burn::prelude::*;
//! use parity_train::port::{Layers, Port};
//!
//! #[derive(Module, Debug)]
//! struct Mlp { fc: Linear }
//!
//! impl Port for Mlp {
//!     type Input = Tensor<2>;
//!     fn init(device: &Device) -> Self { Mlp { fc: LinearConfig::new(4, 3).init(device) } }
//!     fn forward(&self, x: Tensor<2>, layers: &mut Layers) -> Tensor<2> {
//!         layers.layer("fc", x, |x| self.fc.forward(x))
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode { parity_train::port::main::<Mlp>() }
//! ```
//!
//! The spec (`model: port`) declares the port: its PyTorch parameters (names, shapes, in
//! model order) and its recorded layers ([`PortDecl`]). Before any training step the binary
//! matches them to the Burn module (resolve.rs: burn-store's paths, the user's
//! [`Port::pytorch_keys`], burn-store's PyTorch adapter's rules) and runs one forward to
//! check the layers it records; each mismatch is refused on one line (exit code 2).
//!
//! The trainer is generic over [`ParityModel`], whose declarations (`params`, `layers`,
//! `sample`) are static functions of the model's size, so that a dataset is checked before
//! the model is built. A port's declarations come from the spec, known only at run time: they
//! are process state, set by [`prepare`] before training and read by the blanket
//! `impl<P: Port> ParityModel for P`, one declaration per port type (keyed by its
//! `TypeId`, so that tests of several port types share a process). A port's buffers are its
//! BatchNorms' running statistics, read and set by path (a `RunningState` is visited as a
//! tensor with an id, as a parameter is); its layers' settings are read from the module's
//! display (settings.rs). A port has no stages: its local mode runs its own forward with
//! PyTorch's recorded input put in at each `layers.layer` call (local.rs).

mod layers;
mod local;
mod resolve;
mod settings;

pub use layers::{LayerInput, LayerOutput, Layers};
pub use resolve::Mapping;

use std::any::TypeId;
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, LazyLock, RwLock};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::{DType, Device, Tensor};
use serde_json::Value;

use crate::cli::{self, Runner};
use crate::config::Spec;
use crate::dataset::Dataset;
use crate::failure::Failure;
use crate::local::Written;
use crate::models::{
    self, Act, Arrays, Entry, ModelInput, ModelSize, PORT, ParityModel, Probe, SizeKeys,
};
use crate::record::Output;
use crate::registry::{self, ModelEntry};
use crate::run::Run;
use crate::runfile::RunBlock;
use crate::train;

/// A user's Burn port of a PyTorch module, as the trainer drives it.
pub trait Port: Module + std::fmt::Display + Sized + 'static {
    /// What the forward takes, read from the dataset's `x`: `Tensor<2>` for float features
    /// [N, F], `Tensor<3>` or `Tensor<4>` for float samples of higher rank, `Tensor<2, Int>`
    /// for token ids [N, T].
    type Input: ModelInput;

    /// The module with Burn's own initial values (the dataset's weights are loaded over
    /// them).
    fn init(device: &Device) -> Self;

    /// The module for a run in `dtype`, the run's float precision (`DType::F32` or
    /// `DType::F64`): [`Port::init`] unless the port overrides it, for a setting that
    /// depends on the precision (an epsilon chosen per dtype, say). The trainer builds a
    /// port through this.
    fn init_with_dtype(device: &Device, dtype: DType) -> Self {
        let _ = dtype;
        Self::init(device)
    }

    /// The forward pass of a batch: each recorded layer through
    /// [`layers.layer(name, x, |x| …)`](Layers::layer), in the order of the spec's
    /// `port.layers`. Its output is [rows, classes], the rows those of the labels (B for
    /// labels [N], B·T for labels [N, T]).
    fn forward(&self, x: Self::Input, layers: &mut Layers) -> Tensor<2>;

    /// burn-store's key remapping of PyTorch's names to the module's Burn paths: (regex,
    /// replacement) pairs applied in turn to every name. Names the same on both sides need
    /// none; a norm's `weight`/`bias` are its `gamma`/`beta` already. None by default.
    fn pytorch_keys() -> Vec<(String, String)> {
        Vec::new()
    }

    /// How PyTorch's arrays map to Burn tensors where burn-store's rules do not say, by
    /// PyTorch name ([`Mapping`]): a Conv1D weight held as is in a Burn Linear, a packed
    /// qkv array split into three Linears. A port that declares any is loaded wholly from
    /// the weights file by parameter id, not through burn-store (whose load puts one array
    /// into one path). None by default.
    fn mappings() -> Vec<(String, Mapping)> {
        Vec::new()
    }
}

/// Port `P`'s module for `device`'s float precision ([`Port::init_with_dtype`]).
fn init<P: Port>(device: &Device) -> P {
    let dtype = Tensor::<1>::zeros([1], device).dtype();
    <P as Port>::init_with_dtype(device, dtype)
}

/// A port's declarations in this process, resolved against its Burn module.
#[derive(Debug, Clone, PartialEq)]
struct Declared {
    /// The spec's `port.name`.
    name: String,
    /// Each parameter with Burn's layout, and the Burn path of each of its parts, in
    /// `port.params` order.
    params: Vec<Entry>,
    paths: Vec<String>,
    /// Whether the port maps some parameter itself ([`Port::mappings`]).
    mapped: bool,
    /// Each buffer (a running statistic), and its Burn path, in `port.buffers` order.
    buffers: Vec<Entry>,
    buffer_paths: Vec<String>,
    layers: Vec<String>,
    /// One input sample's shape (`x` is [N, ..sample]), from the dataset.
    sample: Vec<usize>,
}

/// The declaration of each port type of the process, by its `TypeId`.
type Registry = RwLock<HashMap<TypeId, Arc<Declared>>>;

/// The process's declarations (see the module's documentation): set by [`prepare`], read by
/// the trainer through `ParityModel`'s static functions.
static DECLARED: LazyLock<Registry> = LazyLock::new(Default::default);

fn declare<P: Port>(declared: Declared) {
    DECLARED
        .write()
        .expect("the declarations")
        .insert(TypeId::of::<P>(), Arc::new(declared));
}

fn declared<P: Port>() -> Arc<Declared> {
    DECLARED
        .read()
        .expect("the declarations")
        .get(&TypeId::of::<P>())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "port {}: not declared (parity_train::port::prepare reads its spec before training)",
                std::any::type_name::<P>()
            )
        })
}

/// Matches the spec's port to `P` and declares it for training: the parameters against the
/// Burn module ([`resolve`](resolve::resolve)), `x` against `P::Input`, and the layers one
/// forward of the first batch records against `port.layers`. One line on the first
/// mismatch; nothing is trained.
pub fn prepare<P: Port>(spec: &Spec, data: &Dataset, device: &Device) -> Result<(), String> {
    let Some(port) = &spec.port else {
        return Err(registry::built_in(spec));
    };
    let name = &port.name;
    let module = init::<P>(device);
    let mappings = <P as Port>::mappings();
    let resolved = resolve::resolve(port, &module, &<P as Port>::pytorch_keys(), &mappings)?;
    let x = <<P as Port>::Input as ModelInput>::read(data, device)
        .map_err(|e| format!("port {name}: {e}"))?;
    // The layers the forward records, on the first batch (or as many samples as there are):
    // the names the trainer records by (the spec's entries may be globs over them).
    let rows = x.samples().min(spec.batch_size.max(1));
    let mut recorded = port.layers.clone();
    if rows > 0 {
        let mut probe = Probe::off();
        let mut layers = Layers::new(&mut probe);
        let _ = <P as Port>::forward(&module, x.rows(0..rows), &mut layers);
        layers::check_layers(name, &port.layers, layers.called())?;
        recorded = layers.called().to_vec();
    }
    // Declared only once it fits: a refused spec leaves the type's declaration as it was.
    declare::<P>(Declared {
        name: name.clone(),
        params: resolved.entries,
        paths: resolved.paths,
        mapped: !mappings.is_empty(),
        buffers: resolved.buffers,
        buffer_paths: resolved.buffer_paths,
        layers: recorded,
        sample: data.arrays()["x"].shape[1..].to_vec(),
    });
    Ok(())
}

/// The port's check mode ([`prepare`]): the layers its forward records, by name.
fn check_port<P: Port>(run: Run) -> Result<Vec<String>, String> {
    prepare::<P>(run.spec, run.data, run.device)?;
    Ok(declared::<P>().layers.clone())
}

/// The port's run: [`prepare`] (a refusal, exit code 2), then the trainer's.
fn train_port<P: Port>(run: Run, output: Output<'_>) -> Result<RunBlock, Failure> {
    prepare::<P>(run.spec, run.data, run.device).map_err(Failure::Refused)?;
    Ok(train::run_into::<P>(run, output)?.0)
}

/// The port's local mode ([`local::local_port`]), after [`prepare`].
fn local_port<P: Port>(run: Run, torch_run: &Path, out: &Path) -> Result<Written, Failure> {
    prepare::<P>(run.spec, run.data, run.device)?;
    Ok(local::local_port::<P>(run, torch_run, out)?)
}

/// Port `P`'s entry ([`PORT`]): the trainer's ([`registry::entry`]), its modes after
/// [`prepare`].
pub fn entry<P: Port>() -> ModelEntry {
    ModelEntry {
        train: train_port::<P>,
        local: local_port::<P>,
        check: check_port::<P>,
        ..registry::entry::<P>()
    }
}

/// The binary of port `P`, named as it was run: its registry is `P`'s entry alone.
pub fn runner<P: Port>() -> Runner {
    Runner {
        program: cli::program_name("port"),
        models: vec![entry::<P>()],
    }
}

/// The binary of port `P`: `parity-train`'s command line (cli.rs), training `P`.
pub fn main<P: Port>() -> ExitCode {
    cli::main(&runner::<P>())
}

/// A port as the trainer drives it: its declarations are the process's (see the module's
/// documentation), its forward is the user's, recording through [`Layers`].
impl<P: Port> ParityModel for P {
    const NAME: &'static str = PORT;
    type Input = <P as Port>::Input;
    /// None: a port's shapes are its spec's declaration (`port.params`), not sizes.
    const SIZE: SizeKeys = &[];

    fn sample(_: &ModelSize) -> Vec<usize> {
        declared::<P>().sample.clone()
    }

    fn params(_: &ModelSize) -> Vec<Entry> {
        declared::<P>().params.clone()
    }

    fn buffers(_: &ModelSize) -> Vec<Entry> {
        declared::<P>().buffers.clone()
    }

    fn layers(_: &ModelSize) -> Vec<String> {
        declared::<P>().layers.clone()
    }

    fn init(_: &ModelSize, device: &Device) -> Self {
        init::<P>(device)
    }

    fn pytorch_keys(_: &ModelSize) -> Vec<(String, String)> {
        <P as Port>::pytorch_keys()
    }

    /// Burn's initial module with every parameter set from the arrays, by id, and its
    /// running statistics.
    fn build(arrays: &Arrays) -> Self {
        let model = init::<P>(arrays.device());
        let mut model = models::from_arrays(model, arrays, |_| true);
        let declared = declared::<P>();
        if !declared.buffers.is_empty() {
            let buffers = declared
                .buffers
                .iter()
                .map(|e| arrays.tensor(&e.name))
                .collect();
            model.set_buffers(buffers);
        }
        model
    }

    /// Through burn-store unless the port maps some parameter itself.
    fn through_store() -> bool {
        !declared::<P>().mapped
    }

    /// No keys: written `{}`.
    fn size(&self) -> ModelSize {
        ModelSize::default()
    }

    /// The ids at the declared parameters' Burn paths (burn-store's collection).
    fn param_ids(&self) -> Vec<ParamId> {
        resolve::ids_at(self, &declared::<P>().paths)
    }

    /// The running statistics at the declared buffers' Burn paths, flat, with the pending
    /// update of the last train-mode forward applied: `valid()` synchronises each
    /// `RunningState` (burn-core module/param/running.rs, `sync`), which a visit does not.
    fn buffer_tensors(&self) -> Vec<Tensor<1>> {
        let declared = declared::<P>();
        if declared.buffer_paths.is_empty() {
            return Vec::new();
        }
        let ids = resolve::ids_at(self, &declared.buffer_paths);
        let mut found = Flat {
            ids: ids.clone(),
            tensors: HashMap::new(),
        };
        self.valid().visit(&mut found);
        ids.iter()
            .map(|id| found.tensors.remove(id).expect("a declared buffer"))
            .collect()
    }

    /// The running statistics replaced by `buffers` (flat, in `port.buffers` order), by id.
    fn set_buffers(&mut self, buffers: Vec<Tensor<1>>) {
        let declared = declared::<P>();
        let ids = resolve::ids_at(self, &declared.buffer_paths);
        assert_eq!(ids.len(), buffers.len(), "one value per declared buffer");
        let mut mapper = Replace {
            tensors: ids.into_iter().zip(buffers).collect(),
        };
        *self = self.clone().map(&mut mapper);
    }

    /// A port has no stages: its forward is the user's whole ([`ParityModel::forward`]).
    fn stage(&self, k: usize, _: Act) -> Act {
        panic!(
            "port {}: no stage {k} (a port's forward is run whole)",
            declared::<P>().name
        )
    }

    /// The user's forward through [`Layers`]; the layers it calls were checked by
    /// [`prepare`], and a forward that calls others later (its calls depend on the data) is
    /// a bug of the port: a panic naming them.
    fn forward(&self, x: <P as Port>::Input, probe: &mut Probe) -> Tensor<2> {
        let declared = declared::<P>();
        let mut layers = Layers::new(probe);
        let out = <P as Port>::forward(self, x, &mut layers);
        if let Err(e) = layers::check_layers(&declared.name, &declared.layers, layers.called()) {
            panic!("{e}");
        }
        out
    }

    /// Each layer's settings as its Burn module holds them (settings.rs, read from the
    /// module's display), by PyTorch's layer name and in PyTorch's terms: `norm.eps`,
    /// `act.approximate`, `bn.momentum`, … (the PyTorch run records the same keys).
    fn layer_hyperparameters(&self) -> Value {
        let declared = declared::<P>();
        // A Burn module's path to PyTorch's name, from the parameters and buffers matched
        // (norm.gamma ↔ norm.weight); a module without any keeps its path.
        let mut names: HashMap<String, String> = HashMap::new();
        let parts = declared
            .params
            .iter()
            .flat_map(|e| (0..e.parts).map(move |_| e));
        let entries = parts.chain(&declared.buffers);
        for (entry, path) in entries.zip(declared.paths.iter().chain(&declared.buffer_paths)) {
            if let (Some((torch, _)), Some((burn, _))) =
                (entry.name.rsplit_once('.'), path.rsplit_once('.'))
                && entry.parts == 1
            {
                names.insert(burn.to_string(), torch.to_string());
            }
        }
        let mut held = serde_json::Map::new();
        for (path, found) in settings::layer_settings(&settings::modules(&self.to_string())) {
            let layer = names.get(&path).unwrap_or(&path);
            for (key, value) in found {
                held.insert(format!("{layer}.{key}"), value);
            }
        }
        Value::Object(held)
    }
}

/// The tensors of the given ids, flattened (a visit of the module).
struct Flat {
    ids: Vec<ParamId>,
    tensors: HashMap<ParamId, Tensor<1>>,
}

impl ModuleVisitor for Flat {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.ids.contains(&param.id) {
            let value = param.val();
            let count = value.shape().num_elements();
            self.tensors.insert(param.id, value.reshape([count]));
        }
    }
}

/// Tensors of the given ids replaced (flat values, reshaped to each tensor's shape).
struct Replace {
    tensors: HashMap<ParamId, Tensor<1>>,
}

impl ModuleMapper for Replace {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        match self.tensors.remove(&param.id) {
            Some(value) => {
                let shape = param.val().shape();
                Param::initialized(param.id, value.reshape(shape))
            }
            None => param,
        }
    }
}
