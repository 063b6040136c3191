//! io_uring requests, traced by the `sys` layer as calls of their own: a request submitted through a
//! ring never passes through a `read` or `pwrite` system call, so without these a program on io_uring
//! (fio's `io_uring` engine, RocksDB, PostgreSQL 18) shows no I/O at all. Each request becomes one
//! event of the `sys` layer, from its submission (`io_uring_submit_req`, `io_uring_submit_sqe` before
//! Linux 5.19) to its completion (`io_uring_complete`), in the submitting thread, named
//! `io_uring_{op}` after the kernel's own `enum io_uring_op` (`IORING_OP_READ` → `io_uring_read`),
//! with its fd and file (from `io_uring_file_get`, as the syscall fd table resolves it), and its
//! completion's `res` as the return value and, for the operations that move data, as the bytes.
//! No tracepoint carries a request's offset: a read's or write's is read from its `struct io_rw`
//! inside the request, at offsets from the kernel's BTF, and is absent when it asked for the file's
//! own position (-1). A request on a registered (fixed) file has no `io_uring_file_get`, so no fd
//! or file.

use crate::error::{Context, Result, bail};
use aya::maps::Array;
use datasets::vocab::{Mechanism, op};
use datasets::{ArgValue, Event};
use tracer_ebpf::{HAS_FD, HAS_OFFSET, UringEvent, UringInfo};

use super::layer::{Layer, LayerReport};
use crate::bpf::kstruct::{self, VMLINUX};
use crate::bpf::tracefs::{self, Format};
use crate::bpf::{Attacher, reason};
use crate::record::complete;

const CATEGORY: &str = "io_uring";
/// The submission tracepoint, by its name since Linux 5.19 and before.
const SUBMIT: [&str; 2] = ["io_uring_submit_req", "io_uring_submit_sqe"];
const FILE_GET: &str = "io_uring_file_get";
const COMPLETE: &str = "io_uring_complete";

/// The names of io_uring's opcodes on this kernel, by opcode: `io_uring_` and the lowercased name
/// of each `IORING_OP_*` of `members`, the kernel's `enum io_uring_op`
/// ([`kstruct::enum_members`]).
pub fn op_names(members: &[(String, u16)]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for (name, code) in members {
        let Some(op) = name.strip_prefix("IORING_OP_") else {
            bail!("{VMLINUX}: enum io_uring_op has a member `{name}` not named IORING_OP_*");
        };
        if op == "LAST" {
            continue;
        }
        let code = *code as usize;
        if code >= 256 {
            bail!("{VMLINUX}: IORING_OP_{op} is {code}, beyond a u8 opcode");
        }
        if names.len() <= code {
            names.resize(code + 1, String::new());
        }
        names[code] = format!("io_uring_{}", op.to_lowercase());
    }
    Ok(names)
}

/// The operations whose request keeps a `struct io_rw` (io_uring/opdef.c: prepared by
/// `io_prep_read*`/`io_prep_write*`), whose position [`positions`] finds.
const RW_OPS: [&str; 8] = [
    "io_uring_read",
    "io_uring_write",
    "io_uring_readv",
    "io_uring_writev",
    "io_uring_read_fixed",
    "io_uring_write_fixed",
    "io_uring_readv_fixed",
    "io_uring_writev_fixed",
];

/// The byte offset in `struct io_kiocb` of a read's or write's position: its `cmd` holds the
/// `struct io_rw`, whose `kiocb.ki_pos` its prep set from the SQE's `off`.
pub fn positions() -> Result<u16> {
    let at = [
        kstruct::offset("io_kiocb", "cmd")?,
        kstruct::offset("io_rw", "kiocb")?,
        kstruct::offset("kiocb", "ki_pos")?,
    ];
    at.iter()
        .try_fold(0u16, |sum, &o| sum.checked_add(o))
        .context("io_kiocb.cmd.kiocb.ki_pos is beyond 64 KiB")
}

/// The event name of opcode `code`.
pub fn name(names: &[String], code: u32) -> &str {
    names
        .get(code as usize)
        .filter(|n| !n.is_empty())
        .map_or("io_uring_unknown", String::as_str)
}

/// The byte offset of `field` in `format`, checked to be `size` bytes wide.
fn field(format: &Format, tracepoint: &str, field: &str, size: u8) -> Result<u16> {
    let f = format
        .field(field)
        .with_context(|| format!("tracepoint {CATEGORY}/{tracepoint} has no field `{field}`"))?;
    if f.size != size {
        bail!(
            "tracepoint {CATEGORY}/{tracepoint}: field `{field}` is {} bytes, the program reads {size}",
            f.size
        );
    }
    Ok(f.offset)
}

