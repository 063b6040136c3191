//! The `page_cache`, `fs` and `writeback` layers: one program attached to many tracepoints, which
//! tells them apart by `common_type` (the tracepoint id, at offset 0 of every record) and copies
//! the fields userspace chose from each one's `format`.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::{HashMap, LruHashMap},
    programs::TracePointContext,
};
use tracer_ebpf::{PairKey, TpEvent, TpInfo, kind, role};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};

#[repr(C)]
#[derive(Clone, Copy)]
struct TpEnter {
    ts: u64,
    vals: [u64; 3],
}

/// common_type → what the tracepoint is.
#[map]
pub static TPINFO: HashMap<u32, TpInfo> = HashMap::with_max_entries(1024, 0);

#[map]
static TPENTER: LruHashMap<PairKey, TpEnter> = LruHashMap::with_max_entries(65536, 0);

#[inline(always)]
fn field(ctx: &TracePointContext, off: u16, size: u8) -> u64 {
    let off = off as usize;
    unsafe {
        match size {
            1 => ctx.read_at::<u8>(off).map(u64::from),
            2 => ctx.read_at::<u16>(off).map(u64::from),
            4 => ctx.read_at::<u32>(off).map(u64::from),
            8 => ctx.read_at::<u64>(off),
            _ => Ok(0),
        }
    }
    .unwrap_or(0)
}

#[tracepoint]
pub fn tp_event(ctx: TracePointContext) -> u32 {
    let _ = try_tp(&ctx);
    0
}

fn try_tp(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return Ok(());
    }
    let ty: u16 = unsafe { ctx.read_at(0)? };
    let info = *unsafe { TPINFO.get(ty as u32) }.ok_or(0)?;
    let ts = now();
    let mut vals = [0u64; 3];
    for (i, val) in vals.iter_mut().enumerate() {
        *val = field(ctx, info.off[i], info.size[i]);
    }
    let (start, probe, dur) = match info.role {
        role::ENTER => {
            let key = PairKey {
                tid,
                pair: info.pair,
            };
            if TPENTER.insert(key, TpEnter { ts, vals }, 0).is_err() {
                drop_one(info.layer);
            }
            return Ok(());
        }
        role::EXIT => {
            let key = PairKey {
                tid,
                pair: info.pair,
            };
            let enter = *unsafe { TPENTER.get(key) }.ok_or(0)?;
            let _ = TPENTER.remove(key);
            vals = enter.vals;
            (enter.ts, info.pair, ts - enter.ts)
        }
        _ => (ts, info.probe, 0),
    };
    let hdr = header(kind::TP, info.layer, tgid, tid, start, dur);
    if profiling(cfg) {
        profile_add(cfg, &hdr, probe, 0, 0);
        return Ok(());
    }
    let ev = TpEvent {
        hdr,
        probe,
        role: if info.role == role::EXIT {
            role::ENTER as u32
        } else {
            role::POINT as u32
        },
        vals,
    };
    match EVENTS.reserve::<TpEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(info.layer),
    }
    Ok(())
}
