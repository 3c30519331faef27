//! The command line of a trainer binary, shared by `parity-train` (the built-in models) and a
//! user's port binary ([`crate::port::main`]): the same arguments, the same run file, the
//! same `local` subcommand; only the models they train differ ([`Runner`]: a registry of
//! models, [`ModelEntry`]).
//!
//! ```text
//! BIN --spec S --dtype f32|f64 --data D --out O [--bare]
//! BIN local --spec S --data D --torch-run R --dtype f32|f64 --out O
//! ```
//!
//! Every error is one line on stderr starting with the binary's name: exit code 2 for a
//! refusal before any training step ([`Failure::Refused`]) and for any error of the local
//! mode (`BIN local: …`), 1 for any other training error.

use burn::tensor::{Device, FloatDType};
use clap::{CommandFactory, FromArgMatches, Parser};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::config::{Backend, Spec};
use crate::failure::Failure;
use crate::local::Written;
use crate::provenance::{
    BURN_VERSION, CpuPath, Provenance, RUSTC_VERSION, cpu, cpu_path, git_state, hex_sha256,
};
use crate::record::Output;
use crate::registry::{self, ModelEntry};
use crate::run::Run;
use crate::runfile::{RunBlock, RunFile};
use crate::{config, dataset, fault, runfile, tensors};

/// A binary: its name (the first word of its error lines) and the models it trains.
pub struct Runner {
    pub program: String,
    /// Its registry: the spec's model is found in it by name ([`registry::find`]).
    pub models: Vec<ModelEntry>,
}

impl Runner {
    /// Whether this is a port's binary (its registry the port alone).
    fn is_port(&self) -> bool {
        self.models
            .iter()
            .any(|m| m.declared.name == crate::models::PORT)
    }

    /// The spec's model in the registry; refused (exit code 2) when it is another binary's.
    fn model(&self, spec: &Spec) -> Result<&ModelEntry, Failure> {
        registry::find(&self.models, spec).map_err(Failure::Refused)
    }

    /// Trains one experiment with the spec's model: the run block without
    /// `meta.provenance`.
    pub fn train(&self, run: Run, output: Output<'_>) -> Result<RunBlock, Failure> {
        (self.model(run.spec)?.train)(run, output)
    }

    /// Runs the local mode of one experiment against a PyTorch run, writing `out`.
    pub fn local(&self, run: Run, torch_run: &Path, out: &Path) -> Result<Written, Failure> {
        (self.model(run.spec)?.local)(run, torch_run, out)
    }
}

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
    /// Checks the spec's model against the dataset without training (a port's parameters,
    /// input and layers against its Burn module); exit code 2 and one line when it does not
    /// fit.
    Check(CheckArgs),
}

#[derive(clap::Args)]
struct CheckArgs {
    /// One experiment resolved, as for training.
    #[arg(long)]
    spec: PathBuf,
    /// The model's dataset file: inputs and initial weights.
    #[arg(long)]
    data: PathBuf,
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

/// The check mode: the spec's model against the dataset, on an f32 device.
fn run_check(runner: &Runner, args: CheckArgs) -> Result<(), Failure> {
    let spec = config::load(&args.spec)?;
    let data = dataset::read(&args.data)?;
    threads(spec.threads)?;
    let device = device(spec.backend, "f32")?;
    let layers =
        (runner.model(&spec)?.check)(Run::new(&spec, &data, &device)).map_err(Failure::Refused)?;
    println!("burn check {}: the model fits its spec and data", spec.name);
    // The recorded layers' names, one JSON line (training/check_port.py reads it).
    println!("layers: {}", serde_json::to_string(&layers).expect("JSON"));
    Ok(())
}

/// The local mode.
fn run_local(runner: &Runner, args: LocalArgs) -> Result<(), Failure> {
    let fault = fault::Fault::from_env(runner.is_port())?;
    let spec = config::load(&args.spec)?;
    let data = dataset::read(&args.data)?;
    threads(spec.threads)?;
    let device = device(spec.backend, &args.dtype)?;
    let started = Instant::now();
    let written = runner.local(
        Run::new(&spec, &data, &device).with_fault(fault.as_ref()),
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

fn run(runner: &Runner, args: Args) -> Result<(), Failure> {
    let (Some(spec_path), Some(dtype), Some(data_path), Some(out)) =
        (args.spec, args.dtype, args.data, args.out)
    else {
        unreachable!("clap requires them without a subcommand")
    };
    let fault = fault::Fault::from_env(runner.is_port())?;
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
    let mut block = runner.train(
        Run::new(&spec, &data, &device).with_fault(fault.as_ref()),
        output,
    )?;
    if args.bare {
        // An earlier run's tensors file would sit beside a run file that does not name it.
        let stale = tensors::tensors_path(&out);
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", stale.display()).into());
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
    // A classifier's correct count of its labels (one per sample, or per position).
    let correct = correct.map_or(String::new(), |c| {
        let labels = data.arrays()["y"].shape.iter().product::<usize>();
        format!(", correct {c}/{labels}")
    });
    println!(
        "burn {} {}{}: {} steps in {:.2}s, final loss {:.8}{} -> {}",
        spec.name,
        dtype,
        if args.bare { " (bare)" } else { "" },
        spec.steps,
        started.elapsed().as_secs_f64(),
        loss,
        correct,
        out.display()
    );
    Ok(())
}

/// Parses the command line (named `runner.program` in its help and errors), runs the
/// binary's mode and reports any error on one line.
pub fn main(runner: &Runner) -> ExitCode {
    let program = runner.program.clone();
    // clap takes a command's name as a `&'static str` (without its `string` feature): the
    // one name of the process.
    let name: &'static str = Box::leak(program.clone().into_boxed_str());
    let mut matches = Args::command().name(name).bin_name(name).get_matches();
    let mut args = Args::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit());
    match args.command.take() {
        // A refusal of the local mode: one line, exit code 2.
        Some(Command::Local(local)) => match run_local(runner, local) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{program} local: {}", e.message());
                ExitCode::from(2)
            }
        },
        Some(Command::Check(check)) => exit(&format!("{program} check"), run_check(runner, check)),
        None => exit(&program, run(runner, args)),
    }
}

/// A mode's end: success, or its one line after `who` and exit code 2 for a refusal, 1
/// for any other failure.
fn exit(who: &str, result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{who}: {}", e.message());
            match e {
                Failure::Refused(_) => ExitCode::from(2),
                Failure::Failed(_) => ExitCode::FAILURE,
            }
        }
    }
}

/// The name the binary was run by (its file name), for its error lines.
pub fn program_name(default: &str) -> String {
    std::env::args_os()
        .next()
        .and_then(|arg| {
            Path::new(&arg)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| default.to_string())
}

/// `parity-train`: the built-in models; a port's spec is refused (exit code 2), for its
/// own binary.
pub fn builtin() -> Runner {
    Runner {
        program: "parity-train".to_string(),
        models: registry::builtins(),
    }
}
