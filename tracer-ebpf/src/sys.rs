//! The `sys` layer: raw_syscalls' sys_enter and sys_exit as raw tracepoints (the call's registers
//! and number, or its return value, with no perf record built first), filtered in the kernel by
//! syscall number. sys_enter comes twice: as a BTF tracepoint, which reads the argument registers
//! with plain loads, and as a raw tracepoint, which copies them with `bpf_probe_read_kernel`, for
//! kernels whose verifier refuses the first. They also follow Linux AIO requests (`aio`) through
//! the calls that carry them.

use aya_ebpf::{
    helpers::{
        bpf_get_smp_processor_id, bpf_probe_read_kernel, bpf_probe_read_kernel_buf,
        bpf_probe_read_user_str_bytes,
    },
    macros::{btf_tracepoint, map, raw_tracepoint},
    maps::{Array, HashMap, LruHashMap, PerCpuArray},
    programs::{BtfTracePointContext, RawTracePointContext},
};
use tracer_ebpf::{
    ARG_RET, Config, FdKey, HAS_DUP, HAS_FD, HAS_OFFSET, HAS_OFLAGS, HAS_SIZE, HAS_SRC_FD,
    MAX_SYSCALLS, PATH_LEN, SysEvent, SysPathEvent, SyscallSpec, USER_FILE_ID, aio_call, kind,
    layer, sysflag,
};

use crate::aio;
use crate::common::{
    EVENTS, FDS, NO_WAKEUP, config, current, drop_one, file_of, header, in_scope, now, pick,
    profile_add, profiling,
};

#[repr(C)]
#[derive(Clone, Copy)]
pub struct SysEnter {
    nr: u32,
    /// [`ROW`] or [`AIO_ONLY`] from the traced entry to its exit, [`OUT`] between calls: the
    /// entry stays.
    in_call: u32,
    ts: u64,
    args: [u64; 6],
}

/// `SysEnter::in_call`: between calls.
const OUT: u32 = 0;
/// In a call recorded as a row.
const ROW: u32 = 1;
/// In an AIO call that is not recorded as a row (io_submit, io_getevents): the other layers do
/// not count it as a traced call.
const AIO_ONLY: u32 = 2;

#[map]
pub static SYSCALLS: Array<SyscallSpec> = Array::with_max_entries(MAX_SYSCALLS, 0);

/// tid → the call it is in. Entries are rewritten in place and removed at thread exit (scope):
/// an update and a delete per call cost several times a lookup.
#[map]
pub static SYS_ENTER: HashMap<u32, SysEnter> = HashMap::with_max_entries(65536, 0);

/// tid → path of the exec it is in (read at entry: the address space is gone at exit).
#[map]
static EXEC_PATH: LruHashMap<u32, [u8; PATH_LEN]> = LruHashMap::with_max_entries(1024, 0);

#[map]
static PATH_SCRATCH: PerCpuArray<[u8; PATH_LEN]> = PerCpuArray::with_max_entries(1, 0);

/// tid → file id of its last successful open (uprobes on fopen read it).
#[map]
pub static LAST_OPEN: LruHashMap<u32, u64> = LruHashMap::with_max_entries(16384, 0);

const F_DUPFD: u64 = 0;
const F_DUPFD_CLOEXEC: u64 = 1030;

/// x86_64 `struct pt_regs` from `r10` to `di`, eight registers that hold the six syscall
/// arguments (userspace checks these offsets against the kernel's BTF before attaching).
const REGS_FROM: usize = 56;

/// The arguments in `r10, r9, r8, ax, cx, dx, si, di`, in the syscall ABI's order
/// `di, si, dx, r10, r8, r9`.
#[inline(always)]
fn syscall_args(regs: u64) -> Result<[u64; 6], i32> {
    let r: [u64; 8] =
        unsafe { bpf_probe_read_kernel((regs as usize + REGS_FROM) as *const [u64; 8])? };
    Ok([r[7], r[6], r[5], r[0], r[2], r[1]])
}

/// x86_64 `struct pt_regs` up to `di`: the argument registers at the offsets userspace checks
/// against the kernel's BTF before attaching.
#[repr(C)]
pub struct PtRegs {
    _r15_to_r11: [u64; 7],
    r10: u64,
    r9: u64,
    r8: u64,
    _ax_cx: [u64; 2],
    dx: u64,
    si: u64,
    di: u64,
}

