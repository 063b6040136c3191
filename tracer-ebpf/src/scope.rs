//! Scope: follows the traced processes' descendants through fork and forgets them at exit.

use aya_ebpf::{helpers::bpf_get_current_comm, macros::tracepoint, programs::TracePointContext};
use tracer_ebpf::{NameEvent, TracedPid, kind, layer, named};

use crate::{
    common::{EVENTS, NO_WAKEUP, TRACED, config, current, drop_one, header, in_scope, now},
    sys::SYS_ENTER,
};

#[tracepoint]
pub fn scope_fork(ctx: TracePointContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    let (tgid, _) = current();
    if !in_scope(cfg, tgid) {
        return 0;
    }
    // A new thread gets an entry under its tid too; lookups use tgids only, and exit removes it.
    if let Ok(child) = unsafe { ctx.read_at::<i32>(cfg.fork_child_pid as usize) } {
        let _ = TRACED.insert(TracedPid { tgid: child as u32 }, tgid, 0);
        // The child's comm is a copy of its parent's.
        if let Ok(comm) = bpf_get_current_comm() {
            name(tgid, child as u32, comm, named::FORK);
        }
    }
    0
}

#[tracepoint]
pub fn scope_exec(_ctx: TracePointContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    let (tgid, tid) = current();
    if in_scope(cfg, tgid)
        && let Ok(comm) = bpf_get_current_comm()
    {
        name(tgid, tid, comm, named::SELF);
    }
    0
}

/// task_rename: prctl(PR_SET_NAME) renames the caller; a write to /proc/PID/task/TID/comm
/// renames TID from whichever thread writes.
#[tracepoint]
pub fn scope_rename(ctx: TracePointContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return 0;
    }
    let (Ok(renamed), Ok(comm)) = (
        unsafe { ctx.read_at::<i32>(cfg.rename_pid as usize) },
        unsafe { ctx.read_at::<[u8; 16]>(cfg.rename_newcomm as usize) },
    ) else {
        return 0;
    };
    let by = if renamed as u32 == tid {
        named::SELF
    } else {
        named::OTHER
    };
    name(tgid, renamed as u32, comm, by);
    0
}

#[inline(always)]
fn name(tgid: u32, tid: u32, comm: [u8; 16], by: u32) {
    let ev = NameEvent {
        hdr: header(kind::NAME, layer::SCHED, tgid, tid, now(), 0),
        comm,
        by,
        _pad: 0,
    };
    match EVENTS.reserve::<NameEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::SCOPE),
    }
}

#[tracepoint]
pub fn scope_exit(_ctx: TracePointContext) -> u32 {
    let (_, tid) = current();
    let _ = SYS_ENTER.remove(tid);
    if config().is_none_or(|c| c.scope_ends_at_switch == 0) {
        leave_scope(tid);
    }
    0
}

/// Threads' entries and the leader's; a leader that exits before its threads is rare.
#[inline(always)]
pub fn leave_scope(tid: u32) {
    let _ = TRACED.remove(TracedPid { tgid: tid });
}
