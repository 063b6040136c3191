//! Thread and process names (needs root and BPF): the trace names each thread as the workload
//! itself read its names from /proc, through exec, prctl(PR_SET_NAME), a new thread and a
//! rename through /proc by another thread.

use std::collections::BTreeMap;

use datasets::Phase;
use datasets::read::{ReadOptions, read_all};
use test_support::workload::COMM;
use tracer::{Layer, LayerSelection, collect};

use crate::trace_testload;

/// `name`'s M events: tid → names in trace order, and the pid they name.
fn names(events: &[datasets::Event], name: &str) -> BTreeMap<u64, (u64, Vec<String>)> {
    let mut m: Vec<_> = events
        .iter()
        .filter(|e| e.ph == Phase::Metadata && e.name == name)
        .collect();
    m.sort_by_key(|e| (e.ts_ns, e.id));
    let mut out: BTreeMap<u64, (u64, Vec<String>)> = BTreeMap::new();
    for e in m {
        let entry = out.entry(e.tid).or_insert((e.pid, Vec::new()));
        assert_eq!(entry.0, e.pid, "tid {} named under two pids", e.tid);
        entry.1.push(e.args.name.clone().unwrap());
    }
    out
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn threads_are_named_as_proc_shows_them() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let mut opts = trace_testload(&output, dir.path(), ["--names".to_string()]);
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    // The command is forked from this thread, and named as it until its exec.
    let forker = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!(summary.drops, 0);

    let mut oracle: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(dir.path().join("names"))
        .unwrap()
        .lines()
    {
        let (tid, comm) = line.split_once(' ').unwrap();
        oracle
            .entry(tid.parse().unwrap())
            .or_default()
            .push(comm.to_owned());
    }
    let (&main, _) = oracle
        .iter()
        .find(|(_, n)| n[0] == COMM)
        .expect("the main thread's first name");
    let (&worker, _) = oracle.iter().find(|&(&t, _)| t != main).unwrap();
    assert_eq!(oracle.len(), 2);
    assert_eq!(oracle[&main], [COMM, "dc-main"]);
    assert_eq!(oracle[&worker], ["dc-worker", "dc-renamed"]);

    let trace = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    let threads = names(&trace.events, "thread_name");
    assert_eq!(threads.keys().copied().collect::<Vec<_>>(), [main, worker]);
    let (pid, main_names) = &threads[&main];
    assert_eq!(*pid, main);
    let mut expected = vec![forker.trim_end().to_owned()];
    expected.extend(oracle[&main].iter().cloned());
    assert_eq!(*main_names, expected);
    let (pid, worker_names) = &threads[&worker];
    assert_eq!(*pid, main);
    // The worker holds its parent's name until it names itself; it is in the trace only if the
    // worker made a traced call meanwhile.
    let named_late = &worker_names[worker_names.len().min(1)..];
    assert!(
        *worker_names == oracle[&worker]
            || (worker_names[0] == "dc-main" && *named_late == oracle[&worker][..]),
        "worker named {worker_names:?}, /proc showed {:?}",
        oracle[&worker]
    );
    let processes = names(&trace.events, "process_name");
    assert_eq!(processes.keys().copied().collect::<Vec<_>>(), [main]);
    assert_eq!(processes[&main].1, expected);

    // Each thread wrote a line to `names` under each of its names (a line in several writes): the rows carry the
    // names in force at each write.
    let m = features::build(&[output], &features::BuildOptions::default()).unwrap();
    let log = dir.path().join("names");
    let writes = |tid: u64| -> Vec<(Option<&str>, Option<&str>)> {
        let mut v: Vec<_> = (0..m.n_rows())
            .filter(|&i| m.tid[i] == tid && m.op[i] == "write")
            .filter(|&i| m.file[i].as_deref() == log.to_str())
            .map(|i| (m.thread[i].as_deref(), m.process[i].as_deref()))
            .collect();
        v.dedup();
        v
    };
    assert_eq!(
        writes(main),
        [(Some(COMM), Some(COMM)), (Some("dc-main"), Some("dc-main"))]
    );
    assert_eq!(
        writes(worker),
        [
            (Some("dc-worker"), Some("dc-main")),
            (Some("dc-renamed"), Some("dc-main"))
        ]
    );
}
