//! The crate's integration tests, compiled into one test binary: Burn's generic code is
//! instantiated and linked once for all of them instead of once per file (`cargo test
//! --release` built 19 binaries before). Each module is one file of tests; `common` holds
//! what they share. `adam_factors.rs` and `burn_scalars.rs` stay binaries of their own: the
//! Rust half of ci/mutation.sh runs them alone against each mutant.

mod common;

mod backends;
mod burn_store;
mod burn_store_f32;
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
mod run_tensors;
mod tokens;
mod train_options;
