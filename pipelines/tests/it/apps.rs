//! Real applications end to end, as root, through the shipped example pipelines scaled down: fio's own counts
//! against the trace's, PostgreSQL's commits waiting on the WAL's fsync, RocksDB's background threads doing the
//! compaction I/O, and a missing or failing application that leaves nothing running.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use features::{FeatureKind, FeatureMatrix};
use pipelines::apps::RoleRule;
use pipelines::apps::error::Error as AppError;
use pipelines::apps::roles::{ProcessInfo, roles};
use pipelines::pipeline::config::Pipeline;
use pipelines::pipeline::error::Error;
use pipelines::pipeline::records::RunRecord;
use pipelines::pipeline::run::{RunOptions, StepError, run};
use serde_json::Value;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// Runs an example pipeline with `edits` (text replacements, each of which must apply) into a new report
/// directory; returns it and the result.
fn run_example(
    name: &str,
    edits: &[(&str, &str)],
) -> (tempfile::TempDir, Result<PathBuf, StepError>) {
    let mut text = fs::read_to_string(format!("{EXAMPLES}/{name}.toml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{name}.toml has no `{from}`");
        text = text.replace(from, to);
    }
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join(format!("{name}.toml"));
    fs::write(&pipeline, text).unwrap();
    let opts = RunOptions {
        pipeline,
        out: dir.path().join("out"),
        resume: false,
        exe: PathBuf::from(env!("CARGO_BIN_EXE_dc-pipeline")),
        progress: false,
    };
    let result = run(&opts);
    (dir, result)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// The report's runs, its matrix, and each row's role.
fn rows_by_role(out: &Path) -> (Vec<RunRecord>, FeatureMatrix, Vec<String>) {
    let runs: Vec<RunRecord> = read_json(&out.join("data/runs.json"));
    let matrix = FeatureMatrix::read(&out.join("data/features.parquet")).unwrap();
    let p = Pipeline::load_saved(&out.join("pipeline.toml")).unwrap();
    let rules: BTreeMap<&str, &[RoleRule]> = p
        .workloads
        .iter()
        .map(|w| (w.name.as_str(), w.app.roles.as_slice()))
        .collect();
    let app_runs: Vec<(&str, &[RoleRule])> = runs
        .iter()
        .map(|r| {
            (
                r.spec.id.as_str(),
                rules
                    .get(r.spec.workload.as_str())
                    .copied()
                    .unwrap_or_default(),
            )
        })
        .collect();
    let role = roles(out, &app_runs, &matrix)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    (runs, matrix, role)
}

/// The processes still running whose command line names one of the pipelines' private directories.
fn leftovers() -> Vec<String> {
    let mut left = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(cmd) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("/dc-app-") {
            left.push(cmd);
        }
    }
    left
}

/// The cgroups and private directories a dc-pipeline process left.
fn left_dirs() -> Vec<PathBuf> {
    let mut left = Vec::new();
    for (dir, prefix) in [
        ("/sys/fs/cgroup/unified", "dc-pipeline-"),
        (std::env::temp_dir().to_str().unwrap(), "dc-app-"),
    ] {
        for e in fs::read_dir(dir).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix) {
                left.push(e.path());
            }
        }
    }
    left
}

