//! Where a run comes from, as its run file's `meta.provenance` records it: the Burn and
//! rustc versions, the CPU and the kernels it offers, the git state, the SHA-256 of inputs.

use serde::Serialize;

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
/// in the same form as workflow/scripts/machine.py writes them.
pub fn cpu() -> Cpu {
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
    Cpu {
        model: field(&["model name", "Model"]).unwrap_or_else(|| std::env::consts::ARCH.into()),
        simd: SIMD.into_iter().filter(|f| present.contains(f)).collect(),
    }
}

/// The CPU kernels Burn's backends take on this CPU, by the dispatch rules of the crates
/// they call, detected at run time as those crates detect them (so an emulated CPU, e.g.
/// `qemu-x86_64 -cpu Haswell`, reports its own). Burn has no switch to pin them.
/// * `gemm` (Flex's matrix products and convolutions): `fma` where the CPU has FMA, else
///   `scalar`; gemm's AVX-512 kernels need its `x86-v4` feature, which this build leaves off,
///   so every CPU with FMA (AVX2 class and newer) takes the same kernels.
/// * `matrixmultiply` (NdArray's matrix products): `fma+avx2`, `avx` or `sse2` (its
///   `avx512` feature is off).
/// * `macerator` (NdArray's SIMD element-wise, pooling and convolution kernels): `v4`
///   (AVX-512), `v3` (AVX2, FMA), `v2` (SSE4.2) or `scalar`.
pub fn cpu_path() -> Kernels {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let v3 = has!("avx2") && has!("fma") && has!("bmi1") && has!("bmi2") && has!("f16c");
        let v4 = v3
            && has!("avx512f")
            && has!("avx512bw")
            && has!("avx512cd")
            && has!("avx512dq")
            && has!("avx512vl");
        let gemm = if has!("fma") { "fma" } else { "scalar" };
        let matrixmultiply = if has!("fma") && has!("avx2") {
            "fma+avx2"
        } else if has!("avx") {
            "avx"
        } else {
            "sse2"
        };
        let macerator = if v4 {
            "v4"
        } else if v3 {
            "v3"
        } else if has!("sse4.2") && has!("popcnt") {
            "v2"
        } else {
            "scalar"
        };
        Kernels::X86 {
            gemm,
            matrixmultiply,
            macerator,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Kernels::Other {
            arch: std::env::consts::ARCH,
        }
    }
}

/// The project's git commit and whether the work tree has uncommitted changes, as
/// workflow/scripts/machine.py records them (null outside a git checkout).
pub fn git_state() -> Git {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(commit) => Git {
            commit: Some(commit),
            dirty: Some(
                git(&["status", "--porcelain", "--untracked-files=no"])
                    .is_some_and(|s| !s.is_empty()),
            ),
        },
        None => Git {
            commit: None,
            dirty: None,
        },
    }
}

/// The meta fields the binary fills (main.rs): what was run, where, and from what.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    /// `"burn"`.
    pub framework: &'static str,
    /// Burn's version, as Cargo.lock resolves it.
    pub framework_version: String,
    /// Burn only: `"flex"` or `"ndarray"`.
    pub backend: String,
    /// `"f32"` or `"f64"`.
    pub dtype: String,
    /// Burn only: `rustc --version` of the build.
    pub rustc: String,
    pub cpu: Cpu,
    pub cpu_path: CpuPath,
    /// SHA-256 of the resolved spec file, lowercase hex.
    pub config_sha256: String,
    pub git: Git,
}

/// `meta.cpu`: the CPU model and the SIMD flags that decide which f32 kernels run, as
/// workflow/scripts/machine.py writes them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cpu {
    pub model: String,
    /// Those of sse4_2, avx, avx2, fma, avx512f, avx512_bf16, amx_tile, neon, asimd present.
    pub simd: Vec<&'static str>,
}

/// `meta.cpu_path`: the config's setting beside the kernels Burn's backends took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuPath {
    /// The config's `cpu_path` (`native`, `avx2` or `compatible`); Burn cannot pin it.
    pub setting: String,
    pub kernels: Kernels,
}

/// The CPU kernels Burn's backends take on this CPU (`parity_train::cpu_path`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Kernels {
    /// x86-64: each crate's dispatch.
    X86 {
        /// Flex's matrix products and convolutions: `fma` or `scalar`.
        gemm: &'static str,
        /// NdArray's matrix products: `fma+avx2`, `avx` or `sse2`.
        matrixmultiply: &'static str,
        /// NdArray's SIMD kernels: `v4`, `v3`, `v2` or `scalar`.
        macerator: &'static str,
    },
    /// Elsewhere: the architecture only.
    Other { arch: &'static str },
}

/// `meta.git`: the project's commit and whether its work tree had uncommitted changes;
/// both null outside a git checkout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Git {
    pub commit: Option<String>,
    pub dirty: Option<bool>,
}
