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

use burn::tensor::{Device, FloatDType};
use clap::Parser;
use parity_train::config::Backend;
use parity_train::record::Output;
use parity_train::runfile::{CpuPath, Provenance, RunFile};
use parity_train::{
    BURN_VERSION, RUSTC_VERSION, config, cpu, cpu_path, dataset, fault, git_state, hex_sha256,
    runfile, tensors, train,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Train one resolved experiment with Burn for one dtype; write a run file.
#[derive(Parser)]
#[command(name = "parity-train", version = BURN_VERSION)]
struct Args {
    /// One experiment resolved (python -m torch_burn_parity.config.resolve CONFIG NAME).
    #[arg(long)]
    spec: PathBuf,
    /// The float precision of the run.
    #[arg(long, value_parser = ["f32", "f64"])]
    dtype: String,
    /// The model's dataset file: inputs and initial weights.
    #[arg(long)]
    data: PathBuf,
    /// The run file to write; its tensors go to the same path with `.safetensors`.
    #[arg(long)]
    out: PathBuf,
    /// Record nothing per step (no trajectory, layer record, norms or tensors file): the
    /// run file keeps `losses`, `lrs`, `final`, `layers` (`[]`) and `meta`; for timing.
    #[arg(long)]
    bare: bool,
}

fn run() -> Result<(), String> {
    let args = Args::parse();
    let fault = fault::Fault::from_env()?;
    let spec = config::load(&args.spec)?;
    let data = dataset::read(&args.data)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(spec.threads)
        .build_global()
        .map_err(|e| format!("cannot set {} threads: {e}", spec.threads))?;
    // One float dtype per process: configure the device before any tensor exists.
    let mut device = match spec.backend {
        Backend::Flex => Device::flex(),
        // Deprecated in Burn 0.22 in favour of Flex; kept here to compare the two.
        #[allow(deprecated)]
        Backend::NdArray => Device::ndarray(),
    };
    if args.dtype == "f64" {
        device.configure(FloatDType::F64).map_err(|e| {
            format!(
                "cannot configure the {} device for F64: {e:?}",
                spec.backend.name()
            )
        })?;
    }
    let device = device.autodiff();
    let started = Instant::now();
    // The tensors go to the tensors file beside the run file as the steps go.
    let output = if args.bare {
        Output::Bare
    } else {
        Output::File(&args.out)
    };
    let mut block = train::train_into(&spec, &data, &device, fault.as_ref(), output)?;
    if args.bare {
        // An earlier run's tensors file would sit beside a run file that does not name it.
        let stale = tensors::tensors_path(&args.out);
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", stale.display()));
            }
            _ => {}
        }
    }
    let config_bytes =
        std::fs::read(&args.spec).map_err(|e| format!("{}: {e}", args.spec.display()))?;
    block.meta.provenance = Some(Provenance {
        framework: "burn",
        framework_version: BURN_VERSION.to_string(),
        backend: spec.backend.name().to_string(),
        dtype: args.dtype.clone(),
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
    runfile::write_atomic(&args.out, text.as_bytes())
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "burn {} {}{}: {} steps in {:.2}s, final loss {:.8}, correct {}/{} -> {}",
        spec.name,
        args.dtype,
        if args.bare { " (bare)" } else { "" },
        spec.steps,
        started.elapsed().as_secs_f64(),
        loss,
        correct,
        // The labels: one per sample, or per position of a sample.
        data.arrays()["y"].shape.iter().product::<usize>(),
        args.out.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parity-train: {e}");
            ExitCode::FAILURE
        }
    }
}
