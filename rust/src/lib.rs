//! Burn side of the PyTorch ↔ Burn training-parity pipeline.

pub mod adam_factors;
pub mod config;
pub mod dataset;
pub mod runfile;
pub mod train;

pub const BURN_VERSION: &str = env!("BURN_VERSION");
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
