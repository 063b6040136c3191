//! The `sys` layer: raw_syscalls/sys_enter and sys_exit as raw tracepoints, two programs whatever
//! the number of syscalls, with the syscalls chosen by number in the kernel's `SYSCALLS` map. The
//! programs read the arguments from the x86_64 registers, whose offsets are checked here against
//! the kernel's BTF. The same programs follow Linux AIO requests (`aio`), by syscall number.

use crate::error::{Context, Result, bail};
use aya::maps::Array;
use datasets::vocab::{Mechanism, Mechanisms};
use tracer_ebpf::{
    ARG_NONE as N, ARG_RET as R, HAS_DUP, HAS_FD, HAS_OFFSET, HAS_OFLAGS, HAS_SIZE, HAS_SRC_FD,
    MAX_SYSCALLS, SysEvent, SysPathEvent, SyscallSpec, aio_call, sysflag,
};

use super::attach::{Attached, Probes, Setup};
use super::layer::{Layer, LayerReport};
use super::{aio, uring};
use crate::bpf::kstruct;
use crate::bpf::{Attacher, reason};

/// A traced syscall: its x86_64 number and which arguments are the fd, size, offset and path.
#[derive(Clone, Copy, Debug)]
pub struct Syscall {
    pub name: &'static str,
    pub nr: i64,
    pub spec: SyscallSpec,
}

const fn sc(
    name: &'static str,
    nr: i64,
    flags: u8,
    fd: u8,
    size: u8,
    off: u8,
    path: u8,
) -> Syscall {
    Syscall {
        name,
        nr,
        spec: SyscallSpec {
            flags: flags | sysflag::TRACED,
            fd_arg: fd,
            size_arg: size,
            offset_arg: off,
            path_arg: path,
            oflags_arg: N,
            src_fd_arg: N,
            aio: aio_call::NONE,
        },
    }
}

impl Syscall {
    /// The same call, recording argument `arg` as its open flags.
    const fn oflags(mut self, arg: u8) -> Syscall {
        self.spec.oflags_arg = arg;
        self
    }

    /// The same call, recording argument `arg` as the fd it copies from; `fd` is the one it
    /// copies to.
    const fn src(mut self, arg: u8) -> Syscall {
        self.spec.src_fd_arg = arg;
        self
    }

    /// The same call, recording argument `arg` as the directory fd its path is relative to
    /// (`openat(dirfd, name)`). The kernel keeps it in the copy source's place: a call with a path
    /// is never a copy.
    const fn dir(self, arg: u8) -> Syscall {
        self.src(arg)
    }
}

use aio::SYS_IO_PGETEVENTS;
use libc as l;
use sysflag::{CLOSE, DUP, EXEC, FCNTL, NO_RETURN, OPEN};

