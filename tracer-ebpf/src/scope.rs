//! Scope: follows the traced processes' descendants through fork and forgets them at exit.

use aya_ebpf::{macros::tracepoint, programs::TracePointContext};
use tracer_ebpf::TracedPid;

use crate::{
    common::{TRACED, config, current, in_scope},
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
    }
    0
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
