use super::*;

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parity-tensors-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read(path: &Path) -> (serde_json::Value, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    (
        serde_json::from_str(header).unwrap(),
        bytes[8 + n..].to_vec(),
    )
}

#[test]
fn rows_in_place_late_tensors_after_and_a_padded_header() {
    let dir = scratch("rows");
    let path = dir.join("run.safetensors");
    let declared = [
        ("params/w".to_string(), vec![2, 1]),
        ("trajectory/params/w".to_string(), vec![3, 2, 1]),
    ];
    let late = ["layers/1/outputs/0".to_string()];
    let mut w = TensorWriter::create(&path, &declared, Dtype::F64, &late).unwrap();
    assert!(dir.join(".run.safetensors.tmp").is_file() && !path.exists());
    w.write_row("trajectory/params/w", 2, &[5.0, 6.0]).unwrap();
    w.add("layers/1/outputs/0", &[7.0, 8.0, 9.0]).unwrap();
    w.write_row("trajectory/params/w", 0, &[1.0, 2.0]).unwrap();
    w.write_row("trajectory/params/w", 1, &[3.0, 4.0]).unwrap();
    w.write("params/w", &[5.0, 6.0]).unwrap();
    assert!(w.write_row("trajectory/params/w", 3, &[0.0, 0.0]).is_err());
    assert!(w.write("params/w", &[1.0]).is_err());
    assert!(w.add("layers/1/outputs/0", &[1.0]).is_err());
    let size = w.close().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    assert!(!dir.join(".run.safetensors.tmp").exists());
    let (header, data) = read(&path);
    assert_eq!(header["__metadata__"]["format"], FORMAT);
    assert_eq!(
        header["trajectory/params/w"]["shape"],
        serde_json::json!([3, 2, 1])
    );
    assert_eq!(
        header["layers/1/outputs/0"]["data_offsets"],
        serde_json::json!([64, 88])
    );
    let values: Vec<f64> = data
        .chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, [5., 6., 1., 2., 3., 4., 5., 6., 7., 8., 9.]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn f32_values_are_four_bytes_each() {
    let dir = scratch("f32");
    let path = dir.join("run.safetensors");
    let mut w = TensorWriter::create(&path, &[("a".into(), vec![2])], Dtype::F32, &[]).unwrap();
    w.write("a", &[0.1f32 as f64, -2.5]).unwrap();
    let size = w.close().unwrap();
    let (header, data) = read(&path);
    assert_eq!(header["a"]["dtype"], "F32");
    assert_eq!(data.len() as u64, 8);
    assert_eq!(size as usize % 8, 0);
    assert_eq!(f32::from_le_bytes(data[..4].try_into().unwrap()), 0.1f32);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unfinished_file_leaves_nothing() {
    let dir = scratch("unfinished");
    let path = dir.join("run.safetensors");
    let late = ["x".to_string()];
    // Dropped on the way (an error in the run): the temporary file goes.
    let w = TensorWriter::create(&path, &[("a".into(), vec![1])], Dtype::F64, &late).unwrap();
    drop(w);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // Closed with a late tensor missing: refused, and nothing left.
    let w = TensorWriter::create(&path, &[("a".into(), vec![1])], Dtype::F64, &late).unwrap();
    assert!(w.close().unwrap_err().contains("never added"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
