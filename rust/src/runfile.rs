//! JSON helpers for run files. JSON has no NaN or infinity, so non-finite floats are
//! written as the strings "NaN", "Infinity" and "-Infinity" (read back by parity_io.py).

use serde_json::{Number, Value};
use std::io::Write;
use std::path::Path;

pub fn float(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("NaN".into()),
        None if x > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

pub fn floats(xs: &[f64]) -> Value {
    Value::Array(xs.iter().copied().map(float).collect())
}

/// Reads a float written by [`float`].
pub fn read_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Writes through a temporary file in the same folder and renames it into place, so a
/// killed process never leaves a truncated run file behind.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("run");
    // Temporary files left by a writer that was killed: never trusted, never kept.
    let stale_prefix = format!(".{name}.");
    for entry in std::fs::read_dir(dir)?.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if file.starts_with(&stale_prefix) && file.ends_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_floats_survive_the_trip() {
        for x in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.1,
            -0.0,
            1e-310,
        ] {
            let text = serde_json::to_string(&float(x)).unwrap();
            let back = read_float(&serde_json::from_str(&text).unwrap()).unwrap();
            assert!(
                back.to_bits() == x.to_bits() || (x.is_nan() && back.is_nan()),
                "{x} -> {text}"
            );
        }
    }
}
