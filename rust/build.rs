//! Records the Burn version resolved in Cargo.lock, so run files can name it.

use std::fs;

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock =
        fs::read_to_string("Cargo.lock").expect("Cargo.lock must be committed beside Cargo.toml");
    let version = lock
        .split("[[package]]")
        .find_map(|entry| {
            let mut lines = entry.lines().map(str::trim);
            let name = lines.find(|l| l.starts_with("name = "))?;
            if name != "name = \"burn\"" {
                return None;
            }
            let version = entry
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("version = "))?;
            Some(
                version
                    .trim_start_matches("version = ")
                    .trim_matches('"')
                    .to_string(),
            )
        })
        .expect("Cargo.lock has no burn package");
    println!("cargo:rustc-env=BURN_VERSION={version}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |v| v.trim().to_string());
    println!("cargo:rustc-env=RUSTC_VERSION={rustc_version}");
}
