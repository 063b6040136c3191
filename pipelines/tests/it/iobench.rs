//! `dc-pipeline iobench` as the L41 io-benchmark: the lab notebook's own Python reads our `-j`
//! output and gets the bandwidths the benchmark measured; the trace reader takes it too.

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use datasets::read::{ReadOptions, read_all};
use datasets::{ArgValue, Phase};
use pipelines::bench::iobench::BenchReport;

const EXE: &str = env!("CARGO_BIN_EXE_dc-pipeline");

/// The notebook's cell: `output = !io/io-benchmark -b ... -j ...`, then
/// `j = json.loads(' '.join(output))` and `[x["bandwidth"] for x in j["benchmark_samples"]]`.
const NOTEBOOK: &str = r#"
import json, sys
output = sys.stdin.read().splitlines()
j = json.loads(' '.join(output))
samples = list(j["benchmark_samples"])
print(json.dumps([x["bandwidth"] for x in samples]))
"#;

#[test]
fn the_l41_notebook_reads_our_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("iofile");
    let report = dir.path().join("report.json");
    let create = Command::new(EXE)
        .args(["iobench", "-c", "-t", "4MiB"])
        .arg(&file)
        .status()
        .unwrap();
    assert!(create.success());
    assert_eq!(fs::metadata(&file).unwrap().len(), 4 << 20);

    let run = Command::new(EXE)
        .args([
            "iobench", "-b", "262144", "-t", "4MiB", "-g", "-j", "-v", "-n", "3", "-r",
        ])
        .arg(&file)
        .arg("--json")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let mut py = Command::new("python3")
        .args(["-c", NOTEBOOK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    py.stdin.take().unwrap().write_all(&run.stdout).unwrap();
    let py = py.wait_with_output().unwrap();
    assert!(py.status.success());
    let bandwidths: Vec<f64> = serde_json::from_slice(&py.stdout).unwrap();

    let measured: BenchReport =
        serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(measured.samples.len(), 3);
    let kibs: Vec<f64> = measured
        .samples
        .iter()
        .map(|s| s.bytes as f64 / 1024.0 / s.time_s)
        .collect();
    assert_eq!(bandwidths, kibs);
    for s in &measured.samples {
        assert_eq!((s.bytes, s.calls), (4 << 20, 16));
    }

    let l41 = dir.path().join("l41.json");
    fs::write(&l41, &run.stdout).unwrap();
    let t = read_all(&[l41], ReadOptions::default()).unwrap();
    assert_eq!(t.events[0].ph, Phase::Metadata);
    let samples: Vec<f64> = t.events[1..]
        .iter()
        .map(|e| match e.args.get("bandwidth_kibs") {
            Some(ArgValue::Float(v)) => *v,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(samples, kibs);
    assert!(
        t.events[1..]
            .iter()
            .all(|e| e.name == "read" && e.pid == u64::from(measured.pid))
    );
}

#[test]
fn io_benchmark_flags_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("iofile");
    let both = Command::new(EXE)
        .args(["iobench", "-r", "-w"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!both.status.success());
    let unaligned = Command::new(EXE)
        .args(["iobench", "-r", "-d", "-b", "1000"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&unaligned.stderr).trim(),
        "dc-pipeline iobench: direct I/O needs the buffer size to be a multiple of 4KiB, not 1000B"
    );
    assert!(!file.exists());
}

#[test]
fn a_json_path_that_cannot_be_written_fails_before_the_benchmark_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("iofile");
    let report = dir.path().join("nowhere/report.json");
    let out = Command::new(EXE)
        .args(["iobench", "-r", "-t", "1MiB", "--json"])
        .arg(&report)
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "dc-pipeline iobench: {}: cannot be created: the directory {} does not exist\n",
            report.display(),
            dir.path().join("nowhere").display()
        )
    );
    assert!(!file.exists());
}
