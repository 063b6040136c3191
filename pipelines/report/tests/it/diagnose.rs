//! The diagnosis' rules and its run-against-run split, on feature matrices and events made here, with exact values.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use datasets::{ArgValue, Args, Event, Phase};
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use report::diagnose::compare::{Run, compare};
use report::diagnose::json::Diagnosis;
use report::diagnose::kinds::Kind;
use report::diagnose::scan::{Activity, JobScan};
use report::diagnose::{Finding, Reason, Scope, findings};
use report::pass::Pass;
use serde_json::Value;

const REPORT: &str = env!("CARGO_BIN_EXE_dc-report");

/// A call: operation, O_DIRECT, size, duration, its own time.
struct Call {
    op: &'static str,
    direct: Option<bool>,
    size: Option<i64>,
    dur: u64,
    self_ns: u64,
    pid: u64,
    file: Option<&'static str>,
}

fn call(op: &'static str, direct: Option<bool>, size: Option<i64>, dur: u64, self_ns: u64) -> Call {
    Call {
        op,
        direct,
        size,
        dur,
        self_ns,
        pid: 1,
        file: None,
    }
}

/// Calls back to back on one thread from t = 0, with the given feature columns (layer, name, kind, values).
fn matrix(calls: &[Call], columns: Vec<(&str, &str, FeatureKind, Vec<f64>)>) -> FeatureMatrix {
    let mut ts = Vec::new();
    let mut t = 0;
    for c in calls {
        ts.push(t);
        t += c.dur;
    }
    let n = calls.len();
    FeatureMatrix {
        op: calls.iter().map(|c| c.op.to_owned()).collect(),
        pid: calls.iter().map(|c| c.pid).collect(),
        tid: calls.iter().map(|c| c.pid).collect(),
        ts_ns: ts,
        dur_ns: calls.iter().map(|c| c.dur).collect(),
        file: calls.iter().map(|c| c.file.map(str::to_owned)).collect(),
        size: calls.iter().map(|c| c.size).collect(),
        bandwidth_mibs: vec![None; n],
        direct: calls.iter().map(|c| c.direct).collect(),
        sequential: vec![None; n],
        run: vec![None; n],
        thread: vec![None; n],
        process: vec![None; n],
        self_ns: calls.iter().map(|c| c.self_ns).collect(),
        features: columns
            .into_iter()
            .map(|(l, name, k, v)| FeatureColumn::new(l, name, k, v))
            .collect(),
    }
}

fn direct_read() -> Kind {
    Kind {
        op: "read".into(),
        mode: Some("direct".into()),
        size_class: Some("10K-100K".into()),
    }
}

fn summary(f: &[Finding]) -> Vec<(String, &str, String, u64)> {
    f.iter()
        .map(|f| {
            (
                f.scope.label(),
                f.layer.as_str(),
                f.reason.slug(),
                f.cost_ns,
            )
        })
        .collect()
}

fn find(f: &[Finding], reason: Reason) -> &Finding {
    f.iter()
        .find(|x| x.reason == reason)
        .unwrap_or_else(|| panic!("no {reason:?} in {:?}", summary(f)))
}

#[test]
fn each_layer_of_a_kind_of_call_is_named_with_its_cost_and_evidence() {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    let mut calls: Vec<Call> = (0..4)
        .map(|_| call("read", Some(true), Some(65536), 1000, 100))
        .collect();
    // 40 ns of 4040: under the 1% a kind needs for layer findings.
    calls.push(call("openat", None, None, 40, 40));
    let col = |v: f64| {
        let mut c = vec![v; 4];
        c.push(0.0);
        c
    };
    let m = matrix(
        &calls,
        vec![
            ("block", "", E, col(600.0)),
            ("block", "block_device_read", T, col(100.0)),
            ("block", "block_queue_read", T, col(50.0)),
            ("block", "offcpu_D@__iomap_dio_rw", T, col(500.0)),
            ("sched", "", E, col(300.0)),
            ("sched", "offcpu_R", T, col(100.0)),
            ("sched", "offcpu_D", T, col(200.0)),
        ],
    );
    let f = findings(&m, None);
    let read = direct_read().label();
    assert_eq!(
        summary(&f),
        [
            (read.clone(), "block", "throttled_above_device".into(), 2400),
            (read.clone(), "sched", "io_wait".into(), 800),
            // Four small reads are far from Drishti's 1000: no application pattern.
            (read.clone(), "sched", "cpu_contention".into(), 400),
            (read.clone(), "self", "call_overhead".into(), 400),
        ]
    );
    let block = &f[0];
    assert_eq!(block.share, 2400.0 / 4040.0);
    let ev = |k: &str| block.evidence[k];
    assert_eq!(
        (
            ev("device_ns_per_call"),
            ev("above_device_ns_per_call"),
            ev("queue_ns_per_call")
        ),
        (100.0, 500.0, 50.0)
    );
    // 400 ns of device time over the 4000 ns the reads span; 4 calls in 4 µs.
    assert_eq!((ev("queue_depth"), ev("calls_per_s")), (0.1, 1e6));
    assert_eq!(ev("event:offcpu_D@__iomap_dio_rw:ns_per_call"), 500.0);
    assert_eq!(
        block.recommendation,
        Reason::ThrottledAboveDevice.recommendation()
    );
    // Without the throttle the reads keep their device time: 4 × 100 of the 2400 ns remain.
    assert_eq!(
        (block.gain_ns, block.gain_method.slug.as_str()),
        (2000, "wait_above_device")
    );
    // A wait goes whole; the calls' own work stays.
    assert_eq!((f[1].gain_ns, f[1].cost_ns), (800, 800));
    assert_eq!(f[3].gain_ns, 0);
}

/// Four buffered 1 MiB reads into fresh memory, each 600 of its 1000 ns in `mm` (samples of 100 ns), on the CPU under
/// a page fault: GNU sort's buffer, touched first by the copy. Without a reclaim that time is the reads' page faults,
/// not memory pressure. With a memory cgroup's reclaim of 450 ns inside the faults, 300 ns of it on the CPU, and 400
/// ns of the layer's time on the CPU: the faults keep the CPU time their outermost frame holds beyond the reclaim's
/// (800 - 300, at most the 400), and the reclaim the layer's 200 ns off the CPU.
#[test]
fn page_faults_outside_a_reclaim_are_the_calls_own_not_memory_pressure() {
    use FeatureKind::{Count as C, ExclusiveNs as E, TimeNs as T};
    let calls: Vec<Call> = (0..4)
        .map(|_| call("read", Some(false), Some(1 << 20), 1000, 400))
        .collect();
    let reads = |reclaim: bool| {
        let mut columns = vec![
            ("mm", "", E, vec![600.0; 4]),
            ("mm", "oncpu@exc_page_fault", T, vec![800.0; 4]),
            ("mm", "oncpu@exc_page_fault", C, vec![8.0; 4]),
            ("mm", "oncpu@do_anonymous_page", T, vec![600.0; 4]),
            ("mm", "oncpu@do_anonymous_page", C, vec![6.0; 4]),
        ];
        if reclaim {
            columns.extend([
                ("mm", "oncpu", C, vec![4.0; 4]),
                ("mm", "memcg_reclaim", T, vec![450.0; 4]),
                ("mm", "oncpu@shrink_node", T, vec![300.0; 4]),
                ("mm", "oncpu@shrink_node", C, vec![3.0; 4]),
            ]);
        } else {
            columns.push(("mm", "oncpu", C, vec![6.0; 4]));
        }
        findings(&matrix(&calls, columns), None)
    };
    let label = Kind {
        op: "read".into(),
        mode: Some("buffered".into()),
        size_class: Some("1M-4M".into()),
    }
    .label();
    let f = reads(false);
    assert_eq!(
        summary(&f),
        [
            (label.clone(), "mm", "page_faults".into(), 2400),
            (label.clone(), "self", "memory_copy".into(), 1600),
        ]
    );
    assert_eq!(f[0].recommendation, Reason::PageFaults.recommendation());
    assert_eq!(f[0].gain_ns, 0);
    let f = reads(true);
    assert_eq!(
        (
            find(&f, Reason::MemoryPressure).cost_ns,
            find(&f, Reason::PageFaults).cost_ns
        ),
        (800, 1600)
    );
}

