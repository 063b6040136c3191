//! mmap'd reads are never lost: the test workload maps a file whose pages it dropped from the page cache and reads
//! one byte of each page in a thread that makes no call the feature matrix has rows for. Traced with the sys and mm
//! layers, each thread's page faults are in its rows or in its no-call bucket (`features::nocall`), and together they
//! are what bpftrace counts on the same tracepoint for that thread in the same run, from the workload's exec on. Needs
//! root and BPF; it fails (never skips) where they are missing.

use std::collections::BTreeMap;

use datasets::Phase;
use datasets::read::{ReadOptions, read_all};
use features::{BuildOptions, FeatureMatrix};
use test_support::oracle::Oracle;
use test_support::workload::COMM;
use tracer::{Layer, LayerSelection, collect};

use crate::trace_testload;

const PAGES: usize = 512;
const FAULTS: &str = "count::mm::page_fault_user";

fn script() -> String {
    format!(
        r#"BEGIN {{ printf("ready\n"); }}
tracepoint:syscalls:sys_exit_execve /comm == "{COMM}"/ {{ @go[pid] = nsecs; }}
tracepoint:exceptions:page_fault_user /@go[pid]/ {{ @faults[tid] = count(); }}
"#
    )
}

/// Page faults per tid in `m`'s column [`FAULTS`].
fn faults(m: &FeatureMatrix) -> BTreeMap<u64, i64> {
    let mut out = BTreeMap::new();
    if let Some(c) = m.column(FAULTS) {
        for (i, n) in c.values.iter().enumerate() {
            *out.entry(m.tid[i]).or_default() += *n as i64;
        }
    }
    out
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn page_faults_outside_every_call_are_in_the_threads_bucket_as_bpftrace_counts_them() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let mut opts = trace_testload(
        &output,
        dir.path(),
        ["--mmap".to_owned(), PAGES.to_string()],
    );
    opts.layers = LayerSelection::only(&[Layer::Sys, Layer::Mm]);
    let oracle = Oracle::start(&script());
    let summary = collect(&opts).expect("BPF must work on this machine");
    let maps = oracle.stop();
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    assert_eq!(summary.drops, 0);

    let (pid, go) = maps["@go"]
        .iter()
        .map(|(pid, ts)| (pid.parse::<u64>().unwrap(), *ts as u64))
        .next()
        .expect("the workload's exec");
    let mut events = read_all(&[output], ReadOptions::default()).unwrap().events;
    events.retain(|e| e.ph == Phase::Metadata || (e.pid == pid && e.ts_ns >= go));
    let t = features::tables_of_events(&events, &BuildOptions::default()).unwrap();
    let (in_rows, in_buckets) = (faults(&t.matrix), faults(&t.no_call));
    let bpftrace: BTreeMap<u64, i64> = maps["@faults"]
        .iter()
        .map(|(tid, n)| (tid.parse().unwrap(), *n))
        .collect();
    let mut ours = in_rows.clone();
    for (tid, n) in &in_buckets {
        *ours.entry(*tid).or_default() += n;
    }
    eprintln!(
        "page faults by tid: in rows {in_rows:?}, in buckets {in_buckets:?}, bpftrace {bpftrace:?}"
    );
    assert_eq!(ours, bpftrace);

    let reader: u64 = std::fs::read_to_string(dir.path().join("mmap_tid"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(bpftrace[&reader] > 0, "the reader faulted: {bpftrace:?}");
    assert_eq!(in_rows.get(&reader).copied().unwrap_or(0), 0);
    assert_eq!(in_buckets[&reader], bpftrace[&reader]);
    let row = t.no_call.tid.iter().position(|&tid| tid == reader).unwrap();
    assert_eq!(t.no_call.op[row], "(no call)");
    assert_eq!(t.no_call.self_ns[row], 0);
}
