//! The tracepoint-table layers (page_cache, fs, writeback): identical small programs `tp_0` … `tp_{N-1}`,
//! one per tracepoint, each passing its slot to one shared function that looks up what userspace
//! put in that slot (the fields to copy, read from the tracepoint's `format`). A program cannot
//! tell tracepoints apart by the record itself: for BPF the kernel overwrites the common fields
//! (`common_type` included) with a pt_regs pointer.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::{Array, LruHashMap},
    programs::TracePointContext,
};
use tracer_ebpf::{PairKey, TP_SLOTS, TpEvent, TpInfo, kind, role, tpflag};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};
use crate::sys::in_call;

#[repr(C)]
#[derive(Clone, Copy)]
struct TpEnter {
    ts: u64,
    vals: [u64; 3],
}

/// Slot → what the tracepoint attached to `tp_{slot}` is.
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

macro_rules! slots {
    ($($name:ident = $slot:literal),* $(,)?) => {
        $(
            #[tracepoint]
            pub fn $name(ctx: TracePointContext) -> u32 {
                let _ = try_tp(&ctx, $slot);
                0
            }
        )*
    };
}

slots!(
    tp_0 = 0,
    tp_1 = 1,
    tp_2 = 2,
    tp_3 = 3,
    tp_4 = 4,
    tp_5 = 5,
    tp_6 = 6,
    tp_7 = 7,
    tp_8 = 8,
    tp_9 = 9,
    tp_10 = 10,
    tp_11 = 11,
    tp_12 = 12,
    tp_13 = 13,
    tp_14 = 14,
    tp_15 = 15,
    tp_16 = 16,
    tp_17 = 17,
    tp_18 = 18,
    tp_19 = 19,
    tp_20 = 20,
    tp_21 = 21,
    tp_22 = 22,
    tp_23 = 23,
    tp_24 = 24,
    tp_25 = 25,
    tp_26 = 26,
    tp_27 = 27,
    tp_28 = 28,
    tp_29 = 29,
    tp_30 = 30,
    tp_31 = 31,
    tp_32 = 32,
    tp_33 = 33,
    tp_34 = 34,
    tp_35 = 35,
    tp_36 = 36,
    tp_37 = 37,
    tp_38 = 38,
    tp_39 = 39,
    tp_40 = 40,
    tp_41 = 41,
    tp_42 = 42,
    tp_43 = 43,
    tp_44 = 44,
    tp_45 = 45,
    tp_46 = 46,
    tp_47 = 47,
    tp_48 = 48,
    tp_49 = 49,
    tp_50 = 50,
    tp_51 = 51,
    tp_52 = 52,
    tp_53 = 53,
    tp_54 = 54,
    tp_55 = 55,
    tp_56 = 56,
    tp_57 = 57,
    tp_58 = 58,
    tp_59 = 59,
    tp_60 = 60,
    tp_61 = 61,
    tp_62 = 62,
    tp_63 = 63,
    tp_64 = 64,
    tp_65 = 65,
    tp_66 = 66,
    tp_67 = 67,
    tp_68 = 68,
    tp_69 = 69,
    tp_70 = 70,
    tp_71 = 71,
    tp_72 = 72,
    tp_73 = 73,
    tp_74 = 74,
    tp_75 = 75,
    tp_76 = 76,
    tp_77 = 77,
    tp_78 = 78,
    tp_79 = 79,
);

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
