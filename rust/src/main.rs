//! `parity-train`: trains the experiment's `model` (cnn1d, the default, cnn_bn, transformer,
//! lenet or gpt, at the spec's `model_size`, on the spec's `data`) with Burn for one experiment and
//! dtype, on the experiment's `burn_backend` (Flex, the default, or NdArray), and writes a
//! run file and its tensors file beside it (`X.json`, `X.safetensors`).
//!
//! ```text
//! parity-train --spec results/specs/adam.json --dtype f64 \
//!     --data results/data/cnn1d.safetensors --out results/runs/adam/burn-f64.json
//! ```
//!
//! With `--bare`, the run records nothing per step (no trajectory, no layer record, no norms,
//! no tensors file): its run file holds `losses`, `lrs`, `final`, `layers` (always `[]`) and
//! `meta` only, to time the training alone; the spec is otherwise honoured. A tensors file
//! left beside `--out` by an earlier run is removed (the run file no longer names it).
//!
//! `parity-train local` runs each Burn layer at the spec's probe steps on the PyTorch run's
//! recorded input to it and gradient at its output (PaDiff's single-step mode, local.rs) and
//! writes a safetensors file (`local/{step}/outputs/{k}`, `local/{step}/input_grads/{k}`);
//! a refusal is one line starting `parity-train local:`, exit code 2:
//!
//! ```text
//! parity-train local --spec results/specs/adam.json --data results/data/cnn1d.safetensors \
//!     --torch-run results/runs/adam/torch-f64.json --dtype f64 \
//!     --out results/runs/adam/burn-local-f64.safetensors
//! ```
//!
//! A spec of a user's own port (`model: port`) is refused with one line naming the port,
//! exit code 2: it is trained by the port's own binary (`parity_train::port::main`).

use std::process::ExitCode;

fn main() -> ExitCode {
    parity_train::cli::main(&parity_train::cli::builtin())
}
