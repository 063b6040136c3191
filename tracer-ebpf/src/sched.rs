//! The `sched` layer: off-CPU intervals of traced threads, from sched_switch, with the state they
//! left the CPU in and the task that woke them (sched_waking, which runs in the waker's context),
//! and, for waits, their kernel stack (`stacks`).

use aya_ebpf::{
    helpers::bpf_get_current_comm,
    macros::{map, tracepoint},
    maps::LruHashMap,
    programs::TracePointContext,
};
use tracer_ebpf::{Config, SchedEvent, kind, layer};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};
use crate::irq::{in_task, waking_context};
use crate::scope::leave_scope;
use crate::stacks::offcpu_stack;

/// sched_switch reports a dying task's last switch with its exit state, EXIT_ZOMBIE or EXIT_DEAD.
const EXITED: u64 = 0x10 | 0x20;

#[repr(C)]
#[derive(Clone, Copy)]
struct OffCpu {
    ts: u64,
    tgid: u32,
    waker_tgid: u32,
    waker_tid: u32,
    woken_in: u32,
    state: u64,
    woken: u64,
    waker_comm: [u8; 16],
    waker_work: u64,
}

/// tid → when and in which state it left the CPU, and who woke it since.
#[map]
static OFFCPU: LruHashMap<u32, OffCpu> = LruHashMap::with_max_entries(16384, 0);

/// A kernel worker's tid → the function of the work item it runs or ran last: what a worker that woke a traced
/// thread was doing for it, or what it did while it held the thread's CPU (a worker leaves the CPU once its items
/// are done, so the entry outlives the item).
#[map]
static WORKING: LruHashMap<u32, u64> = LruHashMap::with_max_entries(4096, 0);

#[tracepoint]
pub fn workqueue_execute_start(ctx: TracePointContext) -> u32 {
    if let Some(cfg) = config() {
        let function: u64 = unsafe { ctx.read_at(cfg.work_function as usize) }.unwrap_or(0);
        let _ = WORKING.insert(current().1, function, 0);
    }
    0
}

/// The work function `tid` runs or ran last, 0 when it never ran one.
fn work_of(tid: u32) -> u64 {
    unsafe { WORKING.get(tid) }.copied().unwrap_or(0)
}

#[tracepoint]
pub fn sched_switch(ctx: TracePointContext) -> u32 {
    let _ = try_switch(&ctx);
    0
}

fn try_switch(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    in_task();
    // It fires for every switch on the machine: the clock is read only for a traced thread.
    let mut ts = 0;
    // The tracepoint runs in the task leaving the CPU.
    let (tgid, tid) = current();
    if tid != 0 && in_scope(cfg, tgid) {
        ts = now();
        let state: i64 = unsafe { ctx.read_at(cfg.switch_prev_state as usize)? };
        let off = OffCpu {
            ts,
            tgid,
            waker_tgid: 0,
            waker_tid: 0,
            woken_in: 0,
            state: state as u64,
            woken: 0,
            waker_comm: [0; 16],
            waker_work: 0,
        };
        if off.state & EXITED != 0 {
            // Its last switch: no interval starts, and the thread leaves the scope.
            leave_scope(tid);
        } else if OFFCPU.insert(tid, off, 0).is_err() {
            drop_one(layer::SCHED);
        } else if !profiling(cfg) {
            offcpu_stack(ctx, tgid, tid, ts, off.state);
        }
    }
    let holder = (tid != 0 && tgid != cfg.self_tgid).then_some((tgid, tid));
    emit_switched_in(ctx, cfg, ts, holder)
}

/// The off-CPU interval of the thread switched in, if it is traced; `ts` is the clock if read.
/// `holder`: the task leaving the CPU (tgid, tid), none when it is the idle task or the tracer itself:
/// then no task of the traced machine kept the woken thread off it (the tracer's own cost is not the
/// job's CPU contention).
fn emit_switched_in(
    ctx: &TracePointContext,
    cfg: &Config,
    mut ts: u64,
    holder: Option<(u32, u32)>,
) -> Result<(), i32> {
    let next: i32 = unsafe { ctx.read_at(cfg.switch_next_pid as usize)? };
    let next = next as u32;
    let off = *unsafe { OFFCPU.get(next) }.ok_or(0)?;
    let _ = OFFCPU.remove(next);
    if ts == 0 {
        ts = now();
    }
    let hdr = header(
        kind::SCHED,
        layer::SCHED,
        off.tgid,
        next,
        off.ts,
        ts - off.ts,
    );
    if profiling(cfg) {
        // The probe is the state, so that profile counters split by it too.
        profile_add(cfg, &hdr, (off.state & 0xff) as u32, 0, 0);
        return Ok(());
    }
    let (holder_tgid, holder_tid) = holder.unwrap_or((0, 0));
    let ev = SchedEvent {
        hdr,
        state: off.state,
        // Waking an idle CPU takes time too, but no task competed for it: that is the wait's own.
        woken: if holder.is_some() { off.woken } else { 0 },
        waker_tgid: off.waker_tgid,
        waker_tid: off.waker_tid,
        waker_comm: off.waker_comm,
        woken_in: off.woken_in,
        _pad: 0,
        holder_tgid,
        holder_tid,
        holder_comm: match holder {
            Some(_) => bpf_get_current_comm().unwrap_or([0; 16]),
            None => [0; 16],
        },
        waker_work: off.waker_work,
        holder_work: if holder_tid != 0 {
            work_of(holder_tid)
        } else {
            0
        },
    };
    match EVENTS.reserve::<SchedEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::SCHED),
    }
    Ok(())
}

/// sched_waking: fires in the context of whoever wakes the task (in an interrupt, the task it
/// interrupted, so the interrupt context is kept beside it); only a traced thread that is off the CPU has an entry to fill.
#[tracepoint]
pub fn sched_waking(ctx: TracePointContext) -> u32 {
    let _ = try_waking(&ctx);
    0
}

fn try_waking(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let wakee: i32 = unsafe { ctx.read_at(cfg.waking_pid as usize)? };
    let off = OFFCPU.get_ptr_mut(wakee as u32).ok_or(0)?;
    let (tgid, tid) = current();
    unsafe {
        // The first waking starts the wait for a CPU; a later one finds the task runnable already.
        if (*off).woken == 0 {
            (*off).woken = now();
        }
        (*off).waker_tgid = tgid;
        (*off).waker_tid = tid;
        (*off).waker_comm = bpf_get_current_comm().unwrap_or([0; 16]);
        (*off).waker_work = work_of(tid);
        (*off).woken_in = waking_context();
    }
    Ok(())
}