#[test]
fn block_time_mostly_on_the_device_is_device_bound() {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    let calls: Vec<Call> = (0..2)
        .map(|_| call("read", Some(true), Some(65536), 1000, 100))
        .collect();
    let m = matrix(
        &calls,
        vec![
            ("block", "", E, vec![900.0; 2]),
            ("block", "block_device_read", T, vec![450.0; 2]),
        ],
    );
    let f = findings(&m, None);
    assert_eq!(find(&f, Reason::DeviceBound).cost_ns, 1800);
}

/// An fsync's block time of 1000 ns: 100 on the device, 900 above it, of which a wait for a request tag takes 501
/// (just over half the block time: all of it `queue_depth`) or 499: then the tag wait is `queue_depth` and the rest,
/// 401 of its 501 above the device, `throttled_above_device`, as an asynchronous submitter's requests wait for a
/// slot for part of their time. The tag wait, gaining 499, comes first; the rest gains its 401 above the device.
#[test]
fn block_time_above_the_device_mostly_waiting_for_a_tag_is_queue_depth() {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    for (tag, split) in [
        (501.0, vec![(Reason::QueueDepth, 1000)]),
        (
            499.0,
            vec![
                (Reason::ThrottledAboveDevice, 501),
                (Reason::QueueDepth, 499),
            ],
        ),
    ] {
        let m = matrix(
            &[call("fsync", None, None, 1100, 100)],
            vec![
                ("block", "", E, vec![1000.0]),
                ("block", "block_device_write", T, vec![100.0]),
                ("block", "offcpu_D@blk_mq_get_tag", T, vec![tag]),
            ],
        );
        let f = findings(&m, None);
        let mut block: Vec<(Reason, u64)> = f
            .iter()
            .filter(|x| x.layer == "block")
            .map(|x| (x.reason, x.cost_ns))
            .collect();
        block.sort();
        assert_eq!(block, split);
        assert_eq!(f[0].reason, Reason::QueueDepth);
        if let Some(t) = f.iter().find(|x| x.reason == Reason::ThrottledAboveDevice) {
            assert_eq!(t.gain_ns, 401);
        }
        assert_eq!(f[0].evidence["tag_wait_ns_per_call"], tag);
        assert_eq!(f[0].evidence["above_device_ns_per_call"], 900.0);
    }
}

/// A baseline of 12 direct reads of 1000 ns, half of it block device time, and a candidate whose reads wait 2000 ns
/// more above the device.
fn throttled_pair() -> (FeatureMatrix, FeatureMatrix) {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    let base_calls: Vec<Call> = (0..12)
        .map(|_| call("read", Some(true), Some(65536), 1000, 500))
        .collect();
    let base = matrix(
        &base_calls,
        vec![
            ("block", "", E, vec![500.0; 12]),
            ("block", "block_device_read", T, vec![500.0; 12]),
        ],
    );
    let mut cand_calls: Vec<Call> = (0..12)
        .map(|i| call("read", Some(true), Some(65536), 3000 + i, 500))
        .collect();
    cand_calls.extend((0..3).map(|_| call("write", Some(false), Some(10), 50, 50)));
    let pad = |v: Vec<f64>| v.into_iter().chain([0.0; 3]).collect::<Vec<f64>>();
    let cand = matrix(
        &cand_calls,
        vec![
            (
                "block",
                "",
                E,
                pad((0..12).map(|i| 2500.0 + i as f64).collect()),
            ),
            ("block", "block_device_read", T, pad(vec![500.0; 12])),
        ],
    );
    (base, cand)
}

fn run(name: &str, matrix: FeatureMatrix) -> Run {
    Run {
        name: name.into(),
        matrix,
        scan: None,
    }
}

#[test]
fn a_change_splits_exactly_into_layers_and_names_the_cause() {
    let (base, cand) = throttled_pair();
    let c = compare(&run("base", base), &run("cand", cand)).unwrap();
    let cause = c.cause.as_ref().unwrap();
    assert_eq!(
        (
            cause.layer.as_str(),
            cause.reason,
            cause.share,
            cause.added_ns
        ),
        ("block", Reason::ThrottledAboveDevice, 1.0, 2005.5 * 12.0)
    );
    assert_eq!(c.calls.len(), 1);
    let d = &c.calls[0];
    assert_eq!(d.kind, direct_read());
    assert_eq!((d.baseline_calls, d.candidate_calls), (12, 12));
    assert_eq!(d.delta_ns_per_call, 2005.5);
    // The baseline's block time (device_bound there) is compared under the candidate's reason: one entry.
    let layers: Vec<(&str, Reason, f64)> = d
        .layers
        .iter()
        .map(|l| (l.layer.as_str(), l.reason, l.delta_ns_per_call))
        .collect();
    assert_eq!(
        layers,
        [
            ("block", Reason::ThrottledAboveDevice, 2005.5),
            ("self", Reason::CallOverhead, 0.0)
        ]
    );
    let sum: f64 = d.layers.iter().map(|l| l.delta_ns_per_call).sum();
    assert_eq!(sum, d.delta_ns_per_call);
    let per_byte: f64 = d.layers.iter().map(|l| l.delta_ns_per_byte.unwrap()).sum();
    assert_eq!(d.delta_ns_per_byte, Some(2005.5 / 65536.0));
    assert!((per_byte - 2005.5 / 65536.0).abs() < 1e-15, "{per_byte}");
    assert_eq!(d.layers[0].top_events[0].event, "block::block_device_read");
    let mibs = |total_ns: f64| (12 * 65536) as f64 / (1 << 20) as f64 / (total_ns * 1e-9);
    assert_eq!(d.baseline_mibs, Some(mibs(12_000.0)));
    assert_eq!(d.candidate_mibs, Some(mibs(36_066.0)));
    let i = d.interval.as_ref().unwrap();
    assert!(
        i.low <= 2005.5 && 2005.5 <= i.high && i.high - i.low <= 11.0,
        "{i:?}"
    );
    assert_eq!(d.interval_note, None);
    assert_eq!(c.only_in_candidate, ["write buffered 0-100"]);
    assert!(c.only_in_baseline.is_empty());
    // The same inputs give the same comparison, interval included.
    let (base, cand) = throttled_pair();
    assert_eq!(compare(&run("base", base), &run("cand", cand)).unwrap(), c);
    assert_eq!(
        c.between_calls_note.as_deref(),
        Some("a feature matrix holds only the calls: compare traces for the time between them")
    );
    // Findings that appeared: the candidate's block time is throttled, the baseline's was device-bound.
    let appeared: Vec<(&str, Reason)> = c
        .appeared
        .iter()
        .map(|f| (f.layer.as_str(), f.reason))
        .collect();
    assert!(
        appeared.contains(&("block", Reason::ThrottledAboveDevice)),
        "{appeared:?}"
    );
    let gone: Vec<(&str, Reason)> = c
        .gone
        .iter()
        .map(|f| (f.layer.as_str(), f.reason))
        .collect();
    assert!(gone.contains(&("block", Reason::DeviceBound)), "{gone:?}");
}

