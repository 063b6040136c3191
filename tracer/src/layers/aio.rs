//! Linux AIO requests (libaio's `io_submit` and `io_getevents`, as fio's default `libaio` engine
//! and MySQL issue them), traced by the `sys` layer as calls of their own: a request never passes
//! through a `read` or `pwrite` system call, so without these a program on libaio shows no I/O at
//! all. The kernel has no tracepoint inside AIO; each request is followed through the `syscalls`
//! tracepoints of the calls that carry it, from the `io_submit` that submitted its iocb (in the
//! submitting thread) to the return of the `io_getevents` or `io_pgetevents` that reaped its
//! io_event: its end is when the program learned of its completion, not when the device finished
//! it. It is named `aio_{op}` after the iocb's `IOCB_CMD_*` opcode (`aio_pread`, `aio_pwritev`,
//! `aio_fsync`, `aio_fdatasync`), with its fd, file and offset from the iocb, and the io_event's
//! `res` as the return value and, for reads and writes, as the bytes. The programs read at most
//! [`tracer_ebpf::AIO_BATCH`] iocbs of a submission and io_events of a reap; the others are counted as
//! dropped.

use crate::error::{Context, Result, bail};
use aya::maps::Array;
use datasets::vocab::{Mechanism, op};
use datasets::{ArgValue, Event};
use tracer_ebpf::{AioEvent, AioInfo};

use super::layer::{Layer, LayerReport};
use crate::bpf::tracefs::{self, Format};
use crate::bpf::{Attacher, reason};
use crate::record::complete;

const CATEGORY: &str = "syscalls";
const SUBMIT: &str = "io_submit";
/// The calls that reap completions; their arguments up to `events` are the same.
const REAPS: [&str; 2] = ["io_getevents", "io_pgetevents"];

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

/// The byte offset of `field` in `format`, the record of tracepoint `tracepoint`, checked to be 8
/// bytes wide (every argument and return value of these calls is).
fn field(format: &Format, tracepoint: &str, field: &str) -> Result<u16> {
    let f = format
        .field(field)
        .with_context(|| format!("tracepoint {CATEGORY}/{tracepoint} has no field `{field}`"))?;
    if f.size != 8 {
        bail!(
            "tracepoint {CATEGORY}/{tracepoint}: field `{field}` is {} bytes, the program reads 8",
            f.size
        );
    }
    Ok(f.offset)
}

/// The offset of `name` in the records of `tracepoints`, which one program reads, so it must be
/// the same in all.
fn shared(formats: &[(String, Format)], name: &str) -> Result<u16> {
    let mut at = None;
    for (tp, f) in formats {
        let o = field(f, tp, name)?;
        match at {
            Some(a) if a != o => bail!(
                "tracepoint {CATEGORY}/{tp}: field `{name}` is at byte {o}, {CATEGORY}/{} has it at {a}",
                formats[0].0
            ),
            _ => at = Some(o),
        }
    }
    at.context("no tracepoint to read")
}

/// Where the programs read their fields on this kernel, from the tracepoints' formats.
pub fn plan() -> Result<AioInfo> {
    let read = |tps: &[String]| -> Result<Vec<(String, Format)>> {
        tps.iter()
            .map(|tp| Ok((tp.clone(), tracefs::format(CATEGORY, tp)?)))
            .collect()
    };
    let submit = read(&[format!("sys_enter_{SUBMIT}")])?;
    let waits = read(&REAPS.map(|c| format!("sys_enter_{c}")))?;
    let exits = read(&[SUBMIT, REAPS[0], REAPS[1]].map(|c| format!("sys_exit_{c}")))?;
    Ok(AioInfo {
        submit_ctx: shared(&submit, "ctx_id")?,
        submit_nr: shared(&submit, "nr")?,
        submit_iocbpp: shared(&submit, "iocbpp")?,
        wait_ctx: shared(&waits, "ctx_id")?,
        wait_events: shared(&waits, "events")?,
        exit_ret: shared(&exits, "ret")?,
        ready: 1,
        _pad: 0,
    })
}

/// Attaches the six AIO tracepoints, adding what attached and what did not to the sys layer's
/// `report`.
pub fn attach(at: &mut Attacher, report: &mut LayerReport) {
    let label = "Linux AIO";
    if let Err(e) = plan().and_then(|info| fill(at, info)) {
        report.refuse(label, Mechanism::Tracepoint, reason(&e));
        return;
    }
    let mut links = vec![
        ("aio_submit", format!("sys_enter_{SUBMIT}")),
        ("aio_submitted", format!("sys_exit_{SUBMIT}")),
    ];
    for c in REAPS {
        links.push(("aio_wait", format!("sys_enter_{c}")));
        links.push(("aio_reap", format!("sys_exit_{c}")));
    }
    let mut any = false;
    for (prog, tp) in links {
        let label = format!("{CATEGORY}/{tp}");
        match at.tracepoint(prog, CATEGORY, &tp) {
            Ok(()) => {
                any = true;
                report.attached.push(label);
            }
            Err(e) => report.refuse(&label, Mechanism::Tracepoint, reason(&e)),
        }
    }
    if any && !report.mechanism.0.contains(&Mechanism::Tracepoint) {
        report.mechanism.0.push(Mechanism::Tracepoint);
    }
}

fn fill(at: &mut Attacher, info: AioInfo) -> Result<()> {
    let mut map: Array<_, AioInfo> =
        Array::try_from(at.ebpf.map_mut("AIO_INFO").context("AIO_INFO map")?)?;
    map.set(0, info, 0)?;
    Ok(())
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

    #[test]
    fn a_field_elsewhere_in_one_of_the_tracepoints_one_program_reads_is_an_error_naming_both() {
        let fmt = |events_at: u16| {
            tracefs::parse_format(
                &format!(
                    "ID: 5\n\tfield:aio_context_t ctx_id;\toffset:16;\tsize:8;\tsigned:0;\n\
                     \tfield:struct io_event * events;\toffset:{events_at};\tsize:8;\tsigned:0;\n"
                ),
                "format",
            )
            .unwrap()
        };
        let both = [
            ("sys_enter_io_getevents".to_owned(), fmt(40)),
            ("sys_enter_io_pgetevents".to_owned(), fmt(48)),
        ];
        assert_eq!(shared(&both, "ctx_id").unwrap(), 16);
        assert_eq!(
            shared(&both, "events").unwrap_err().to_string(),
            "tracepoint syscalls/sys_enter_io_pgetevents: field `events` is at byte 48, \
             syscalls/sys_enter_io_getevents has it at 40"
        );
        assert_eq!(
            shared(&both, "nr").unwrap_err().to_string(),
            "tracepoint syscalls/sys_enter_io_getevents has no field `nr`"
        );
    }

    #[test]
    fn this_kernels_formats_give_the_offsets_of_its_syscall_records() {
        // Every syscalls/sys_enter_* record has its arguments from byte 16, 8 bytes each, and
        // every sys_exit_* its `ret` at 16 (kernel/trace/trace_syscalls.c).
        crate::bpf::tracefs::ensure_mounted().unwrap();
        let info = plan().unwrap();
        assert_eq!(
            (info.submit_ctx, info.submit_nr, info.submit_iocbpp),
            (16, 24, 32)
        );
        assert_eq!(
            (info.wait_ctx, info.wait_events, info.exit_ret),
            (16, 40, 16)
        );
    }
}
