//! The `dc-features` binary end to end on the real DataCrumbs trace.

use std::fs::File;
use std::process::Command;

use features::FeatureMatrix;
use parquet::file::reader::{FileReader, SerializedFileReader};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);

fn dc_features(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dc-features"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs dc-features and asserts that it succeeded, showing its stderr when it did not.
fn dc_features_ok(args: &[&str]) -> std::process::Output {
    let run = dc_features(args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    run
}

#[test]
fn build_writes_a_matrix_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("features.csv");
    let run = dc_features_ok(&[
        "build",
        TRACE,
        "--ops",
        "read,write,openat",
        "--counts",
        "-o",
        out.to_str().unwrap(),
    ]);
    let m = FeatureMatrix::read(&out).unwrap();
    assert_eq!(m.n_rows(), 327);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("216630 events from 1 file(s) -> 327 rows"),
        "{stderr}"
    );
}

#[test]
fn rows_and_run_labels_from_the_command_line() {
    // `grep -c '"name":"read","cat":"POSIX"'` is 1000 and `'"name":"write","cat":"POSIX"'` is 1.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("posix.jsonl");
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/fixtures/dftracer/posix-old.pfw"
    );
    dc_features_ok(&[
        "build",
        trace,
        "--rows",
        "POSIX:read,write",
        "--run",
        "bs=128k",
        "-o",
        out.to_str().unwrap(),
    ]);
    let m = FeatureMatrix::read(&out).unwrap();
    assert_eq!(m.n_rows(), 1001);
    assert!(m.run.iter().all(|r| r.as_deref() == Some("bs=128k")));
    let bad = dc_features(&["build", trace, "--rows", "POSIX:read", "--ops", "write"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("give one"));
    let bad = dc_features(&["build", trace, "--run", &format!("{}=x", TRACE)]);
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .contains("case-read-simple.trace.pfw.gz is not one of the input files")
    );
}

#[test]
fn convert_writes_every_event() {
    // `zcat | grep -c '"ph": "X"'` is 216,506 and `grep -c '"ph": "M"'` is 124.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.parquet");
    dc_features_ok(&["convert", TRACE, "-o", out.to_str().unwrap()]);
    let reader = SerializedFileReader::new(File::open(&out).unwrap()).unwrap();
    assert_eq!(reader.metadata().file_metadata().num_rows(), 216_506 + 124);
}

#[test]
fn help_documents_the_rules() {
    let help = String::from_utf8_lossy(&dc_features(&["build", "--help"]).stdout).into_owned();
    for needle in [
        "__x64_sys_",
        "size_sum",
        "Notebook mode",
        "datacrumbs.features",
        "MiB/s",
        "excl::{layer}",
        "self_ns + the sum of every excl:: column == dur",
        "irq > block|bio > iomap",
        "> (layers not listed, by name) > sched",
        "--rows LAYER[:OPS]",
        "0o40000",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}
