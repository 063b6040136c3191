//! Linux AIO requests (libaio's `io_submit` and `io_getevents`, as fio's default `libaio` engine
//! and MySQL issue them), traced by the `sys` layer as calls of their own: a request never passes
//! through a `read` or `pwrite` system call, so without these a program on libaio shows no I/O at
//! all. The kernel has no tracepoint inside AIO; each request is followed through the calls that
//! carry it, by the `sys` layer's raw_syscalls programs, which know them by number (a `syscalls`
//! perf tracepoint would send every system call of the machine through the kernel's perf syscall
//! path, about 190 ns a call here): from the `io_submit` that submitted its iocb (in the submitting
//! thread) to the return of the `io_getevents` or `io_pgetevents` that reaped its io_event: its end
//! is when the program learned of its completion, not when the device finished it. It is named
//! `aio_{op}` after the iocb's `IOCB_CMD_*` opcode (`aio_pread`, `aio_pwritev`, `aio_fsync`,
//! `aio_fdatasync`), with its fd, file and offset from the iocb, and the io_event's `res` as the
//! return value and, for reads and writes, as the bytes. The programs read at most
//! [`tracer_ebpf::AIO_BATCH`] iocbs of a submission and io_events of a reap; the others are counted
//! as dropped.

use datasets::vocab::op;
use datasets::{ArgValue, Event};
use tracer_ebpf::{AioEvent, aio_call};

use super::layer::Layer;
use crate::record::complete;

/// From arch/x86/entry/syscalls/syscall_64.tbl; the libc crate does not export it.
pub const SYS_IO_PGETEVENTS: i64 = 333;

/// The calls the requests pass through, by x86_64 number, and what each does to them.
pub const CALLS: [(i64, u8); 3] = [
    (libc::SYS_io_submit, aio_call::SUBMIT),
    (libc::SYS_io_getevents, aio_call::REAP),
    (SYS_IO_PGETEVENTS, aio_call::REAP),
];

/// The event name of `IOCB_CMD_*` opcode `code` (include/uapi/linux/aio_abi.h, a stable UAPI).
pub fn name(code: u32) -> &'static str {
    match code {
        0 => "aio_pread",
        1 => "aio_pwrite",
        2 => "aio_fsync",
        3 => "aio_fdatasync",
        5 => "aio_poll",
        6 => "aio_noop",
        7 => "aio_preadv",
        8 => "aio_pwritev",
        _ => "aio_unknown",
    }
}

/// Fills `e` with a request's event; its file, when known, is `fhash`.
pub fn decode(e: &mut Event, a: &AioEvent, fhash: Option<datasets::Hash>) {
    let name = name(a.opcode);
    complete(e, name, Layer::Sys.name(), &a.hdr);
    e.args.fhash = fhash;
    e.args.ret = Some(a.res);
    if op::transfers(name) {
        e.args.size = Some(a.res.max(0));
        e.args.offset = Some(a.offset);
    }
    e.args.other.push(("fd".into(), ArgValue::Int(a.fd as i64)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_named_after_the_uapi_and_reads_and_writes_move_bytes() {
        // include/uapi/linux/aio_abi.h: IOCB_CMD_PREAD 0, PWRITE 1, FSYNC 2, FDSYNC 3, POLL 5,
        // NOOP 6, PREADV 7, PWRITEV 8.
        let named: Vec<&str> = (0..10).map(name).collect();
        assert_eq!(
            named,
            [
                "aio_pread",
                "aio_pwrite",
                "aio_fsync",
                "aio_fdatasync",
                "aio_unknown",
                "aio_poll",
                "aio_noop",
                "aio_preadv",
                "aio_pwritev",
                "aio_unknown"
            ]
        );
        let moves: Vec<&str> = named.into_iter().filter(|n| op::transfers(n)).collect();
        assert_eq!(
            moves,
            ["aio_pread", "aio_pwrite", "aio_preadv", "aio_pwritev"]
        );
        assert!(op::flushes("aio_fsync") && op::flushes("aio_fdatasync"));
    }
}
