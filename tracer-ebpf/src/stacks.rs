//! Off-CPU kernel stacks for the `sched` layer: when a traced thread leaves the CPU to wait, its
//! kernel stack goes to the ring buffer, so that userspace can name the function it waits in.
//! `bpf_get_stack` writes the frames straight into the reserved record: no stack map to fill up
//! or collide in, and nothing of the stack on the BPF stack.

use aya_ebpf::{
    EbpfContext,
    helpers::bpf_get_stack,
    macros::map,
    maps::{Array, PerCpuArray},
    programs::TracePointContext,
};
use tracer_ebpf::{STACK_DEPTH, StackEvent, kind, layer, stacks};

use crate::common::{EVENTS, NO_WAKEUP, drop_one, header};
use crate::sys::in_call;

/// When stacks are taken ([`stacks`]); userspace sets it once symbols and the wait table load.
#[map]
static OFFCPU_STACKS: Array<u32> = Array::with_max_entries(1, 0);

/// Stacks the kernel could not read, off-CPU and on-CPU ([`stacks::ERRORS_OFFCPU`], ...).
#[map]
static STACK_ERRORS: PerCpuArray<u64> = PerCpuArray::with_max_entries(2, 0);

#[inline(always)]
pub fn stack_error(which: u32) {
    if let Some(c) = STACK_ERRORS.get_ptr_mut(which) {
        unsafe { *c += 1 };
    }
}

/// `state` is sched_switch's `prev_state`: a thread that sleeps (S) or waits uninterruptibly
/// (D) gets its stack; a preempted one (R) waits for nothing but a CPU.
#[inline(always)]
pub fn offcpu_stack(ctx: &TracePointContext, tgid: u32, tid: u32, ts: u64, state: u64) {
    if state & 3 == 0 {
        return;
    }
    let when = OFFCPU_STACKS.get(0).copied().unwrap_or(stacks::OFF);
    if when == stacks::OFF || when == stacks::IN_CALL && !in_call(tid) {
        return;
    }
    let Some(mut slot) = EVENTS.reserve::<StackEvent>(0) else {
        drop_one(layer::SCHED);
        return;
    };
    let ev = slot.as_mut_ptr();
    // SAFETY: `ev` is the reserved record, `size_of::<StackEvent>()` bytes; bpf_get_stack writes
    // at most the bytes of `frames` it is given, and zeroes what it does not fill.
    let n = unsafe {
        bpf_get_stack(
            ctx.as_ptr().cast(),
            (*ev).frames.as_mut_ptr().cast(),
            (STACK_DEPTH * 8) as u32,
            0,
        )
    };
    if n < 0 {
        slot.discard(NO_WAKEUP);
        stack_error(stacks::ERRORS_OFFCPU);
        return;
    }
    unsafe {
        (*ev).hdr = header(kind::STACK, layer::SCHED, tgid, tid, ts, 0);
        (*ev).len = n as u32;
        (*ev)._pad = 0;
    }
    slot.submit(NO_WAKEUP);
}