#[test]
fn too_few_calls_get_no_interval() {
    let few = |dur| {
        matrix(
            &(0..9)
                .map(|_| call("openat", None, None, dur, dur))
                .collect::<Vec<_>>(),
            vec![],
        )
    };
    let c = compare(&run("a", few(100)), &run("b", few(300))).unwrap();
    let d = &c.calls[0];
    assert_eq!((d.delta_ns_per_call, d.interval.as_ref()), (200.0, None));
    assert_eq!(
        d.interval_note.as_deref(),
        Some(
            "too few calls for an interval: 9 in the baseline, 9 in the candidate (at least 10 in each)"
        )
    );
    assert_eq!(
        c.cause.map(|c| (c.layer, c.reason, c.share)),
        Some(("self".to_owned(), Reason::CallOverhead, 1.0))
    );
}

#[test]
fn runs_without_a_kind_of_call_in_common_are_an_error_naming_both() {
    let a = matrix(&[call("read", Some(true), Some(4096), 10, 10)], vec![]);
    let b = matrix(&[call("read", Some(false), Some(4096), 10, 10)], vec![]);
    let e = compare(&run("base.parquet", a), &run("cand.parquet", b)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "base.parquet and cand.parquet have no kind of call in common (operation × buffered or direct × size class): nothing to compare"
    );
}

/// 4 MiB read from the cache in 1 MiB requests (each 90 µs of copy, 10 µs of VFS), then in 4 KiB requests (0.6 µs
/// and 0.4 µs): the runs share no kind of call, so the whole job is compared, and the candidate's 1020 extra calls
/// carry its added time.
#[test]
fn the_same_bytes_in_smaller_requests_are_compared_over_the_job_and_named_small_requests() {
    use FeatureKind::ExclusiveNs as E;
    let side = |n: usize, size: i64, dur: u64, self_ns: u64| {
        let calls: Vec<Call> = (0..n)
            .map(|_| call("read", Some(false), Some(size), dur, self_ns))
            .collect();
        matrix(
            &calls,
            vec![("vfs", "", E, vec![(dur - self_ns) as f64; n])],
        )
    };
    let base = side(4, 1 << 20, 100_000, 90_000);
    let cand = side(1024, 4096, 1_000, 600);
    let c = compare(&run("base", base), &run("cand", cand)).unwrap();
    assert!(c.calls.is_empty());
    let j = &c.job;
    assert!(j.names_the_cause);
    assert_eq!(
        (
            j.baseline_calls,
            j.candidate_calls,
            j.baseline_bytes,
            j.candidate_bytes
        ),
        (4, 1024, 4 << 20, 4 << 20)
    );
    assert_eq!(
        (j.baseline_ns, j.candidate_ns, j.delta_ns),
        (400_000.0, 1_024_000.0, 624_000.0)
    );
    assert_eq!(j.delta_ns_per_byte, Some(624_000.0 / (4 << 20) as f64));
    let causes: Vec<(&str, Reason, f64)> = j
        .causes
        .iter()
        .map(|x| (x.layer.as_str(), x.reason, x.delta_ns))
        .collect();
    assert_eq!(
        causes,
        vec![
            ("vfs", Reason::KernelCpu, 369_600.0),
            ("self", Reason::MemoryCopy, 254_400.0)
        ]
    );
    assert_eq!(j.requests.len(), 1);
    let r = &j.requests[0];
    assert_eq!(
        (
            r.direction.as_str(),
            r.mode.as_deref(),
            r.baseline_mean_bytes,
            r.candidate_mean_bytes,
            r.smaller
        ),
        ("read", Some("buffered"), (1 << 20) as f64, 4096.0, true)
    );
    // The extra calls at the candidate's mean: 1020 × 1000 ns; copy and VFS each lose what the baseline's four calls
    // spent beyond the candidate's mean per call.
    let cause = c.cause.unwrap();
    assert_eq!(
        (
            cause.layer.as_str(),
            cause.reason,
            cause.added_ns,
            cause.share
        ),
        ("app", Reason::SmallRequests, 1_020_000.0, 1.0)
    );
}

#[test]
fn requests_not_half_as_large_or_not_small_leave_runs_with_nothing_in_common_an_error() {
    let side = |n: usize, size: i64| {
        matrix(
            &(0..n)
                .map(|_| call("read", Some(false), Some(size), 1000, 1000))
                .collect::<Vec<_>>(),
            vec![],
        )
    };
    // 4 MiB to 1.5 MiB: not under 1 MiB; 1 MiB to 768 KiB: small, but not half as large. Each pair of sizes is
    // in two size classes, so the runs share no kind of call.
    for (b, c) in [(4 << 20, 3 << 19), (1 << 20, 3 << 18)] {
        let e = compare(&run("base", side(3, b)), &run("cand", side(4, c))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "base and cand have no kind of call in common (operation × buffered or direct × size class): nothing to compare"
        );
    }
}

fn offcpu(state: &str, ts: u64, dur: u64) -> Event {
    Event {
        id: None,
        name: format!("offcpu_{state}").into(),
        cat: "sched".into(),
        ph: Phase::Complete,
        pid: 1,
        tid: 1,
        ts_ns: ts,
        dur_ns: dur,
        args: Args::default(),
    }
}

fn scanned(matrix: &FeatureMatrix, events: &[Event]) -> JobScan {
    let (mut s, mut pass) = (JobScan::with_calls(matrix), Pass::default());
    for e in events {
        s.add(&pass.see(0, e));
    }
    s
}

#[test]
fn time_between_calls_is_split_by_state_and_can_be_the_cause() {
    let calls: Vec<Call> = (0..2)
        .map(|_| call("openat", None, None, 100, 100))
        .collect();
    let mut m = matrix(&calls, vec![]);
    m.ts_ns = vec![0, 200];
    let mut last = offcpu("S", 500, 0);
    last.name = "sys_enter".into();
    last.cat = "sys".into();
    // R [100, 150) is between the calls; D [250, 400) is 50 ns in the second call and 100 ns after it.
    let base = scanned(
        &m,
        &[offcpu("R", 100, 50), offcpu("D", 250, 150), last.clone()],
    );
    let t = &base.threads[&(1, 1)];
    assert_eq!((t.span_ns(), t.in_calls_ns), (500, 200));
    assert_eq!(
        t.offcpu_outside_ns,
        BTreeMap::from([("D".to_owned(), 100), ("R".to_owned(), 50)])
    );
    assert_eq!(t.on_cpu_outside_ns(), 150);
    // The candidate runs 200 ns longer, all of it runnable but not running, between its calls: R [400, 600) after
    // the same D wait, so that its on-CPU time, [150, 200) and [600, 700), is the baseline's.
    last.ts_ns = 700;
    let cand = scanned(
        &m,
        &[
            offcpu("R", 100, 50),
            offcpu("D", 250, 150),
            offcpu("R", 400, 200),
            last,
        ],
    );
    let with = |matrix: &FeatureMatrix, scan| Run {
        name: "x".into(),
        matrix: matrix.clone(),
        scan: Some(scan),
    };
    let c = compare(&with(&m, base), &with(&m, cand)).unwrap();
    let between: Vec<(&str, i64)> = c
        .between_calls
        .as_ref()
        .unwrap()
        .iter()
        .map(|b| (b.state.as_str(), b.delta_ns))
        .collect();
    assert_eq!(between, [("offcpu_D", 0), ("offcpu_R", 200), ("on_cpu", 0)]);
    let cause = c.cause.unwrap();
    assert_eq!(
        (
            cause.layer.as_str(),
            cause.reason,
            cause.share,
            cause.added_ns
        ),
        ("sched", Reason::CpuContention, 1.0, 200.0)
    );
    let wall = c.wall.unwrap();
    assert_eq!((wall.baseline_ns, wall.candidate_ns), (500, 700));
}

