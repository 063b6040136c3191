//! The smallest probe that proves load, attach and maps: counts the traced processes' openat calls.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::PerCpuArray,
    programs::TracePointContext,
};
use tracer_ebpf::{PROBE_COUNTER_SLOTS, TracedPid};

use crate::common::{TRACED, current};

#[map]
static OPENAT_COUNT: PerCpuArray<u64> = PerCpuArray::with_max_entries(PROBE_COUNTER_SLOTS, 0);

#[tracepoint]
pub fn count_openat(_ctx: TracePointContext) -> u32 {
    let (tgid, _) = current();
    if unsafe { TRACED.get(TracedPid { tgid }) }.is_none() {
        return 0;
    }
    if let Some(count) = OPENAT_COUNT.get_ptr_mut(0) {
        unsafe { *count += 1 };
    }
    0
}