/// The 41 syscalls DataCrumbs traced, the stat and directory calls of file-tree tools, the ones
/// the fd table needs (open, creat, dup*, exit_group), and the copies that move data between two
/// fds in the kernel (sendfile, splice).
/// A copy records both fds: its `fd` (and so its file) is the destination, the one it writes, and
/// its source is kept beside it (`src_fd`, `src_fhash`). One event per call, not one per file:
/// the call's time is spent once, and a second event would claim it twice.
pub const SYSCALLS: &[Syscall] = &[
    sc("openat", l::SYS_openat, OPEN, N, N, N, 1)
        .oflags(2)
        .dir(0),
    sc("open", l::SYS_open, OPEN, N, N, N, 0).oflags(1),
    sc("creat", l::SYS_creat, OPEN, N, N, N, 0),
    sc("read", l::SYS_read, 0, 0, R, N, N),
    sc("write", l::SYS_write, 0, 0, R, N, N),
    sc("close", l::SYS_close, CLOSE, 0, N, N, N),
    sc("pread64", l::SYS_pread64, 0, 0, R, 3, N),
    sc("pwrite64", l::SYS_pwrite64, 0, 0, R, 3, N),
    sc("readv", l::SYS_readv, 0, 0, R, N, N),
    sc("writev", l::SYS_writev, 0, 0, R, N, N),
    sc("preadv", l::SYS_preadv, 0, 0, R, 3, N),
    sc("pwritev", l::SYS_pwritev, 0, 0, R, 3, N),
    sc("preadv2", l::SYS_preadv2, 0, 0, R, 3, N),
    sc("pwritev2", l::SYS_pwritev2, 0, 0, R, 3, N),
    sc("lseek", l::SYS_lseek, 0, 0, N, R, N),
    sc("fsync", l::SYS_fsync, 0, 0, N, N, N),
    sc("fdatasync", l::SYS_fdatasync, 0, 0, N, N, N),
    sc("sync_file_range", l::SYS_sync_file_range, 0, 0, 2, 1, N),
    sc("syncfs", l::SYS_syncfs, 0, 0, N, N, N),
    sc("sync", l::SYS_sync, 0, N, N, N, N),
    sc("fallocate", l::SYS_fallocate, 0, 0, 3, 2, N),
    sc("ftruncate", l::SYS_ftruncate, 0, 0, 1, N, N),
    sc("mmap", l::SYS_mmap, 0, 4, 1, 5, N),
    sc("msync", l::SYS_msync, 0, N, 1, N, N),
    sc("readahead", l::SYS_readahead, 0, 0, 2, 1, N),
    sc("copy_file_range", l::SYS_copy_file_range, 0, 2, R, N, N).src(0),
    sc("sendfile", l::SYS_sendfile, 0, 0, R, N, N).src(1),
    sc("splice", l::SYS_splice, 0, 2, R, N, N).src(0),
    sc("statx", l::SYS_statx, 0, N, N, N, 1).dir(0),
    // What file-tree tools (find, tar, cp -r, du) spend their time in: glibc's stat, lstat and
    // fstatat are newfstatat, fstat is fstat, and readdir reads the directory with getdents64.
    sc("newfstatat", l::SYS_newfstatat, 0, N, N, N, 1).dir(0),
    sc("fstat", l::SYS_fstat, 0, 0, N, N, N),
    sc("getdents64", l::SYS_getdents64, 0, 0, R, N, N),
    // What relative names are relative to: a server chdirs into its data directory (PostgreSQL).
    sc("chdir", l::SYS_chdir, 0, N, N, N, 0),
    sc("fchdir", l::SYS_fchdir, 0, 0, N, N, N),
    sc("fstatfs", l::SYS_fstatfs, 0, 0, N, N, N),
    sc("statfs", l::SYS_statfs, 0, N, N, N, 0),
    sc("fcntl", l::SYS_fcntl, FCNTL, 0, N, N, N),
    sc("flock", l::SYS_flock, 0, 0, N, N, N),
    sc("renameat", l::SYS_renameat, 0, N, N, N, 1).dir(0),
    sc("renameat2", l::SYS_renameat2, 0, N, N, N, 1).dir(0),
    sc("readlinkat", l::SYS_readlinkat, 0, N, R, N, 1).dir(0),
    sc("faccessat", l::SYS_faccessat, 0, N, N, N, 1).dir(0),
    sc("memfd_create", l::SYS_memfd_create, OPEN, N, N, N, 0),
    sc("io_pgetevents", SYS_IO_PGETEVENTS, 0, N, N, N, N),
    sc("execve", l::SYS_execve, EXEC, N, N, N, 0),
    sc("execveat", l::SYS_execveat, EXEC, N, N, N, 1).dir(0),
    sc("exit", l::SYS_exit, NO_RETURN, N, N, N, N),
    sc("exit_group", l::SYS_exit_group, NO_RETURN, N, N, N, N),
    sc("mlock", l::SYS_mlock, 0, N, 1, N, N),
    sc("migrate_pages", l::SYS_migrate_pages, 0, N, N, N, N),
    sc("fsopen", l::SYS_fsopen, 0, N, N, N, N),
    sc("dup", l::SYS_dup, DUP, 0, N, N, N),
    sc("dup2", l::SYS_dup2, DUP, 0, N, N, N),
    sc("dup3", l::SYS_dup3, DUP, 0, N, N, N),
];