/// A fio-like job: process 1 opens, sleeps in S while process 2 reads, and opens again when it is done. The
/// candidate's reads wait above the device. Per instant, the sleeping process is idle: the reads carry the time.
fn helper_and_worker(read_ns: u64, block_ns: f64, waker: Option<(i64, i64)>) -> Run {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    const READS: usize = 4;
    let mut calls = vec![call("openat", None, None, 100, 100)];
    calls.extend((0..READS).map(|_| Call {
        pid: 2,
        ..call("read", Some(true), Some(65536), read_ns, 400)
    }));
    calls.push(call("openat", None, None, 100, 100));
    let col = |v: f64| {
        let mut c = vec![0.0];
        c.extend([v; READS]);
        c.push(0.0);
        c
    };
    let mut m = matrix(
        &calls,
        vec![
            ("block", "", E, col(block_ns)),
            ("block", "block_device_read", T, col(500.0)),
        ],
    );
    let reads_end = 100 + READS as u64 * read_ns;
    // Process 2 reads back to back from 100 until `reads_end`; process 1 opens again 100 ns after it.
    let mut ts = vec![0];
    ts.extend((0..READS as u64).map(|i| 100 + i * read_ns));
    ts.push(reads_end + 100);
    m.ts_ns = ts;
    let mut sleep = offcpu("S", 100, reads_end);
    if let Some((p, t)) = waker {
        sleep.args.other = vec![
            ("waker_pid".into(), datasets::ArgValue::Int(p)),
            ("waker_tid".into(), datasets::ArgValue::Int(t)),
        ];
    }
    Run {
        name: format!("reads of {read_ns} ns"),
        scan: Some(scanned(&m, &[sleep])),
        matrix: m,
    }
}

#[test]
fn the_change_in_wall_clock_time_splits_into_causes_and_a_sleeping_helper_is_idle() {
    // Baseline: 4 reads of 1000 ns, 600 of them in block (500 on the device: device-bound), 400 their own; the
    // candidate's reads take 3000 ns, 2600 in block (2100 above the device: throttled). Process 1 is woken by a timer
    // (no waker).
    let base = helper_and_worker(1000, 600.0, None);
    let cand = helper_and_worker(3000, 2600.0, None);
    let c = compare(&base, &cand).unwrap();
    let wall = c.wall.as_ref().unwrap();
    // Wall: 100 + 4 reads + 100 asleep after them + 100.
    assert_eq!((wall.baseline_ns, wall.candidate_ns), (4300, 12300));
    assert_eq!(wall.delta_ns, 8000);
    let sum: f64 = wall.causes.iter().map(|x| x.added_ns).sum();
    assert!((sum - wall.delta_ns as f64).abs() < 1e-6, "{sum}");
    let parts: Vec<(&str, Reason, f64, f64)> = wall
        .causes
        .iter()
        .map(|x| (x.layer.as_str(), x.reason, x.baseline_ns, x.candidate_ns))
        .collect();
    // Per instant: the reads (block and their own time), the opens' own time, and 100 ns when process 1 alone is
    // alive and asleep. The block time is compared under the candidate's reason.
    assert_eq!(
        parts,
        [
            (
                "block",
                Reason::ThrottledAboveDevice,
                4.0 * 600.0,
                4.0 * 2600.0
            ),
            ("sched", Reason::SleepWait, 100.0, 100.0),
            (
                "self",
                Reason::CallOverhead,
                4.0 * 400.0 + 200.0,
                4.0 * 400.0 + 200.0
            ),
        ]
    );
    let cause = c.cause.as_ref().unwrap();
    assert_eq!(
        (
            cause.layer.as_str(),
            cause.reason,
            cause.added_ns,
            cause.share
        ),
        ("block", Reason::ThrottledAboveDevice, 8000.0, 1.0)
    );
    // Summed over threads, the sleep grew as much as the reads: that detail stays in the comparison.
    let between: Vec<(&str, i64)> = c
        .between_calls
        .as_ref()
        .unwrap()
        .iter()
        .map(|b| (b.state.as_str(), b.delta_ns))
        .collect();
    assert_eq!(between, [("offcpu_S", 8000), ("on_cpu", 0)]);
    // The same runs, the other way round: the candidate is faster, and nothing is named.
    let back = compare(&cand, &base).unwrap();
    assert_eq!(back.cause, None);
    assert_eq!(back.wall.unwrap().delta_ns, -8000);
}

/// Thread 1 reads four times for 1000 ns, runnable for the second half of each read while thread 2 of the job holds
/// the CPU for its own read of 500 ns. Those instants are thread 2's, so no part of the job's wall-clock time is a
/// wait for a CPU: the reads' 2000 ns runnable are no part of their kind's share of the instants they hold (3250
/// ns, their own time). Held by a task outside the job, the same waits are a third of the reads' time, and of
/// their share.
#[test]
fn a_calls_wait_for_a_cpu_another_thread_of_the_job_held_is_no_part_of_its_wall_clock_share() {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    use report::diagnose::job::WallSplit;
    use report::diagnose::kinds::KindTable;
    let mut calls: Vec<Call> = (0..4)
        .map(|_| call("read", Some(false), Some(4096), 1000, 500))
        .collect();
    calls.extend((0..4).map(|_| Call {
        pid: 2,
        ..call("read", Some(false), Some(4096), 500, 500)
    }));
    let runnable: Vec<f64> = (0..8).map(|i| if i < 4 { 500.0 } else { 0.0 }).collect();
    let mut m = matrix(
        &calls,
        vec![
            ("sched", "", E, runnable.clone()),
            ("sched", "offcpu_R", T, runnable),
        ],
    );
    m.ts_ns = vec![0, 2000, 4000, 6000, 500, 2500, 4500, 6500];
    let split = |holder: i64| {
        let waits: Vec<Event> = (0..4)
            .map(|i| {
                let mut e = offcpu("R", i * 2000 + 500, 500);
                e.args.other = vec![
                    ("held_by_pid".into(), datasets::ArgValue::Int(holder)),
                    ("held_by_tid".into(), datasets::ArgValue::Int(holder)),
                ];
                e
            })
            .collect();
        WallSplit::of(&KindTable::of(&m), &scanned(&m, &waits)).parts
    };
    let part = |parts: &BTreeMap<(String, Reason), f64>, layer: &str, reason| {
        parts
            .get(&(layer.to_owned(), reason))
            .copied()
            .unwrap_or(0.0)
    };
    let job = split(2);
    assert_eq!(part(&job, "sched", Reason::CpuContention), 0.0);
    assert_eq!(part(&job, "self", Reason::MemoryCopy), 3250.0);
    let outside = split(9);
    let kind: f64 = 3250.0;
    assert!((part(&outside, "sched", Reason::CpuContention) - kind / 3.0).abs() < 1e-6);
    assert!((part(&outside, "self", Reason::MemoryCopy) - kind * 2.0 / 3.0).abs() < 1e-6);
}

