//! Traces the test workload with every layer and checks the trace exactly: counts and bytes per
//! syscall and file, names through FH, against bpftrace counting the same syscalls of the same
//! process in the same run, libc calls containing their syscalls, O_DIRECT reads containing
//! their block I/O (no completion skipped by the kernel), a concurrent untraced process leaving
//! nothing, and no BPF link left behind.
//! Needs root and BPF; it fails (never skips) where they are missing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use datasets::read::{ReadOptions, read_all};
use datasets::{Event, Hash};
use test_support::oracle::{Oracle, bpf_fds};
use test_support::workload::{COMM, Killed};
use tracer::{Layer, LayerSelection, collect};

use crate::{TESTLOAD, trace_testload};

const BLOCKS: i64 = 8;
const BLOCK: i64 = 8192;

/// bpftrace counting every syscall exit of processes named COMM, and their positive returns, per
/// process (others may run the same workload on the machine meanwhile).
const ORACLE: &str = r#"
BEGIN { printf("ready\n"); }
tracepoint:raw_syscalls:sys_exit /comm == "dc-trace-testlo"/ {
    @n[pid, args->id] = count();
    if (args->ret > 0) { @b[pid, args->id] = sum(args->ret); }
}
"#;

/// Per (pid, syscall number).
type PerCall = BTreeMap<(u32, u32), i64>;

/// A bpftrace map keyed `pid,nr`; nr is -1 for a system call the kernel did not run.
fn per_call(m: &BTreeMap<String, i64>) -> PerCall {
    m.iter()
        .filter_map(|(k, n)| {
            let (pid, nr) = k.split_once(',').expect("key `pid,nr`");
            Some(((pid.parse().unwrap(), nr.parse().ok()?), *n))
        })
        .collect()
}

fn file_hash(trace: &datasets::read::Trace, path: &Path) -> Hash {
    let events = &trace.events;
    let name = path.to_str().unwrap();
    let e = events
        .iter()
        .find(|e| e.name == "FH" && e.args.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no FH names {name}"));
    e.args.value.unwrap()
}

fn calls<'a>(events: &'a [Event], cat: &str, name: &str, file: Hash) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.cat == cat && e.name == name && e.args.fhash == Some(file))
        .collect()
}

fn sizes(es: &[&Event]) -> i64 {
    es.iter().map(|e| e.args.size.unwrap()).sum()
}

