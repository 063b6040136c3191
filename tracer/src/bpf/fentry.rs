//! fentry/fexit on kernel functions, in vmlinux or in modules (ext4 in Debian's kernels, for one).
//!
//! The kernel binds a tracing program to one function when it loads (its attach BTF id), and lets
//! only freplace programs take other targets afterwards. So the object is parsed and relocated
//! against the maps of the object aya already loaded once ([`super::rawbpf::Relocated`]), and
//! each function costs one BPF_PROG_LOAD of those instructions with its BTF id and one link: no
//! object copy, no map. A module function is named by its type id in the module's split BTF
//! (`/sys/kernel/btf/<module>`), with the module's kernel BTF object as `attach_btf_obj_fd`, which
//! aya 0.14 cannot do.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::error::{Context, Result, bail};
use aya_obj::btf::BtfKind;
use aya_obj::generated::{bpf_attach_type, bpf_attr, bpf_btf_info, bpf_cmd, bpf_prog_type};

use super::kstruct::KernelBtf;
use super::rawbpf::{Relocated, bpf_fd, obj_info, objects};

/// Which end of the function a program runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Entry,
    Exit,
}

impl End {
    fn attach_type(self) -> bpf_attach_type {
        match self {
            End::Entry => bpf_attach_type::BPF_TRACE_FENTRY,
            End::Exit => bpf_attach_type::BPF_TRACE_FEXIT,
        }
    }

    fn name(self) -> &'static str {
        match self {
            End::Entry => "fentry",
            End::Exit => "fexit",
        }
    }
}

/// A program attached to a kernel function; closing both fds detaches and unloads it.
pub struct Link {
    link: OwnedFd,
    program: OwnedFd,
}

impl Link {
    pub fn into_fds(self) -> [OwnedFd; 2] {
        [self.link, self.program]
    }
}

/// A module's BTF: its types, for ids, and its kernel object, for the load.
struct ModuleBtf {
    types: btf_rs::Btf,
    object: OwnedFd,
}

/// Loads the object's tracing programs against kernel functions.
pub struct Fentry<'a> {
    object: &'a Relocated,
    modules: HashMap<String, ModuleBtf>,
}

impl<'a> Fentry<'a> {
    /// Loads the programs of `object`. A vmlinux function is bound by aya's parse of the kernel's
    /// BTF, which the sys layer reads too; a module's, by its split BTF over btf-rs's parse.
    pub fn new(object: &'a Relocated) -> Result<Fentry<'a>> {
        Ok(Fentry {
            object,
            modules: HashMap::new(),
        })
    }

    /// Loads `program` at `end` of `function`, in `module` or else in vmlinux, and attaches it.
    pub fn attach(
        &mut self,
        program: &str,
        end: End,
        module: Option<&str>,
        function: &str,
    ) -> Result<Link> {
        let what = || match module {
            Some(m) => format!("{} on {function} ({m} module)", end.name()),
            None => format!("{} on {function}", end.name()),
        };
        let (id, btf_object) = match module {
            Some(m) => {
                self.read_module(m)?;
                let btf = &self.modules[m];
                let id = function_id(KernelBtf::get()?.btf(), Some(&btf.types), function)
                    .with_context(|| format!("/sys/kernel/btf/{m}"))?;
                (id, Some(btf.object.as_fd()))
            }
            None => (
                super::attach::kernel_btf()?
                    .id_by_type_name_kind(function, BtfKind::Func)
                    .with_context(|| format!("{VMLINUX_BTF}: no function named {function}"))?,
                None,
            ),
        };
        let program = self
            .load(program, end, id, btf_object)
            .with_context(|| format!("loading {}", what()))?;
        let link = raw_tracepoint_open(program.as_fd())
            .with_context(|| format!("attaching {}", what()))?;
        Ok(Link { link, program })
    }

    fn read_module(&mut self, module: &str) -> Result<()> {
        if !self.modules.contains_key(module) {
            let path = format!("/sys/kernel/btf/{module}");
            let types = read_split(&path, KernelBtf::get()?.btf())?;
            let object = kernel_btf_object(module)?;
            self.modules
                .insert(module.to_owned(), ModuleBtf { types, object });
        }
        Ok(())
    }

    fn load(
        &self,
        program: &str,
        end: End,
        btf_id: u32,
        btf_object: Option<BorrowedFd>,
    ) -> Result<OwnedFd> {
        let attr = self.object.prog_load_attr(program)?;
        let load = |log: &mut [u8]| {
            let mut attr = attr;
            // SAFETY: BPF_PROG_LOAD reads this member of the union.
            let a = unsafe { &mut attr.__bindgen_anon_3 };
            a.prog_type = bpf_prog_type::BPF_PROG_TYPE_TRACING as u32;
            a.expected_attach_type = end.attach_type() as u32;
            a.attach_btf_id = btf_id;
            // 0 is vmlinux.
            a.__bindgen_anon_1.attach_btf_obj_fd = btf_object.map_or(0, |f| f.as_raw_fd() as u32);
            if !log.is_empty() {
                a.log_level = 1;
                a.log_buf = log.as_mut_ptr() as u64;
                a.log_size = log.len() as u32;
            }
            bpf_fd(bpf_cmd::BPF_PROG_LOAD, &mut attr)
        };
        match load(&mut []) {
            Ok(fd) => Ok(fd),
            Err(e) => {
                let mut log = vec![0u8; 1 << 18];
                let again = load(&mut log);
                let log = String::from_utf8_lossy(&log);
                let last = log
                    .trim_end_matches('\0')
                    .lines()
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_owned();
                drop(again);
                if last.is_empty() {
                    Err(e).context("BPF_PROG_LOAD")
                } else {
                    Err(e).with_context(|| format!("BPF_PROG_LOAD (verifier: {last})"))
                }
            }
        }
    }
}

pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// A module's split BTF on top of `vmlinux`, read whole first: btf-rs reading the file itself
/// seeks once per type.
pub fn read_split(path: &str, vmlinux: &btf_rs::Btf) -> Result<btf_rs::Btf> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    btf_rs::Btf::from_split_bytes(&bytes, vmlinux).with_context(|| format!("parsing {path}"))
}

