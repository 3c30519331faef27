//! The crate's integration tests, compiled into one test binary: Burn's generic code is
//! instantiated and linked once for all of them instead of once per file (19 binaries took
//! 149 s to build after `cargo build --release`, this one and the four beside it 56 s, on 2
//! cores). Each module is one file of tests; `common` holds what they share. Every test
//! here that trains runs on the process's F64 Flex device (`common::f64_device`).
//!
//! Binaries of their own, beside this one: `run_tensors.rs` and `burn_store_f32.rs` need
//! the Flex device at its default precision, F32, which a device configured for F64 in the
//! same process would change (a Flex device's float dtype is the process's); and
//! `adam_factors.rs` and `burn_scalars.rs`, which the Rust half of ci/mutation.sh runs
//! alone against each mutant.

mod common;

mod backends;
mod burn_store;
mod gpt;
mod lenet;
mod local;
mod model_sizes;
mod models;
mod muon;
mod port;
mod port_buffers;
mod port_mappings;
mod port_refusals;
mod recording;
mod tokens;
mod train_options;
