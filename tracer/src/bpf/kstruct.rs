//! Offsets of kernel struct members, read from the running kernel's BTF (`/sys/kernel/btf/vmlinux`),
//! for programs that follow kernel pointers (raw tracepoints get the tracepoint's C arguments), kept
//! for the boot ([`super::bootcache`]); and the one parse of that BTF the tracer's parts share.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::error::{Context, Result, bail, failed};
use btf_rs::{Btf, Struct, Type};

use super::bootcache::{self, BootCache};

pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

pub struct KernelBtf(Btf);

/// The byte offset of `member` in `struct strukt` in the running kernel: from this boot's cache
/// ([`super::bootcache`]), else from its BTF, parsed then (and cached).
pub fn offset(strukt: &str, member: &str) -> Result<u16> {
    static CACHE: OnceLock<Mutex<BootCache>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(BootCache::open(Path::new(bootcache::DIR))));
    let key = format!("{strukt}.{member}");
    if let Some(v) = cache
        .lock()
        .map_err(|_| failed!("the offset cache"))?
        .get(&key)
    {
        return Ok(v);
    }
    let v = KernelBtf::get()?.offset(strukt, member)?;
    cache
        .lock()
        .map_err(|_| failed!("the offset cache"))?
        .put(&key, v);
    Ok(v)
}

impl KernelBtf {
    /// The kernel's BTF, parsed once per process, when an offset is not cached or fentry binds a
    /// module's function.
    pub fn get() -> Result<&'static KernelBtf> {
        static BTF: OnceLock<Result<KernelBtf, String>> = OnceLock::new();
        BTF.get_or_init(|| KernelBtf::load().map_err(|e| datasets::error::chain(&e)))
            .as_ref()
            .map_err(|e| failed!("{e}"))
    }

    fn load() -> Result<KernelBtf> {
        // Read whole first: btf-rs parsing the file itself seeks once per type (126k lseeks).
        let bytes = std::fs::read(VMLINUX).with_context(|| format!("reading {VMLINUX}"))?;
        Ok(KernelBtf(Btf::from_bytes(&bytes).with_context(|| {
            format!("parsing the kernel's BTF ({VMLINUX})")
        })?))
    }

    /// The parsed types, for what [`KernelBtf::offset`] does not answer (fentry's function ids, enums).
    pub fn btf(&self) -> &Btf {
        &self.0
    }

    /// The byte offset of `member` in `struct strukt`, through anonymous structs and unions.
    pub fn offset(&self, strukt: &str, member: &str) -> Result<u16> {
        let btf = &self.0;
        let types = btf
            .resolve_types_by_name(strukt)
            .with_context(|| format!("{VMLINUX}: no type named `{strukt}`"))?;
        for t in types {
            if let Type::Struct(s) = t
                && let Some(bits) = find(btf, &s, member)?
            {
                if bits % 8 != 0 {
                    bail!("{VMLINUX}: struct {strukt}.{member} is a bit field");
                }
                return u16::try_from(bits / 8).with_context(|| {
                    format!("{VMLINUX}: struct {strukt}.{member} is beyond 64 KiB")
                });
            }
        }
        bail!("{VMLINUX}: struct {strukt} has no member `{member}`")
    }
}

/// The bit offset of `member` in `s`.
fn find(btf: &Btf, s: &Struct, member: &str) -> Result<Option<u32>> {
    for m in &s.members {
        let name = btf.resolve_name(m)?;
        if name == member {
            return Ok(Some(m.bit_offset()));
        }
        if name.is_empty()
            && let Type::Struct(inner) | Type::Union(inner) = btf.resolve_chained_type(m)?
            && let Some(bits) = find(btf, &inner, member)?
        {
            return Ok(Some(m.bit_offset() + bits));
        }
    }
    Ok(None)
}
