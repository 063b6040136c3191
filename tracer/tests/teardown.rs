//! `detach_all` (needs root and BPF): what the page cache, writeback, block and libc layers attach
//! — tracepoints through perf events, raw tracepoints, uprobe_multi links — is gone when it
//! returns: no link of the object's programs in the kernel, and no BPF or perf fd in this process.

use std::collections::HashSet;

use tracer::layers::{Attacher, Layer, LayerReport, block, tracepoints, uprobe};
use tracer::teardown::detach_all;
use tracer::{ebpf, tracefs};

mod common;

use common::bpf_fds;

/// The links in the kernel whose program is one of `programs`.
fn links_of(programs: &HashSet<u32>) -> usize {
    aya::programs::loaded_links()
        .filter_map(Result::ok)
        .filter(|l| programs.contains(&l.program_id()))
        .count()
}

#[test]
fn detach_all_leaves_no_link_and_no_fd() {
    tracefs::ensure_mounted().unwrap();
    let fds_before = bpf_fds();
    let mut object = ebpf::load().unwrap();
    let mut attached = 0;
    let uprobes;
    {
        let mut at = Attacher::new(&mut object);
        let mut next_tp = 0;
        for layer in [Layer::PageCache, Layer::Writeback] {
            let mut report = LayerReport::new(layer, "tracepoint");
            let planned = tracepoints::plan(layer, &mut next_tp, &mut report);
            tracepoints::attach(&mut at, &planned, &mut report);
            assert_eq!(report.attached.len(), planned.len(), "{report:?}");
            attached += planned.len();
        }
        let report = block::attach(&mut at, &Ok(()));
        assert_eq!(report.attached.len(), 3, "{report:?}");
        attached += 3;
        let (planned, errors) = uprobe::plan(true, &[]);
        let (reports, held) = uprobe::attach(&mut at, &planned, &errors);
        assert_eq!(reports[0].attached.len(), planned.len(), "{reports:?}");
        uprobes = held;
    }
    let programs: HashSet<u32> = object
        .programs()
        .filter_map(|(_, p)| p.info().ok().map(|i| i.id()))
        .collect();
    assert_eq!(links_of(&programs), attached);

    detach_all(uprobes, (object, Vec::new()));

    assert_eq!(links_of(&programs), 0);
    assert_eq!(bpf_fds(), fds_before, "BPF objects left open by detach_all");
}