/// Two runs of the same job: no part of the change is above the noise. In the candidate, process 1's timer fired
/// while process 2 ran, so the sched layer names process 2 as its waker: it is idle all the same.
#[test]
fn the_same_job_twice_names_no_cause() {
    let c = compare(
        &helper_and_worker(1000, 600.0, None),
        &helper_and_worker(1010, 610.0, Some((2, 2))),
    )
    .unwrap();
    let wall = c.wall.as_ref().unwrap();
    assert_eq!(wall.delta_ns, 40);
    let block: Vec<(Reason, f64)> = wall
        .causes
        .iter()
        .filter(|x| x.layer == "block")
        .map(|x| (x.reason, x.added_ns))
        .collect();
    assert_eq!(block, [(Reason::DeviceBound, 40.0)]);
    assert_eq!(c.cause, None);
}

#[test]
fn application_patterns_fire_at_their_thresholds() {
    // A file synced after every second write; writes of 4 KiB.
    let mut calls: Vec<Call> = Vec::new();
    for _ in 0..3 {
        for op in ["write", "write", "fsync"] {
            let (size, dur) = if op == "fsync" {
                (None, 1000)
            } else {
                (Some(4096), 100)
            };
            calls.push(Call {
                file: Some("/f"),
                ..call(op, Some(false), size, dur, dur)
            });
        }
    }
    let f = findings(&matrix(&calls, vec![]), None);
    let sync = find(&f, Reason::FsyncHeavy);
    assert_eq!(
        (
            sync.scope.clone(),
            sync.cost_ns,
            sync.evidence["writes_per_sync"]
        ),
        (Scope::File { path: "/f".into() }, 3000, 2.0)
    );

    // Six writes are far from Drishti's 1000 small requests.
    assert!(
        f.iter().all(|x| x.reason != Reason::SmallRequests),
        "{:?}",
        summary(&f)
    );
    // Synced once, the file keeps one sync of 1000 ns.
    assert_eq!(
        (sync.gain_ns, sync.gain_method.slug.as_str()),
        (2000, "syncs_batched")
    );

    let f = findings(&two_processes(true), None);
    // Process 1 reads for 1000 ns and freads for 1000, process 2 reads for 3000: their mean is 2500.
    let imb = find(&f, Reason::Imbalance);
    assert_eq!(
        (
            imb.scope.clone(),
            imb.cost_ns,
            imb.gain_ns,
            imb.evidence["imbalance"]
        ),
        (Scope::Process { pid: 2 }, 500, 500, 1.0 / 3.0)
    );
    // The second open of /d repeats the first: 1500 of the 8000 ns, while metadata is 3000 of them.
    let meta = find(&f, Reason::MetadataHeavy);
    assert_eq!(
        (meta.cost_ns, meta.share, meta.evidence["share_of_io_time"]),
        (1500, 1500.0 / 8000.0, 3000.0 / 8000.0)
    );
    // 10 of the 70 MiB through fread, at 1000 ns where the reads' 4000 ns per 60 MiB would take 666.7.
    let stdio = find(&f, Reason::StdioInsteadOfPosix);
    assert_eq!(
        (stdio.cost_ns, stdio.evidence["share_of_bytes"]),
        (333, 10.0 / 70.0)
    );
    // Reads of 3 MiB are not small; fread's 1 MiB are not either.
    assert!(
        f.iter().all(|x| x.reason != Reason::SmallRequests),
        "{:?}",
        summary(&f)
    );
    let total: f64 = f.iter().map(|x| x.share).sum();
    assert!(total <= 1.0, "{total}");
}

/// Two processes of ten 3 MiB reads each, one three times slower, at the same time or one after the other;
/// process 1 also opens /d twice (1500 ns each) and freads 10 MiB (1000 ns). Process 2 starts with process 1, or
/// after its last call.
fn two_processes(together: bool) -> FeatureMatrix {
    let mut calls: Vec<Call> = Vec::new();
    for (pid, dur) in [(1, 100), (2, 300)] {
        for _ in 0..10 {
            calls.push(Call {
                pid,
                ..call("read", None, Some(3 << 20), dur, dur)
            });
        }
    }
    for _ in 0..2 {
        calls.push(Call {
            file: Some("/d"),
            ..call("openat", None, None, 1500, 1500)
        });
    }
    calls.extend((0..10).map(|_| call("fread", None, Some(1 << 20), 100, 100)));
    let mut m = matrix(&calls, vec![]);
    let end = (0..m.n_rows())
        .map(|r| m.ts_ns[r] + m.dur_ns[r])
        .max()
        .unwrap();
    let mut t = if together { 0 } else { end };
    for r in (0..m.n_rows()).filter(|&r| m.pid[r] == 2) {
        m.ts_ns[r] = t;
        t += m.dur_ns[r];
    }
    m
}

/// A pipeline's stages (`tar | gzip`) do different work side by side: processes of two programs are not each
/// other's peers. Two processes of one program are, and a number after the name (`worker1`, `worker2`) is the same
/// role.
#[test]
fn two_programs_side_by_side_are_not_imbalanced() {
    let named = |names: [&str; 2]| {
        let mut m = two_processes(true);
        m.process = m
            .pid
            .iter()
            .map(|p| Some(names[*p as usize - 1].to_owned()))
            .collect();
        findings(&m, None)
    };
    let f = named(["tar", "gzip"]);
    assert!(
        f.iter().all(|x| x.reason != Reason::Imbalance),
        "{:?}",
        summary(&f)
    );
    let f = named(["worker1", "worker2"]);
    assert_eq!(find(&f, Reason::Imbalance).scope, Scope::Process { pid: 2 });
}

#[test]
fn processes_that_ran_one_after_another_are_not_imbalanced() {
    // The same calls as when they ran together, but process 2 starts after process 1's last call.
    let f = findings(&two_processes(false), None);
    assert!(
        f.iter().all(|x| x.reason != Reason::Imbalance),
        "{:?}",
        summary(&f)
    );
}

#[test]
fn the_json_carries_sorted_findings_and_the_cause() {
    let (base, cand) = throttled_pair();
    let d = Diagnosis::of(&run("cand", cand), Some(&run("base", base))).unwrap();
    let v: Value = serde_json::from_str(&d.to_json().unwrap()).unwrap();
    let costs: Vec<u64> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["cost_ns"].as_u64().unwrap())
        .collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "{costs:?}");
    let top = &v["findings"][0];
    for key in [
        "layer",
        "reason",
        "scope",
        "cost_ns",
        "share",
        "evidence",
        "recommendation",
    ] {
        assert!(top.get(key).is_some(), "{key} missing from {top}");
    }
    assert_eq!(
        v["comparison"]["cause"],
        serde_json::json!({"layer": "block", "reason": "throttled_above_device", "share": 1.0, "added_ns": 24066.0})
    );
    assert_eq!(v["comparison"]["calls"][0]["label"], "read direct 10K-100K");
}

