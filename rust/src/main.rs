//! `parity-train`: trains the experiment's `model` (cnn1d, the default, or cnn_bn) with Burn
//! for one experiment and dtype, on the experiment's `burn_backend` (Flex, the default, or
//! NdArray), and writes a run file.
//!
//! ```text
//! parity-train --experiment adam --dtype f64 --config config.yaml \
//!     --data results/data/cnn1d.bin --out results/runs/adam/burn-f64.json
//! ```

use burn::tensor::{Device, FloatDType};
use parity_train::config::Backend;
use parity_train::{
    BURN_VERSION, RUSTC_VERSION, config, cpu, cpu_path, dataset, fault, git_state, hex_sha256,
    runfile, train,
};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Args {
    experiment: String,
    dtype: String,
    config: PathBuf,
    data: PathBuf,
    out: PathBuf,
}

const USAGE: &str =
    "usage: parity-train --experiment NAME --dtype f32|f64 --config FILE --data FILE --out FILE";

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut experiment, mut dtype, mut config, mut data, mut out) = (None, None, None, None, None);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--experiment" => experiment = Some(value),
            "--dtype" => dtype = Some(value),
            "--config" => config = Some(PathBuf::from(value)),
            "--data" => data = Some(PathBuf::from(value)),
            "--out" => out = Some(PathBuf::from(value)),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let missing = |name: &str| format!("missing --{name}\n{USAGE}");
    let dtype = dtype.ok_or_else(|| missing("dtype"))?;
    if dtype != "f32" && dtype != "f64" {
        return Err(format!("--dtype must be f32 or f64, got '{dtype}'"));
    }
    Ok(Args {
        experiment: experiment.ok_or_else(|| missing("experiment"))?,
        dtype,
        config: config.ok_or_else(|| missing("config"))?,
        data: data.ok_or_else(|| missing("data"))?,
        out: out.ok_or_else(|| missing("out"))?,
    })
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let fault = fault::Fault::from_env()?;
    let spec = config::load(&args.config, &args.experiment)?;
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
    let mut block = train::train(&spec, &data, &device, fault.as_ref())?;
    block["meta"]["framework"] = json!("burn");
    block["meta"]["framework_version"] = json!(BURN_VERSION);
    block["meta"]["backend"] = json!(spec.backend.name());
    block["meta"]["dtype"] = json!(args.dtype);
    block["meta"]["rustc"] = json!(RUSTC_VERSION);
    block["meta"]["cpu"] = cpu();
    block["meta"]["cpu_path"] = json!({"setting": spec.cpu_path, "kernels": cpu_path()});
    block["meta"]["git"] = git_state();
    let config_bytes =
        std::fs::read(&args.config).map_err(|e| format!("{}: {e}", args.config.display()))?;
    block["meta"]["config_sha256"] = json!(hex_sha256(&config_bytes));
    let text = serde_json::to_string(&json!({ &args.experiment: &block })).expect("JSON") + "\n";
    runfile::write_atomic(&args.out, text.as_bytes())
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "burn {} {}: {} steps in {:.2}s, final loss {:.8}, correct {}/{} -> {}",
        args.experiment,
        args.dtype,
        spec.steps,
        started.elapsed().as_secs_f64(),
        runfile::read_float(&block["final"]["loss"]).unwrap_or(f64::NAN),
        block["final"]["correct"],
        data.arrays["y"].shape[0],
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
