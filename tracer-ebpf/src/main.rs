#![no_std]
#![no_main]

use aya_ebpf::{
    helpers::bpf_get_current_pid_tgid,
    macros::{map, tracepoint},
    maps::{HashMap, PerCpuArray},
    programs::TracePointContext,
};
use tracer_ebpf::{PROBE_COUNTER_SLOTS, TracedPid};

#[map]
static TRACED: HashMap<TracedPid, u8> = HashMap::with_max_entries(1024, 0);

#[map]
static OPENAT_COUNT: PerCpuArray<u64> = PerCpuArray::with_max_entries(PROBE_COUNTER_SLOTS, 0);

/// Counts openat calls of the traced processes: the smallest probe that proves load, attach and maps.
#[tracepoint]
pub fn count_openat(_ctx: TracePointContext) -> u32 {
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    if unsafe { TRACED.get(TracedPid { tgid }) }.is_none() {
        return 0;
    }
    if let Some(count) = OPENAT_COUNT.get_ptr_mut(0) {
        unsafe { *count += 1 };
    }
    0
}

// With `user` on (feature unification in a workspace-wide host check), aya links std, which has its own.
#[cfg(not(any(test, feature = "user")))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
