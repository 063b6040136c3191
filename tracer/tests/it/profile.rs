//! Profile mode: the kernel aggregates per interval, thread, syscall and file; the counters add
//! up exactly to the workload's calls and bytes. Needs root and BPF; fails where they are missing.

use std::time::Duration;

use datasets::Phase;
use datasets::read::{ReadOptions, read_all};
use tracer::{Layer, LayerSelection, Mode, collect};

use crate::trace_testload;

const CALLS: i64 = 5000;

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn counters_add_up_to_every_call_and_byte() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("profile.pfw");
    let mut opts = trace_testload(
        &output,
        dir.path(),
        ["--syscalls".into(), CALLS.to_string()],
    );
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    opts.mode = Mode::Profile {
        interval: Duration::from_millis(5),
    };
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!(summary.drops, 0);

    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    let bench = dir.path().join("bench.dat");
    let file = trace
        .events
        .iter()
        .find(|e| e.name == "FH" && e.args.name.as_deref() == Some(bench.to_str().unwrap()))
        .and_then(|e| e.args.value)
        .expect("FH of bench.dat");
    let counters: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.ph == Phase::Counter && e.name == "pwrite64" && e.args.fhash == Some(file))
        .collect();
    let int = |e: &datasets::Event, k: &str| match e.args.get(k) {
        Some(datasets::ArgValue::Int(n)) => *n,
        other => panic!("{k}: {other:?}"),
    };
    let freq: i64 = counters.iter().map(|e| int(e, "freq")).sum();
    let bytes: i64 = counters.iter().map(|e| int(e, "size_sum")).sum();
    assert_eq!((freq, bytes), (CALLS, CALLS));
    assert!(
        trace.events.iter().all(|e| e.ph != Phase::Complete),
        "profile mode writes no X events"
    );
}