/// sys_enter(struct pt_regs *regs, long id).
#[raw_tracepoint]
pub fn sys_enter(ctx: RawTracePointContext) -> i32 {
    let _ = try_enter(ctx.arg::<i64>(1), || syscall_args(ctx.arg::<u64>(0)));
    0
}

/// sys_enter(struct pt_regs *regs, long id), whose `regs` the verifier knows by its BTF type.
#[btf_tracepoint(function = "sys_enter")]
pub fn sys_enter_btf(ctx: BtfTracePointContext) -> i32 {
    let regs: *const PtRegs = ctx.arg(0);
    let _ = try_enter(ctx.arg::<i64>(1), || {
        let r = unsafe { &*regs };
        Ok([r.di, r.si, r.dx, r.r10, r.r8, r.r9])
    });
    0
}

/// sys_exit(struct pt_regs *regs, long ret).
#[raw_tracepoint]
pub fn sys_exit(ctx: RawTracePointContext) -> i32 {
    let _ = try_exit(&ctx);
    0
}

/// A call `nr` entered; `args` reads its six arguments, once it is known to be traced.
#[inline(always)]
fn try_enter(nr: i64, args: impl FnOnce() -> Result<[u64; 6], i32>) -> Result<(), i32> {
    let cfg = config().ok_or(0)?;
    if !(0..MAX_SYSCALLS as i64).contains(&nr) {
        return Ok(());
    }
    let spec = *SYSCALLS.get(nr as u32).ok_or(0)?;
    let row = spec.flags & sysflag::TRACED != 0;
    if !row && spec.aio == aio_call::NONE {
        return Ok(());
    }
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return Ok(());
    }
    let args = args()?;
    let enter = SysEnter {
        nr: nr as u32,
        in_call: if row { ROW } else { AIO_ONLY },
        ts: now(),
        args,
    };
    if spec.aio == aio_call::SUBMIT {
        aio::submit(tgid, tid, &enter.args, enter.ts);
    }
    if spec.flags & sysflag::NO_RETURN != 0 {
        return emit(cfg, &spec, &enter, tgid, tid, 0, enter.ts);
    }
    if spec.flags & sysflag::EXEC != 0
        && let Some(src) = pick(&enter.args, spec.path_arg)
    {
        let scratch = PATH_SCRATCH.get_ptr_mut(0).ok_or(0)?;
        let src = src as *const u8;
        unsafe {
            (*scratch)[0] = 0;
            let _ = bpf_probe_read_user_str_bytes(src, &mut *scratch);
            // By reference: a copy would put 256 bytes on this frame, which with io_submit's
            // bpf_loop callback is past the 512 that Linux 6.1's verifier allows.
            let path: &[u8; PATH_LEN] = &*scratch;
            EXEC_PATH.insert(tid, path, 0)?;
        }
    }
    match SYS_ENTER.get_ptr_mut(tid) {
        Some(slot) => unsafe { *slot = enter },
        None => {
            if SYS_ENTER.insert(tid, enter, 0).is_err() {
                drop_one(layer::SYS);
            }
        }
    }
    Ok(())
}

fn try_exit(ctx: &RawTracePointContext) -> Result<(), i32> {
    let (tgid, tid) = current();
    let slot = SYS_ENTER.get_ptr_mut(tid).ok_or(0)?;
    let enter = unsafe { *slot };
    if enter.in_call == OUT {
        return Ok(());
    }
    unsafe { (*slot).in_call = OUT };
    let cfg = config().ok_or(0)?;
    let spec = *SYSCALLS.get(enter.nr).ok_or(0)?;
    let ret = ctx.arg::<i64>(1);
    let end = now();
    match spec.aio {
        aio_call::SUBMIT => aio::submitted(tgid, &enter.args, ret),
        aio_call::REAP => aio::reap(tgid, &enter.args, ret, end),
        _ => {}
    }
    if enter.in_call != ROW {
        return Ok(());
    }
    emit(cfg, &spec, &enter, tgid, tid, ret, end)
}

/// Whether thread `tid` is inside a system call recorded as a row.
#[inline(always)]
pub fn in_call(tid: u32) -> bool {
    unsafe { SYS_ENTER.get(tid) }.is_some_and(|e| e.in_call == ROW)
}

/// Whether thread `tid` is in a call recorded as a row or in an AIO call (io_submit, io_getevents), whose waits
/// are its requests' (a submission that sleeps for a free request slot).
pub fn in_call_or_aio(tid: u32) -> bool {
    unsafe { SYS_ENTER.get(tid) }.is_some_and(|e| e.in_call != OUT)
}

