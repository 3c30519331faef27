//! Burn side of the PyTorch ↔ Burn training-parity pipeline.

pub mod adam_factors;
pub mod config;
pub mod dataset;
pub mod fault;
pub mod models;
pub mod runfile;
pub mod schedule;
pub mod train;

pub const BURN_VERSION: &str = env!("BURN_VERSION");
/// SHA-256 of some bytes, as lowercase hex.
pub fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub const RUSTC_VERSION: &str = env!("RUSTC_VERSION");

/// CPU model and the SIMD flags that decide which f32 kernels run (Linux /proc/cpuinfo),
/// in the same form as workflow/scripts/provenance.py writes them.
pub fn cpu() -> serde_json::Value {
    const SIMD: [&str; 9] = [
        "sse4_2",
        "avx",
        "avx2",
        "fma",
        "avx512f",
        "avx512_bf16",
        "amx_tile",
        "neon",
        "asimd",
    ];
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |names: &[&str]| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            names
                .contains(&key.trim())
                .then(|| value.trim().to_string())
        })
    };
    let flags = field(&["flags", "Features"]).unwrap_or_default();
    let present: Vec<&str> = flags.split_whitespace().collect();
    serde_json::json!({
        "model": field(&["model name", "Model"]).unwrap_or_else(|| std::env::consts::ARCH.into()),
        "simd": SIMD.iter().filter(|f| present.contains(f)).collect::<Vec<_>>(),
    })
}

/// The project's git commit and whether the work tree has uncommitted changes, as
/// workflow/scripts/provenance.py records them (null outside a git checkout).
pub fn git_state() -> serde_json::Value {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(commit) => serde_json::json!({
            "commit": commit,
            "dirty": git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty()),
        }),
        None => serde_json::json!({"commit": null, "dirty": null}),
    }
}