fn write_matrix(dir: &Path, name: &str, m: &FeatureMatrix) -> String {
    let p = dir.join(name);
    m.write(&p, Default::default()).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn dc_report_compares_two_matrices_and_refuses_ones_with_nothing_in_common() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = throttled_pair();
    let b = write_matrix(dir.path(), "base.parquet", &base);
    let c = write_matrix(dir.path(), "cand.parquet", &cand);
    let json = dir.path().join("diag.json");
    let page = dir.path().join("diag.html");
    let out = Command::new(REPORT)
        .args([
            &c,
            "--baseline",
            &b,
            "--json",
            json.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["comparison"]["cause"]["reason"], "throttled_above_device");
    // The terminal says the cause in words, with the JSON's share (1.0) and added time (24,066 ns).
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("\nAgainst the baseline {b}: 100% of the added time (24.1 µs) is block time queued in the block layer above the device.\n")),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2 id=\"findings\">Findings</h2>"), "{html}");
    assert!(
        html.contains("The added time is mostly block / throttled_above_device: 100.0% of it"),
        "{html}"
    );
    assert!(
        html.contains("The whole job: 15 calls took 0.036 ms against 12 calls in 0.012 ms (+0.024 ms); 12 direct read requests of 65536 bytes on average against 12 of 65536."),
        "{html}"
    );

    let other = matrix(&[call("read", Some(false), Some(4096), 10, 10)], vec![]);
    let o = write_matrix(dir.path(), "other.parquet", &other);
    let out = Command::new(REPORT)
        .args([
            &o,
            "--baseline",
            &b,
            "-o",
            dir.path().join("x.html").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "dc-report: {b} and {o} have no kind of call in common (operation × buffered or direct × size class): nothing to compare\n"
        )
    );
    assert!(!dir.path().join("x.html").exists());
}

/// A thread's life, instant by instant: the innermost of nested calls, a sleep in a call woken by another thread of
/// the job (waiting for the job) or by a thread outside it (the call's), and off-CPU states outside calls; and the
/// time each call waited for the job.
#[test]
fn a_threads_life_names_the_innermost_call_and_waits_for_the_job() {
    let mut calls = vec![
        call("read", Some(false), Some(4096), 1000, 100),
        call("read", Some(false), Some(4096), 400, 100),
        call("openat", None, None, 100, 100),
    ];
    calls.push(Call {
        pid: 2,
        ..call("openat", None, None, 100, 100)
    });
    let mut m = matrix(&calls, vec![]);
    // Thread 1: an fread-like call [0, 1000) holding a read [200, 600); an open [1500, 1600). Thread 2 opens at 0.
    m.ts_ns = vec![0, 200, 1500, 0];
    let woken_by = |mut e: Event, (p, t): (i64, i64), comm: &str| {
        e.args.other = vec![
            ("waker_pid".into(), datasets::ArgValue::Int(p)),
            ("waker_tid".into(), datasets::ArgValue::Int(t)),
            ("waker_comm".into(), datasets::ArgValue::Str(comm.into())),
        ];
        e
    };
    let in_interrupt = |mut e: Event, context: &str| {
        e.args
            .other
            .push(("woken_in".into(), datasets::ArgValue::Str(context.into())));
        e
    };
    let s = scanned(
        &m,
        &[
            // In the inner read, woken by thread 2: waiting for the job.
            woken_by(offcpu("S", 300, 100), (2, 2), "t2"),
            // In the inner read, woken by a thread outside the job: the read's.
            woken_by(offcpu("S", 450, 50), (9, 9), "jbd2/vda1-8"),
            // In the inner read, woken by a timer's interrupt while thread 2 ran: the read's, and no task's.
            in_interrupt(woken_by(offcpu("S", 520, 40), (2, 2), "t2"), "hardirq"),
            // Outside calls: runnable, then asleep.
            offcpu("R", 1000, 100),
            offcpu("S", 1200, 200),
        ],
    );
    let lives = s.activities();
    assert_eq!(
        lives,
        [
            (
                (1, 1),
                vec![
                    (0, 200, Activity::Call(0)),
                    (200, 300, Activity::Call(1)),
                    (300, 400, Activity::JobWait),
                    (400, 600, Activity::Call(1)),
                    (600, 1000, Activity::Call(0)),
                    (1000, 1100, Activity::Off('R')),
                    (1100, 1200, Activity::OnCpu),
                    (1200, 1400, Activity::Off('S')),
                    (1400, 1500, Activity::OnCpu),
                    (1500, 1600, Activity::Call(2)),
                ]
            ),
            ((2, 2), vec![(0, 100, Activity::Call(3))]),
        ]
    );
    // The inner read's 100 ns asleep for thread 2 is the job's; its sleep for thread 9 is the read's own.
    assert_eq!(
        s.job_wait_in_rows('S'),
        std::collections::HashMap::from([(1, 100.0)])
    );
    assert!(s.job_wait_in_rows('R').is_empty());
    // Of the calls' sleeps, thread 9 (jbd2), outside the job, ended 50 ns; the interrupt's wakeup is no task's, and
    // the sleep outside calls is none of theirs.
    assert_eq!(
        s.sleeps_ended_outside(),
        std::collections::BTreeMap::from([("jbd2/vda1-8".to_owned(), 50.0)])
    );
    assert!(s.marks_interrupts);
    // 50 of 250 ns of I/O is 20%, past the note's 10%; 50 of 600 is not.
    assert_eq!(
        report::diagnose::elsewhere::note(Some(&s), 250.0).as_deref(),
        Some(
            "20% of the calls' time (0.000 s) was spent asleep until a task outside the traced job woke them \
             (jbd2/vda1-8 20%): what those tasks did for the job is not in this trace, so the findings name the wait, \
             not that work."
        )
    );
    assert_eq!(report::diagnose::elsewhere::note(Some(&s), 600.0), None);
}

/// Four processes of ten 1 µs reads, 900 ns of each waiting on a lock: side by side (each process's i-th read at the
/// same instant) or one after another.
fn four_readers(together: bool) -> FeatureMatrix {
    use FeatureKind::ExclusiveNs as E;
    let calls: Vec<Call> = (1..=4)
        .flat_map(|pid| {
            (0..10).map(move |_| Call {
                pid,
                ..call("read", Some(true), Some(65536), 1000, 100)
            })
        })
        .collect();
    let mut m = matrix(&calls, vec![("lock", "", E, vec![900.0; calls.len()])]);
    if together {
        for r in 0..m.n_rows() {
            m.ts_ns[r] = (r as u64 % 10) * 1000;
        }
    }
    m
}

#[test]
fn a_gain_counts_the_wall_clock_time_of_calls_that_ran_side_by_side_once() {
    let gain = |together: bool| {
        let m = four_readers(together);
        let f = findings(&m, Some(&scanned(&m, &[])));
        let lock = find(&f, Reason::LockContention).clone();
        (lock.cost_ns, lock.gain_ns, lock.gain_method.how)
    };
    let (serial_cost, serial_gain, serial_how) = gain(false);
    let (cost, together_gain, how) = gain(true);
    // One after another, each wait is the job's; side by side, four waits fill each instant once.
    assert_eq!(serial_gain, 40 * 900, "{serial_how}");
    assert_eq!(cost, serial_cost);
    assert_eq!(together_gain, serial_gain / 4, "{how}");
    assert!(how.contains("25% of their time"), "{how}");
}

/// A main process's twelve 50 ns reads from t = 0, beside a worker's `worker` 1 µs reads at the same time.
fn main_and_worker(worker: usize) -> FeatureMatrix {
    let mut calls: Vec<Call> = (0..12)
        .map(|_| call("read", None, Some(4096), 50, 50))
        .collect();
    calls.extend((0..worker).map(|_| Call {
        pid: 2,
        ..call("read", Some(true), Some(4096), 1000, 100)
    }));
    let mut m = matrix(&calls, vec![]);
    for r in 0..m.n_rows() {
        m.ts_ns[r] = if r < 12 { r } else { r - 12 } as u64 * 1000;
    }
    m
}

