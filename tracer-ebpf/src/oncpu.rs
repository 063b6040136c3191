//! The `oncpu` layer: a perf_event program on every CPU's clock, at the rate userspace attaches
//! it with. A tick that interrupts a traced thread inside a traced call (or, without the sys
//! layer, any traced thread) writes that thread's kernel stack and the sample period: the CPU
//! time the stack stands for. Ticks elsewhere cost one or two lookups.

use aya_ebpf::{
    macros::{map, perf_event},
    maps::Array,
    programs::PerfEventContext,
};
use tracer_ebpf::{kind, layer, stacks};

use crate::common::{config, current, header, in_scope, now};
use crate::stacks::write_stack;
use crate::sys::in_call;

/// When samples are taken ([`stacks`]); userspace sets it once the programs are attached.
#[map]
static ONCPU_SAMPLES: Array<u32> = Array::with_max_entries(1, 0);

#[perf_event]
pub fn oncpu_sample(ctx: PerfEventContext) -> u32 {
    let when = ONCPU_SAMPLES.get(0).copied().unwrap_or(stacks::OFF);
    if when == stacks::OFF {
        return 0;
    }
    let (tgid, tid) = current();
    // The idle task and threads outside calls go first: most ticks are theirs.
    if tid == 0 || when == stacks::IN_CALL && !in_call(tid) {
        return 0;
    }
    let Some(cfg) = config() else { return 0 };
    if !in_scope(cfg, tgid) {
        return 0;
    }
    // SAFETY: a perf_event program's context is the kernel's `bpf_perf_event_data`.
    let period = unsafe { (*ctx.ctx).sample_period };
    write_stack(
        &ctx,
        header(kind::SAMPLE, layer::ONCPU, tgid, tid, now(), period),
        stacks::ERRORS_ONCPU,
    );
    0
}
