//! A session traces several commands with one attach, each into a trace of its own: the same events
//! as a `collect` of each, and none of another run's. The oracle is the workload's own count: `dd`
//! with `count=N` reads its input exactly N times. A process left running by the first run (a
//! background subshell that reads the first run's file while the second runs) must reach neither
//! trace after its run ended. Dropping the session leaves no BPF object open. Needs root and BPF; it fails (never skips) where they are missing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use datasets::Hash;
use datasets::read::{ReadOptions, Trace, read_all};
use test_support::oracle::bpf_fds;
use tracer::{CollectOptions, Session, Summary, collect};

fn read_trace(path: &Path) -> Trace {
    read_all(&[path.to_path_buf()], ReadOptions::default()).unwrap()
}

/// The hash the trace interns `path` as, if it names it.
fn file_hash(t: &Trace, path: &Path) -> Option<Hash> {
    let name = path.to_str().unwrap();
    t.events
        .iter()
        .find(|e| e.name == "FH" && e.args.name.as_deref() == Some(name))
        .map(|e| e.args.value.unwrap())
}

/// The `read` calls on `file`, and the process that made them.
fn reads_of(t: &Trace, file: &Path) -> (usize, BTreeSet<u64>) {
    let Some(h) = file_hash(t, file) else {
        return (0, BTreeSet::new());
    };
    let reads: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.cat == "sys" && e.name == "read" && e.args.fhash == Some(h))
        .collect();
    (reads.len(), reads.iter().map(|e| e.pid).collect())
}

/// The sys layer's calls of process `pid`, counted by name.
fn calls_of(t: &Trace, pid: u64) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in t.events.iter().filter(|e| e.cat == "sys" && e.pid == pid) {
        *out.entry(e.name.to_string()).or_default() += 1;
    }
    out
}

fn pids(t: &Trace) -> BTreeSet<u64> {
    t.events
        .iter()
        .filter(|e| !e.cat.is_empty() && e.pid != 0)
        .map(|e| e.pid)
        .collect()
}

fn ok(s: &Summary) {
    assert_eq!(s.exit_status, Some(0), "{s}");
    assert_eq!(s.drops, 0, "{s}");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn two_runs_of_one_session_trace_what_two_collects_do_and_nothing_of_each_other() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.dat"), dir.path().join("b.dat"));
    std::fs::write(&a, vec![1u8; 1 << 20]).unwrap();
    std::fs::write(&b, vec![2u8; 1 << 20]).unwrap();
    let (na, nb) = (100, 37);
    let dd = |file: &Path, n: usize| {
        format!(
            "dd if={} of=/dev/null bs=4096 count={n} status=none",
            file.display()
        )
    };
    // The first run leaves a subshell that reads its file again while the second run sleeps.
    let first = format!(
        "(sleep 0.5; cat {} > /dev/null) & {}",
        a.display(),
        dd(&a, na)
    );
    let second = format!("sleep 1.5; {}", dd(&b, nb));
    let opts = |name: &str, script: &str| {
        CollectOptions::command(
            dir.path().join(name),
            vec!["sh".into(), "-c".into(), script.into()],
        )
    };

    let (s1, s2) = (opts("s1.pfw", &first), opts("s2.pfw", &second));
    let fds_before = bpf_fds();
    let mut session = Session::start(&s1).expect("BPF must work on this machine");
    ok(&session.collect(&s1).unwrap());
    ok(&session.collect(&s2).unwrap());
    drop(session);
    assert_eq!(
        bpf_fds(),
        fds_before,
        "BPF objects left open by the session"
    );
    let (c1, c2) = (opts("c1.pfw", &first), opts("c2.pfw", &second));
    ok(&collect(&c1).unwrap());
    ok(&collect(&c2).unwrap());

    let [s1, s2, c1, c2] = [&s1, &s2, &c1, &c2].map(|o| read_trace(&o.output));
    for (name, session, collected, file, n) in
        [("first", &s1, &c1, &a, na), ("second", &s2, &c2, &b, nb)]
    {
        let (reads, readers) = reads_of(session, file);
        assert_eq!(
            reads, n,
            "the {name} run's reads of its file in the session"
        );
        assert_eq!(
            reads_of(collected, file).0,
            n,
            "the {name} run's reads in its collect"
        );
        let dd = *readers.iter().next().unwrap();
        let (_, collect_readers) = reads_of(collected, file);
        let collect_dd = *collect_readers.iter().next().unwrap();
        assert_eq!(
            calls_of(session, dd),
            calls_of(collected, collect_dd),
            "the {name} run's dd made the same calls"
        );
    }
    assert_eq!(
        reads_of(&s2, &a).0,
        0,
        "the first run's subshell read in the second run's trace"
    );
    let shared: BTreeSet<_> = pids(&s1).intersection(&pids(&s2)).copied().collect();
    assert!(
        shared.is_empty(),
        "processes in both runs' traces: {shared:?}"
    );
}
