//! Bad input names the file, the line and the field, and never panics.

use std::path::Path;
use std::process::Command;

use datasets::output::Existing;
use features::{BuildOptions, FeatureMatrix, build};

const BAD_TRACE: &str = "[\n\
{\"pid\": 1, \"tid\": 1, \"name\": \"read\", \"cat\": \"sys\", \"ph\": \"X\", \"ts\": 5, \"dur\": 2, \"args\": {\"size\": 10}}\n\
{\"pid\": 1, \"tid\": 1, \"name\": \"vfs_read\", \"cat\": \"vfs\", \"ph\": \"X\", \"ts\": \"soon\", \"dur\": 1}\n\
{\"pid\": 1, \"tid\": 1, \"name\": \"vfs_read\", \"cat\": \"vfs\", \"ph\": \"X\", \"ts\": 6, \"dur\": 1}\n";

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bad_trace_line_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.pfw", BAD_TRACE);
    let err = build(std::slice::from_ref(&path), &BuildOptions::default()).unwrap_err();
    match &err {
        features::Error::Trace(datasets::Error::Parse(datasets::InputError {
            file,
            line,
            field,
            ..
        })) => {
            assert_eq!(
                (file.as_path(), *line, field.as_deref()),
                (path.as_path(), Some(3), Some("ts"))
            );
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with(&format!("{}:3: field `ts`", path.display())),
        "{err}"
    );
}

#[test]
fn skip_invalid_keeps_the_valid_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.pfw", BAD_TRACE);
    let mut opts = BuildOptions::default();
    opts.read.skip_invalid = true;
    let m = build(&[path], &opts).unwrap();
    assert_eq!(m.n_rows(), 1);
    assert_eq!(m.column("vfs::vfs_read").unwrap().values, [1_000.0]);
    // 10 bytes in 2 us.
    assert_eq!(m.bandwidth_mibs, [Some(10.0 / 1048576.0 / (2_000.0 / 1e9))]);
}

#[test]
fn bad_csv_cell_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = FeatureMatrix {
        op: vec!["read".into(), "write".into()],
        pid: vec![1, 2],
        tid: vec![1, 2],
        ts_ns: vec![10, 20],
        dur_ns: vec![5, 0],
        file: vec![Some("/a, \"b\"".into()), None],
        size: vec![Some(4096), None],
        bandwidth_mibs: vec![Some(0.1), None],
        direct: vec![Some(true), None],
        sequential: vec![None, Some(false)],
        run: vec![Some("bs=4k, \"direct\"".into()), None],
        thread: vec![Some("postgres: walwriter".into()), None],
        process: vec![None, Some("db_bench".into())],
        self_ns: vec![2, 0],
        features: vec![features::FeatureColumn::new(
            "vfs",
            "vfs_read",
            features::FeatureKind::TimeNs,
            vec![3.0, 0.5],
        )],
    };
    let path = dir.path().join("m.csv");
    m.write(&path, Existing::Refuse).unwrap();
    assert_eq!(FeatureMatrix::read(&path).unwrap(), m);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\nwrite,2,", "\nwrite,two,");
    std::fs::write(&path, text).unwrap();
    let err = FeatureMatrix::read(&path).unwrap_err();
    let features::Error::Input(err) = err else {
        panic!("expected an input error, got {err:?}");
    };
    assert_eq!(
        (err.file.as_path(), err.line, err.field.as_deref()),
        (path.as_path(), Some(3), Some("pid"))
    );
}

#[test]
fn bad_jsonl_value_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = FeatureMatrix {
        op: vec!["read".into()],
        pid: vec![1],
        tid: vec![1],
        ts_ns: vec![10],
        dur_ns: vec![5],
        file: vec![None],
        size: vec![None],
        bandwidth_mibs: vec![None],
        direct: vec![Some(false)],
        sequential: vec![Some(true)],
        run: vec![Some("a".into())],
        thread: vec![None],
        process: vec![None],
        self_ns: vec![5],
        features: vec![features::FeatureColumn::new(
            "ext4",
            "x",
            features::FeatureKind::Count,
            vec![2.0],
        )],
    };
    let path = dir.path().join("m.jsonl");
    m.write(&path, Existing::Refuse).unwrap();
    assert_eq!(FeatureMatrix::read(&path).unwrap(), m);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!(
            "{text}{}",
            text.replace("\"count::ext4::x\":2.0", "\"count::ext4::x\":\"2\"")
        ),
    )
    .unwrap();
    let err = FeatureMatrix::read(&path).unwrap_err();
    let features::Error::Input(err) = err else {
        panic!("expected an input error, got {err:?}");
    };
    assert_eq!(
        (err.line, err.field.as_deref()),
        (Some(2), Some("count::ext4::x"))
    );
}

#[test]
fn matrix_without_layer_metadata_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "m.csv", "op,pid\nread,1\n");
    let err = FeatureMatrix::read(&csv).unwrap_err();
    assert!(err.to_string().contains("m.csv.meta.json"), "{err}");
    let parquet = write(dir.path(), "m.parquet", "not parquet");
    let err = FeatureMatrix::read(&parquet).unwrap_err();
    assert!(
        err.to_string().starts_with(&parquet.display().to_string()),
        "{err}"
    );
    let err = FeatureMatrix::default()
        .write(&dir.path().join("m.xlsx"), Existing::Refuse)
        .unwrap_err();
    assert!(err.to_string().contains("unknown matrix format"), "{err}");
}

#[test]
fn cli_reports_errors_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.pfw", BAD_TRACE);
    let out = Command::new(env!("CARGO_BIN_EXE_dc-features"))
        .args(["build", path.to_str().unwrap(), "-o"])
        .arg(dir.path().join("out.parquet"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3: field `ts`", path.display())),
        "{stderr}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_dc-features"))
        .args(["build", path.to_str().unwrap(), "--file", "("])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--file <REGEX>"));
}
