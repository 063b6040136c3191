//! Several files and any number of threads give the same matrix (and no-call table), equal to a brute-force oracle on
//! the same events.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use datasets::read::{ReadOptions, read_all};
use datasets::synth::write_rehashed;
use datasets::write::{Header, TraceWriter};
use datasets::{Event, Phase};
use features::{BuildOptions, Tables, build_tables, sweep_tables};

use crate::common::{Cells, RowId, cells_of, exclusive_of};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);
/// Pid offset of the shifted copy: larger than any pid in the trace.
const PID_SHIFT: u64 = 1 << 32;

fn options(read_threads: usize) -> BuildOptions {
    BuildOptions {
        counts: true,
        read: ReadOptions {
            threads: read_threads,
            ..ReadOptions::default()
        },
        ..BuildOptions::default()
    }
}

/// The trace again with every pid moved by [`PID_SHIFT`], as a second file of the same run.
fn shifted_copy(dir: &Path) -> PathBuf {
    let source = read_all(&[PathBuf::from(TRACE)], ReadOptions::default()).unwrap();
    let out = dir.join("shifted.pfw.gz");
    let mut w = TraceWriter::create(&out, Header::new("features-test", "0")).unwrap();
    for e in &source.events {
        let mut e = e.clone();
        e.pid += PID_SHIFT;
        write_rehashed(&mut w, &source.strings, &e).unwrap();
    }
    w.finish(Vec::new()).unwrap();
    out
}

/// Builds with `threads` rayon workers.
fn build_on(threads: usize, paths: &[PathBuf], opts: &BuildOptions) -> Tables {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| build_tables(paths, opts, |_| {}).unwrap().0)
}

/// Rows (default ops, `sys` layer, plain names as in this trace) with their cells: every event of the row's thread
/// that starts in the row's interval is checked.
fn brute_force(events: &[Event]) -> Vec<(RowId, Cells)> {
    const OPS: [&str; 7] = [
        "read", "write", "pread64", "pwrite64", "readv", "writev", "openat",
    ];
    let data: Vec<(usize, &Event)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.ph, Phase::Complete | Phase::Instant))
        .collect();
    let mut by_thread: HashMap<(u64, u64), Vec<(usize, &Event)>> = HashMap::new();
    for &(i, e) in &data {
        by_thread.entry((e.pid, e.tid)).or_default().push((i, e));
    }
    for events in by_thread.values_mut() {
        events.sort_by_key(|(_, e)| e.ts_ns);
    }
    let mut rows: Vec<(usize, &Event)> = data
        .iter()
        .copied()
        .filter(|(_, e)| e.cat == "sys" && OPS.contains(&e.name.as_str()))
        .collect();
    rows.sort_by_key(|(i, r)| (r.ts_ns, r.pid, r.tid, *i));
    rows.iter()
        .map(|&(i, r)| {
            let mut cells = Cells::new();
            let thread = &by_thread[&(r.pid, r.tid)];
            let from = thread.partition_point(|(_, e)| e.ts_ns < r.ts_ns);
            for &(j, e) in thread[from..]
                .iter()
                .take_while(|(_, e)| e.ts_ns <= r.end_ns())
            {
                if j != i && e.end_ns() <= r.end_ns() {
                    let cell = cells
                        .entry((e.cat.to_string(), e.name.to_string()))
                        .or_default();
                    cell.0 += e.dur_ns;
                    cell.1 += 1;
                }
            }
            let id = (r.name.to_string(), r.pid, r.tid, r.ts_ns, r.dur_ns);
            (id, cells)
        })
        .collect()
}

fn events_of(paths: &[PathBuf]) -> Vec<Event> {
    read_all(paths, ReadOptions::default()).unwrap().events
}

#[test]
fn two_files_match_brute_force_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let paths = [PathBuf::from(TRACE), shifted_copy(dir.path())];
    let t = build_on(2, &paths, &options(0));
    let m = &t.matrix;
    assert_eq!(m.n_rows(), 2 * 327);
    let events = events_of(&paths);
    assert_eq!(cells_of(m), brute_force(&events));
    assert_eq!(m.file.iter().filter(|f| f.is_none()).count(), 0);
    assert_eq!(t.no_call.n_rows(), 2, "one bucket per file's thread");
    assert_eq!(
        t,
        sweep_tables(&events, &options(0)).unwrap(),
        "stream and sweep"
    );
    let with_exclusive = exclusive_of(m)
        .iter()
        .filter(|(_, e, _)| !e.is_empty())
        .count();
    assert!(with_exclusive > 0);
    for (workers, read_threads) in [(1, 1), (3, 2), (4, 1)] {
        assert_eq!(
            build_on(workers, &paths, &options(read_threads)),
            t,
            "{workers} workers, {read_threads} read threads"
        );
    }
    let reversed = [paths[1].clone(), paths[0].clone()];
    assert_eq!(build_on(2, &reversed, &options(0)), t, "files reversed");
}

#[test]
fn one_thread_in_two_files_at_the_same_time_matches_brute_force() {
    let paths = [PathBuf::from(TRACE), PathBuf::from(TRACE)];
    let t = build_on(2, &paths, &options(0));
    assert_eq!(t.matrix.n_rows(), 2 * 327);
    assert_eq!(cells_of(&t.matrix), brute_force(&events_of(&paths)));
    assert_eq!(build_on(1, &paths, &options(1)), t);
    assert_eq!(build_on(3, &paths, &options(2)), t);
}