/// Where the programs read their fields on this kernel, from the tracepoints' formats, and the
/// name of the submission tracepoint; `pos` is [`positions`], when known.
pub fn plan(names: &[String], pos: Option<u16>) -> Result<(UringInfo, &'static str)> {
    let present = tracefs::events(CATEGORY);
    let submit = SUBMIT
        .into_iter()
        .find(|s| present.iter().any(|p| p == s))
        .with_context(|| {
            format!(
                "neither {CATEGORY}/{} nor {} is on this kernel",
                SUBMIT[0], SUBMIT[1]
            )
        })?;
    let s = tracefs::format(CATEGORY, submit)?;
    let f = tracefs::format(CATEGORY, FILE_GET)?;
    let c = tracefs::format(CATEGORY, COMPLETE)?;
    let mask = |keep: &dyn Fn(&str) -> bool| {
        names
            .iter()
            .enumerate()
            .take(64)
            .filter(|(_, n)| keep(n))
            .fold(0u64, |m, (code, _)| m | 1 << code)
    };
    let info = UringInfo {
        submit_req: field(&s, submit, "req", 8)?,
        submit_opcode: field(&s, submit, "opcode", 1)?,
        file_req: field(&f, FILE_GET, "req", 8)?,
        file_fd: field(&f, FILE_GET, "fd", 4)?,
        complete_req: field(&c, COMPLETE, "req", 8)?,
        complete_res: field(&c, COMPLETE, "res", 4)?,
        ready: 1,
        req_pos: pos.unwrap_or(0),
        transfers: mask(&|n| op::transfers(n)),
        rw_ops: if pos.is_some() {
            mask(&|n| RW_OPS.contains(&n))
        } else {
            0
        },
    };
    Ok((info, submit))
}

/// Attaches the three io_uring tracepoints, adding what attached and what did not to the sys
/// layer's `report`; returns the opcode names its events decode with (empty when refused).
pub fn attach(at: &mut Attacher, report: &mut LayerReport) -> Vec<String> {
    let pos = match positions() {
        Ok(p) => Some(p),
        Err(e) => {
            report.refuse(
                "io_uring request offsets",
                Mechanism::Tracepoint,
                reason(&e),
            );
            None
        }
    };
    let planned = kstruct::enum_members("io_uring_op")
        .and_then(|m| op_names(&m))
        .and_then(|names| plan(&names, pos).map(|(info, submit)| (names, info, submit)));
    let (names, info, submit) = match planned {
        Ok(p) => p,
        Err(e) => {
            report.refuse(CATEGORY, Mechanism::Tracepoint, reason(&e));
            return Vec::new();
        }
    };
    if let Err(e) = fill(at, info) {
        report.refuse(CATEGORY, Mechanism::Tracepoint, reason(&e));
        return Vec::new();
    }
    let mut all = true;
    for (prog, tp) in [
        ("uring_submit", submit),
        ("uring_file", FILE_GET),
        ("uring_complete", COMPLETE),
    ] {
        let label = format!("{CATEGORY}/{tp}");
        match at.tracepoint(prog, CATEGORY, tp) {
            Ok(()) => report.attached.push(label),
            Err(e) => {
                all = false;
                report.refuse(&label, Mechanism::Tracepoint, reason(&e));
            }
        }
    }
    if !all {
        return Vec::new();
    }
    if !report.mechanism.0.contains(&Mechanism::Tracepoint) {
        report.mechanism.0.push(Mechanism::Tracepoint);
    }
    names
}

fn fill(at: &mut Attacher, info: UringInfo) -> Result<()> {
    let mut map: Array<_, UringInfo> =
        Array::try_from(at.ebpf.map_mut("URING_INFO").context("URING_INFO map")?)?;
    map.set(0, info, 0)?;
    Ok(())
}

/// Fills `e` with a request's event; its file, when known, is `fhash`.
pub fn decode(e: &mut Event, u: &UringEvent, names: &[String], fhash: Option<datasets::Hash>) {
    let name = name(names, u.opcode);
    complete(e, name, Layer::Sys.name(), &u.hdr);
    e.args.fhash = fhash;
    e.args.ret = Some(u.res);
    if op::transfers(name) {
        e.args.size = Some(u.res.max(0));
    }
    if u.has & HAS_OFFSET != 0 {
        e.args.offset = Some(u.offset);
    }
    if u.has & HAS_FD != 0 {
        e.args.other.push(("fd".into(), ArgValue::Int(u.fd as i64)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_named_after_the_kernels_enum() {
        let names = op_names(&kstruct::enum_members("io_uring_op").unwrap()).unwrap();
        // include/uapi/linux/io_uring.h: IORING_OP_NOP is 0, IORING_OP_READV 1, IORING_OP_FSYNC 3.
        assert_eq!(name(&names, 0), "io_uring_nop");
        assert_eq!(name(&names, 1), "io_uring_readv");
        assert_eq!(name(&names, 3), "io_uring_fsync");
        assert_eq!(name(&names, 999), "io_uring_unknown");
        for n in ["io_uring_read", "io_uring_write", "io_uring_read_fixed"] {
            assert!(names.iter().any(|x| x == n), "{n} is not an opcode here");
        }
    }

    #[test]
    fn a_format_without_a_field_or_with_another_width_is_an_error_naming_both() {
        // io_uring_complete before Linux 5.19: no `req`, and `res` as wide as here.
        let old = crate::bpf::tracefs::parse_format(
            "ID: 5\n\tfield:void * ctx;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:u64 user_data;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:long res;\toffset:24;\tsize:8;\tsigned:1;\n",
            "format",
        )
        .unwrap();
        let missing = field(&old, COMPLETE, "req", 8).unwrap_err().to_string();
        assert_eq!(
            missing,
            "tracepoint io_uring/io_uring_complete has no field `req`"
        );
        let wide = field(&old, COMPLETE, "res", 4).unwrap_err().to_string();
        assert_eq!(
            wide,
            "tracepoint io_uring/io_uring_complete: field `res` is 8 bytes, the program reads 4"
        );
        assert_eq!(field(&old, COMPLETE, "user_data", 8).unwrap(), 16);
    }
}
