//! Loading a program on first use and attaching it to a tracepoint or raw tracepoint; every link
//! belongs to the object and goes with it.

use std::collections::HashSet;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::OnceLock;

use crate::error::{Context, Result, failed};
use aya::{
    Btf, Ebpf,
    programs::{BtfTracePoint, Program, RawTracePoint, TracePoint},
};
use aya_obj::generated::{bpf_attach_type, bpf_attr, bpf_cmd};

use super::rawbpf::{bpf_fd, tracepoint_event};
use super::tracefs;

/// Loads programs on first use and attaches them; every link belongs to `ebpf` and goes with it.
pub struct Attacher<'a> {
    pub ebpf: &'a mut Ebpf,
    loaded: HashSet<String>,
}

impl<'a> Attacher<'a> {
    pub fn new(ebpf: &'a mut Ebpf) -> Attacher<'a> {
        Attacher {
            ebpf,
            loaded: HashSet::new(),
        }
    }

    /// The program `name`, loaded into the kernel (a BTF tracepoint is loaded by
    /// [`Attacher::btf_tracepoint`], which knows its tracepoint).
    pub fn program(&mut self, name: &str) -> Result<&mut Program> {
        let first = self.loaded.insert(name.to_owned());
        let program = self
            .ebpf
            .program_mut(name)
            .with_context(|| format!("program {name} is not in the eBPF object"))?;
        if first {
            let res = match program {
                Program::TracePoint(p) => p.load(),
                Program::RawTracePoint(p) => p.load(),
                Program::UProbe(p) => p.load(),
                Program::KProbe(p) => p.load(),
                Program::PerfEvent(p) => p.load(),
                _ => Ok(()),
            };
            if let Err(e) = res {
                self.loaded.remove(name);
                return Err(e).with_context(|| format!("loading {name}"));
            }
        }
        Ok(self.ebpf.program_mut(name).expect("checked above"))
    }

    /// Attaches tracepoint program `prog` to `category/name`.
    pub fn tracepoint(&mut self, prog: &str, category: &str, name: &str) -> Result<()> {
        let p: &mut TracePoint = self.program(prog)?.try_into()?;
        p.attach(category, name)
            .with_context(|| format!("attaching {prog} to {category}/{name}"))?;
        Ok(())
    }

    /// Attaches tracepoint program `prog` to `category/name` through a perf event link whose BPF
    /// cookie is `cookie`, which aya 0.14's attach does not set. The link is the caller's: closing
    /// it detaches the program.
    pub fn tracepoint_cookie(
        &mut self,
        prog: &str,
        category: &str,
        name: &str,
        cookie: u64,
    ) -> Result<OwnedFd> {
        let p: &mut TracePoint = self.program(prog)?.try_into()?;
        let fd = p.fd()?.as_fd();
        let attach = || -> Result<OwnedFd> {
            let path = tracefs::event_dir(category, name).join("id");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let id = (text.trim().parse())
                .with_context(|| format!("{}: `{}` is not an id", path.display(), text.trim()))?;
            let event = tracepoint_event(id, false).context("perf_event_open")?;
            // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
            let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
            // SAFETY: BPF_LINK_CREATE reads this member of the union, and its perf_event member
            // for this attach type.
            unsafe {
                let l = &mut attr.link_create;
                l.__bindgen_anon_1.prog_fd = fd.as_raw_fd() as u32;
                l.__bindgen_anon_2.target_fd = event.as_raw_fd() as u32;
                l.attach_type = bpf_attach_type::BPF_PERF_EVENT as u32;
                l.__bindgen_anon_3.perf_event.bpf_cookie = cookie;
            }
            // The link holds the perf event; its fd here goes.
            bpf_fd(bpf_cmd::BPF_LINK_CREATE, &mut attr).context("BPF_LINK_CREATE")
        };
        attach().with_context(|| format!("attaching {prog} to {category}/{name}"))
    }

    /// Loads BTF tracepoint program `prog` for tracepoint `name`, whose type the kernel's BTF gives,
    /// and attaches it. The verifier's refusal comes whole, its log with it.
    pub fn btf_tracepoint(&mut self, prog: &str, name: &str) -> Result<()> {
        let btf = kernel_btf()?;
        let p: &mut BtfTracePoint = self.program(prog)?.try_into()?;
        p.load(name, btf)
            .with_context(|| format!("loading {prog}"))?;
        p.attach()
            .with_context(|| format!("attaching {prog} to BTF tracepoint {name}"))?;
        Ok(())
    }

    /// Attaches raw tracepoint program `prog` to `name`.
    pub fn raw_tracepoint(&mut self, prog: &str, name: &str) -> Result<()> {
        let p: &mut RawTracePoint = self.program(prog)?.try_into()?;
        p.attach(name)
            .with_context(|| format!("attaching {prog} to raw tracepoint {name}"))?;
        Ok(())
    }
}

/// The kernel's BTF as aya reads it (BTF tracepoints are loaded by it), parsed once per process.
pub fn kernel_btf() -> Result<&'static Btf> {
    static BTF: OnceLock<Result<Btf, String>> = OnceLock::new();
    BTF.get_or_init(|| Btf::from_sys_fs().map_err(|e| format!("reading the kernel's BTF: {e}")))
        .as_ref()
        .map_err(|e| failed!("{e}"))
}

/// The chain of an error as one line, without the verifier's log that follows its first line.
pub fn reason(e: &crate::error::Error) -> String {
    let full = datasets::error::chain(e);
    let first = full.lines().next().unwrap_or_default();
    match first.find(" Verifier output:") {
        Some(i) => first[..i].to_owned(),
        None => first.to_owned(),
    }
}
