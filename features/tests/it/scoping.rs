//! Several input files are built as one dataset, but a name belongs to the file, and the process, that interned
//! it: building files together gives the rows and values of building each alone.

use std::collections::BTreeMap;
use std::path::PathBuf;

use datasets::read::expand_globs;
use datasets::synth::{CM1_CALLS, cm1_like, cm1_name, cm1_pid};
use features::{BuildOptions, FeatureMatrix, build};

/// One row: (ts, pid, tid, op, dur) → (file, size, direct, sequential, self_ns, nonzero features).
type Rows = BTreeMap<(u64, u64, u64, String, u64), String>;

fn rows(m: &FeatureMatrix) -> Rows {
    (0..m.n_rows())
        .map(|i| {
            let features: Vec<(String, f64)> = m
                .features
                .iter()
                .filter(|f| f.values[i] != 0.0)
                .map(|f| (f.column.clone(), f.values[i]))
                .collect();
            let key = (m.ts_ns[i], m.pid[i], m.tid[i], m.op[i].clone(), m.dur_ns[i]);
            let value = format!(
                "{:?} {:?} {:?} {:?} {} {features:?}",
                m.file[i], m.size[i], m.direct[i], m.sequential[i], m.self_ns[i]
            );
            (key, value)
        })
        .collect()
}

fn options() -> BuildOptions {
    BuildOptions {
        counts: true,
        ..BuildOptions::default()
    }
}

/// The rows of `paths` built together (exact mode: notebook mode's rule takes events of every thread) are those of
/// each built alone, and there are some.
fn assert_build_is_per_file(paths: &[PathBuf]) {
    assert!(paths.len() > 1, "{paths:?}");
    let opts = options();
    let together = build(paths, &opts).unwrap();
    let mut alone = Rows::new();
    for p in paths {
        let m = build(std::slice::from_ref(p), &opts).unwrap();
        alone.extend(rows(&m));
    }
    assert!(together.n_rows() > 0, "{paths:?}");
    assert_eq!(together.n_rows(), alone.len(), "{paths:?}");
    assert_eq!(rows(&together), alone, "{paths:?}");
}

fn glob(pattern: String) -> Vec<PathBuf> {
    expand_globs(&[pattern]).unwrap()
}

fn shared(set: &str) -> String {
    format!("{}/../datasets/fixtures/{set}", env!("CARGO_MANIFEST_DIR"))
}

fn data(rel: &str) -> String {
    format!(
        "{}/../datasets/tests/data/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn building_every_shared_trace_set_together_is_building_each_file_alone() {
    for set in ["datacrumbs/*", "dftracer/*"] {
        assert_build_is_per_file(&glob(shared(set)));
    }
}

/// Darshan logs number processes by MPI rank and time them from their own job's start, so rank 1 of one log and rank
/// 1 of another are one (pid, tid) at overlapping times; they are still two processes. Streamed, then through the
/// collector (the overlapping file makes the build keep every event), whose pid 9 is not the logs' rank 9 either.
#[test]
fn darshan_logs_built_together_are_each_log_built_alone() {
    let logs = glob(shared("darshan/*.darshan"));
    let dir = tempfile::tempdir().unwrap();
    let overlap = dir.path().join("overlap.pfw");
    std::fs::write(&overlap, OVERLAPPING_CALLS).unwrap();
    let ranks = build(&logs, &options()).unwrap();
    assert!(ranks.pid.contains(&9), "a log has a rank 9");
    for paths in [logs.clone(), [logs, vec![overlap]].concat()] {
        assert_build_is_per_file(&paths);
    }
}

#[test]
fn building_every_foreign_format_together_is_building_each_file_alone() {
    let mut paths = glob(data("bpftrace/*.out"));
    paths.extend(glob(data("kernmlops/*.parquet")));
    paths.push(data("darshan/bzip2.darshan").into());
    assert_build_is_per_file(&paths);
}

/// Calls that overlap on one thread (the second starts before an event the stream let go of): the stream cannot
/// attribute this file, so a build with it reads every input again, in one collector.
const OVERLAPPING_CALLS: &str = r#"{"id":0,"name":"read","cat":"POSIX","pid":9,"tid":9,"ts":0,"dur":10,"ph":"X","args":{"fhash":19179}}
{"id":1,"name":"lseek","cat":"STDIO","pid":9,"tid":9,"ts":5,"dur":1,"ph":"X"}
{"id":2,"name":"write","cat":"POSIX","pid":9,"tid":9,"ts":3,"dur":17,"ph":"X","args":{"fhash":19179}}
{"id":3,"name":"FH","cat":"dftracer","pid":9,"tid":9,"ph":"M","args":{"name":"/overlap","value":19179}}
"#;

#[test]
fn colliding_file_hashes_name_the_files_of_their_own_file_and_process() {
    let dir = tempfile::tempdir().unwrap();
    let cm1 = cm1_like(dir.path(), 4, 3).unwrap();
    let overlap = dir.path().join("overlap.pfw");
    std::fs::write(&overlap, OVERLAPPING_CALLS).unwrap();
    // Streamed per file, then through the collector that keeps every event of every file.
    let collected = [cm1.clone(), vec![overlap]].concat();
    for paths in [cm1, collected] {
        assert_build_is_per_file(&paths);
        let m = build(&paths, &options()).unwrap();
        for f in 0..4 {
            for p in 0..3 {
                let pid = cm1_pid(f, p);
                let files: Vec<(&str, Option<String>)> = (0..m.n_rows())
                    .filter(|&i| m.pid[i] == pid)
                    .map(|i| (m.op[i].as_str(), m.file[i].clone()))
                    .collect();
                let want: Vec<(&str, Option<String>)> = CM1_CALLS
                    .iter()
                    .map(|&(op, fh)| (op, Some(cm1_name(f, p, fh))))
                    .collect();
                assert_eq!(files, want, "file {f} process {p}");
            }
        }
        let rest: Vec<_> = (0..m.n_rows())
            .filter(|&i| m.pid[i] == 9)
            .map(|i| m.file[i].clone())
            .collect();
        let want = if paths.len() == 5 {
            vec![Some("/overlap".to_owned()); 2]
        } else {
            vec![]
        };
        assert_eq!(rest, want);
    }
}
