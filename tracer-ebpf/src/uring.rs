//! io_uring requests of traced processes, part of the `sys` layer: a request is a call that the
//! kernel serves between `io_uring_submit_req` (in the submitting thread) and `io_uring_complete`
//! (wherever it completes: the submitter, an io-wq worker, an interrupt), with the fd that
//! `io_uring_file_get` looked up in between. Requests are keyed by their `struct io_kiocb`
//! address, the one value all three tracepoints carry. Field offsets come from userspace, which
//! reads them from the tracepoints' `format` files; the position a read or write asked for, which
//! no tracepoint carries, is read from the request at the offset the kernel's BTF gives.

use aya_ebpf::{
    helpers::bpf_probe_read_kernel,
    macros::{map, tracepoint},
    maps::{Array, LruHashMap},
    programs::TracePointContext,
};
use tracer_ebpf::{HAS_FD, HAS_OFFSET, URING_PROBE, UringEvent, UringInfo, kind, layer};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, file_of, header, in_scope, now, profile_add,
    profiling,
};

#[map]
pub static URING_INFO: Array<UringInfo> = Array::with_max_entries(1, 0);

#[repr(C)]
#[derive(Clone, Copy)]
struct Pending {
    ts: u64,
    tgid: u32,
    tid: u32,
    opcode: u32,
    fd: i32,
    file: u64,
    has: u32,
    _pad: u32,
    offset: i64,
}

/// Request address → its submission. LRU: a request whose completion never comes (its ring torn
/// down) ages out, and a recycled address is simply overwritten by its next submission.
#[map]
static URING_REQS: LruHashMap<u64, Pending> = LruHashMap::with_max_entries(16384, 0);

#[inline(always)]
fn info() -> Option<&'static UringInfo> {
    URING_INFO.get(0).filter(|i| i.ready != 0)
}

#[tracepoint]
pub fn uring_submit(ctx: TracePointContext) -> u32 {
    let _ = try_submit(&ctx);
    0
}

#[tracepoint]
pub fn uring_file(ctx: TracePointContext) -> u32 {
    let _ = try_file(&ctx);
    0
}

#[tracepoint]
pub fn uring_complete(ctx: TracePointContext) -> u32 {
    let _ = try_complete(&ctx);
    0
}

fn try_submit(ctx: &TracePointContext) -> Result<(), i64> {
    let info = info().ok_or(0)?;
    let (tgid, tid) = current();
    if !in_scope(config().ok_or(0)?, tgid) {
        return Ok(());
    }
    let req: u64 = unsafe { ctx.read_at(info.submit_req as usize)? };
    let opcode: u8 = unsafe { ctx.read_at(info.submit_opcode as usize)? };
    let mut p = Pending {
        ts: now(),
        tgid,
        tid,
        opcode: opcode as u32,
        fd: -1,
        file: 0,
        has: 0,
        _pad: 0,
        offset: 0,
    };
    // A position of -1 asks for the file's own, which the tracepoints do not show.
    if opcode < 64 && info.rw_ops & (1 << opcode) != 0 {
        let pos: i64 = unsafe { bpf_probe_read_kernel((req + info.req_pos as u64) as *const i64)? };
        if pos >= 0 {
            p.offset = pos;
            p.has |= HAS_OFFSET;
        }
    }
    if URING_REQS.insert(req, p, 0).is_err() {
        drop_one(layer::SYS);
    }
    Ok(())
}

fn try_file(ctx: &TracePointContext) -> Result<(), i64> {
    let info = info().ok_or(0)?;
    let req: u64 = unsafe { ctx.read_at(info.file_req as usize)? };
    let p = URING_REQS.get_ptr_mut(req).ok_or(0)?;
    let fd: i32 = unsafe { ctx.read_at(info.file_fd as usize)? };
    unsafe {
        (*p).fd = fd;
        (*p).has |= HAS_FD;
        (*p).file = file_of((*p).tgid, fd);
    }
    Ok(())
}

fn try_complete(ctx: &TracePointContext) -> Result<(), i64> {
    let info = info().ok_or(0)?;
    let req: u64 = unsafe { ctx.read_at(info.complete_req as usize)? };
    let p = *unsafe { URING_REQS.get(req) }.ok_or(0)?;
    let _ = URING_REQS.remove(req);
    let res: i32 = unsafe { ctx.read_at(info.complete_res as usize)? };
    let cfg = config().ok_or(0)?;
    let hdr = header(kind::URING, layer::SYS, p.tgid, p.tid, p.ts, now() - p.ts);
    if profiling(cfg) {
        let moves = p.opcode < 64 && info.transfers & (1 << p.opcode) != 0;
        let bytes = if moves { res as i64 } else { 0 };
        profile_add(cfg, &hdr, URING_PROBE | p.opcode, p.file, bytes);
        return Ok(());
    }
    let ev = UringEvent {
        hdr,
        opcode: p.opcode,
        fd: p.fd,
        res: res as i64,
        file: p.file,
        has: p.has,
        _pad: 0,
        offset: p.offset,
    };
    match EVENTS.reserve::<UringEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::SYS),
    }
    Ok(())
}
