//! The kernel test VMs: Debian's kernels booted under QEMU with software emulation, running
//! `dc-trace` on the test workload on an ext4 disk and bringing traces and summaries back.
//! `debian61` (6.1: kprobes and fentry) with `functions` and `layers`; `scale` (6.1 and 6.12:
//! kprobe_multi, discovery, probe sets); `bench` (6.12: a traced function's cost against
//! bpftrace's); `stacks` (6.12: on-CPU samples and off-CPU stacks against the kprobe view of the
//! same run); `boot` (a VM that fails).
//! Needs qemu-system-x86, linux-image-amd64, linux-image-6.12-amd64, busybox-static, cpio,
//! e2fsprogs and xz-utils (scripts/setup.sh). It fails, never skips, when any of them is missing
//! or a VM does not boot.

#[path = "vm/bench.rs"]
mod bench;
#[path = "vm/boot.rs"]
mod boot;
#[path = "../../vm/collected.rs"]
mod collected;
#[path = "vm/debian61.rs"]
mod debian61;
#[path = "vm/functions.rs"]
mod functions;
#[path = "../../vm/harness/mod.rs"]
mod harness;
#[path = "vm/layers.rs"]
mod layers;
#[path = "vm/scale.rs"]
mod scale;
#[path = "vm/stacks.rs"]
mod stacks;

use datasets::Event;
use harness::work;

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");
const TESTLOAD: &str = env!("CARGO_BIN_EXE_dc-trace-testload");

fn contains(outer: &Event, inner: &Event) -> bool {
    outer.pid == inner.pid
        && outer.tid == inner.tid
        && outer.ts_ns <= inner.ts_ns
        && inner.end_ns() <= outer.end_ns()
}
