//! A memory cgroup at its limit makes its own tasks reclaim (vmscan's memcg_reclaim_begin → end, where no direct
//! reclaim fires): the mm layer records each such reclaim of the workload as `memcg_reclaim`, as many and as long
//! as bpftrace pairs them for the same process in the same run. The reclaim also queues work to kernel workers
//! (its pressure events): a wait for a CPU a worker held names the work it ran, as bpftrace saw that worker run it.
//! Needs root, cgroup v1's memory controller and BPF; it fails (never skips) where they are missing.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use datasets::ArgValue;
use datasets::read::{ReadOptions, read_all};
use test_support::oracle::Oracle;
use test_support::workload::COMM;
use tracer::{CollectOptions, Layer, LayerSelection, collect};

use crate::trace_testload;

/// 32 MiB written through the page cache, under a limit of 8 MiB.
const BLOCKS: u64 = 512;
const BLOCK: u64 = 65536;
const LIMIT: u64 = 8 << 20;
/// Per interval: both programs read the clock on the same firing, one after the other.
const TOLERANCE_NS: i64 = 20_000;

/// A memory cgroup, removed when dropped (its tasks have exited by then).
struct Group(PathBuf);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

/// A memory cgroup of `name` under `LIMIT`, and the options that trace the test workload writing in it into
/// `dir`'s `trace.pfw.gz`.
fn limited(name: &str, dir: &Path, layers: &[Layer]) -> (Group, CollectOptions) {
    let group = Group(PathBuf::from(format!(
        "/sys/fs/cgroup/memory/dc-trace-test-{name}-{}",
        std::process::id()
    )));
    fs::create_dir(&group.0).expect("cgroup v1's memory controller");
    fs::write(group.0.join("memory.limit_in_bytes"), LIMIT.to_string()).unwrap();
    let work = dir.join("work");
    fs::create_dir(&work).unwrap();
    let mut opts = trace_testload(
        &dir.join("trace.pfw.gz"),
        &work,
        [BLOCKS.to_string(), BLOCK.to_string()],
    );
    opts.layers = LayerSelection::only(layers);
    opts.start_in = vec![group.0.clone()];
    (group, opts)
}

#[test]
fn the_reclaim_a_memory_limit_makes_the_workload_do_matches_bpftrace() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let (_group, opts) = limited("memcg", dir.path(), &[Layer::Sys, Layer::Mm]);
    let oracle = Oracle::start(&format!(
        r#"
tracepoint:syscalls:sys_exit_execve /comm == "{COMM}"/ {{ @go[pid] = 1; }}
tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin /@go[pid]/ {{ @start[tid] = nsecs; }}
tracepoint:vmscan:mm_vmscan_memcg_reclaim_end /@start[tid]/ {{
    @n[pid] = count(); @ns[pid] = sum(nsecs - @start[tid]); delete(@start[tid]);
}}
BEGIN {{ printf("ready\n"); }}
END {{ clear(@start); }}
"#
    ));
    let summary = collect(&opts).expect("BPF must work on this machine");
    let maps = oracle.stop();
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    assert_eq!(summary.drops, 0);
    let (pid, n) = maps["@n"]
        .iter()
        .map(|(pid, n)| (pid.parse::<u64>().unwrap(), *n))
        .next()
        .expect("bpftrace saw the workload reclaim under its limit");
    assert!(n > 0);
    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    let ours: Vec<i64> = trace
        .events
        .iter()
        .filter(|e| e.pid == pid && e.cat == "mm" && e.name == "memcg_reclaim")
        .map(|e| e.dur_ns as i64)
        .collect();
    assert_eq!(ours.len() as i64, n);
    let (traced, by_bpftrace) = (ours.iter().sum::<i64>(), maps["@ns"][&pid.to_string()]);
    assert!(
        (traced - by_bpftrace).abs() <= n * TOLERANCE_NS,
        "{n} reclaims: {traced} ns traced, {by_bpftrace} ns by bpftrace"
    );
}

#[test]
fn a_wait_for_a_cpu_a_kernel_worker_held_names_the_work_bpftrace_saw_it_run() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (_group, opts) = limited("memcg-work", dir.path(), &[Layer::Sys, Layer::Sched]);
    let oracle = Oracle::start(
        r#"
tracepoint:workqueue:workqueue_execute_start { @ran[tid, ksym(args->function)] = count(); }
BEGIN { printf("ready\n"); }
"#,
    );
    let summary = collect(&opts).expect("BPF must work on this machine");
    let maps = oracle.stop();
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    let ran: BTreeSet<(u64, String)> = maps["@ran"]
        .keys()
        .map(|k| {
            let (tid, function) = k.split_once(',').expect("tid, function");
            (tid.trim().parse().unwrap(), function.trim().to_owned())
        })
        .collect();
    let trace = read_all(&[dir.path().join("trace.pfw.gz")], ReadOptions::default()).unwrap();
    let text = |e: &datasets::Event, k: &str| match e.args.get(k) {
        Some(ArgValue::Str(s)) => Some(s.to_string()),
        _ => None,
    };
    let int = |e: &datasets::Event, k: &str| match e.args.get(k) {
        Some(ArgValue::Int(v)) => Some(*v as u64),
        _ => None,
    };
    let named: Vec<(u64, String, Option<String>)> = (trace.events.iter())
        .filter(|e| e.name == "offcpu_R")
        .filter_map(|e| {
            let work = text(e, "held_by_work")?;
            Some((int(e, "held_by_tid")?, work, text(e, "held_by_work_layer")))
        })
        .collect();
    for (tid, work, _) in &named {
        assert!(
            ran.contains(&(*tid, work.clone())),
            "task {tid} held the CPU after running {work}, which bpftrace did not see it run"
        );
    }
    assert!(
        named
            .iter()
            .any(|(_, w, l)| w == "vmpressure_work_fn" && l.as_deref() == Some("mm")),
        "no wait for a CPU held by the memory cgroup's pressure work (mm): {named:?}"
    );
}
