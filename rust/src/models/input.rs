//! A model's input as its forward takes it ([`ParityModel::Input`](super::ParityModel)): the
//! dataset's `x` read onto a device, cut into batches of samples; and the labels `y`,
//! flattened.
//!
//! `x` is F32 of any rank ≥ 2 (the sine models' [N, 1, 16], lenet's digits [N, 1, 8, 8]) or
//! I64 token ids [N, T] (a language model's); `y` is I64 [N] (one class per sample) or
//! [N, T] (one per position). Each batch's labels are flat, [B] or [B·T]: the rows of the
//! forward's [rows, classes] output they score.

use std::ops::Range;

use burn::tensor::{Device, Int, Tensor, TensorData, s};

use super::{Act, tensor};
use crate::dataset::{Array, Dataset, Values};

/// What a model's forward takes: read from the dataset's `x`, counted and cut by sample; its
/// first stage's input ([`Act`]).
pub trait ModelInput: Clone + Sized + Into<Act> {
    /// The dtype of `x` in the dataset file (`F32` or `I64`).
    const DTYPE: &'static str;
    /// The rank of `x`, its samples first.
    const RANK: usize;

    /// The dataset's `x` on `device`; one line naming the array otherwise (another dtype or
    /// rank than the model's).
    fn read(data: &Dataset, device: &Device) -> Result<Self, String>;

    /// The number of samples (the first dimension).
    fn samples(&self) -> usize;

    /// Samples `rows` (a batch), every other dimension whole.
    fn rows(&self, rows: Range<usize>) -> Self;
}

/// The name of an array's dtype in the dataset file.
pub fn dtype_name(values: &Values) -> &'static str {
    match values {
        Values::F32(_) => "F32",
        Values::I64(_) => "I64",
    }
}

/// The dataset's `x`, checked to be of dtype `I::DTYPE` and rank `I::RANK`.
fn x_of<I: ModelInput>(data: &Dataset) -> Result<&Array, String> {
    let x = data
        .arrays()
        .get("x")
        .ok_or_else(|| "the dataset has no array 'x'".to_string())?;
    let dtype = dtype_name(&x.values);
    if dtype != I::DTYPE {
        return Err(format!(
            "array 'x' is {dtype} in the dataset, the model takes {}",
            I::DTYPE
        ));
    }
    if x.shape.len() != I::RANK {
        return Err(format!(
            "array 'x' has shape {:?} in the dataset, the model takes rank {}",
            x.shape,
            I::RANK
        ));
    }
    Ok(x)
}

/// Float samples (F32 in the file), e.g. [N, 1, 16] or [N, 1, 8, 8]; on the device in its
/// float dtype (an exact widening on an F64 device).
impl<const D: usize> ModelInput for Tensor<D>
where
    Tensor<D>: Into<Act>,
{
    const DTYPE: &'static str = "F32";
    const RANK: usize = D;

    fn read(data: &Dataset, device: &Device) -> Result<Self, String> {
        let x = x_of::<Self>(data)?;
        let Values::F32(values) = &x.values else {
            unreachable!("checked F32")
        };
        Ok(tensor(values, &x.shape, device))
    }

    fn samples(&self) -> usize {
        self.dims()[0]
    }

    fn rows(&self, rows: Range<usize>) -> Self {
        self.clone().slice(s![rows.start..rows.end])
    }
}

/// Token ids [N, T] (I64 in the file): the input of an embedding. No gradient flows to
/// them (models/probe.rs, [`Probe::tokens`](super::Probe::tokens)).
impl ModelInput for Tensor<2, Int> {
    const DTYPE: &'static str = "I64";
    const RANK: usize = 2;

    fn read(data: &Dataset, device: &Device) -> Result<Self, String> {
        let x = x_of::<Self>(data)?;
        let Values::I64(values) = &x.values else {
            unreachable!("checked I64")
        };
        let shape = [x.shape[0], x.shape[1]];
        Ok(Tensor::from_data(
            TensorData::new(values.clone(), shape),
            device,
        ))
    }

    fn samples(&self) -> usize {
        self.dims()[0]
    }

    fn rows(&self, rows: Range<usize>) -> Self {
        self.clone().slice(s![rows.start..rows.end])
    }
}

/// The dataset's labels `y` ([N] or [N, T], I64; dataset.rs checks the shape against x's),
/// flat: [N·T], sample k's labels at k·T..(k+1)·T.
pub fn labels(data: &Dataset, device: &Device) -> Result<Tensor<1, Int>, String> {
    let (_, y) = data.i64("y")?;
    Ok(Tensor::from_data(
        TensorData::new(y.to_vec(), [y.len()]),
        device,
    ))
}

/// The labels per sample: T of y [N, T], 1 of y [N].
pub fn labels_per_sample(data: &Dataset) -> usize {
    let shape = &data.arrays()["y"].shape;
    shape[1..].iter().product()
}