pub fn by_nr(nr: u32) -> Option<&'static Syscall> {
    SYSCALLS.iter().find(|s| s.nr == nr as i64)
}

/// Names of the syscalls, in table order.
pub fn names() -> Vec<&'static str> {
    SYSCALLS.iter().map(|s| s.name).collect()
}

pub struct Sys;

impl Probes for Sys {
    fn attach(&self, at: &mut Attacher, _: &mut Setup, out: &mut Attached) {
        let mut report = attach(at);
        out.names.uring = uring::attach(at, &mut report);
        out.reports.push(report);
    }
}

/// Fills the kernel's syscall filter and attaches the two syscall tracepoints: sys_enter as a BTF
/// tracepoint (plain loads of the argument registers: about 70 ns less a call than copying them),
/// or, where the verifier refuses that, as a raw tracepoint, the refusal reported; sys_exit reads
/// no memory and stays a raw tracepoint.
fn attach(at: &mut Attacher) -> LayerReport {
    let mut report = LayerReport::new(Layer::Sys, Mechanism::RawTracepoint);
    if let Err(e) = check_registers().and_then(|()| fill_filter(at)) {
        report.refuse("raw_syscalls", Mechanism::RawTracepoint, reason(&e));
        return report;
    }
    let enter = match at.btf_tracepoint("sys_enter_btf", "sys_enter") {
        Ok(()) => {
            report.mechanism = Mechanisms(vec![Mechanism::TpBtf, Mechanism::RawTracepoint]);
            Ok(())
        }
        Err(e) => {
            log::debug!(
                "sys_enter as a BTF tracepoint: {}",
                datasets::error::chain(&e)
            );
            report.refuse("raw_syscalls/sys_enter", Mechanism::TpBtf, reason(&e));
            at.raw_tracepoint("sys_enter", "sys_enter")
        }
    };
    for (tp, res) in [
        ("sys_enter", enter),
        ("sys_exit", at.raw_tracepoint("sys_exit", "sys_exit")),
    ] {
        match res {
            Ok(()) => report.attached.push(format!("raw_syscalls/{tp}")),
            Err(e) => report.refuse(
                &format!("raw_syscalls/{tp}"),
                Mechanism::RawTracepoint,
                reason(&e),
            ),
        }
    }
    report
}

/// The `struct pt_regs` offsets the programs read the arguments at: `r10` to `di`, 8 bytes apart.
const REGISTERS: [(&str, u16); 6] = [
    ("r10", 56),
    ("r9", 64),
    ("r8", 72),
    ("dx", 96),
    ("si", 104),
    ("di", 112),
];

/// Checks that this kernel's registers are where the programs read them.
fn check_registers() -> Result<()> {
    if !cfg!(target_arch = "x86_64") {
        bail!("the sys programs read x86_64 registers");
    }
    for (reg, want) in REGISTERS {
        let got = kstruct::offset("pt_regs", reg)?;
        if got != want {
            bail!("struct pt_regs.{reg} is at byte {got}, the sys programs read it at {want}");
        }
    }
    Ok(())
}

/// What the kernel's `SYSCALLS` map holds, by number: the traced calls, and the Linux AIO calls
/// ([`aio::CALLS`]) marked with what they do to requests; io_submit and io_getevents are not
/// traced as rows of their own.
fn filter() -> Vec<(u32, SyscallSpec)> {
    let mut specs: Vec<(u32, SyscallSpec)> = SYSCALLS
        .iter()
        .filter(|s| (0..MAX_SYSCALLS as i64).contains(&s.nr))
        .map(|s| (s.nr as u32, s.spec))
        .collect();
    for (nr, what) in aio::CALLS {
        let nr = nr as u32;
        match specs.iter_mut().find(|(n, _)| *n == nr) {
            Some((_, spec)) => spec.aio = what,
            None => specs.push((
                nr,
                SyscallSpec {
                    aio: what,
                    ..SyscallSpec::default()
                },
            )),
        }
    }
    specs
}

