//! kprobe_multi links: one program attached to many kernel functions by one bpf(2) call, each
//! function with a cookie the program reads back (Linux 5.18+, on kernels built with
//! CONFIG_FPROBE). aya 0.14 has no such link, so it is made here from the relocated object.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use aya_obj::generated::{
    BPF_F_KPROBE_MULTI_RETURN, bpf_attach_type, bpf_attr, bpf_cmd, bpf_prog_type,
};

use super::rawbpf::{Relocated, bpf_fd};

/// Loads `program` as a kprobe-type program for kprobe_multi links.
pub fn load(object: &Relocated, program: &str) -> Result<OwnedFd> {
    let mut attr = object.prog_load_attr(program)?;
    // SAFETY: BPF_PROG_LOAD reads this member of the union.
    let a = unsafe { &mut attr.__bindgen_anon_3 };
    a.prog_type = bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32;
    a.expected_attach_type = bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32;
    bpf_fd(bpf_cmd::BPF_PROG_LOAD, &mut attr)
        .with_context(|| format!("loading {program} for kprobe_multi"))
}

/// One link attaching `program` (from [`load`]) at the entry, or with `ret` the return, of every
/// function at `addrs`, each with its cookie.
pub fn link(program: BorrowedFd, addrs: &[u64], cookies: &[u64], ret: bool) -> Result<OwnedFd> {
    // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: BPF_LINK_CREATE reads this member of the union, and its kprobe_multi member for
    // this attach type.
    unsafe {
        let l = &mut attr.link_create;
        l.__bindgen_anon_1.prog_fd = program.as_raw_fd() as u32;
        l.attach_type = bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32;
        let k = &mut l.__bindgen_anon_3.kprobe_multi;
        k.addrs = addrs.as_ptr() as u64;
        k.cookies = cookies.as_ptr() as u64;
        k.cnt = addrs.len() as u32;
        k.flags = if ret { BPF_F_KPROBE_MULTI_RETURN } else { 0 };
    }
    bpf_fd(bpf_cmd::BPF_LINK_CREATE, &mut attr).with_context(|| {
        let end = if ret { "return" } else { "entry" };
        format!("kprobe_multi {end} link of {} functions", addrs.len())
    })
}
