//! The dataset file's side of a model: its parameter and buffer arrays, checked against the
//! model's declarations at its size before the model is built from them.

use burn::module::Param;
use burn::tensor::{Device, Tensor};

use super::{Entry, ModelInput, ModelSize, ParityModel, dtype_name, part_of, tensor};
use crate::dataset::{Array, Dataset, Values};

/// A dataset's parameter and buffer arrays, checked against a model's declaration.
pub struct Arrays<'a> {
    data: &'a Dataset,
    size: ModelSize,
    entries: Vec<Entry>,
    device: &'a Device,
}

impl<'a> Arrays<'a> {
    /// Refuses, naming the model and the array, unless the arrays other than `x` and `y` are
    /// exactly `M`'s parameters and buffers at `size` with their shapes, and `x` is
    /// [N, ..`M::sample(size)`] of `M::Input`'s dtype; and a `size` that fails
    /// [`ModelSize::check`].
    pub fn new<M: ParityModel>(
        size: &ModelSize,
        data: &'a Dataset,
        device: &'a Device,
    ) -> Result<Self, String> {
        let model = M::NAME;
        size.check::<M>()
            .map_err(|e| format!("model {model}: {e}"))?;
        let entries: Vec<Entry> = M::params(size)
            .into_iter()
            .chain(M::buffers(size))
            .collect();
        for e in &entries {
            let Some(Array { shape, values }) = data.arrays().get(&e.name) else {
                return Err(format!(
                    "model {model}: the dataset has no array '{}' (the Burn module needs it, shape {:?})",
                    e.name, e.shape
                ));
            };
            if *shape != e.shape {
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
        if let Some(extra) = data.arrays().keys().find(|name| !known(name)) {
            return Err(format!(
                "model {model}: the dataset holds '{extra}', which the Burn module does not have"
            ));
        }
        let sample = M::sample(size);
        debug_assert_eq!(
            sample.len() + 1,
            <M::Input as ModelInput>::RANK,
            "{model}: a sample's rank is the input's but for N"
        );
        let x = data.arrays().get("x");
        let shape = x.map_or(&[][..], |a| &a.shape[..]);
        if shape.len() != sample.len() + 1 || shape[1..] != sample[..] {
            let dims: Vec<String> = sample.iter().map(|d| d.to_string()).collect();
            return Err(format!(
                "model {model}: array 'x' has shape {shape:?} in the dataset, the Burn module takes [N, {}]",
                dims.join(", ")
            ));
        }
        let want = <M::Input as ModelInput>::DTYPE;
        if let Some(x) = x.filter(|x| dtype_name(&x.values) != want) {
            return Err(format!(
                "model {model}: array 'x' is {} in the dataset, the Burn module takes {want}",
                dtype_name(&x.values)
            ));
        }
        Ok(Arrays {
            data,
            size: size.clone(),
            entries,
            device,
        })
    }

    pub fn device(&self) -> &Device {
        self.device
    }

    /// The size the arrays were checked at: the model's to build.
    pub fn size(&self) -> ModelSize {
        self.size.clone()
    }

    fn entry(&self, name: &str) -> &Entry {
        self.entries
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

/// The model at `size` built wholly from the dataset's arrays, after they are checked; the
/// trainer loads it through burn-store instead ([`build`](super::build)).
pub fn build_from_arrays<M: ParityModel>(
    size: &ModelSize,
    data: &Dataset,
    device: &Device,
) -> Result<M, String> {
    Ok(M::build(&Arrays::new::<M>(size, data, device)?))
}
