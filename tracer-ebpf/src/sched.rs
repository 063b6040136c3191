//! The `sched` layer: off-CPU intervals of traced threads, from sched_switch.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::LruHashMap,
    programs::TracePointContext,
};
use tracer_ebpf::{TpEvent, kind, layer, role};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};

#[repr(C)]
#[derive(Clone, Copy)]
struct OffCpu {
    ts: u64,
    tgid: u32,
    _pad: u32,
    state: u64,
}

/// tid → when and in which state it left the CPU.
#[map]
static OFFCPU: LruHashMap<u32, OffCpu> = LruHashMap::with_max_entries(16384, 0);

#[tracepoint]
pub fn sched_switch(ctx: TracePointContext) -> u32 {
    let _ = try_switch(&ctx);
    0
}

fn try_switch(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let ts = now();
    // The tracepoint runs in the task leaving the CPU.
    let (tgid, tid) = current();
    if tid != 0 && in_scope(cfg, tgid) {
        let state: i64 = unsafe { ctx.read_at(cfg.switch_prev_state as usize)? };
        let off = OffCpu {
            ts,
            tgid,
            _pad: 0,
            state: state as u64,
        };
        if OFFCPU.insert(tid, off, 0).is_err() {
            drop_one(layer::SCHED);
        }
    }
    let next: i32 = unsafe { ctx.read_at(cfg.switch_next_pid as usize)? };
    let next = next as u32;
    let off = *unsafe { OFFCPU.get(next) }.ok_or(0)?;
    let _ = OFFCPU.remove(next);
    let hdr = header(kind::TP, layer::SCHED, off.tgid, next, off.ts, ts - off.ts);
    if profiling(cfg) {
        profile_add(cfg, &hdr, 0, 0, 0);
        return Ok(());
    }
    let ev = TpEvent {
        hdr,
        probe: 0,
        role: role::ENTER as u32,
        vals: [off.state, 0, 0],
    };
    match EVENTS.reserve::<TpEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::SCHED),
    }
    Ok(())
}
