//! Shared by the integration tests.

use burn::tensor::{Device, FloatDType};
use std::sync::OnceLock;

/// The process's Flex device, configured for F64 once (settings can be set only once).
pub fn f64_device() -> Device {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            let mut device = Device::flex();
            device.configure(FloatDType::F64).expect("F64 device");
            device
        })
        .clone()
}
