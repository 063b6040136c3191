//! On-CPU samples: dd (a copy named so that bpftrace can tell it apart) writes a 512 MiB file
//! with 1 MiB buffered writes and reads it back eight times from the page cache, traced with
//! `--sample-hz`, while bpftrace samples the same threads at the same period inside the same
//! calls. Samples must fall only inside traced calls of the traced processes, carry symbolized
//! stacks through VFS and ext4, agree in number with bpftrace's, and become dc-features columns.
//! Calls are long, so that where each side's window opens and closes (each side's own probes run
//! at the calls' edges) matters little. Needs root, BPF, perf events and kallsyms; it fails (never
//! skips) where they are missing.

use std::collections::{BTreeMap, BTreeSet};

use datasets::read::{ReadOptions, read_all};
use datasets::{ArgValue, Event};
use features::{BuildOptions, FeatureKind};
use test_support::oracle::Oracle;
use tracer::{CollectOptions, Layer, LayerSelection, collect};

/// A whole number of microseconds a sample, so that bpftrace can tick at the same fixed period
/// (`profile:hz` would let the kernel adapt its period to reach a frequency).
const HZ: u32 = 4000;
const PERIOD_US: u32 = 1_000_000 / HZ;
/// The workload's name, as the kernel keeps it (at most 15 bytes).
const DD: &str = "dc-oncpu-dd";
const MIB: usize = 512;
const READS: usize = 8;
/// x86_64 numbers of read, write, pread64 and pwrite64: the calls both sides count samples in.
const CALLS: [(i64, &str); 4] = [(0, "read"), (1, "write"), (17, "pread64"), (18, "pwrite64")];

fn oracle_script() -> String {
    let ids: Vec<String> = CALLS
        .iter()
        .map(|(n, _)| format!("args->id == {n}"))
        .collect();
    format!(
        r#"BEGIN {{ printf("ready\n"); }}
tracepoint:raw_syscalls:sys_enter /comm == "{DD}" && ({})/ {{ @in[tid] = 1; }}
tracepoint:raw_syscalls:sys_exit /comm == "{DD}"/ {{ delete(@in[tid]); }}
profile:us:{PERIOD_US} /@in[tid]/ {{ @samples = count(); }}
END {{ clear(@in); }}"#,
        ids.join(" || ")
    )
}