fn inside(outer: &Event, inner: &Event) -> bool {
    inner.tid == outer.tid && inner.ts_ns >= outer.ts_ns && inner.end_ns() <= outer.end_ns()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn traces_the_workload_exactly_and_only_it() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let untraced_exe = other.path().join("untraced-load");
    std::os::unix::fs::symlink(TESTLOAD, &untraced_exe).unwrap();
    let untraced = Killed(
        Command::new(&untraced_exe)
            .args([
                other.path().to_str().unwrap(),
                "8",
                "8192",
                "--loop",
                "1000000",
            ])
            .spawn()
            .unwrap(),
    );

    assert!(ORACLE.contains(COMM));
    let oracle = Oracle::start(ORACLE);
    let fds_before = bpf_fds();
    let output = dir.path().join("trace.pfw.gz");
    let mut opts = trace_testload(&output, dir.path(), [BLOCKS.to_string(), BLOCK.to_string()]);
    opts.layers = LayerSelection::only(&[Layer::Sys, Layer::Libc, Layer::Block, Layer::Fs]);
    let summary = collect(&opts).expect("BPF must work on this machine");
    let fds_after = bpf_fds();
    let maps = oracle.stop();
    let oracle_counts = per_call(&maps["@n"]);
    let oracle_bytes = per_call(&maps["@b"]);
    drop(untraced);

    assert_eq!(summary.exit_status, Some(0));
    assert_eq!(summary.drops, 0);
    eprintln!("{summary}");
    // Block completions run in interrupt context while the untraced load's syscalls run our
    // sys programs; as raw tracepoints they are never skipped for it. Syscall programs run in
    // process context, never inside another BPF program.
    for layer in ["block", "sys"] {
        assert_eq!(
            summary.kernel_skipped_per_layer.get(layer),
            None,
            "{layer} programs skipped by the kernel: {:?}",
            summary.kernel_skipped_per_program
        );
    }
    assert_eq!(fds_after, fds_before, "BPF objects left open after collect");

    let trace = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    let ev = &trace.events;
    assert_eq!(
        summary.events,
        ev.iter()
            .filter(|e| e.cat != "datacrumbs" && e.cat != "dftracer")
            .count() as u64
    );

    // Exact counts and bytes per syscall, per file, resolved through FH.
    let raw = file_hash(&trace, &dir.path().join("raw.dat"));
    let stdio = file_hash(&trace, &dir.path().join("stdio.dat"));
    let n = BLOCKS as usize;
    for (file, opens) in [(raw, 3), (stdio, 2)] {
        assert_eq!(calls(ev, "sys", "openat", file).len(), opens);
        assert_eq!(calls(ev, "sys", "close", file).len(), opens);
        assert_eq!(calls(ev, "sys", "fsync", file).len(), 1);
        let writes = calls(ev, "sys", "write", file);
        assert_eq!((writes.len(), sizes(&writes)), (n, BLOCKS * BLOCK));
    }
    let preads = calls(ev, "sys", "pread64", raw);
    assert_eq!((preads.len(), sizes(&preads)), (2 * n, 2 * BLOCKS * BLOCK));
    let offsets: Vec<i64> = preads.iter().map(|e| e.args.offset.unwrap()).collect();
    let expected: Vec<i64> = (0..2 * BLOCKS).map(|i| (i % BLOCKS) * BLOCK).collect();
    assert_eq!(offsets, expected);
    let reads = calls(ev, "sys", "read", stdio);
    assert_eq!((reads.len(), sizes(&reads)), (n, BLOCKS * BLOCK));

    // The oracle: bpftrace's counts of the same process's syscalls after its exec.
    let pid = calls(ev, "sys", "openat", raw)[0].pid;
    let exec = ev
        .iter()
        .find(|e| e.name == "execve" && e.pid == pid)
        .expect("the execve");
    let mut ours_n: BTreeMap<u32, i64> = BTreeMap::new();
    let mut ours_b: BTreeMap<u32, i64> = BTreeMap::new();
    for e in ev
        .iter()
        .filter(|e| e.cat == "sys" && e.pid == pid && e.ts_ns >= exec.ts_ns)
    {
        let sc = tracer::layers::sys::SYSCALLS
            .iter()
            .find(|s| s.name == e.name)
            .unwrap();
        *ours_n.entry(sc.nr as u32).or_default() += 1;
        let ret = e.args.ret.unwrap();
        if ret > 0 {
            *ours_b.entry(sc.nr as u32).or_default() += ret;
        }
    }
    let traced: BTreeSet<u32> = tracer::layers::sys::SYSCALLS
        .iter()
        .filter(|s| !matches!(s.name, "exit" | "exit_group"))
        .map(|s| s.nr as u32)
        .collect();
    let only = |m: &PerCall| -> BTreeMap<u32, i64> {
        m.iter()
            .filter(|((p, k), _)| *p as i64 == pid as i64 && traced.contains(k))
            .map(|((_, k), v)| (*k, *v))
            .collect()
    };
    ours_n.remove(&(libc::SYS_exit_group as u32));
    assert_eq!(ours_n, only(&oracle_counts));
    // Bytes of the calls that move data (mmap's addresses overflow bpftrace's sums).
    let moved = [libc::SYS_read, libc::SYS_write, libc::SYS_pread64].map(|n| n as u32);
    let data = |m: &BTreeMap<u32, i64>| -> Vec<(u32, i64)> {
        m.iter()
            .filter(|(k, _)| moved.contains(k))
            .map(|(k, v)| (*k, *v))
            .collect()
    };
    assert_eq!(data(&ours_b), data(&only(&oracle_bytes)));

    // Scope: the concurrent untraced process left nothing.
    assert!(
        ev.iter().all(|e| e.pid == 0 || e.pid == pid),
        "events of other processes"
    );
    let other_dir = other.path().to_str().unwrap();
    assert!(!ev.iter().any(|e| {
        e.name == "FH"
            && e.args
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(other_dir))
    }));

    // Every libc fread contains exactly its read syscall on the same thread. This kernel (6.6+) has
    // uprobe_multi links, one per binary and end.
    let libc_report = summary.layers.iter().find(|l| l.layer == "libc").unwrap();
    assert_eq!(
        (
            libc_report.mechanism.to_string().as_str(),
            libc_report.refused.len()
        ),
        ("uprobe_multi", 0)
    );
    let freads = calls(ev, "libc", "fread", stdio);
    assert_eq!((freads.len(), sizes(&freads)), (n, BLOCKS * BLOCK));
    for f in &freads {
        let within: Vec<&Event> = reads.iter().copied().filter(|r| inside(f, r)).collect();
        assert_eq!(
            sizes(&within),
            f.args.size.unwrap(),
            "fread at {} ns",
            f.ts_ns
        );
    }
    let fwrites = calls(ev, "libc", "fwrite", stdio);
    assert_eq!((fwrites.len(), sizes(&fwrites)), (n, BLOCKS * BLOCK));

    // O_DIRECT reads (the second pass over raw.dat) contain their block reads.
    let blocks: Vec<&Event> = ev
        .iter()
        .filter(|e| e.cat == "block" && e.name == "block_device_read")
        .collect();
    for p in &preads[n..] {
        let within: Vec<&Event> = blocks.iter().copied().filter(|b| inside(p, b)).collect();
        let overlapping: Vec<&&Event> = blocks
            .iter()
            .filter(|b| b.ts_ns < p.end_ns() && b.end_ns() > p.ts_ns)
            .collect();
        assert_eq!(
            sizes(&within),
            BLOCK,
            "O_DIRECT pread {p:?} has no block read inside; block reads overlapping it: {overlapping:?}"
        );
    }
    // fsync reaches ext4 as a sync_file interval inside the syscall.
    let fsync = calls(ev, "sys", "fsync", raw)[0];
    assert!(
        ev.iter()
            .any(|e| e.cat == "fs" && e.name == "ext4_sync_file" && inside(fsync, e))
    );
}
