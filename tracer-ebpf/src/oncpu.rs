//! The `oncpu` layer: a perf_event program on every CPU's clock, at the rate userspace attaches
//! it with. A tick that interrupts a traced thread inside a traced call (or, without the sys
//! layer, any traced thread) writes that thread's kernel stack and the sample period: the CPU
//! time the stack stands for. Ticks elsewhere cost one or two lookups.

use aya_ebpf::{
    EbpfContext,
    helpers::bpf_get_stack,
    macros::{map, perf_event},
    maps::Array,
    programs::PerfEventContext,
};
use tracer_ebpf::{STACK_DEPTH, StackEvent, kind, layer, stacks};

use crate::common::{EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now};
use crate::stacks::stack_error;
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
    let Some(mut slot) = EVENTS.reserve::<StackEvent>(0) else {
        drop_one(layer::ONCPU);
        return 0;
    };
    let ev = slot.as_mut_ptr();
    // SAFETY: as in `stacks::offcpu_stack`: bpf_get_stack writes at most the bytes of `frames`
    // it is given into the reserved record.
    let n = unsafe {
        bpf_get_stack(
            ctx.as_ptr().cast(),
            (*ev).frames.as_mut_ptr().cast(),
            (STACK_DEPTH * 8) as u32,
            0,
        )
    };
    if n <= 0 {
        slot.discard(NO_WAKEUP);
        // An empty stack is a tick in user mode (possible only without the sys layer): no kernel
        // time to explain.
        if n < 0 {
            stack_error(stacks::ERRORS_ONCPU);
        }
        return 0;
    }
    unsafe {
        (*ev).hdr = header(kind::SAMPLE, layer::ONCPU, tgid, tid, now(), period);
        (*ev).len = n as u32;
        (*ev)._pad = 0;
    }
    slot.submit(NO_WAKEUP);
    0
}