fn text<'e>(e: &'e Event, key: &str) -> &'e str {
    match e.args.get(key) {
        Some(ArgValue::Str(s)) => s,
        other => panic!("sample at {} has {key} = {other:?}", e.ts_ns),
    }
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn samples_fall_inside_traced_calls_with_symbolized_stacks_as_often_as_bpftrace_sees() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::start(&oracle_script());
    let output = dir.path().join("trace.pfw.gz");
    let dd = dir.path().join(DD);
    std::fs::copy("/bin/dd", &dd).unwrap();
    let (dd, file) = (dd.display(), dir.path().join("oncpu.dat"));
    let file = file.display();
    let mut script = format!("{dd} if=/dev/zero of={file} bs=1M count={MIB} status=none");
    for _ in 0..READS {
        script.push_str(&format!(
            " && {dd} if={file} of=/dev/null bs=1M status=none"
        ));
    }
    let mut opts = CollectOptions::command(&output, vec!["sh".into(), "-c".into(), script]);
    opts.layers = LayerSelection::only(&[Layer::Sys, Layer::Oncpu]);
    opts.sample_hz = HZ;
    let summary = collect(&opts).expect("BPF must work on this machine");
    let maps = oracle.stop();
    eprintln!("{summary}");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!((summary.drops, summary.sample_stack_errors), (0, 0));
    let oncpu = summary.layers.iter().find(|l| l.layer == "oncpu").unwrap();
    assert_eq!(
        oncpu.with,
        [format!("kernel stacks at {HZ} Hz")],
        "{oncpu:?}"
    );
    assert_eq!(
        oncpu.attached.len(),
        std::thread::available_parallelism().unwrap().get(),
        "one CPU-clock event per CPU: {oncpu:?}"
    );

    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    features_file_the_samples(&trace.events);
    let calls: Vec<&Event> = trace.events.iter().filter(|e| e.cat == "sys").collect();
    let pids: BTreeSet<u64> = calls.iter().map(|e| e.pid).collect();
    let mut by_tid: BTreeMap<u64, Vec<&Event>> = BTreeMap::new();
    for c in &calls {
        by_tid.entry(c.tid).or_default().push(c);
    }
    let samples: Vec<&Event> = trace.events.iter().filter(|e| e.cat == "oncpu").collect();
    let mut in_counted = 0usize;
    let mut through = BTreeMap::from([("vfs_read", 0usize), ("vfs_write", 0)]);
    let mut ext4 = 0;
    for s in &samples {
        assert_eq!(s.name, "sample");
        assert!(
            pids.contains(&s.pid),
            "a sample of an untraced process: {s:?}"
        );
        assert_eq!(
            s.args.get("period_ns"),
            Some(&ArgValue::Int(1_000_000_000 / HZ as i64))
        );
        let call = by_tid
            .get(&s.tid)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.ts_ns <= s.ts_ns && s.ts_ns <= c.ts_ns + c.dur_ns)
            })
            .unwrap_or_else(|| panic!("sample at {} is inside no traced call", s.ts_ns));
        if CALLS.iter().any(|(_, name)| call.name == *name) {
            in_counted += 1;
        }
        let stack: Vec<&str> = text(s, "stack").split(';').collect();
        let layers: Vec<&str> = text(s, "stack_layers").split(';').collect();
        assert_eq!(stack.len(), layers.len(), "{s:?}");
        assert!(
            stack.iter().all(|f| !f.is_empty() && *f != "?"),
            "unsymbolized frame: {s:?}"
        );
        ext4 += usize::from(layers.contains(&"ext4"));
        for (f, n) in through.iter_mut() {
            if let Some(i) = stack.iter().position(|g| g == f) {
                assert_eq!(layers[i], "vfs", "{s:?}");
                *n += 1;
            }
        }
    }
    assert!(
        through.values().all(|&n| n > 0) && ext4 > 0,
        "samples through VFS: {through:?}, through ext4: {ext4}"
    );
    // Each count is the ticks of a 4 kHz clock that land in the same calls: the phases of the
    // two clocks are independent, so each count is off the calls' CPU time × rate by about its
    // square root. Four standard deviations of the difference of two such counts.
    let bpftrace = maps["@samples"][""] as usize;
    let tolerance = 4.0 * ((in_counted + bpftrace) as f64).sqrt();
    eprintln!(
        "samples in read/write calls: {in_counted}, bpftrace {bpftrace}, tolerance {tolerance:.0}"
    );
    assert!(
        bpftrace >= 200,
        "the workload must give hundreds of samples: {bpftrace}"
    );
    assert!(
        (in_counted as f64 - bpftrace as f64).abs() <= tolerance,
        "dc-trace took {in_counted} samples in read/write calls, bpftrace {bpftrace}: more than {tolerance:.0} apart"
    );
}

/// dc-features gives the sampled functions columns under their layers, vfs and ext4 among them,
/// each as many samples as the stacks inside the rows name it, and keeps every row's identity
/// `self_ns + Σ excl::* == dur`.
fn features_file_the_samples(events: &[Event]) {
    let m = features::from_events(events, &BuildOptions::default()).unwrap();
    let rows: Vec<(u64, u64, u64)> = (0..m.op.len())
        .map(|i| (m.tid[i], m.ts_ns[i], m.ts_ns[i] + m.dur_ns[i]))
        .collect();
    let in_rows = |f: &str| {
        events
            .iter()
            .filter(|e| e.cat == "oncpu" && text(e, "stack").split(';').any(|g| g == f))
            .filter(|e| {
                rows.iter()
                    .any(|&(tid, ts, end)| e.tid == tid && ts <= e.ts_ns && e.ts_ns <= end)
            })
            .count() as f64
    };
    let total = |column: &str| -> f64 {
        m.features
            .iter()
            .find(|c| c.column == column)
            .unwrap_or_else(|| panic!("no column {column}"))
            .values
            .iter()
            .sum()
    };
    let period = f64::from(1_000_000_000 / HZ);
    for (layer, f) in [
        ("vfs", "vfs_write"),
        ("vfs", "vfs_read"),
        ("ext4", "ext4_buffered_write_iter"),
    ] {
        let n = in_rows(f);
        assert!(n > 0.0, "no sample in {f}");
        assert_eq!(total(&format!("count::{layer}::oncpu@{f}")), n, "{f}");
        assert_eq!(total(&format!("{layer}::oncpu@{f}")), n * period, "{f}");
    }
    for i in 0..m.op.len() {
        let excl: f64 = m
            .features
            .iter()
            .filter(|c| c.kind == FeatureKind::ExclusiveNs)
            .map(|c| c.values[i])
            .sum();
        assert_eq!(m.self_ns[i] as f64 + excl, m.dur_ns[i] as f64, "row {i}");
    }
}
