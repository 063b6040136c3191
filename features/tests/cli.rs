//! The `dc-features` binary end to end on the real DataCrumbs trace.

use std::fs::File;
use std::process::Command;

use features::FeatureMatrix;
use parquet::file::reader::{FileReader, SerializedFileReader};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/traces/datacrumbs/case-read-simple.trace.pfw.gz"
);

fn dc_features(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dc-features"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn build_writes_a_matrix_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("features.csv");
    let run = dc_features(&[
        "build",
        TRACE,
        "--ops",
        "read,write,openat",
        "--counts",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let m = FeatureMatrix::read(&out).unwrap();
    assert_eq!(m.n_rows(), 327);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("216630 events from 1 file(s) -> 327 rows"),
        "{stderr}"
    );
}

#[test]
fn convert_writes_every_event() {
    // `zcat | grep -c '"ph": "X"'` is 216,506 and `grep -c '"ph": "M"'` is 124.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.parquet");
    let run = dc_features(&["convert", TRACE, "-o", out.to_str().unwrap()]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
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
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}
