//! Loads the embedded eBPF object, attaches one of its shipped programs (`scope_fork`, which
//! follows a traced process's children) and checks exactly which children it recorded. Needs
//! root and BPF; it fails (never skips) where they are missing.

use std::collections::BTreeSet;

use aya::maps::HashMap;
use tracer::bpf::{Attacher, object, tracefs};
use tracer_ebpf::{Config, TracedPid};

const CHILDREN: usize = 37;

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn scope_fork_records_exactly_our_children() {
    let _machine = test_support::machine();
    tracefs::ensure_mounted().expect("tracefs");
    let fork = tracefs::format("sched", "sched_process_fork").expect("sched_process_fork format");
    let cfg = Config {
        fork_child_pid: fork
            .offset("sched/sched_process_fork", "child_pid")
            .expect("child_pid field"),
        ..Config::default()
    };
    let mut ebpf = object::load().expect("BPF must work on this machine");
    aya::maps::Array::<_, Config>::try_from(ebpf.map_mut("CONFIG").expect("CONFIG map"))
        .expect("CONFIG type")
        .set(0, cfg, 0)
        .expect("set CONFIG");
    let me = std::process::id();
    HashMap::<_, TracedPid, u32>::try_from(ebpf.map_mut("TRACED").expect("TRACED map"))
        .expect("TRACED type")
        .insert(TracedPid { tgid: me }, 0, 0)
        .expect("insert our pid");

    Attacher::new(&mut ebpf)
        .tracepoint("scope_fork", "sched", "sched_process_fork")
        .expect("attach scope_fork");
    let mut spawned = BTreeSet::new();
    for _ in 0..CHILDREN {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        spawned.insert(child.id());
        child.wait().expect("wait");
    }

    let traced: HashMap<_, TracedPid, u32> =
        HashMap::try_from(ebpf.map("TRACED").expect("TRACED map")).unwrap();
    let ours: BTreeSet<u32> = traced
        .iter()
        .map(|kv| kv.expect("TRACED entry"))
        .filter(|(_, parent)| *parent == me)
        .map(|(k, _)| k.tgid)
        .collect();
    assert_eq!(ours.len(), CHILDREN);
    assert_eq!(ours, spawned);
}