#[inline(always)]
fn arg(enter: &SysEnter, sel: u8, ret: i64) -> Option<i64> {
    match sel {
        ARG_RET => Some(ret),
        n => pick(&enter.args, n).map(|a| a as i64),
    }
}

#[inline(always)]
fn emit(
    cfg: &Config,
    spec: &SyscallSpec,
    enter: &SysEnter,
    tgid: u32,
    tid: u32,
    ret: i64,
    end: u64,
) -> Result<(), i32> {
    let mut ev = SysEvent {
        hdr: header(kind::SYS, layer::SYS, tgid, tid, enter.ts, end - enter.ts),
        nr: enter.nr,
        ..SysEvent::default()
    };
    ev.ret = ret;
    if let Some(fd) = arg(enter, spec.fd_arg, ret) {
        ev.fd = fd as i32;
        ev.has |= HAS_FD;
        ev.file = file_of(tgid, ev.fd);
    }
    if let Some(fd) = arg(enter, spec.src_fd_arg, ret) {
        ev.src_fd = fd as i32;
        ev.has |= HAS_SRC_FD;
        ev.src_file = file_of(tgid, ev.src_fd);
    }
    if let Some(size) = arg(enter, spec.size_arg, ret) {
        // A failed call moved nothing.
        ev.size = if spec.size_arg == ARG_RET && size < 0 {
            0
        } else {
            size
        };
        ev.has |= HAS_SIZE;
    }
    if let Some(off) = arg(enter, spec.offset_arg, ret) {
        ev.offset = off;
        ev.has |= HAS_OFFSET;
    }
    if let Some(f) = arg(enter, spec.oflags_arg, ret) {
        ev.oflags = f as u32;
        ev.has |= HAS_OFLAGS;
    }
    let fl = spec.flags;
    let dup = fl & sysflag::DUP != 0
        || (fl & sysflag::FCNTL != 0 && matches!(enter.args[1], F_DUPFD | F_DUPFD_CLOEXEC));
    if dup && ret >= 0 {
        ev.has |= HAS_DUP;
        let _ = FDS.insert(
            FdKey {
                tgid,
                fd: ret as i32,
            },
            ev.file,
            0,
        );
    }
    if fl & sysflag::CLOSE != 0 {
        let _ = FDS.remove(FdKey { tgid, fd: ev.fd });
    }
    if fl & sysflag::OPEN != 0 && ret >= 0 {
        // Unique: two opens on one CPU never end in the same nanosecond.
        let cpu = unsafe { bpf_get_smp_processor_id() } as u64;
        let id = ((end << 8) | (cpu & 0xff)) & !USER_FILE_ID;
        ev.file = id;
        let _ = FDS.insert(
            FdKey {
                tgid,
                fd: ret as i32,
            },
            id,
            0,
        );
        let _ = LAST_OPEN.insert(tid, id, 0);
    }
    if profiling(cfg) {
        profile_add(cfg, &ev.hdr, ev.nr, ev.file, ev.size);
        if fl & sysflag::OPEN == 0 {
            return Ok(());
        }
    }
    if (spec.path_arg as usize) < 6 {
        return emit_path(&ev, spec, enter, tid);
    }
    match EVENTS.reserve::<SysEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::SYS),
    }
    Ok(())
}

#[inline(always)]
fn emit_path(ev: &SysEvent, spec: &SyscallSpec, enter: &SysEnter, tid: u32) -> Result<(), i32> {
    let Some(mut slot) = EVENTS.reserve::<SysPathEvent>(0) else {
        drop_one(layer::SYS);
        return Ok(());
    };
    let p = slot.as_mut_ptr();
    unsafe {
        (*p).sys = *ev;
        (*p).sys.hdr.kind = kind::SYS_PATH;
        (*p).path[0] = 0;
        if spec.flags & sysflag::EXEC != 0 {
            if let Some(saved) = EXEC_PATH.get_ptr(tid) {
                let _ = bpf_probe_read_kernel_buf(saved as *const u8, &mut (*p).path);
                let _ = EXEC_PATH.remove(tid);
            }
        } else if let Some(src) = pick(&enter.args, spec.path_arg) {
            let _ = bpf_probe_read_user_str_bytes(src as *const u8, &mut (*p).path);
        }
    }
    slot.submit(NO_WAKEUP);
    Ok(())
}
