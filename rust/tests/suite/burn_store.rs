//! The trainer's load of a model from its dataset file (burn-store's `SafetensorsStore`,
//! `PyTorchToBurnAdapter` and each model's key remapping; the packed arrays and the Linear
//! weights from the arrays: `models::build`), and the load with the Linear weights through
//! burn-store too (`LinearWeights::Store`), give exactly what building the model wholly from
//! the arrays does (`models::build_from_arrays`): every parameter and buffer bit for bit, in
//! the device's precision, tracking gradients alike; each model at its default size, the
//! transformer at two layers, lenet and gpt at another size too. The trainer's load also computes exactly as before: the
//! same loss and gradients on a batch.
//!
//! On an F64 device (the file's F32 values widened exactly): tests/burn_store_f32.rs runs the
//! same on an F32 one, in its own process (a device's float dtype is set once per process).

use crate::common;
use burn::tensor::DType;

#[test]
fn the_burn_store_load_is_the_arrays_path_bit_for_bit_on_an_f64_device() {
    common::store::same_as_arrays(&common::f64_device().autodiff(), DType::F64);
}

/// A dataset that lacks a packed array is refused by the declaration check, before
/// burn-store, on one line naming it.
#[test]
fn a_missing_packed_array_is_refused_before_burn_store() {
    use parity_train::models::{ModelSize, Transformer};
    let mut arrays = common::transformer_arrays(common::store::TWO_LAYERS);
    arrays.retain(|(n, _)| n != "enc.layers.1.self_attn.in_proj_bias");
    let error = parity_train::models::build::<Transformer>(
        &ModelSize::from(common::store::TWO_LAYERS),
        &common::dataset(arrays),
        &common::f64_device().autodiff(),
    )
    .map(|_| ())
    .unwrap_err();
    assert_eq!(
        error,
        "model transformer: the dataset has no array 'enc.layers.1.self_attn.in_proj_bias' (the Burn module needs it, shape [36])"
    );
}
