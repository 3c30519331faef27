//! tests/burn_store.rs on an F32 device (Flex's default precision, the f32 runs'): the
//! burn-store load gives exactly what the arrays path does, with no cast.

#[path = "suite/common/mod.rs"]
mod common;
use burn::tensor::{DType, Device};

#[test]
fn the_burn_store_load_is_the_arrays_path_bit_for_bit_on_an_f32_device() {
    common::store::same_as_arrays(&Device::flex().autodiff(), DType::F32);
}