#[test]
fn a_main_process_doing_a_few_calls_beside_its_worker_is_not_imbalanced() {
    // fio's shape: the main process reads a dozen small files while its job makes a hundred reads.
    let f = findings(&main_and_worker(100), None);
    assert!(
        f.iter().all(|x| x.reason != Reason::Imbalance),
        "{:?}",
        summary(&f)
    );
    // Twelve reads against twenty slower ones are like work, and the slower process is a straggler.
    let f = findings(&main_and_worker(20), None);
    assert_eq!(
        find(&f, Reason::Imbalance).scope,
        Scope::Process { pid: 2 },
        "{:?}",
        summary(&f)
    );
}

/// 3,000 buffered 64 KiB writes, one in two at a random offset; `paused_ns` of each random one waits on dirty-page
/// throttling (in the writeback layer), and every write's own copy takes 1 µs.
fn random_writes(paused_ns: f64) -> FeatureMatrix {
    use FeatureKind::{ExclusiveNs as E, TimeNs as T};
    const N: usize = 3000;
    let paused: Vec<f64> = (0..N)
        .map(|i| if i % 2 == 1 { paused_ns } else { 0.0 })
        .collect();
    let calls: Vec<Call> = paused
        .iter()
        .map(|p| call("write", Some(false), Some(65536), 1000 + *p as u64, 1000))
        .collect();
    let mut m = matrix(
        &calls,
        vec![
            ("writeback", "", E, paused.clone()),
            ("writeback", "offcpu_D@balance_dirty_pages", T, paused),
        ],
    );
    m.sequential = (0..N).map(|i| Some(i % 2 == 0)).collect();
    m
}

#[test]
fn random_writes_paused_by_dirty_throttling_are_not_slow_for_their_offsets() {
    // Random writes slower by themselves are a pattern: 1,500 of them, each 2 µs over the sequential ones' 1 µs.
    let slower = {
        let mut m = random_writes(0.0);
        for r in (1..m.n_rows()).step_by(2) {
            m.dur_ns[r] = 3000;
            m.self_ns[r] = 3000;
        }
        m
    };
    let f = findings(&slower, None);
    assert_eq!(find(&f, Reason::RandomAccess).gain_ns, 1500 * 2000);
    // Paused by dirty throttling instead, for 50 µs each, they are not: the pause is the writeback layer's.
    let f = findings(&random_writes(50_000.0), None);
    assert!(
        f.iter().all(|x| x.reason != Reason::RandomAccess),
        "{:?}",
        summary(&f)
    );
    assert_eq!(find(&f, Reason::DirtyThrottling).cost_ns, 1500 * 50_000);
}

/// 100 buffered 4 KiB writes of one file, with an fsync of 1 ms (0.9 ms of it waiting for the journal) after every
/// one of them, or once at the end.
fn synced(every_write: bool) -> Run {
    use FeatureKind::ExclusiveNs as E;
    let mut calls = Vec::new();
    for i in 0..100 {
        calls.push(Call {
            file: Some("/db"),
            ..call("write", Some(false), Some(4096), 2000, 2000)
        });
        if every_write || i == 99 {
            calls.push(Call {
                file: Some("/db"),
                ..call("fsync", None, None, 1_000_000, 100_000)
            });
        }
    }
    let jbd2 = calls
        .iter()
        .map(|c| if c.op == "fsync" { 900_000.0 } else { 0.0 })
        .collect();
    let m = matrix(&calls, vec![("jbd2", "", E, jbd2)]);
    let end = m.ts_ns.last().unwrap() + m.dur_ns.last().unwrap();
    Run {
        name: format!("every write synced: {every_write}"),
        scan: Some(scanned(&m, &[offcpu("S", end, 1000)])),
        matrix: m,
    }
}

/// The comparison of `base` against `cand` names the application's syncs, their time gone to the journal.
fn names_the_syncs_through_the_journal(base: &Run, cand: &Run) {
    let c = compare(base, cand).unwrap();
    let cause = c.cause.clone().unwrap_or_else(|| panic!("{:?}", c.wall));
    assert_eq!(
        (cause.layer.as_str(), cause.reason),
        ("app", Reason::FsyncHeavy)
    );
    let through = cause.through.unwrap();
    assert_eq!(
        (through.layer.as_str(), through.reason),
        ("jbd2", Reason::JournalWait)
    );
}

#[test]
fn a_sync_after_every_write_is_the_cause_and_the_journal_where_its_time_went() {
    names_the_syncs_through_the_journal(&synced(false), &synced(true));
    // The same job twice names no root cause where none was added.
    assert!(
        compare(&synced(true), &synced(true))
            .unwrap()
            .cause
            .is_none()
    );
}

/// 100 buffered 4 KiB writes of one file opened O_DSYNC, so that each returns once its data is on the device: 1 ms,
/// 0.9 ms of it waiting for the journal and 2 µs its own code (the scan marks them, [`JobScan::synced_writes`]);
/// or the same writes without the flag, 2 µs each.
fn dsync_writes(dsync: bool) -> Run {
    use FeatureKind::ExclusiveNs as E;
    let dur = if dsync { 1_000_000 } else { 2000 };
    let calls: Vec<Call> = (0..100)
        .map(|_| Call {
            file: Some("/log"),
            ..call("write", Some(false), Some(4096), dur, 2000)
        })
        .collect();
    let jbd2 = vec![if dsync { 900_000.0 } else { 0.0 }; 100];
    let m = matrix(&calls, vec![("jbd2", "", E, jbd2)]);
    let end = m.ts_ns.last().unwrap() + m.dur_ns.last().unwrap();
    let mut scan = scanned(&m, &[offcpu("S", end, 1000)]);
    scan.synced_writes = vec![dsync; 100];
    Run {
        name: format!("O_DSYNC: {dsync}"),
        scan: Some(scan),
        matrix: m,
    }
}

/// The scan marks a write synced when its process last opened its file with O_DSYNC (O_SYNC includes it), by the
/// open's `flags`: an open without it ends that, and another file's writes are not the file's.
#[test]
fn a_write_is_synced_after_an_open_with_o_dsync_and_until_an_open_without() {
    let ops = ["openat", "write", "write", "openat", "write", "write"];
    let files = ["/log", "/log", "/log", "/log", "/log", "/other"];
    let calls: Vec<Call> = (ops.iter().zip(files))
        .map(|(&op, file)| Call {
            file: Some(file),
            ..call(op, None, Some(4096), 1000, 1000)
        })
        .collect();
    let m = matrix(&calls, vec![]);
    let events: Vec<Event> = (0..calls.len())
        .map(|r| {
            let mut args = Args {
                fname: Some(files[r].to_owned()),
                ..Args::default()
            };
            match (ops[r], r) {
                ("openat", 0) => args.other = vec![("flags".into(), ArgValue::Int(0o10001))],
                ("openat", _) => args.other = vec![("flags".into(), ArgValue::Int(0o1))],
                _ => (args.offset, args.size) = (Some(0), Some(4096)),
            }
            Event {
                id: None,
                name: ops[r].into(),
                cat: "sys".into(),
                ph: Phase::Complete,
                pid: 1,
                tid: 1,
                ts_ns: m.ts_ns[r],
                dur_ns: m.dur_ns[r],
                args,
            }
        })
        .collect();
    let scan = scanned(&m, &events);
    assert_eq!(scan.synced_writes, [false, true, true, false, false, false]);
}

