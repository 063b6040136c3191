//! The `block` layer: a request from its first bio's queueing (in the submitting thread, which is
//! kept) through issue to completion, keyed by (device, sector).

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::LruHashMap,
    programs::TracePointContext,
};
use tracer_ebpf::{BioKey, BioStart, BlockEvent, kind, layer};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};

#[map]
static BIO: LruHashMap<BioKey, BioStart> = LruHashMap::with_max_entries(16384, 0);

#[inline(always)]
fn key(ctx: &TracePointContext, dev_off: u16, sector_off: u16) -> Result<BioKey, i32> {
    Ok(BioKey {
        dev: unsafe { ctx.read_at::<u32>(dev_off as usize)? },
        _pad: 0,
        sector: unsafe { ctx.read_at::<u64>(sector_off as usize)? },
    })
}

#[tracepoint]
pub fn block_queue(ctx: TracePointContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return 0;
    }
    if let Ok(k) = key(&ctx, cfg.bio_dev, cfg.bio_sector) {
        let start = BioStart {
            tgid,
            tid,
            ts: now(),
            issue_ts: 0,
        };
        if BIO.insert(k, start, 0).is_err() {
            drop_one(layer::BLOCK);
        }
    }
    0
}

#[tracepoint]
pub fn block_issue(ctx: TracePointContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    if let Ok(k) = key(&ctx, cfg.rq_dev, cfg.rq_sector)
        && let Some(start) = BIO.get_ptr_mut(k)
    {
        unsafe { (*start).issue_ts = now() };
    }
    0
}

#[tracepoint]
pub fn block_complete(ctx: TracePointContext) -> u32 {
    let _ = try_complete(&ctx);
    0
}

fn try_complete(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let k = key(ctx, cfg.rq_dev, cfg.rq_sector)?;
    let start = *unsafe { BIO.get(k) }.ok_or(0)?;
    let _ = BIO.remove(k);
    let nr_sector: u32 = unsafe { ctx.read_at(cfg.rq_nr_sector as usize)? };
    let hdr = header(
        kind::BLOCK,
        layer::BLOCK,
        start.tgid,
        start.tid,
        start.ts,
        now() - start.ts,
    );
    let rwbs: [u8; 8] = unsafe { ctx.read_at(cfg.rq_rwbs as usize)? };
    if profiling(cfg) {
        // Probe 0 reads, 1 writes, 2 anything else.
        let probe = match rwbs[0] {
            b'R' => 0,
            b'W' => 1,
            _ => 2,
        };
        profile_add(cfg, &hdr, probe, 0, nr_sector as i64 * 512);
        return Ok(());
    }
    let ev = BlockEvent {
        hdr,
        dev: k.dev,
        nr_sector,
        sector: k.sector,
        issue_ts: start.issue_ts,
        rwbs,
    };
    match EVENTS.reserve::<BlockEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::BLOCK),
    }
    Ok(())
}
