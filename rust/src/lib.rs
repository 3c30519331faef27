//! Burn side of the PyTorch ↔ Burn training-parity pipeline.

pub mod adam_factors;
pub mod config;
pub mod dataset;
pub mod runfile;
pub mod train;

pub const BURN_VERSION: &str = env!("BURN_VERSION");
