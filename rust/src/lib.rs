//! Burn side of the PyTorch ↔ Burn training-parity pipeline.

pub mod adam_factors;
pub mod by_hand;
pub mod cli;
pub mod config;
pub mod dataset;
pub mod failure;
pub mod fault;
pub mod groups;
pub mod local;
pub mod loss;
pub mod measured;
pub mod models;
pub mod optimizers;
pub mod port;
pub mod provenance;
pub mod record;
pub mod registry;
pub mod run;
pub mod runfile;
pub mod schedule;
pub mod tensors;
pub mod train;
