//! Names belong to the file, and the process, that interned them: reading several files together resolves every
//! hash as reading each file alone does.

use std::path::PathBuf;

use crate::common::fixture;
use arrow_array::{Array, FixedSizeBinaryArray, Int64Array, RecordBatch, StringArray, UInt64Array};
use datasets::parquet::EventBatches;
use datasets::read::{ReadOptions, expand_globs, read_all};
use datasets::strings::{Scope, StringKind, StringTable};
use datasets::synth::{CM1_CALLS, CM1_FH, cm1_like, cm1_name, cm1_pid};
use datasets::{Event, Hash, Phase};

/// Every cell of every row, as text (`None` for null), in the order the batches give them.
fn rows(
    batches: impl Iterator<Item = datasets::error::Result<RecordBatch>>,
) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for b in batches {
        let b = b.unwrap();
        for i in 0..b.num_rows() {
            let row = b
                .columns()
                .iter()
                .map(|c| {
                    let any = c.as_any();
                    (!c.is_null(i)).then(|| {
                        if let Some(a) = any.downcast_ref::<StringArray>() {
                            a.value(i).to_owned()
                        } else if let Some(a) = any.downcast_ref::<UInt64Array>() {
                            a.value(i).to_string()
                        } else if let Some(a) = any.downcast_ref::<Int64Array>() {
                            a.value(i).to_string()
                        } else {
                            let a = any.downcast_ref::<FixedSizeBinaryArray>().unwrap();
                            format!("{:?}", a.value(i))
                        }
                    })
                })
                .collect();
            out.push(row);
        }
    }
    out
}

fn converted(paths: &[PathBuf]) -> Vec<Vec<Option<String>>> {
    rows(EventBatches::open(paths, ReadOptions::default()).unwrap())
}

/// Converting `paths` together gives the rows of converting each alone, one after the other.
fn assert_convert_is_per_file(paths: &[PathBuf]) {
    assert!(paths.len() > 1, "{paths:?}");
    let alone: Vec<_> = paths
        .iter()
        .flat_map(|p| converted(std::slice::from_ref(p)))
        .collect();
    let together = converted(paths);
    assert!(!together.is_empty());
    assert_eq!(together.len(), alone.len());
    for (i, (t, a)) in together.iter().zip(&alone).enumerate() {
        assert_eq!(t, a, "row {i} of {paths:?}");
    }
}

fn glob(pattern: &str) -> Vec<PathBuf> {
    expand_globs(&[pattern.to_owned()]).unwrap()
}

fn data(rel: &str) -> String {
    format!("{}/tests/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn converting_every_shared_trace_set_together_is_converting_each_file_alone() {
    for set in ["datacrumbs/*", "dftracer/*", "darshan/*.darshan"] {
        let paths = glob(&fixture(set).to_string_lossy());
        assert_convert_is_per_file(&paths);
    }
}

#[test]
fn converting_every_foreign_format_together_is_converting_each_file_alone() {
    let mut paths = glob(&data("bpftrace/*.out"));
    paths.extend(glob(&data("kernmlops/*.parquet")));
    paths.push(data("darshan/bzip2.darshan").into());
    assert_convert_is_per_file(&paths);
}

#[test]
fn colliding_file_hashes_resolve_in_their_own_file_and_process() {
    let dir = tempfile::tempdir().unwrap();
    let paths = cm1_like(dir.path(), 4, 3).unwrap();
    assert_convert_is_per_file(&paths);
    let rows = converted(&paths);
    // source, id, name, cat, ph, pid, tid, ts_ns, dur_ns, fhash, hhash, fname, ...
    let calls: Vec<_> = rows
        .iter()
        .filter(|r| r[4].as_deref() == Some("X"))
        .collect();
    assert_eq!(calls.len(), 4 * 3 * CM1_CALLS.len());
    let mut at = 0;
    for f in 0..4 {
        for p in 0..3 {
            for (op, fh) in CM1_CALLS {
                let r = calls[at];
                at += 1;
                assert_eq!(r[2].as_deref(), Some(op));
                assert_eq!(r[5], Some(cm1_pid(f, p).to_string()));
                assert_eq!(r[11], Some(cm1_name(f, p, fh)), "file {f} process {p} {op}");
            }
        }
    }
    let t = read_all(&paths, ReadOptions::default()).unwrap();
    // Read together, a hash the processes disagree on resolves to nothing without its scope.
    for value in CM1_FH {
        assert_eq!(t.strings.file(Hash(value.into())), None);
        let scope = Scope {
            input: 2,
            pid: cm1_pid(2, 1),
        };
        assert_eq!(
            t.strings.file_in(scope, Hash(value.into())),
            Some(cm1_name(2, 1, value).as_str())
        );
    }
}

fn metadata(kind: StringKind, pid: u64, name: &str, value: u128) -> Event {
    let mut e = Event::new(kind.event_name(), "dftracer", Phase::Metadata);
    e.pid = pid;
    e.args.name = Some(name.into());
    e.args.value = Some(Hash(value));
    e
}

#[test]
fn a_scope_without_the_name_takes_the_one_its_file_agrees_on() {
    let mut t = StringTable::new();
    // DataCrumbs' HH event has no pid; every process of the file uses it.
    t.insert_event_in(0, &metadata(StringKind::Host, 0, "ebpf", 5));
    t.insert_event_in(0, &metadata(StringKind::File, 10, "/a", 1));
    t.insert_event_in(0, &metadata(StringKind::File, 11, "/b", 1));
    t.insert_event_in(1, &metadata(StringKind::File, 10, "/c", 2));
    let at = |input, pid| Scope { input, pid };
    assert_eq!(t.host_in(at(0, 40998), Hash(5)), Some("ebpf"));
    assert_eq!(t.host_in(at(1, 40998), Hash(5)), None);
    assert_eq!(t.file_in(at(0, 10), Hash(1)), Some("/a"));
    assert_eq!(t.file_in(at(0, 11), Hash(1)), Some("/b"));
    // Process 12 interned no hash 1, and its file's processes disagree on it.
    assert_eq!(t.file_in(at(0, 12), Hash(1)), None);
    assert_eq!(t.file_in(at(0, 12), Hash(2)), None);
    assert_eq!(t.file_in(at(1, 12), Hash(2)), Some("/c"));
    assert_eq!((t.file(Hash(1)), t.file(Hash(2))), (None, Some("/c")));
    assert_eq!(t.len(), (2, 1, 0));
    let mut merged = StringTable::new();
    merged.merge_input(3, &t);
    assert_eq!(merged.file_in(at(3, 11), Hash(1)), Some("/b"));
    assert_eq!(merged.file_in(at(0, 11), Hash(1)), None);
}
