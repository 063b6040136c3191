//! Kernel stacks: the one writer both stack layers use ([`write_stack`]), and the `sched` layer's
//! off-CPU stacks: when a traced thread leaves the CPU to wait, its kernel stack goes to the ring
//! buffer, so that userspace can name the function it waits in. `bpf_get_stack` writes the frames
//! straight into the reserved record: no stack map to fill up or collide in, and nothing of the
//! stack on the BPF stack.

use aya_ebpf::{
    EbpfContext,
    helpers::bpf_get_stack,
    macros::map,
    maps::{Array, PerCpuArray},
    programs::TracePointContext,
};
use tracer_ebpf::{EventHeader, STACK_DEPTH, StackEvent, kind, layer, stacks};

use crate::common::{EVENTS, NO_WAKEUP, drop_one, header};
use crate::sys::in_call_or_aio;

/// When stacks are taken ([`stacks`]); userspace sets it once symbols and the wait table load.
#[map]
static OFFCPU_STACKS: Array<u32> = Array::with_max_entries(1, 0);

/// Stacks the kernel could not read, off-CPU and on-CPU ([`stacks::ERRORS_OFFCPU`], ...).
#[map]
static STACK_ERRORS: PerCpuArray<u64> = PerCpuArray::with_max_entries(2, 0);

/// Writes the current thread's kernel stack as a [`StackEvent`] headed by `hdr`. A full ring
/// buffer is a drop of `hdr.layer`; a stack the kernel fails to read counts in `STACK_ERRORS`
/// at `errors`; an empty stack (a tick in user mode) explains no kernel time and is not written.
#[inline(always)]
pub fn write_stack<C: EbpfContext>(ctx: &C, hdr: EventHeader, errors: u32) {
    let Some(mut slot) = EVENTS.reserve::<StackEvent>(0) else {
        drop_one(hdr.layer);
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
    if n <= 0 {
        slot.discard(NO_WAKEUP);
        if n < 0
            && let Some(c) = STACK_ERRORS.get_ptr_mut(errors)
        {
            unsafe { *c += 1 };
        }
        return;
    }
    // SAFETY: the same reserved record; every field is written before it is submitted.
    unsafe {
        (*ev).hdr = hdr;
        (*ev).len = n as u32;
        (*ev)._pad = 0;
    }
    slot.submit(NO_WAKEUP);
}

/// `state` is sched_switch's `prev_state`: a thread that sleeps (S) or waits uninterruptibly
/// (D) gets its stack; a preempted one (R) waits for nothing but a CPU.
#[inline(always)]
pub fn offcpu_stack(ctx: &TracePointContext, tgid: u32, tid: u32, ts: u64, state: u64) {
    if state & 3 == 0 {
        return;
    }
    let when = OFFCPU_STACKS.get(0).copied().unwrap_or(stacks::OFF);
    if when == stacks::OFF || when == stacks::IN_CALL && !in_call_or_aio(tid) {
        return;
    }
    let hdr = header(kind::STACK, layer::SCHED, tgid, tid, ts, 0);
    write_stack(ctx, hdr, stacks::ERRORS_OFFCPU);
}
