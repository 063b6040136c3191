//! `detach_all` (needs root and BPF): what the page cache, writeback, block and libc layers attach
//! — tracepoints through perf events, raw tracepoints, uprobe_multi links — is gone when it
//! returns: no link of the object's programs in the kernel, and no BPF or perf fd in this process.

use std::collections::HashSet;

use test_support::oracle::bpf_fds;
use tracer::CollectOptions;
use tracer::bpf::teardown::detach_all;
use tracer::bpf::{Attacher, object, tracefs};
use tracer::layers::{Attached, Layer};

/// The links in the kernel whose program is one of `programs`.
fn links_of(programs: &HashSet<u32>) -> usize {
    aya::programs::loaded_links()
        .filter_map(Result::ok)
        .filter(|l| programs.contains(&l.program_id()))
        .count()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn detach_all_leaves_no_link_and_no_fd() {
    let _machine = test_support::machine();
    tracefs::ensure_mounted().unwrap();
    let fds_before = bpf_fds();
    let mut object = object::load().unwrap();
    let opts = CollectOptions::command("/dev/null", Vec::new());
    let mut out = Attached::default();
    {
        let mut at = Attacher::new(&mut object);
        for layer in [
            Layer::PageCache,
            Layer::Writeback,
            Layer::Block,
            Layer::Libc,
        ] {
            let mut setup = opts.setup(&Ok(()));
            layer.probes().attach(&mut at, &mut setup, &mut out);
        }
    }
    for r in &out.reports {
        assert!(
            r.refused.iter().all(|f| f.reason == "not on this kernel"),
            "{r:?}"
        );
    }
    // Tracepoints and raw tracepoints have a link each; the libc layer's uprobe_multi links are
    // not the object's programs.
    let attached: usize = out
        .reports
        .iter()
        .filter(|r| r.layer != "libc")
        .map(|r| r.attached.len())
        .sum();
    assert_eq!(attached, out.next_tp as usize + 4);
    assert!(
        out.reports
            .iter()
            .any(|r| r.layer == "libc" && !r.attached.is_empty())
    );
    let programs: HashSet<u32> = object
        .programs()
        .filter_map(|(_, p)| p.info().ok().map(|i| i.id()))
        .collect();
    assert_eq!(links_of(&programs), attached);

    detach_all(out.take_links(), object);

    assert_eq!(links_of(&programs), 0);
    assert_eq!(bpf_fds(), fds_before, "BPF objects left open by detach_all");
}
