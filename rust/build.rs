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
}