fn fill_filter(at: &mut Attacher) -> Result<()> {
    let mut map: Array<_, SyscallSpec> =
        Array::try_from(at.ebpf.map_mut("SYSCALLS").context("SYSCALLS map")?)?;
    for (nr, spec) in filter() {
        map.set(nr, spec, 0)?;
    }
    Ok(())
}

/// What a decoded syscall record says, before the file is resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub name: &'static str,
    pub ret: i64,
    pub fd: Option<i32>,
    pub size: Option<i64>,
    pub offset: Option<i64>,
    /// An open's flags (`O_*`).
    pub oflags: Option<u32>,
    pub file: u64,
    /// A copy's source fd and its file id (0 when unknown); `fd` and `file` are its destination.
    pub src_fd: Option<i32>,
    pub src_file: u64,
    /// The path the call named; for opens, the file `file` now stands for.
    pub path: Option<String>,
    pub opens: bool,
    /// `ret` is now a second fd of `file` ([`HAS_DUP`]).
    pub dups: bool,
}

pub fn decode(ev: &SysEvent, path: Option<&SysPathEvent>) -> Call {
    let sc = by_nr(ev.nr);
    let path = path.map(|p| {
        let end = p.path.iter().position(|&b| b == 0).unwrap_or(p.path.len());
        String::from_utf8_lossy(&p.path[..end]).into_owned()
    });
    let opens = sc.is_some_and(|s| s.spec.flags & OPEN != 0) && ev.ret >= 0;
    Call {
        name: sc.map_or("unknown", |s| s.name),
        ret: ev.ret,
        fd: if opens {
            Some(ev.ret as i32)
        } else {
            (ev.has & HAS_FD != 0).then_some(ev.fd)
        },
        size: (ev.has & HAS_SIZE != 0).then_some(ev.size),
        offset: (ev.has & HAS_OFFSET != 0).then_some(ev.offset),
        oflags: (ev.has & HAS_OFLAGS != 0).then_some(ev.oflags),
        file: ev.file,
        src_fd: (ev.has & HAS_SRC_FD != 0).then_some(ev.src_fd),
        src_file: ev.src_file,
        path: path.filter(|p| !p.is_empty()),
        opens,
        dups: ev.has & HAS_DUP != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_ebpf::{EventHeader, PATH_LEN};

    #[test]
    fn the_41_syscalls_of_datacrumbs_are_traced_with_distinct_numbers() {
        let datacrumbs = [
            "openat",
            "read",
            "write",
            "close",
            "pread64",
            "pwrite64",
            "readv",
            "writev",
            "preadv",
            "pwritev",
            "preadv2",
            "pwritev2",
            "lseek",
            "fsync",
            "fdatasync",
            "sync_file_range",
            "syncfs",
            "sync",
            "fallocate",
            "ftruncate",
            "mmap",
            "msync",
            "readahead",
            "copy_file_range",
            "statx",
            "fstatfs",
            "statfs",
            "fcntl",
            "flock",
            "renameat",
            "renameat2",
            "readlinkat",
            "faccessat",
            "memfd_create",
            "io_pgetevents",
            "execve",
            "execveat",
            "exit",
            "mlock",
            "migrate_pages",
            "fsopen",
        ];
        assert_eq!(datacrumbs.len(), 41);
        for name in datacrumbs {
            assert!(names().contains(&name), "{name} is not traced");
        }
        let mut nrs: Vec<i64> = SYSCALLS.iter().map(|s| s.nr).collect();
        nrs.sort();
        nrs.dedup();
        assert_eq!(nrs.len(), SYSCALLS.len());
        assert!(nrs.iter().all(|&n| (0..MAX_SYSCALLS as i64).contains(&n)));
    }

    /// The Linux AIO calls are followed by the numbers the kernel's headers give them
    /// (linux-libc-dev's asm/unistd_64.h), io_submit and io_getevents without a row of their own.
    #[test]
    fn the_aio_calls_are_in_the_filter_by_the_kernel_headers_numbers() {
        let header = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h";
        let text = std::fs::read_to_string(header).unwrap();
        let nr = |name: &str| -> u32 {
            let def = format!("#define __NR_{name} ");
            let line = text.lines().find(|l| l.starts_with(&def));
            line.unwrap_or_else(|| panic!("{header} has no {def}"))[def.len()..]
                .trim()
                .parse()
                .unwrap()
        };
        let filter = filter();
        let spec = |name: &str| {
            let n = nr(name);
            let found = filter.iter().find(|(f, _)| *f == n);
            found
                .unwrap_or_else(|| panic!("{name} ({n}) is not in the filter"))
                .1
        };
        let traced = |s: SyscallSpec| s.flags & sysflag::TRACED != 0;
        let submit = spec("io_submit");
        assert_eq!((submit.aio, traced(submit)), (aio_call::SUBMIT, false));
        let getevents = spec("io_getevents");
        assert_eq!((getevents.aio, traced(getevents)), (aio_call::REAP, false));
        let pgetevents = spec("io_pgetevents");
        assert_eq!((pgetevents.aio, traced(pgetevents)), (aio_call::REAP, true));
        let read = spec("read");
        assert_eq!((read.aio, traced(read)), (aio_call::NONE, true));
        let mut nrs: Vec<u32> = filter.iter().map(|(n, _)| *n).collect();
        nrs.sort();
        nrs.dedup();
        assert_eq!(nrs.len(), filter.len());
    }

    #[test]
    fn decodes_an_open_and_a_pread() {
        let mut path = [0u8; PATH_LEN];
        path[..9].copy_from_slice(b"/tmp/data");
        let open = SysPathEvent {
            sys: SysEvent {
                hdr: EventHeader::default(),
                nr: l::SYS_openat as u32,
                ret: 3,
                file: 77,
                has: HAS_OFLAGS,
                oflags: (l::O_RDONLY | l::O_DIRECT) as u32,
                ..SysEvent::default()
            },
            path,
        };
        let call = decode(&open.sys, Some(&open));
        assert_eq!(call.name, "openat");
        assert_eq!(call.fd, Some(3));
        assert!(call.opens);
        assert_eq!(call.oflags, Some(l::O_DIRECT as u32));
        assert_eq!(call.path.as_deref(), Some("/tmp/data"));

        let pread = SysEvent {
            nr: l::SYS_pread64 as u32,
            fd: 3,
            ret: 4096,
            size: 4096,
            offset: 8192,
            file: 77,
            has: HAS_FD | HAS_SIZE | HAS_OFFSET,
            ..SysEvent::default()
        };
        let call = decode(&pread, None);
        assert_eq!(
            call,
            Call {
                name: "pread64",
                ret: 4096,
                fd: Some(3),
                size: Some(4096),
                offset: Some(8192),
                oflags: None,
                file: 77,
                src_fd: None,
                src_file: 0,
                path: None,
                opens: false,
                dups: false,
            }
        );
    }

    #[test]
    fn a_copy_records_its_destination_and_its_source() {
        let spec = |name: &str| SYSCALLS.iter().find(|s| s.name == name).unwrap().spec;
        // copy_file_range(fd_in, off_in, fd_out, ...), splice likewise; sendfile(out_fd, in_fd, ...).
        for (name, dst, src) in [
            ("copy_file_range", 2, 0),
            ("splice", 2, 0),
            ("sendfile", 0, 1),
        ] {
            let s = spec(name);
            assert_eq!(
                (s.fd_arg, s.src_fd_arg, s.size_arg),
                (dst, src, R),
                "{name}"
            );
        }
        let copy = SysEvent {
            nr: l::SYS_copy_file_range as u32,
            fd: 4,
            src_fd: 3,
            ret: 65536,
            size: 65536,
            file: 78,
            src_file: 77,
            has: HAS_FD | HAS_SIZE | HAS_SRC_FD,
            ..SysEvent::default()
        };
        let call = decode(&copy, None);
        assert_eq!(
            (call.fd, call.file, call.src_fd, call.src_file, call.size),
            (Some(4), 78, Some(3), 77, Some(65536))
        );
    }
}
