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

use burn::tensor::{Device, FloatDType};
use clap::Parser;
use parity_train::config::Backend;
use parity_train::record::Output;
use parity_train::runfile::{CpuPath, Provenance, RunFile};
use parity_train::{
    BURN_VERSION, RUSTC_VERSION, config, cpu, cpu_path, dataset, fault, git_state, hex_sha256,
    local, runfile, tensors, train,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Train one resolved experiment with Burn for one dtype; write a run file.
#[derive(Parser)]
#[command(
    name = "parity-train",
    version = BURN_VERSION,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Args {
    /// One experiment resolved (python -m torch_burn_parity.config.resolve CONFIG NAME).
    #[arg(long, required = true)]
    spec: Option<PathBuf>,
    /// The float precision of the run.
    #[arg(long, value_parser = ["f32", "f64"], required = true)]
    dtype: Option<String>,
    /// The model's dataset file: inputs and initial weights.
    #[arg(long, required = true)]
    data: Option<PathBuf>,
    /// The run file to write; its tensors go to the same path with `.safetensors`.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// Record nothing per step (no trajectory, layer record, norms or tensors file): the
    /// run file keeps `losses`, `lrs`, `final`, `layers` (`[]`) and `meta`; for timing.
    #[arg(long)]
    bare: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Each Burn layer on the PyTorch run's recorded input to it and gradient at its output,
    /// at the spec's probe steps (PaDiff's single-step mode); writes a safetensors file.
    Local(LocalArgs),
}

#[derive(clap::Args)]
struct LocalArgs {
    /// One experiment resolved, as for training.
    #[arg(long)]
    spec: PathBuf,
    /// The model's dataset file: inputs and initial weights.
    #[arg(long)]
    data: PathBuf,
    /// The PyTorch run file of that experiment (its tensors file beside it).
    #[arg(long)]
    torch_run: PathBuf,
    /// The float precision (the PyTorch run's).
    #[arg(long, value_parser = ["f32", "f64"])]
    dtype: String,
    /// The safetensors file to write (`local/{step}/outputs/{k}`, `local/{step}/input_grads/{k}`).
    #[arg(long)]
    out: PathBuf,
}

/// The spec's device: Flex or NdArray, autodiff, configured for `dtype`.
fn device(backend: Backend, dtype: &str) -> Result<Device, String> {
    let mut device = match backend {
        Backend::Flex => Device::flex(),
        // Deprecated in Burn 0.22 in favour of Flex; kept here to compare the two.
        #[allow(deprecated)]
        Backend::NdArray => Device::ndarray(),
    };
    if dtype == "f64" {
        device.configure(FloatDType::F64).map_err(|e| {
            format!(
                "cannot configure the {} device for F64: {e:?}",
                backend.name()
            )
        })?;
    }
    Ok(device.autodiff())
}

fn threads(n: usize) -> Result<(), String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| format!("cannot set {n} threads: {e}"))
}

/// The local mode (local.rs).
fn run_local(args: LocalArgs) -> Result<(), String> {
    let fault = fault::Fault::from_env()?;
    let spec = config::load(&args.spec)?;
    let data = dataset::read(&args.data)?;
    threads(spec.threads)?;
    let device = device(spec.backend, &args.dtype)?;
    let started = Instant::now();
    let written = local::local(
        &spec,
        &data,
        &device,
        fault.as_ref(),
        &args.torch_run,
        &args.out,
    )?;
    println!(
        "burn local {} {}: steps {:?}, {} layers in {:.2}s -> {}",
        spec.name,
        args.dtype,
        written.steps,
        written.names.len(),
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(())
}

fn run(args: Args) -> Result<(), String> {
    let (Some(spec_path), Some(dtype), Some(data_path), Some(out)) =
        (args.spec, args.dtype, args.data, args.out)
    else {
        unreachable!("clap requires them without a subcommand")
    };
    let fault = fault::Fault::from_env()?;
    let spec = config::load(&spec_path)?;
    let data = dataset::read(&data_path)?;
    threads(spec.threads)?;
    // One float dtype per process: configure the device before any tensor exists.
    let device = device(spec.backend, &dtype)?;
    let started = Instant::now();
    // The tensors go to the tensors file beside the run file as the steps go.
    let output = if args.bare {
        Output::Bare
    } else {
        Output::File(&out)
    };
    let mut block = train::train_into(&spec, &data, &device, fault.as_ref(), output)?;
    if args.bare {
        // An earlier run's tensors file would sit beside a run file that does not name it.
        let stale = tensors::tensors_path(&out);
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", stale.display()));
            }
            _ => {}
        }
    }
    let config_bytes =
        std::fs::read(&spec_path).map_err(|e| format!("{}: {e}", spec_path.display()))?;
    block.meta.provenance = Some(Provenance {
        framework: "burn",
        framework_version: BURN_VERSION.to_string(),
        backend: spec.backend.name().to_string(),
        dtype: dtype.clone(),
        rustc: RUSTC_VERSION.to_string(),
        cpu: cpu(),
        cpu_path: CpuPath {
            setting: spec.cpu_path.clone(),
            kernels: cpu_path(),
        },
        config_sha256: hex_sha256(&config_bytes),
        git: git_state(),
    });
    let (loss, correct) = (block.r#final.loss.0, block.r#final.correct);
    let file = RunFile {
        experiment: spec.name.clone(),
        block,
    };
    let text = serde_json::to_string(&file).expect("JSON") + "\n";
    runfile::write_atomic(&out, text.as_bytes()).map_err(|e| format!("{}: {e}", out.display()))?;
    println!(
        "burn {} {}{}: {} steps in {:.2}s, final loss {:.8}, correct {}/{} -> {}",
        spec.name,
        dtype,
        if args.bare { " (bare)" } else { "" },
        spec.steps,
        started.elapsed().as_secs_f64(),
        loss,
        correct,
        // The labels: one per sample, or per position of a sample.
        data.arrays()["y"].shape.iter().product::<usize>(),
        out.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    match args.command.take() {
        // A refusal of the local mode: one line, exit code 2.
        Some(Command::Local(local)) => match run_local(local) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("parity-train local: {e}");
                ExitCode::from(2)
            }
        },
        None => match run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("parity-train: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
