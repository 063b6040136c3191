//! The no-call table: every kernel event is in a row or in its thread's bucket, on both build paths, and
//! `dc-features build` writes the table beside the matrix.

use std::process::Command;

use datasets::write::{Header, TraceWriter};
use datasets::{Args, Event, Phase};
use features::{
    BuildOptions, FeatureMatrix, Tables, stream_tables, sweep_tables, tables_of_events,
};

fn event(tid: u64, cat: &str, name: &str, ts: u64, dur: u64) -> Event {
    Event {
        id: None,
        name: name.into(),
        cat: cat.into(),
        ph: if dur == 0 {
            Phase::Instant
        } else {
            Phase::Complete
        },
        pid: 1,
        tid,
        ts_ns: ts,
        dur_ns: dur,
        args: Args::default(),
    }
}

fn fault(tid: u64, ts: u64) -> Event {
    event(tid, "mm", "page_fault_user", ts, 0)
}

/// Thread 10: a read [100, 200) holding two faults and a 20 ns D sleep; outside it, faults at 50, 250 and 260, a D
/// sleep [300, 400) overlapped by a block request [320, 380), a libc call around the read (not kernel time), and a
/// `close` (no row by default) holding a fault. Thread 11: one read with a fault inside, nothing outside. In
/// completion order, as dc-trace writes.
fn trace() -> Vec<Event> {
    vec![
        fault(10, 50),
        fault(10, 120),
        fault(10, 150),
        event(10, "sched", "offcpu_D", 160, 20),
        event(10, "sys", "read", 100, 100),
        event(10, "libc", "read", 90, 120),
        fault(10, 250),
        fault(10, 260),
        event(10, "block", "block_device_read", 320, 60),
        event(10, "sched", "offcpu_D", 300, 100),
        fault(10, 510),
        event(10, "sys", "close", 500, 20),
        fault(11, 30),
        event(11, "sys", "read", 0, 40),
    ]
}

fn value(m: &FeatureMatrix, column: &str, row: usize) -> f64 {
    m.column(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .values[row]
}

fn check(t: &Tables) {
    let m = &t.matrix;
    assert_eq!(m.op, ["read", "read"]);
    assert_eq!(m.tid, [11, 10]);
    assert_eq!(value(m, "count::mm::page_fault_user", 1), 2.0);
    assert_eq!(value(m, "sched::offcpu_D", 1), 20.0);
    assert_eq!(value(m, "count::mm::page_fault_user", 0), 1.0);
    let b = &t.no_call;
    assert_eq!(
        b.op,
        ["(no call)"],
        "one bucket: thread 11 has nothing outside its read"
    );
    assert_eq!((b.pid[0], b.tid[0], b.ts_ns[0]), (1, 10, 50));
    assert_eq!(value(b, "count::mm::page_fault_user", 0), 4.0);
    assert_eq!(value(b, "sched::offcpu_D", 0), 100.0);
    assert_eq!(value(b, "count::sched::offcpu_D", 0), 1.0);
    assert_eq!(value(b, "block::block_device_read", 0), 60.0);
    // The block request explains 60 ns of the sleep; the rest is sched's. No libc or system call column.
    assert_eq!(value(b, "excl::block", 0), 60.0);
    assert_eq!(value(b, "excl::sched", 0), 40.0);
    assert_eq!((b.dur_ns[0], b.self_ns[0]), (100, 0));
    assert_eq!(b.size[0], None);
    assert_eq!(b.bandwidth_mibs[0], None);
    let mut columns: Vec<&str> = b.features.iter().map(|f| f.column.as_str()).collect();
    columns.sort_unstable();
    assert_eq!(
        columns,
        [
            "block::block_device_read",
            "count::block::block_device_read",
            "count::mm::page_fault_user",
            "count::sched::offcpu_D",
            "excl::block",
            "excl::sched",
            "sched::offcpu_D",
        ]
    );
    assert_eq!(features::nocall::events(b), 6);
}

#[test]
fn faults_outside_the_call_go_to_the_threads_bucket_on_both_paths() {
    let events = trace();
    let opts = BuildOptions::default();
    let streamed = stream_tables(&events, &opts)
        .unwrap()
        .expect("completion order streams");
    check(&streamed);
    let swept = sweep_tables(&events, &opts).unwrap();
    check(&swept);
    assert_eq!(streamed, swept);
    let mut reversed = events.clone();
    reversed.reverse();
    assert_eq!(tables_of_events(&reversed, &opts).unwrap(), swept);
}

#[test]
fn the_bucket_can_be_turned_off() {
    let opts = BuildOptions {
        no_call: false,
        ..BuildOptions::default()
    };
    let t = tables_of_events(&trace(), &opts).unwrap();
    assert_eq!(t.matrix.n_rows(), 2);
    assert_eq!(t.no_call, FeatureMatrix::default());
}

#[test]
fn a_row_left_out_by_file_still_holds_its_events() {
    let mut events = trace();
    for e in events
        .iter_mut()
        .filter(|e| e.name == "read" && e.tid == 10)
    {
        e.args.fname = Some("/data/a".into());
    }
    let opts = BuildOptions {
        file_regex: Some(regex::Regex::new("^/nothing$").unwrap()),
        ..BuildOptions::default()
    };
    let streamed = stream_tables(&events, &opts).unwrap().unwrap();
    assert_eq!(streamed.matrix.n_rows(), 0);
    assert_eq!(
        value(&streamed.no_call, "count::mm::page_fault_user", 0),
        4.0
    );
    assert_eq!(streamed, sweep_tables(&events, &opts).unwrap());
}

#[test]
fn dc_features_writes_the_table_beside_the_matrix_and_says_how_many_events() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("t.pfw.gz");
    let mut w = TraceWriter::create(&trace_path, Header::new("features-test", "0")).unwrap();
    for e in trace() {
        w.write(&e).unwrap();
    }
    w.finish(Vec::new()).unwrap();
    let out = dir.path().join("m.parquet");
    let run = Command::new(env!("CARGO_BIN_EXE_dc-features"))
        .args([
            "build",
            trace_path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let table = dir.path().join("m.no-call.parquet");
    assert!(
        stderr.contains(&format!(
            "6 event(s) outside every row, in 1 no-call row(s) (one per thread) -> {}",
            table.display()
        )),
        "{stderr}"
    );
    let b = FeatureMatrix::read(&table).unwrap();
    assert_eq!(value(&b, "count::mm::page_fault_user", 0), 4.0);
    assert_eq!(b.dur_ns, [100]);
}
