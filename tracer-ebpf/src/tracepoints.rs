//! The tracepoint-table layers (page_cache, fs, writeback, ...): one small program per layer
//! (`tp_{layer}`), attached to each of its tracepoints by a link whose BPF cookie is the
//! tracepoint's slot, passing that slot to one shared function that looks up what userspace put
//! in it (the fields to copy, read from the tracepoint's `format`). A program cannot tell
//! tracepoints apart by the record itself: for BPF the kernel overwrites the common fields
//! (`common_type` included) with a pt_regs pointer. One program per tracepoint cost one
//! verification each at every start.

use aya_ebpf::{
    EbpfContext,
    helpers::bpf_get_attach_cookie,
    macros::{map, tracepoint},
    maps::{Array, LruHashMap},
    programs::TracePointContext,
};
use tracer_ebpf::{PairKey, TP_SLOTS, TpEvent, TpInfo, kind, role, tpflag};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};
use crate::irq;
use crate::sys::in_call;

#[repr(C)]
#[derive(Clone, Copy)]
struct TpEnter {
    ts: u64,
    vals: [u64; 4],
}

/// Slot → what the tracepoint whose link carries that slot as its cookie is.
#[map]
pub static TPINFO: Array<TpInfo> = Array::with_max_entries(TP_SLOTS, 0);

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

/// One program per table layer, so that the kernel's count of skipped runs is per layer; each
/// tracepoint's link carries its slot as the BPF cookie.
macro_rules! layers {
    ($($name:ident),* $(,)?) => {
        $(
            #[tracepoint]
            pub fn $name(ctx: TracePointContext) -> u32 {
                // SAFETY: the helper reads the cookie of the link this program runs for.
                let slot = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
                let _ = try_tp(&ctx, slot);
                0
            }
        )*
    };
}

layers!(
    tp_page_cache,
    tp_fs,
    tp_writeback,
    tp_lock,
    tp_mm,
    tp_iomap,
    tp_jbd2
);

/// The irq layer's program also keeps each CPU's interrupt context ([`irq::follow`]), for every interrupt on the
/// machine, before it filters by thread.
#[tracepoint]
pub fn tp_irq(ctx: TracePointContext) -> u32 {
    // SAFETY: the helper reads the cookie of the link this program runs for.
    let slot = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    if let Some(info) = TPINFO.get(slot) {
        irq::follow(info, field(&ctx, info.off[2], info.size[2]));
    }
    let _ = try_tp(&ctx, slot);
    0
}

#[inline(never)]
fn try_tp(ctx: &TracePointContext, slot: u32) -> Result<(), i32> {
    let info = *TPINFO.get(slot).ok_or(0)?;
    let (tgid, tid) = current();
    // A thread in a traced call was in scope when it entered it.
    if info.flags & tpflag::IN_CALL != 0 {
        if !in_call(tid) {
            return Ok(());
        }
    } else if !in_scope(config().ok_or(0)?, tgid) {
        return Ok(());
    }
    let cfg = config().ok_or(0)?;
    let ts = now();
    let mut vals = [0u64; 4];
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
        role::SPAN_MS => (ts, info.probe, (vals[2] as i64).max(0) as u64 * 1_000_000),
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
        role: if info.role == role::POINT {
            role::POINT as u32
        } else {
            role::ENTER as u32
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
