//! Linux AIO requests (libaio: `io_submit`, `io_getevents`, `io_pgetevents`) of traced processes,
//! part of the `sys` layer, whose raw_syscalls programs call these by syscall number. The kernel
//! has no tracepoint inside AIO, so a request is followed through the system calls that carry it:
//! at `io_submit`'s entry each iocb is read from the process's memory and kept, keyed by (process,
//! AIO context, iocb address); an iocb its exit says was not submitted is forgotten; and the return
//! of `io_getevents`/`io_pgetevents` reads the io_events it filled, each naming its iocb (`obj`) and
//! result (`res`), and ends those requests. A request therefore ends when the program learned of
//! its completion, not when the device finished it.

use core::ffi::c_void;

use aya_ebpf::{
    helpers::{bpf_loop, bpf_probe_read_user},
    macros::map,
    maps::LruHashMap,
};
use tracer_ebpf::{AIO_BATCH, AIO_PROBE, AioEvent, kind, layer};

use crate::common::{
    DROPS, EVENTS, NO_WAKEUP, config, drop_one, file_of, header, profile_add, profiling,
};

/// `struct iocb` of include/uapi/linux/aio_abi.h (a stable UAPI; little-endian, so `aio_key`
/// comes before `aio_rw_flags`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Iocb {
    _aio_data: u64,
    _aio_key: u32,
    _aio_rw_flags: u32,
    aio_lio_opcode: u16,
    _aio_reqprio: i16,
    aio_fildes: u32,
    _aio_buf: u64,
    _aio_nbytes: u64,
    aio_offset: i64,
    _aio_reserved2: u64,
    _aio_flags: u32,
    _aio_resfd: u32,
}

/// `struct io_event` of include/uapi/linux/aio_abi.h.
#[repr(C)]
#[derive(Clone, Copy)]
struct IoEvent {
    _data: u64,
    /// The iocb's address in the submitting process.
    obj: u64,
    res: i64,
    _res2: i64,
}

const _: () = assert!(size_of::<Iocb>() == 64 && size_of::<IoEvent>() == 32);

