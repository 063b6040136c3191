//! Which interrupt, if any, each CPU is in, kept by the `irq` layer's program (`tp_irq`) from the interrupt
//! tracepoints before it filters by thread: sched_waking runs in an interrupt's context with the interrupted task as
//! `current`, so without this a device's completion or a timer would be filed as a wakeup by whatever task it
//! interrupted.

use aya_ebpf::{macros::map, maps::PerCpuArray};
use tracer_ebpf::{TpInfo, role, tpflag, woken_in};

#[repr(C)]
#[derive(Clone, Copy)]
pub struct IrqContext {
    /// Hardirq handlers entered and not yet left (one can interrupt a softirq).
    hard: u32,
    /// Of those, the local timer's.
    timer: u32,
    /// The softirq running: its vector plus one, 0 when none.
    soft: u32,
}

#[map]
static IRQ_CONTEXT: PerCpuArray<IrqContext> = PerCpuArray::with_max_entries(1, 0);

/// Follows an interrupt tracepoint's enter or exit; `vec` is a softirq entry's vector.
#[inline(always)]
pub fn follow(info: &TpInfo, vec: u64) {
    let Some(c) = IRQ_CONTEXT.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: a per-CPU slot, written only by programs on this CPU, which do not nest with each other.
    let c = unsafe { &mut *c };
    if info.flags & tpflag::HARDIRQ != 0 {
        let timer = info.flags & tpflag::TIMER != 0;
        match info.role {
            role::ENTER => {
                c.hard += 1;
                c.timer += timer as u32;
            }
            // An exit whose entry ran before the tracer attached.
            role::EXIT => {
                c.hard = c.hard.saturating_sub(1);
                if timer {
                    c.timer = c.timer.saturating_sub(1);
                }
            }
            _ => {}
        }
    } else if info.flags & tpflag::SOFTIRQ != 0 {
        c.soft = if info.role == role::ENTER {
            vec as u32 + 1
        } else {
            0
        };
    }
}

/// Called from sched_switch, which runs in a task with interrupts off: no interrupt is in progress on this CPU, so
/// what an entry or exit that the kernel skipped (a BPF program already running here) left stale ends here instead
/// of filing every later waking on this CPU under one interrupt.
#[inline(always)]
pub fn in_task() {
    if let Some(c) = IRQ_CONTEXT.get_ptr_mut(0) {
        // SAFETY: as in `follow`.
        let c = unsafe { &mut *c };
        if c.hard | c.timer | c.soft != 0 {
            *c = IrqContext {
                hard: 0,
                timer: 0,
                soft: 0,
            };
        }
    }
}

/// The context the running code wakes tasks from: [`woken_in::TASK`] outside interrupts.
#[inline(always)]
pub fn waking_context() -> u32 {
    match IRQ_CONTEXT.get(0) {
        Some(c) if c.timer > 0 => woken_in::TIMER,
        Some(c) if c.hard > 0 => woken_in::HARDIRQ,
        Some(c) if c.soft > 0 => woken_in::SOFTIRQ | ((c.soft - 1) << 8),
        _ => woken_in::TASK,
    }
}
