//! `thread` and `process` hold the names a trace's `thread_name`/`process_name` metadata gave the row's thread and
//! process when the call started, within the row's own input file and pid.

use std::path::{Path, PathBuf};

use datasets::write::{Header, TraceWriter};
use datasets::{Args, Event, Phase};
use features::{BuildOptions, FeatureMatrix, Mode, build};

fn named(kind: &str, pid: u64, tid: u64, ts_ns: u64, name: &str) -> Event {
    Event {
        pid,
        tid,
        ts_ns,
        args: Args {
            name: Some(name.into()),
            ..Args::default()
        },
        ..Event::new(kind, "datacrumbs", Phase::Metadata)
    }
}

fn read(pid: u64, tid: u64, ts_ns: u64) -> Event {
    Event {
        pid,
        tid,
        ts_ns,
        dur_ns: 1_000,
        args: Args {
            fname: Some("/data/a".into()),
            size: Some(4096),
            ..Args::default()
        },
        ..Event::new("read", "sys", Phase::Complete)
    }
}

fn write(path: &Path, events: &[Event]) -> PathBuf {
    let mut w = TraceWriter::create(path, Header::new("features-test", "0")).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish(Vec::new()).unwrap();
    path.to_owned()
}

/// (tid, ts, thread, process) of every row.
fn names(m: &FeatureMatrix) -> Vec<(u64, u64, Option<&str>, Option<&str>)> {
    (0..m.n_rows())
        .map(|i| {
            (
                m.tid[i],
                m.ts_ns[i],
                m.thread[i].as_deref(),
                m.process[i].as_deref(),
            )
        })
        .collect()
}

#[test]
fn a_row_has_the_names_in_force_when_it_started_in_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    // Thread 11 is renamed at 5 µs, after its first read; thread 12 is named only after its first read; thread 13
    // never. The second file reuses pid 10 and tid 11 for another program.
    let first = write(
        &dir.path().join("a.pfw.gz"),
        &[
            named("thread_name", 10, 10, 1_000, "python3"),
            named("process_name", 10, 10, 1_000, "python3"),
            named("thread_name", 10, 11, 1_000, "python3"),
            read(10, 11, 2_000),
            named("thread_name", 10, 11, 5_000, "pt_data_worker"),
            read(10, 11, 5_000),
            read(10, 11, 8_000),
            read(10, 12, 3_000),
            named("thread_name", 10, 12, 6_000, "loader"),
            read(10, 12, 9_000),
            read(10, 13, 4_000),
        ],
    );
    let second = write(
        &dir.path().join("b.pfw.gz"),
        &[named("thread_name", 10, 11, 0, "fio"), read(10, 11, 2_500)],
    );
    let want = vec![
        (11, 2_000, Some("python3"), Some("python3")),
        (11, 2_500, Some("fio"), None),
        (12, 3_000, Some("loader"), Some("python3")),
        (13, 4_000, None, Some("python3")),
        (11, 5_000, Some("pt_data_worker"), Some("python3")),
        (11, 8_000, Some("pt_data_worker"), Some("python3")),
        (12, 9_000, Some("loader"), Some("python3")),
    ];
    for mode in [Mode::Exact, Mode::Notebook] {
        let opts = BuildOptions {
            mode,
            ..BuildOptions::default()
        };
        let m = build(&[first.clone(), second.clone()], &opts).unwrap();
        assert_eq!(names(&m), want, "{mode:?}");
    }
    // Alone, the first file streams (the two files share a thread at overlapping times, which the stream leaves to
    // the in-memory path).
    let alone = build(&[first], &BuildOptions::default()).unwrap();
    let mut first_only = want;
    first_only.remove(1);
    assert_eq!(names(&alone), first_only);
}