/// `IOCB_CMD_PREAD`, `PWRITE`, `PREADV`, `PWRITEV`: the requests whose `res` is bytes moved.
#[inline(always)]
fn transfers(opcode: u16) -> bool {
    matches!(opcode, 0 | 1 | 7 | 8)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Key {
    tgid: u32,
    _pad: u32,
    ctx: u64,
    iocb: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Pending {
    ts: u64,
    tid: u32,
    opcode: u32,
    fd: i32,
    _pad: u32,
    file: u64,
    offset: i64,
}

/// Submitted requests. LRU: a request never reaped (its context destroyed, its process gone)
/// ages out, and a reused iocb is overwritten by its next submission.
#[map]
static AIO_REQS: LruHashMap<Key, Pending> = LruHashMap::with_max_entries(16384, 0);

#[inline(always)]
fn drop_n(n: u64) {
    if let Some(d) = DROPS.get_ptr_mut(layer::SYS as u32) {
        unsafe { *d += n };
    }
}

/// What a submission's loop body reads: the iocbs of `array` submitted to `ctx`.
#[repr(C)]
struct Submit {
    tgid: u32,
    tid: u32,
    ctx: u64,
    array: u64,
    ts: u64,
}

/// Keeps the `i`th iocb of a submission (`bpf_loop`'s body, which the verifier checks once, not
/// once per iteration as it would a loop's).
extern "C" fn submit_one(i: u64, c: *mut c_void) -> i64 {
    // SAFETY: `bpf_loop` passes the `Submit` that `submit` gave it.
    let c = unsafe { &*(c as *const Submit) };
    let Ok(at) = (unsafe { bpf_probe_read_user((c.array + 8 * i) as *const u64) }) else {
        return 0;
    };
    let Ok(cb) = (unsafe { bpf_probe_read_user(at as *const Iocb) }) else {
        return 0;
    };
    let fd = cb.aio_fildes as i32;
    let p = Pending {
        ts: c.ts,
        tid: c.tid,
        opcode: cb.aio_lio_opcode as u32,
        fd,
        _pad: 0,
        file: file_of(c.tgid, fd),
        offset: cb.aio_offset,
    };
    let key = Key {
        tgid: c.tgid,
        _pad: 0,
        ctx: c.ctx,
        iocb: at,
    };
    if AIO_REQS.insert(key, p, 0).is_err() {
        drop_one(layer::SYS);
    }
    0
}

/// Runs `body` for indexes `0..n` through `bpf_loop`, with `ctx` as its context.
#[inline(always)]
fn each<T>(n: u32, body: extern "C" fn(u64, *mut c_void) -> i64, ctx: &mut T) {
    // SAFETY: `body` reads `ctx` as the `T` it is.
    unsafe { bpf_loop(n, body as *mut c_void, ctx as *mut T as *mut c_void, 0) };
}

/// How many iocbs of an io_submit of `nr` the programs read.
#[inline(always)]
fn kept(nr: u64) -> u32 {
    (nr as i64).clamp(0, AIO_BATCH as i64) as u32
}

/// At the entry, at `ts`, of `io_submit(ctx, nr, iocbpp)` (`args`) by thread `tid` of `tgid`:
/// keeps each of its first [`AIO_BATCH`] iocbs as a request.
#[inline(always)]
pub fn submit(tgid: u32, tid: u32, args: &[u64; 6], ts: u64) {
    let mut body = Submit {
        tgid,
        tid,
        ctx: args[0],
        array: args[2],
        ts,
    };
    each(kept(args[1]), submit_one, &mut body);
}

/// What the loop over a submission's refused iocbs reads: those of `array` from `first` on.
#[repr(C)]
struct Refused {
    tgid: u32,
    _pad: u32,
    ctx: u64,
    array: u64,
    first: u64,
}

/// Forgets the `i`th refused iocb.
extern "C" fn forget_one(i: u64, c: *mut c_void) -> i64 {
    // SAFETY: `bpf_loop` passes the `Refused` that `submitted` gave it.
    let c = unsafe { &*(c as *const Refused) };
    let Ok(at) = (unsafe { bpf_probe_read_user((c.array + 8 * (c.first + i)) as *const u64) })
    else {
        return 0;
    };
    let key = Key {
        tgid: c.tgid,
        _pad: 0,
        ctx: c.ctx,
        iocb: at,
    };
    let _ = AIO_REQS.remove(key);
    0
}

/// At the return `ret` of `io_submit(ctx, nr, iocbpp)` (`args`) by a thread of `tgid`: forgets
/// the iocbs the kernel did not submit, and counts as dropped those it did past the ones kept.
#[inline(always)]
pub fn submitted(tgid: u32, args: &[u64; 6], ret: i64) {
    let submitted = if ret < 0 { 0 } else { ret as u64 };
    let kept = kept(args[1]) as u64;
    if submitted > kept {
        drop_n(submitted - kept);
        return;
    }
    // The iocbs from the first one the kernel refused on were never submitted.
    let mut body = Refused {
        tgid,
        _pad: 0,
        ctx: args[0],
        array: args[2],
        first: submitted,
    };
    each((kept - submitted) as u32, forget_one, &mut body);
}

/// What a reap's loop body reads: the io_events of `array`, reaped from `ctx` at `end`.
#[repr(C)]
struct Reap {
    tgid: u32,
    _pad: u32,
    ctx: u64,
    array: u64,
    end: u64,
}

/// Ends the request the `i`th io_event of a reap names, if it is one of ours.
extern "C" fn reap_one(i: u64, c: *mut c_void) -> i64 {
    // SAFETY: `bpf_loop` passes the `Reap` that `reap` gave it.
    let c = unsafe { &*(c as *const Reap) };
    let Some(cfg) = config() else {
        return 1;
    };
    let Ok(ev) = (unsafe { bpf_probe_read_user((c.array + 32 * i) as *const IoEvent) }) else {
        drop_one(layer::SYS);
        return 0;
    };
    let key = Key {
        tgid: c.tgid,
        _pad: 0,
        ctx: c.ctx,
        iocb: ev.obj,
    };
    // Not ours: submitted before tracing began, or past a submission's first AIO_BATCH.
    let Some(p) = (unsafe { AIO_REQS.get(key) }).copied() else {
        return 0;
    };
    let _ = AIO_REQS.remove(key);
    let hdr = header(kind::AIO, layer::SYS, c.tgid, p.tid, p.ts, c.end - p.ts);
    if profiling(cfg) {
        let bytes = if transfers(p.opcode as u16) {
            ev.res
        } else {
            0
        };
        profile_add(cfg, &hdr, AIO_PROBE | p.opcode, p.file, bytes);
        return 0;
    }
    let out = AioEvent {
        hdr,
        opcode: p.opcode,
        fd: p.fd,
        res: ev.res,
        file: p.file,
        offset: p.offset,
    };
    match EVENTS.reserve::<AioEvent>(0) {
        Some(mut slot) => {
            slot.write(out);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::SYS),
    }
    0
}

/// At the return, at `end`, of `io_getevents` or `io_pgetevents(ctx, min_nr, nr, events, ...)`
/// (`args`) by a thread of `tgid`, which filled `ret` io_events: ends the requests they name.
#[inline(always)]
pub fn reap(tgid: u32, args: &[u64; 6], ret: i64, end: u64) {
    if ret <= 0 {
        return;
    }
    if ret > AIO_BATCH as i64 {
        drop_n(ret as u64 - AIO_BATCH as u64);
    }
    let mut body = Reap {
        tgid,
        _pad: 0,
        ctx: args[0],
        array: args[3],
        end,
    };
    each(ret.min(AIO_BATCH as i64) as u32, reap_one, &mut body);
}
