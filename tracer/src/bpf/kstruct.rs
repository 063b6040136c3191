//! Offsets of kernel struct members, read from the running kernel's BTF (`/sys/kernel/btf/vmlinux`),
//! for programs that follow kernel pointers (raw tracepoints get the tracepoint's C arguments), kept
//! for the boot ([`super::bootcache`]), as are the members of the enums the tracer names values by;
//! and the one parse of that BTF the tracer's parts share.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::error::{Context, Result, bail, failed};
use btf_rs::{Btf, Struct, Type};

use super::bootcache::{self, BootCache};

pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

pub struct KernelBtf(Btf);

/// This boot's cache of what the tracer reads from the kernel's BTF.
fn cache() -> &'static Mutex<BootCache> {
    static CACHE: OnceLock<Mutex<BootCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(BootCache::open(Path::new(bootcache::DIR))))
}

/// The byte offset of `member` in `struct strukt` in the running kernel: from this boot's cache
/// ([`super::bootcache`]), else from its BTF, parsed then (and cached).
pub fn offset(strukt: &str, member: &str) -> Result<u16> {
    let cache = cache();
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

/// The members of `enum name` in the running kernel, (name, value), as [`offset`] finds offsets:
/// from this boot's cache, else from its BTF (and cached).
pub fn enum_members(name: &str) -> Result<Vec<(String, u16)>> {
    enum_members_in(cache(), name, || KernelBtf::get()?.enum_members(name))
}

/// [`enum_members`] through `cache`, with `parse` to read them when it does not have them. The
/// cache keeps `enum:NAME` (how many members) and `enum:NAME:MEMBER` (each value).
fn enum_members_in(
    cache: &Mutex<BootCache>,
    name: &str,
    parse: impl FnOnce() -> Result<Vec<(String, u16)>>,
) -> Result<Vec<(String, u16)>> {
    let count = format!("enum:{name}");
    let prefix = format!("enum:{name}:");
    let lock = || cache.lock().map_err(|_| failed!("the offset cache"));
    {
        let c = lock()?;
        if let Some(n) = c.get(&count) {
            let members: Vec<(String, u16)> = (c.with_prefix(&prefix))
                .map(|(k, v)| (k[prefix.len()..].to_owned(), v))
                .collect();
            if members.len() == n as usize {
                return Ok(members);
            }
        }
    }
    let members = parse()?;
    let n = u16::try_from(members.len())
        .with_context(|| format!("{VMLINUX}: enum {name} has over 65535 members"))?;
    let entries = (members.iter())
        .map(|(m, v)| (format!("{prefix}{m}"), *v))
        .chain([(count, n)]);
    lock()?.put_all(entries);
    Ok(members)
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

    /// The members of `enum name`, (name, value).
    pub fn enum_members(&self, name: &str) -> Result<Vec<(String, u16)>> {
        let btf = &self.0;
        let types = btf
            .resolve_types_by_name(name)
            .with_context(|| format!("{VMLINUX}: no type named `{name}`"))?;
        let Some(Type::Enum(e)) = types.into_iter().find(|t| matches!(t, Type::Enum(_))) else {
            bail!("{VMLINUX}: `{name}` is not an enum");
        };
        let mut members = Vec::with_capacity(e.members.len());
        for m in &e.members {
            let member = btf.resolve_name(m)?;
            let v = u16::try_from(m.val()).with_context(|| {
                format!(
                    "{VMLINUX}: enum {name}: {member} is {}, beyond 65535",
                    m.val()
                )
            })?;
            members.push((member, v));
        }
        Ok(members)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<(String, u16)>) -> Vec<(String, u16)> {
        v.sort();
        v
    }

    #[test]
    fn an_enum_comes_back_from_the_cache_as_the_btf_gave_it() {
        let tmp = tempfile::tempdir().unwrap();
        let parsed = KernelBtf::get()
            .unwrap()
            .enum_members("io_uring_op")
            .unwrap();
        let cache = Mutex::new(BootCache::open(tmp.path()));
        let first = enum_members_in(&cache, "io_uring_op", || Ok(parsed.clone())).unwrap();
        assert_eq!(first, parsed);
        let reopened = Mutex::new(BootCache::open(tmp.path()));
        let again = enum_members_in(&reopened, "io_uring_op", || bail!("parsed again")).unwrap();
        assert_eq!(sorted(again.clone()), sorted(parsed));
        // include/uapi/linux/io_uring.h: IORING_OP_NOP is 0, IORING_OP_READV 1.
        for (m, v) in [("IORING_OP_NOP", 0), ("IORING_OP_READV", 1)] {
            assert!(again.contains(&(m.to_owned(), v)), "{m} is not {v}");
        }
    }

    #[test]
    fn an_enum_the_cache_holds_in_part_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Mutex::new(BootCache::open(tmp.path()));
        cache.lock().unwrap().put_all([
            ("enum:e".to_owned(), 3),
            ("enum:e:A".to_owned(), 0),
            ("enum:e:B".to_owned(), 1),
        ]);
        let whole = vec![
            ("A".to_owned(), 0),
            ("B".to_owned(), 1),
            ("C".to_owned(), 2),
        ];
        let got = enum_members_in(&cache, "e", || Ok(whole.clone())).unwrap();
        assert_eq!(got, whole);
        let reopened = Mutex::new(BootCache::open(tmp.path()));
        let cached = enum_members_in(&reopened, "e", || bail!("parsed again")).unwrap();
        assert_eq!(cached, whole);
    }
}
