//! The `block` layer: a request from its first bio's queueing (in the submitting thread, which is
//! kept) through issue to completion, keyed by (device, sector).
//!
//! Issue and completion are raw tracepoints. Completion runs in interrupt context, often while a
//! regular tracepoint program (say `sys_enter`) runs on the same CPU; the kernel then skips every
//! regular tracepoint program, since they share one per-CPU guard. A raw tracepoint program is
//! only skipped while the same program runs, so no completion is lost to the other layers.

use aya_ebpf::{
    helpers::{bpf_get_current_task, bpf_probe_read_kernel},
    macros::{map, raw_tracepoint, tracepoint},
    maps::{LruHashMap, PerCpuHashMap},
    programs::{RawTracePointContext, TracePointContext},
};
use tracer_ebpf::{BioKey, BioStart, BlockEvent, Config, OtherIo, kind, layer};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};

#[map]
static BIO: LruHashMap<BioKey, BioStart> = LruHashMap::with_max_entries(16384, 0);

/// dev_t → the bios processes outside the scope submitted to it.
#[map]
static OTHERS: PerCpuHashMap<u32, OtherIo> = PerCpuHashMap::with_max_entries(256, 0);

/// The kernel's `PF_KTHREAD`.
const PF_KTHREAD: u32 = 0x0020_0000;

#[tracepoint]
pub fn block_queue(ctx: TracePointContext) -> u32 {
    let _ = try_queue(&ctx);
    0
}

fn try_queue(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return count_other(ctx, cfg, tgid);
    }
    let k = BioKey {
        dev: unsafe { ctx.read_at::<u32>(cfg.bio_dev as usize)? },
        _pad: 0,
        sector: unsafe { ctx.read_at::<u64>(cfg.bio_sector as usize)? },
    };
    let start = BioStart {
        tgid,
        tid,
        ts: now(),
        issue_ts: 0,
        rwbs: unsafe { ctx.read_at::<[u8; 8]>(cfg.bio_rwbs as usize)? },
    };
    if BIO.insert(k, start, 0).is_err() {
        drop_one(layer::BLOCK);
    }
    Ok(())
}

/// Counts a bio that a process outside the scope (not a kernel thread, not the tracer) submitted.
#[inline(always)]
fn count_other(ctx: &TracePointContext, cfg: &Config, tgid: u32) -> Result<(), i32> {
    if tgid == 0 || tgid == cfg.self_tgid {
        return Ok(());
    }
    let flags: u32 = kread(unsafe { bpf_get_current_task() }, cfg.task_flags)?;
    if flags & PF_KTHREAD != 0 {
        return Ok(());
    }
    let dev = unsafe { ctx.read_at::<u32>(cfg.bio_dev as usize)? };
    let bytes = unsafe { ctx.read_at::<u32>(cfg.bio_nr_sector as usize)? } as u64 * 512;
    let rwbs = unsafe { ctx.read_at::<[u8; 8]>(cfg.bio_rwbs as usize)? };
    // rwbs names the operation first after any F (a flush before it): R, W, D (discard), N (none).
    let op = if rwbs[0] == b'F' { rwbs[1] } else { rwbs[0] };
    if op != b'R' && op != b'W' {
        return Ok(());
    }
    if OTHERS.get_ptr_mut(dev).is_none() {
        let _ = OTHERS.insert(dev, OtherIo::default(), 0);
    }
    let Some(o) = OTHERS.get_ptr_mut(dev) else {
        return Ok(());
    };
    // SAFETY: this CPU's value, written only by this program, which does not nest with itself.
    let o = unsafe { &mut *o };
    if op == b'R' {
        o.reads += 1;
        o.read_bytes += bytes;
    } else {
        o.writes += 1;
        o.write_bytes += bytes;
    }
    Ok(())
}

/// block_split: a bio too large for one request became two, the rest starting at `new_sector`;
/// the rest is the submitter's too.
#[tracepoint]
pub fn block_split(ctx: TracePointContext) -> u32 {
    let _ = try_split(&ctx);
    0
}

fn try_split(ctx: &TracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let dev = unsafe { ctx.read_at::<u32>(cfg.split_dev as usize)? };
    let k = BioKey {
        dev,
        _pad: 0,
        sector: unsafe { ctx.read_at::<u64>(cfg.split_sector as usize)? },
    };
    let start = *unsafe { BIO.get(k) }.ok_or(0)?;
    let rest = BioKey {
        dev,
        _pad: 0,
        sector: unsafe { ctx.read_at::<u64>(cfg.split_new_sector as usize)? },
    };
    if BIO.insert(rest, start, 0).is_err() {
        drop_one(layer::BLOCK);
    }
    Ok(())
}

/// At `base + off` in kernel memory.
#[inline(always)]
fn kread<T>(base: u64, off: u16) -> Result<T, i32> {
    unsafe { bpf_probe_read_kernel((base + off as u64) as *const T) }.map_err(|_| 0)
}

/// The key of `struct request *rq`: its disk's dev_t (as the tracepoints report it) and sector.
#[inline(always)]
fn rq_key(cfg: &Config, rq: u64) -> Result<BioKey, i32> {
    let q: u64 = kread(rq, cfg.rq_q)?;
    let disk: u64 = kread(q, cfg.q_disk)?;
    let dev = if disk == 0 {
        0
    } else {
        let major: i32 = kread(disk, cfg.disk_major)?;
        let minor: i32 = kread(disk, cfg.disk_first_minor)?;
        ((major as u32) << 20) | minor as u32
    };
    Ok(BioKey {
        dev,
        _pad: 0,
        sector: kread(rq, cfg.rq_sector)?,
    })
}

/// block_rq_issue(struct request *rq).
#[raw_tracepoint]
pub fn block_issue(ctx: RawTracePointContext) -> i32 {
    let _ = try_issue(&ctx);
    0
}

fn try_issue(ctx: &RawTracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let k = rq_key(cfg, ctx.arg::<u64>(0))?;
    if let Some(start) = BIO.get_ptr_mut(k) {
        unsafe { (*start).issue_ts = now() };
    }
    Ok(())
}

/// block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes).
#[raw_tracepoint]
pub fn block_complete(ctx: RawTracePointContext) -> i32 {
    let _ = try_complete(&ctx);
    0
}

fn try_complete(ctx: &RawTracePointContext) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    let k = rq_key(cfg, ctx.arg::<u64>(0))?;
    let start = *unsafe { BIO.get(k) }.ok_or(0)?;
    let _ = BIO.remove(k);
    let nr_sector = ctx.arg::<u64>(2) as u32 >> 9;
    let hdr = header(
        kind::BLOCK,
        layer::BLOCK,
        start.tgid,
        start.tid,
        start.ts,
        now() - start.ts,
    );
    if profiling(cfg) {
        // Probe 0 reads, 1 writes, 2 anything else.
        let probe = match start.rwbs[0] {
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
        rwbs: start.rwbs,
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
