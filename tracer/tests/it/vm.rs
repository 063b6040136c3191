//! The kernel test VMs: Debian's kernels booted under QEMU with software emulation, running
//! `dc-trace` on the test workload on an ext4 disk and bringing traces and summaries back.
//! `debian61` (6.1: kprobes and fentry) with `functions` and `layers`; `scale` (6.1 and 6.12:
//! kprobe_multi, discovery, probe sets); `bench` (6.12: a traced function's cost against
//! bpftrace's); `stacks` (6.12: on-CPU samples and off-CPU stacks against the kprobe view of the
//! same run); `boot` (a VM that fails).
//! Needs qemu-system-x86, linux-image-amd64, linux-image-6.12-amd64, busybox-static, cpio,
//! e2fsprogs and xz-utils (scripts/setup.sh). It fails, never skips, when any of them is missing
//! or a VM does not boot. The VM itself is `test_support::vm`, which dc-pipeline's VM test boots too.

mod bench;
mod boot;
mod debian61;
mod functions;
mod layers;
mod scale;
mod stacks;

use datasets::Event;

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");
/// The test crate's `target/tmp`: `test_support::vm::work` keeps the VMs' initramfs caches and runs under it.
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn contains(outer: &Event, inner: &Event) -> bool {
    outer.pid == inner.pid
        && outer.tid == inner.tid
        && outer.ts_ns <= inner.ts_ns
        && inner.end_ns() <= outer.end_ns()
}