#[test]
fn writes_to_a_file_opened_o_dsync_are_each_a_sync_the_application_makes() {
    names_the_syncs_through_the_journal(&dsync_writes(false), &dsync_writes(true));
    let run = dsync_writes(true);
    let f = findings(&run.matrix, run.scan.as_ref());
    let sync = find(&f, Reason::FsyncHeavy);
    assert_eq!(
        (
            sync.evidence["synced_writes"],
            sync.evidence["writes_per_sync"]
        ),
        (100.0, 1.0)
    );
    // Each write keeps its own 2 µs; the rest of its time is the sync's, all but one median sync saved.
    assert_eq!(sync.cost_ns, 100 * 998_000);
    assert_eq!(sync.gain_ns, 99 * 998_000);
    // Without the flag, the same writes are no sync.
    let plain = dsync_writes(false);
    let f = findings(&plain.matrix, plain.scan.as_ref());
    assert!(f.iter().all(|x| x.reason != Reason::FsyncHeavy));
}

/// 1,100 buffered reads of 4 KiB of one file, each 2 µs of its own time: read in order, larger requests would save
/// all but one of them (4.4 MiB in five 1 MiB calls); at random offsets, as a key-value store looks its keys up,
/// none, since a larger request would move bytes the program did not ask for.
#[test]
fn small_requests_at_random_offsets_save_no_calls() {
    use FeatureKind::ExclusiveNs as E;
    let reads = |sequential: bool| {
        let calls: Vec<Call> = (0..1100)
            .map(|_| Call {
                file: Some("/db.sst"),
                ..call("read", Some(false), Some(4096), 3000, 2000)
            })
            .collect();
        let mut m = matrix(&calls, vec![("page_cache", "", E, vec![1000.0; 1100])]);
        m.sequential = (0..1100).map(|i| (i > 0).then_some(sequential)).collect();
        findings(&m, None)
    };
    let in_order = reads(true);
    assert_eq!(
        find(&in_order, Reason::SmallRequests).evidence["calls_saved"],
        1095.0
    );
    let random = reads(false);
    assert!(
        random.iter().all(|x| x.reason != Reason::SmallRequests),
        "{:?}",
        summary(&random)
    );
}

/// 1,100 buffered writes of 64 KiB to one file, each 20 µs of its own time (the copy of its bytes, which a larger
/// request still makes), and 20 closes of 1 µs: larger requests would save 1,031 calls (1,100 less one per MiB
/// written), each at what the cheapest call costs, not at a 64 KiB write's whole own time.
#[test]
fn calls_saved_by_larger_requests_are_priced_at_the_cheapest_calls_cost_when_all_have_one_size() {
    use FeatureKind::ExclusiveNs as E;
    let mut calls: Vec<Call> = (0..1100)
        .map(|_| Call {
            file: Some("/w"),
            ..call("write", Some(false), Some(65536), 21_000, 20_000)
        })
        .collect();
    calls.extend((0..20).map(|_| call("close", None, None, 1000, 1000)));
    let mut page_cache = vec![1000.0; 1100];
    page_cache.extend([0.0; 20]);
    let f = findings(
        &matrix(&calls, vec![("page_cache", "", E, page_cache)]),
        None,
    );
    let small = find(&f, Reason::SmallRequests);
    assert_eq!(
        (
            small.gain_ns,
            small.evidence["calls_saved"],
            small.gain_method.slug.as_str()
        ),
        (1_031_000, 1031.0, "recommended_size")
    );
    assert!(
        small
            .gain_method
            .how
            .contains("cheapest kind of call (close, median 1000 ns)"),
        "{}",
        small.gain_method.how
    );
}

/// A stat that waits for its inode's block: the wait (`offcpu_D@...`, filed under ext4) and its stack's frames
/// (`offcpu@...`, which span the same time) are one wait for I/O, not ext4's CPU time four times over; ext4's one
/// sample of 50 ns is its CPU time.
#[test]
fn a_waits_stack_frames_weigh_nothing_beside_the_wait() {
    use FeatureKind::{Count as C, ExclusiveNs as E, TimeNs as T};
    let calls: Vec<Call> = (0..10)
        .map(|_| call("newfstatat", None, None, 1000, 150))
        .collect();
    let m = matrix(
        &calls,
        vec![
            ("ext4", "", E, vec![850.0; 10]),
            ("ext4", "offcpu_D@__ext4_get_inode_loc", T, vec![800.0; 10]),
            ("ext4", "offcpu@__ext4_get_inode_loc", T, vec![800.0; 10]),
            ("ext4", "offcpu@__ext4_iget", T, vec![800.0; 10]),
            ("ext4", "offcpu@ext4_lookup", T, vec![800.0; 10]),
            ("ext4", "oncpu@ext4_lookup", T, vec![50.0; 10]),
            ("ext4", "oncpu@ext4_lookup", C, vec![1.0; 10]),
            ("ext4", "oncpu", C, vec![1.0; 10]),
        ],
    );
    let f = findings(&m, None);
    assert_eq!(find(&f, Reason::IoWait).cost_ns, 8000, "{:?}", summary(&f));
    assert!(
        !f.iter().any(|x| x.reason == Reason::KernelCpu),
        "{:?}",
        summary(&f)
    );
}

/// Two runs that share no program are still compared, and the comparison says so; one program on both sides, or
/// runs whose calls name no process, say nothing.
#[test]
fn a_comparison_of_two_different_programs_says_so() {
    // 20 buffered reads of `dur` each, by `program` (None: calls that name no process).
    let reads = |program: Option<&str>, dur: u64| {
        let calls: Vec<Call> = (0..20)
            .map(|_| call("read", Some(false), Some(4096), dur, dur))
            .collect();
        let mut m = matrix(&calls, Vec::new());
        m.process = vec![program.map(str::to_owned); 20];
        m
    };
    let note = |base: Option<&str>, cand: Option<&str>| {
        compare(
            &run("base", reads(base, 1000)),
            &run("cand", reads(cand, 3000)),
        )
        .unwrap()
        .programs_note
    };
    assert_eq!(
        note(Some("dd"), Some("fio")).as_deref(),
        Some(
            "the two runs share no program (baseline: dd; candidate: fio): the comparison sets their calls side by side, and its cause is the difference between two programs, not a cause acting on one"
        )
    );
    assert_eq!(note(Some("dd"), Some("dd")), None);
    assert_eq!(note(None, None), None);
}

/// Calls of one kind that overlap on one thread count each instant once: requests in flight together (io_uring's
/// reads, each lasting until its completion), or a call nested in one of its kind (an fread holding its read, both
/// buffered reads of 4 KiB); calls of different kinds stay whole.
#[test]
fn calls_of_one_kind_in_flight_together_count_their_union() {
    let mut calls: Vec<Call> = (0..4)
        .map(|_| call("io_uring_read", Some(true), Some(4096), 100, 0))
        .collect();
    calls.push(call("fread", Some(false), Some(4096), 1000, 0));
    calls.push(call("read", Some(false), Some(4096), 400, 0));
    calls.push(call("openat", None, None, 100, 0));
    let mut m = matrix(&calls, vec![]);
    // The four requests from 0, 10, 20 and 30: 400 ns summed over 130 ns of the clock. The fread [1000, 2000) holds
    // the read [1200, 1600) and the open [1700, 1800).
    m.ts_ns = vec![0, 10, 20, 30, 1000, 1200, 1700];
    let table = report::diagnose::kinds::KindTable::of(&m);
    let overlap = |rows: &[usize]| report::diagnose::wall::self_overlap(&m, &table, rows);
    assert_eq!(overlap(&[0, 1, 2, 3]), Some(130.0 / 400.0));
    assert_eq!(overlap(&[4, 5]), Some(1000.0 / 1400.0));
    assert_eq!(overlap(&[4, 6]), Some(1.0));
    assert_eq!(
        overlap(&[0, 1, 2, 3, 4, 5, 6]),
        Some((130.0 + 1000.0 + 100.0) / (400.0 + 1400.0 + 100.0))
    );
}
