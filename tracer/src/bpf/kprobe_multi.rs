//! kprobe_multi links: one program attached to many kernel functions by one bpf(2) call, each
//! function with a cookie the program reads back (Linux 5.18+, on kernels built with
//! CONFIG_FPROBE). aya 0.14 has no such link, so it is made here from the relocated object.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use crate::error::{Context, Result};
use aya_obj::generated::{
    BPF_F_KPROBE_MULTI_RETURN, bpf_attach_type, bpf_attr, bpf_cmd, bpf_prog_type,
};

use super::rawbpf::{Relocated, bpf_fd};

/// `BPF_TRACE_KPROBE_SESSION` of Linux 6.10's `enum bpf_attach_type`, newer than aya-obj 0.14's
/// bindings (whose `__MAX_BPF_ATTACH_TYPE` is 56).
const BPF_TRACE_KPROBE_SESSION: u32 = 56;

/// Where a link's program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    Entry,
    Return,
    /// At entry, and at the return of each call whose entry returned 0: one ftrace registration
    /// for both ends (Linux 6.10+).
    Session,
}

impl Ends {
    fn attach_type(self) -> u32 {
        match self {
            Ends::Entry | Ends::Return => bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32,
            Ends::Session => BPF_TRACE_KPROBE_SESSION,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Ends::Entry => "entry",
            Ends::Return => "return",
            Ends::Session => "session",
        }
    }
}

/// Loads `program` as a kprobe-type program for kprobe_multi links of `ends`.
pub fn load(object: &Relocated, program: &str, ends: Ends) -> Result<OwnedFd> {
    let mut attr = object.prog_load_attr(program)?;
    // SAFETY: BPF_PROG_LOAD reads this member of the union.
    let a = unsafe { &mut attr.__bindgen_anon_3 };
    a.prog_type = bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32;
    a.expected_attach_type = ends.attach_type();
    bpf_fd(bpf_cmd::BPF_PROG_LOAD, &mut attr)
        .with_context(|| format!("loading {program} for kprobe_multi {} links", ends.name()))
}

/// One link attaching `program` (from [`load`] with the same `ends`) to every function at
/// `addrs`, each with its cookie.
pub fn link(program: BorrowedFd, addrs: &[u64], cookies: &[u64], ends: Ends) -> Result<OwnedFd> {
    // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: BPF_LINK_CREATE reads this member of the union, and its kprobe_multi member for
    // these attach types.
    unsafe {
        let l = &mut attr.link_create;
        l.__bindgen_anon_1.prog_fd = program.as_raw_fd() as u32;
        l.attach_type = ends.attach_type();
        let k = &mut l.__bindgen_anon_3.kprobe_multi;
        k.addrs = addrs.as_ptr() as u64;
        k.cookies = cookies.as_ptr() as u64;
        k.cnt = addrs.len() as u32;
        k.flags = if ends == Ends::Return {
            BPF_F_KPROBE_MULTI_RETURN
        } else {
            0
        };
    }
    bpf_fd(bpf_cmd::BPF_LINK_CREATE, &mut attr).with_context(|| {
        format!(
            "kprobe_multi {} link of {} functions",
            ends.name(),
            addrs.len()
        )
    })
}