fn excl(matrix: &FeatureMatrix, layer: &str) -> Vec<f64> {
    matrix
        .features
        .iter()
        .find(|c| c.kind == FeatureKind::ExclusiveNs && c.layer == layer)
        .map(|c| c.values.clone())
        .unwrap_or_else(|| vec![0.0; matrix.n_rows()])
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fio_reports_the_same_io_count_and_bytes_as_the_trace() {
    let _machine = test_support::machine();
    let (_dir, result) = run_example(
        "fio-examples",
        &[("runtime=3", "runtime=1"), ("size=64m", "size=16m")],
    );
    let out = result.unwrap();
    let out = out.parent().unwrap();
    let (runs, matrix, role) = rows_by_role(out);
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let fio: Value = read_json(&out.join("runs").join(&r.spec.id).join("app.out"));
        for (dir, op) in [("read", "pread64"), ("write", "pwrite64")] {
            let (mut ios, mut bytes) = (0, 0);
            for job in fio["jobs"].as_array().unwrap() {
                ios += job[dir]["total_ios"].as_u64().unwrap();
                bytes += job[dir]["io_bytes"].as_u64().unwrap();
            }
            let rows: Vec<usize> = (0..matrix.n_rows())
                .filter(|&i| matrix.run[i].as_deref() == Some(r.spec.id.as_str()))
                .filter(|&i| matrix.op[i] == op)
                .collect();
            let traced: i64 = rows.iter().map(|&i| matrix.size[i].unwrap()).sum();
            assert_eq!(rows.len() as u64, ios, "{} {dir}", r.spec.id);
            assert_eq!(traced as u64, bytes, "{} {dir}", r.spec.id);
            assert!(rows.iter().all(|&i| role[i] == "fio"));
        }
        // The random mix reads and writes; the sequential job only writes.
        let has_reads = fio["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0;
        assert_eq!(has_reads, r.spec.id.contains("rand-RW"), "{}", r.spec.id);
    }
    assert!(leftovers().is_empty());
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pgbench_commits_wait_on_the_wal_fsync_in_the_block_layer() {
    let _machine = test_support::machine();
    let (_dir, result) = run_example(
        "pgbench",
        &[
            ("scale = [5]", "scale = [1]"),
            ("seconds = [8]", "seconds = [3]"),
        ],
    );
    let out = result.unwrap();
    let out = out.parent().unwrap();
    let (runs, matrix, role) = rows_by_role(out);
    let processes: Vec<ProcessInfo> = read_json(
        &out.join("runs")
            .join(&runs[0].spec.id)
            .join("processes.json"),
    );
    for title in ["postgres: walwriter", "postgres: checkpointer"] {
        assert!(
            processes.iter().any(|p| p.cmdline.starts_with(title)),
            "no `{title}` among {processes:?}"
        );
    }
    let block = excl(&matrix, "block");
    let jbd2 = excl(&matrix, "jbd2");
    let fsyncs: Vec<usize> = (0..matrix.n_rows())
        .filter(|&i| role[i] == "backend" && matrix.op[i] == "fdatasync")
        .filter(|&i| {
            matrix.file[i]
                .as_deref()
                .is_some_and(|f| f.contains("/pg_wal/"))
        })
        .collect();
    // pgbench's report says how many transactions committed; each waits for its WAL record on the disk, by
    // its own fdatasync or by another backend's that covered it (group commit). Before them, pgbench's own
    // preparation commits three statements (two vacuums and a truncate).
    let app = fs::read_to_string(out.join("runs").join(&runs[0].spec.id).join("app.out")).unwrap();
    let committed: usize = app
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split('/').next()?.trim().parse().ok())
        .unwrap();
    assert!(
        !fsyncs.is_empty() && fsyncs.len() <= committed + 3,
        "{} WAL fdatasyncs by backends for {committed} transactions",
        fsyncs.len()
    );
    let dur: f64 = fsyncs.iter().map(|&i| matrix.dur_ns[i] as f64).sum();
    let waited: f64 = fsyncs.iter().map(|&i| block[i] + jbd2[i]).sum();
    assert!(
        waited >= 0.5 * dur,
        "the backends' WAL fdatasyncs spent {waited} of {dur} ns in block and jbd2"
    );
    let metrics: Value = read_json(&out.join("runs").join(&runs[0].spec.id).join("metrics.json"));
    assert_eq!(metrics[0]["name"], "tps");
    assert!(leftovers().is_empty());
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn rocksdb_compaction_and_flush_writes_are_the_background_threads() {
    let _machine = test_support::machine();
    let (_dir, result) = run_example("rocksdb", &[("keys = [200000]", "keys = [50000]")]);
    let out = result.unwrap();
    let out = out.parent().unwrap();
    let (_, matrix, role) = rows_by_role(out);
    let mut sst_writes: HashMap<&str, i64> = HashMap::new();
    for (i, role) in role.iter().enumerate() {
        let is_write = matches!(matrix.op[i].as_str(), "write" | "pwrite64");
        if is_write
            && matrix.file[i]
                .as_deref()
                .is_some_and(|f| f.ends_with(".sst"))
        {
            *sst_writes.entry(role.as_str()).or_default() += matrix.size[i].unwrap_or(0);
        }
    }
    let compaction = sst_writes
        .get("compaction (rocksdb:low)")
        .copied()
        .unwrap_or(0);
    let flush = sst_writes.get("flush (rocksdb:high)").copied().unwrap_or(0);
    let all: i64 = sst_writes.values().sum();
    assert!(compaction > 0 && flush > 0, "{sst_writes:?}");
    // Table files are written only by flushes and compactions, in the background.
    assert_eq!(compaction + flush, all, "{sst_writes:?}");
    // The report shows them by role, in Markdown and on the page.
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    for role in ["compaction (rocksdb:low)", "flush (rocksdb:high)"] {
        assert!(md.contains(&format!("| {role} | file |")), "{md}");
        assert!(
            html.contains(&format!("<td>{role}</td>")),
            "no {role} on the page"
        );
    }
    assert!(leftovers().is_empty());
}

#[test]
fn a_missing_application_is_named_with_its_package_and_nothing_starts() {
    let _machine = test_support::machine();
    let (_dir, result) = run_example(
        "rocksdb",
        &[
            (
                "packages = { db_bench = \"rocksdb-tools\" }",
                "packages = { no-such-db_bench = \"rocksdb-tools\" }",
            ),
            (
                "\"db_bench\", \"--benchmarks",
                "\"no-such-db_bench\", \"--benchmarks",
            ),
        ],
    );
    let err = result.unwrap_err();
    let Error::Run { id, source } = &*err.cause else {
        panic!("not a run's error: {err:?}")
    };
    assert!(id.starts_with("db_bench"), "{id}");
    assert!(
        matches!(&**source, Error::App(AppError::NotInstalled { program, package: Some(p), .. })
            if program == "no-such-db_bench" && p == "rocksdb-tools"),
        "{source:?}"
    );
    let e = datasets::error::chain(&err);
    assert!(
        e.contains("workload `db_bench` needs `no-such-db_bench`, which is not installed; it comes with the Debian package `rocksdb-tools`, which `scripts/setup.sh --test` installs"),
        "{e}"
    );
    assert!(left_dirs().is_empty(), "{:?}", left_dirs());
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_server_that_fails_to_start_or_a_failing_client_leaves_nothing_running() {
    let _machine = test_support::machine();
    let small = [
        ("scale = [5]", "scale = [1]"),
        ("seconds = [8]", "seconds = [3]"),
    ];
    // The server refuses a setting only in the traced start; setup's own start and stop went through.
    let (dir, result) = run_example(
        "pgbench",
        &[
            small[0],
            small[1],
            (
                "\"-l\", \"{app_dir}/server.log\",\n         \"-o\", \"-k {app_dir}",
                "\"-l\", \"{app_dir}/server.log\",\n         \"-o\", \"-c shared_buffers=nonsense -k {app_dir}",
            ),
        ],
    );
    let e = datasets::error::chain(&result.unwrap_err());
    assert!(e.contains("exited with status 1"), "{e}");
    let run = dir.path().join("out/runs/pgbench-scale1-seconds3");
    let log = fs::read_to_string(run.join("start.log")).unwrap();
    assert!(log.contains("stopped waiting"), "{log}");
    assert!(leftovers().is_empty(), "{:?}", leftovers());
    assert!(left_dirs().is_empty(), "{:?}", left_dirs());
    // The server starts, the client fails (no such database): the server is stopped all the same.
    let (dir, result) = run_example(
        "pgbench",
        &[
            small[0],
            small[1],
            (
                "\"{seconds}\", \"-h\", \"{app_dir}\", \"postgres\"]",
                "\"{seconds}\", \"-h\", \"{app_dir}\", \"nosuchdb\"]",
            ),
        ],
    );
    let e = datasets::error::chain(&result.unwrap_err());
    assert!(e.contains("exited with status 1"), "{e}");
    let err =
        fs::read_to_string(dir.path().join("out/runs/pgbench-scale1-seconds3/app.err")).unwrap();
    assert!(
        err.contains("database \"nosuchdb\" does not exist"),
        "{err}"
    );
    assert!(leftovers().is_empty(), "{:?}", leftovers());
    assert!(left_dirs().is_empty(), "{:?}", left_dirs());
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn ctrl_c_while_the_client_runs_stops_the_server_and_leaves_nothing_running() {
    let _machine = test_support::machine();
    let text = fs::read_to_string(format!("{EXAMPLES}/pgbench.toml"))
        .unwrap()
        .replace("scale = [5]", "scale = [1]")
        .replace("seconds = [8]", "seconds = [600]");
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("pgbench.toml");
    fs::write(&pipeline, text).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dc-pipeline"))
        .arg("run")
        .arg(&pipeline)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("-q")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The client runs only once the tracer has released it.
    while !leftovers().iter().any(|c| c.contains("pgbench -c 4")) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "dc-pipeline ended first"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill takes plain integers; the pid is our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("step `trace` failed"), "{stderr}");
    assert!(leftovers().is_empty(), "{:?}", leftovers());
    assert!(left_dirs().is_empty(), "{:?}", left_dirs());
}