/// The type id of function `name` in vmlinux's BTF, or in a module's split BTF (whose ids
/// continue vmlinux's).
pub fn function_id(vmlinux: &btf_rs::Btf, module: Option<&btf_rs::Btf>, name: &str) -> Result<u32> {
    let base = vmlinux.resolve_ids_by_name(name).unwrap_or_default();
    let is_func = |btf: &btf_rs::Btf, id: u32| {
        matches!(btf.resolve_type_by_id(id), Ok(btf_rs::Type::Func(_)))
    };
    let found = match module {
        None => base.into_iter().find(|&id| is_func(vmlinux, id)),
        Some(m) => {
            let base: HashSet<u32> = base.into_iter().collect();
            m.resolve_ids_by_name(name)
                .unwrap_or_default()
                .into_iter()
                .filter(|id| !base.contains(id))
                .find(|&id| is_func(m, id))
        }
    };
    found.with_context(|| format!("no function named {name}"))
}

/// The kernel's BTF object named `name` (`vmlinux`, or a module), found by walking the BTF ids.
pub fn kernel_btf_object(name: &str) -> Result<OwnedFd> {
    for btf in objects(bpf_cmd::BPF_BTF_GET_NEXT_ID, bpf_cmd::BPF_BTF_GET_FD_BY_ID) {
        let (_, fd) = btf?;
        let mut buf = [0u8; 64];
        // SAFETY: all-zero is a valid bpf_btf_info.
        let mut info: bpf_btf_info = unsafe { std::mem::zeroed() };
        info.name = buf.as_mut_ptr() as u64;
        info.name_len = buf.len() as u32;
        obj_info(fd.as_fd(), &mut info).context("BPF_OBJ_GET_INFO_BY_FD")?;
        let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        if info.kernel_btf != 0 && &buf[..len] == name.as_bytes() {
            return Ok(fd);
        }
    }
    bail!("the kernel has no BTF object named {name}")
}

fn raw_tracepoint_open(program: BorrowedFd) -> io::Result<OwnedFd> {
    // SAFETY: all-zero is a valid bpf_attr; a null name attaches a tracing program to its target.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    attr.raw_tracepoint.prog_fd = program.as_raw_fd() as u32;
    bpf_fd(bpf_cmd::BPF_RAW_TRACEPOINT_OPEN, &mut attr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_kernels_vmlinux_btf_object_and_names_a_missing_one() {
        let fd = kernel_btf_object("vmlinux").expect("vmlinux BTF object");
        assert!(fd.as_raw_fd() > 2);
        let e = kernel_btf_object("no_such_module").expect_err("a missing module");
        assert_eq!(
            e.to_string(),
            "the kernel has no BTF object named no_such_module"
        );
    }

    #[test]
    fn function_ids_agree_with_ayas_vmlinux_btf() {
        let vmlinux = KernelBtf::get().unwrap().btf();
        let aya = aya::Btf::from_sys_fs().unwrap();
        for f in ["vfs_read", "vfs_write"] {
            let ids = vmlinux.resolve_ids_by_name(f).unwrap();
            let func: Vec<u32> = ids
                .into_iter()
                .filter(|&id| matches!(vmlinux.resolve_type_by_id(id), Ok(btf_rs::Type::Func(_))))
                .collect();
            assert_eq!(
                func,
                [aya.id_by_type_name_kind(f, aya_obj::btf::BtfKind::Func)
                    .unwrap()]
            );
        }
    }
}
