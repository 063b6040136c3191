//! Loads the embedded eBPF object, attaches a tracepoint and checks the exact count it saw.
//! Needs root and BPF; it fails (never skips) where they are missing.

use aya::{
    maps::{HashMap, PerCpuArray},
    programs::TracePoint,
};
use tracer_ebpf::TracedPid;

const OPENS: u64 = 37;

#[test]
fn openat_tracepoint_counts_exactly_our_opens() {
    tracer::bpf::tracefs::ensure_mounted().expect("tracefs");
    let mut ebpf = tracer::bpf::object::load().expect("BPF must work on this machine");

    let mut traced: HashMap<_, TracedPid, u32> =
        HashMap::try_from(ebpf.map_mut("TRACED").expect("TRACED map")).expect("TRACED type");
    traced
        .insert(
            TracedPid {
                tgid: std::process::id(),
            },
            0,
            0,
        )
        .expect("insert our pid");

    let program: &mut TracePoint = ebpf
        .program_mut("count_openat")
        .expect("count_openat program")
        .try_into()
        .expect("tracepoint program");
    program.load().expect("verifier accepts count_openat");
    let link = program
        .attach("syscalls", "sys_enter_openat")
        .expect("attach syscalls/sys_enter_openat");

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("probe-target");
    std::fs::write(&path, b"x").expect("create file");
    let before = total(&ebpf);
    for _ in 0..OPENS {
        drop(std::fs::File::open(&path).expect("open"));
    }
    let after = total(&ebpf);
    let program: &mut TracePoint = ebpf
        .program_mut("count_openat")
        .unwrap()
        .try_into()
        .unwrap();
    program.detach(link).expect("detach");

    assert_eq!(after - before, OPENS);
}

fn total(ebpf: &aya::Ebpf) -> u64 {
    let counts: PerCpuArray<_, u64> =
        PerCpuArray::try_from(ebpf.map("OPENAT_COUNT").expect("OPENAT_COUNT map")).unwrap();
    counts.get(&0, 0).expect("slot 0").iter().sum()
}
