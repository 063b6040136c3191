//! Issue 19's ranking, inside the 6.12 test VM (kprobes allowed, CONFIG_FPROBE): `dc-pipeline run`
//! of a small sweep of the built-in I/O benchmark, each point traced through the tracer's shipped
//! default probe set (over a thousand kernel functions, by kprobe_multi), its features built and
//! its vfs layer ranked there, by the same binary. The report directory comes back on the VM's
//! output disk, and the test reads the ranking JSON (`dc-model rank --layer vfs --json`'s report).
//! The VM is the tracer's test VM (`test_support::vm`); it fails, never skips, when it cannot boot.

use std::path::Path;
use std::time::Duration;

use pipelines::pipeline::records::RunRecord;
use serde_json::Value;
use test_support::vm::{SERIES_6_12, Vm, work};

const PIPELINE: &str = env!("CARGO_BIN_EXE_dc-pipeline");
const DEFAULT_SET: &str = include_str!("../../../tracer/src/layers/probesets/default.toml");
const TIMEOUT: Duration = Duration::from_secs(900);
/// The test crate's `target/tmp`: the VM's initramfs cache and run are under it.
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Every system call of the benchmark is a row (`ops = []`), and the target its duration: the
/// reads and writes alone take few paths through the VFS (13 vfs functions in the tracer's VM
/// workload), the opens, fsyncs, fadvises and closes around them many more.
const SWEEP: &str = r#"name = "vm"

[tracer]
layers = ["sys", "kernel"]
kernel_probes = "kprobe-multi"
probes = "default.toml"

[features]
ops = []

[model]
layers = ["vfs"]
target = "duration"
seed = 1

[[workload]]
name = "bench"
[workload.iobench]
op = ["read", "write"]
direct = [false, true]
buffer_size = ["4KiB", "64KiB"]
total_size = "1MiB"
iterations = 3
drop_caches = true
"#;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_benchmark_sweep_through_the_default_probe_set_ranks_its_vfs_functions_inside_the_6_12_vm() {
    let _machine = test_support::machine();
    let scenario = format!(
        "cat > /data/default.toml <<'EOF'\n{DEFAULT_SET}EOF\n\
         cat > /data/vm.toml <<'EOF'\n{SWEEP}EOF\n\
         step pipeline dc-pipeline run /data/vm.toml --out /data/report --quiet\n\
         cp -r /data/report /out/report\n"
    );
    let vm = Vm::new(SERIES_6_12, &scenario, TIMEOUT)
        .map(|vm| vm.binary(Path::new(PIPELINE), "dc-pipeline"))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = (vm.run(
        &work(TMP, "initramfs-pipeline"),
        &work(TMP, "pipeline-6.12"),
    ))
    .unwrap_or_else(|e| panic!("kernel test VM failed:\n{e}"));
    let place = format!("VM {}", run.kernel.release);
    let step = run.step("pipeline").unwrap();
    assert_eq!(step.rc, 0, "{place}: dc-pipeline run:\n{}", step.stderr);
    let report = run.out.join("report");

    let runs: Vec<RunRecord> =
        serde_json::from_value(read_json(&report.join("data/runs.json"))).unwrap();
    assert_eq!(runs.len(), 8, "{place}: {runs:?}");
    for r in &runs {
        let summary = read_json(&report.join(&r.summary));
        let kernel = (summary["layers"].as_array().unwrap().iter())
            .find(|l| l["layer"] == "kernel")
            .unwrap_or_else(|| panic!("{place}: no kernel layer in {}", r.summary.display()));
        let t = &kernel["timing"];
        let n = kernel["attached"].as_array().unwrap().len();
        // dc-pipeline traces every run in one tracer session, which detaches when the last run ends: no run's
        // summary has the detach's time.
        assert!(t["detach_us"].is_null(), "{place}: {summary}");
        eprintln!(
            "{place}: {}: kernel functions attached: {n} in {:.1} ms ({}), once for the session",
            r.spec.id,
            t["attach_us"].as_f64().unwrap() / 1e3,
            kernel["mechanism"].as_str().unwrap(),
        );
        assert_eq!(kernel["mechanism"], "kprobe_multi", "{place}: {summary}");
        assert!(n >= 1000, "{place}: {n} functions attached");
        assert_eq!(r.drops, 0, "{place}: {}", r.spec.id);
    }

    // `dc-pipeline report` redraws it here, from the copy of the pipeline file it keeps, without
    // the probe set that stayed in the VM.
    let redrawn = pipelines::pipeline::report::redraw(&report)
        .unwrap_or_else(|e| panic!("{}", datasets::error::chain(&e)));
    assert_eq!(redrawn, report.join("report.md"));

    let rank = read_json(&report.join("data/rank.json"));
    let vfs = &rank["layers"][0];
    assert_eq!(vfs["layer"], "vfs", "{place}: {rank}");
    let functions: Vec<&str> = (vfs["correlation"]["names"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .filter(|f| f.starts_with("vfs::"))
        .collect();
    let ranking = vfs["ranking"].as_array().unwrap();
    let cut: Vec<f64> = (ranking.iter())
        .map(|r| r["cumulative_share"].as_f64().unwrap())
        .collect();
    eprintln!(
        "{place}: {} rows; vfs model: {} functions, {} ranked to 95%, held-out R² {:.3}",
        vfs["rows"],
        functions.len(),
        ranking.len(),
        vfs["gbm"]["quality"]["test_r2"]
            .as_f64()
            .unwrap_or(f64::NAN),
    );
    assert!(functions.len() >= 30, "{place}: {functions:?}");
    assert!(cut.last().is_some_and(|&c| c >= 0.95 - 1e-12), "{cut:?}");
    assert!(cut.iter().rev().skip(1).all(|&c| c < 0.95), "{cut:?}");
}
