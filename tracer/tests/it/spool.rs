//! A writer behind the ring buffer loses nothing: with no memory for the backlog, every batch of
//! records (and, in profile mode, of counters) goes through the spool file, and the trace still
//! holds every call, in order. Needs root and BPF; fails where they are missing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use datasets::read::{ReadOptions, Trace, read_all};
use datasets::{ArgValue, Event, Hash, Phase};
use tracer::{CollectOptions, Layer, LayerSelection, Mode, collect};

use crate::trace_testload;

const CALLS: usize = 300_000;
const THREADS: usize = 3;
const _: () = assert!(
    CALLS.is_multiple_of(THREADS),
    "every thread makes the same calls"
);

fn options(dir: &Path, output: &Path) -> CollectOptions {
    let mut opts = trace_testload(
        output,
        dir,
        [
            "--syscalls".into(),
            CALLS.to_string(),
            "--threads".into(),
            THREADS.to_string(),
        ],
    );
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    opts.queue_memory = 0;
    opts
}

/// The file each worker thread writes, by hash, with the calls it makes.
fn files(trace: &Trace, dir: &Path) -> BTreeMap<Hash, i64> {
    (0..THREADS)
        .map(|t| {
            let name = if t == 0 {
                dir.join("bench.dat")
            } else {
                dir.join(format!("bench-{t}.dat"))
            };
            let hash = trace
                .events
                .iter()
                .find(|e| e.name == "FH" && e.args.name.as_deref() == name.to_str())
                .and_then(|e| e.args.value)
                .unwrap_or_else(|| panic!("no FH for {}", name.display()));
            (hash, (CALLS / THREADS) as i64)
        })
        .collect()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn every_call_survives_a_backlog_that_goes_through_disk() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let summary = collect(&options(dir.path(), &output)).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!((summary.drops, summary.kernel_skipped), (0, 0));
    assert_eq!(summary.spool_error, None);
    assert!(summary.spooled_bytes > 0, "{summary}");

    let trace = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    let pwrites: Vec<&Event> = trace
        .events
        .iter()
        .filter(|e| e.cat == "sys" && e.name == "pwrite64")
        .collect();
    let mut per_file: BTreeMap<Hash, (i64, i64)> = BTreeMap::new();
    for e in &pwrites {
        let n = per_file.entry(e.args.fhash.expect("fhash")).or_default();
        n.0 += 1;
        n.1 += e.args.size.expect("size");
    }
    let want: BTreeMap<Hash, (i64, i64)> = files(&trace, dir.path())
        .into_iter()
        .map(|(h, n)| (h, (n, n)))
        .collect();
    assert_eq!(per_file, want);

    // Batches came back in the order they were read: each thread's calls start in order.
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for e in trace.events.iter().filter(|e| e.cat == "sys") {
        let prev = last.insert(e.tid, e.ts_ns).unwrap_or(0);
        assert!(
            prev <= e.ts_ns,
            "thread {} went back in time at {e:?}",
            e.tid
        );
    }
    let closing = trace
        .events
        .iter()
        .find(|e| e.name == "dc_closing")
        .expect("closing event");
    assert_eq!(
        closing.args.get("spooled_bytes"),
        Some(&ArgValue::Int(summary.spooled_bytes as i64))
    );
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn profile_counters_through_disk_add_up() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("profile.pfw");
    let mut opts = options(dir.path(), &output);
    opts.mode = Mode::Profile {
        interval: Duration::from_millis(2),
    };
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!(summary.drops, 0);
    assert!(summary.spooled_bytes > 0, "{summary}");

    let trace = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    let int = |e: &Event, k: &str| match e.args.get(k) {
        Some(ArgValue::Int(n)) => *n,
        other => panic!("{k}: {other:?}"),
    };
    let mut per_file: BTreeMap<Hash, (i64, i64)> = BTreeMap::new();
    for e in trace
        .events
        .iter()
        .filter(|e| e.ph == Phase::Counter && e.name == "pwrite64")
    {
        let n = per_file
            .entry(e.args.fhash.expect("counters name their file"))
            .or_default();
        n.0 += int(e, "freq");
        n.1 += int(e, "size_sum");
    }
    let want: BTreeMap<Hash, (i64, i64)> = files(&trace, dir.path())
        .into_iter()
        .map(|(h, n)| (h, (n, n)))
        .collect();
    assert_eq!(per_file, want);
}
