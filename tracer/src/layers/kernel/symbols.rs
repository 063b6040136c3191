//! Text symbols of /proc/kallsyms, shared by the kernel layer (which functions exist), the stack
//! symbolizers (off-CPU waits, on-CPU samples) and the kernel layer map.

use crate::error::{Context, Result};
use regex::Regex;

/// Text symbols of /proc/kallsyms: address → name, and name → addresses (static functions of
/// different files can share a name). The file's text is kept whole and indexed by two sorted
/// tables, so that reading and dropping the 120k symbols costs no allocation each.
#[derive(Clone, Debug, Default)]
pub struct KernelSymbols {
    text: String,
    /// Every text symbol, in file order.
    syms: Vec<Sym>,
    /// Indexes into `syms`, by address (file order among equal addresses).
    by_addr: Vec<u32>,
    /// Indexes into `syms`, by the name's hash then the name (file order among equal names), and
    /// their addresses: hashes sort in a fraction of the time names take.
    by_name: Vec<u32>,
    name_addrs: Vec<u64>,
}

/// One symbol: its address, and its name's and module's byte ranges in the text.
#[derive(Clone, Copy, Debug)]
struct Sym {
    addr: u64,
    hash: u64,
    name: (u32, u32),
    /// The fourth column (`[ext4]`) of a function outside vmlinux, brackets trimmed.
    module: Option<(u32, u32)>,
}

impl KernelSymbols {
    pub fn load() -> Result<KernelSymbols> {
        let text = std::fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
        Ok(KernelSymbols::from_text(text))
    }

    /// [`KernelSymbols::load`] on a thread of its own, to join when the symbols are needed; None
    /// when no thread can start.
    pub fn load_ahead() -> Option<std::thread::JoinHandle<Result<KernelSymbols>>> {
        std::thread::Builder::new()
            .name("kallsyms".to_owned())
            .spawn(KernelSymbols::load)
            .ok()
    }

    /// Refuses symbols that cannot name kernel stacks: /proc/kallsyms hid their addresses.
    pub fn check_for_stacks(&self) -> Result<()> {
        if self.address("schedule").is_none_or(|a| a == 0) {
            crate::error::bail!(
                "/proc/kallsyms has no address for `schedule` (empty, or hidden by kptr_restrict)"
            );
        }
        Ok(())
    }

    pub fn parse(text: &str) -> KernelSymbols {
        KernelSymbols::from_text(text.to_owned())
    }

    fn from_text(text: String) -> KernelSymbols {
        let base = text.as_ptr() as usize;
        let span = |part: &str| ((part.as_ptr() as usize - base) as u32, part.len() as u32);
        let mut syms = Vec::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let module = it
                .next()
                .map(|m| span(m.trim_matches(|c| c == '[' || c == ']')));
            syms.push(Sym {
                addr,
                hash: hash(name),
                name: span(name),
                module,
            });
        }
        let str_of = |s: &Sym| &text[s.name.0 as usize..(s.name.0 + s.name.1) as usize];
        let mut by_addr: Vec<u32> = (0..syms.len() as u32).collect();
        by_addr.sort_by_key(|&i| syms[i as usize].addr);
        let mut by_name = by_addr.clone();
        by_name.sort_by(|&a, &b| {
            let (x, y) = (&syms[a as usize], &syms[b as usize]);
            (x.hash.cmp(&y.hash))
                .then_with(|| str_of(x).cmp(str_of(y)))
                .then(a.cmp(&b))
        });
        let name_addrs = by_name.iter().map(|&i| syms[i as usize].addr).collect();
        KernelSymbols {
            text,
            syms,
            by_addr,
            by_name,
            name_addrs,
        }
    }

    fn str(&self, (start, len): (u32, u32)) -> &str {
        &self.text[start as usize..(start + len) as usize]
    }

    fn sym_name(&self, i: u32) -> &str {
        self.str(self.syms[i as usize].name)
    }

    /// The range of `by_name` holding `name`.
    fn name_range(&self, name: &str) -> std::ops::Range<usize> {
        let h = hash(name);
        let key = |i: u32| (self.syms[i as usize].hash, self.sym_name(i));
        let lo = self.by_name.partition_point(|&i| key(i) < (h, name));
        let hi = lo + self.by_name[lo..].partition_point(|&i| key(i) == (h, name));
        lo..hi
    }

    /// Every function's name, once each, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.syms.iter().map(|s| self.str(s.name)).collect();
        names.sort_unstable();
        names.dedup();
        names.into_iter()
    }

    /// The address of function `name`, the first in /proc/kallsyms when several functions share it.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.addresses(name).first().copied()
    }

    /// The addresses of every function named `name`, in /proc/kallsyms's order.
    pub fn addresses(&self, name: &str) -> &[u64] {
        &self.name_addrs[self.name_range(name)]
    }

    /// The module `name` is in, when it is not in vmlinux.
    pub fn module(&self, name: &str) -> Option<&str> {
        let range = self.name_range(name);
        self.by_name[range]
            .iter()
            .rev()
            .find_map(|&i| self.syms[i as usize].module)
            .map(|m| self.str(m))
    }

    /// The function containing `addr`: the first in /proc/kallsyms at the highest address not
    /// above it.
    pub fn name(&self, addr: u64) -> Option<&str> {
        let at = |i: &u32| self.syms[*i as usize].addr;
        let end = self.by_addr.partition_point(|i| at(i) <= addr);
        let start = at(self.by_addr.get(end.checked_sub(1)?)?);
        let first = self.by_addr.partition_point(|i| at(i) < start);
        Some(self.sym_name(self.by_addr[first]))
    }

    /// Whether `wanted` is a regex rather than a name: it contains regex syntax.
    pub fn is_pattern(wanted: &str) -> bool {
        wanted.chars().any(|c| "^$*+?[](){}|\\.".contains(c))
    }

    /// Functions named in `wanted`: exact names, or regexes when they contain regex syntax.
    /// Returns the names found and, for each entry that found nothing, why.
    pub fn resolve(&self, wanted: &[String]) -> (Vec<String>, Vec<(String, String)>) {
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for w in wanted {
            if KernelSymbols::is_pattern(w) {
                match Regex::new(w) {
                    Ok(re) => {
                        let before = found.len();
                        found.extend(self.names().filter(|n| re.is_match(n)).map(str::to_owned));
                        if found.len() == before {
                            missing.push((w.clone(), "no kernel function matches".to_owned()));
                        }
                    }
                    Err(e) => missing.push((w.clone(), format!("not a valid regex: {e}"))),
                }
            } else if !self.name_range(w).is_empty() {
                found.push(w.clone());
            } else {
                missing.push((w.clone(), "not in /proc/kallsyms".to_owned()));
            }
        }
        found.sort();
        found.dedup();
        (found, missing)
    }
}

/// A name's hash (the index is rebuilt each run, so any hash will do).
fn hash(name: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two static functions share `mmio_read`, an alias shares `vfs_read`'s address, and `mod_fn`
    /// is in a module; data and absolute symbols are not functions.
    const KALLSYMS: &str = "ffffffff81000100 T vfs_read\n\
ffffffff81000000 t mmio_read\n\
ffffffff81000100 T __vfs_read_alias\n\
ffffffff81000200 D some_data\n\
ffffffff82000000 t mmio_read\n\
ffffffffc0000000 t mod_fn\t[virtio_blk]\n";

    #[test]
    fn names_addresses_and_modules_follow_the_files_order() {
        let s = KernelSymbols::parse(KALLSYMS);
        assert_eq!(
            s.names().collect::<Vec<_>>(),
            ["__vfs_read_alias", "mmio_read", "mod_fn", "vfs_read"]
        );
        assert_eq!(
            s.addresses("mmio_read"),
            [0xffffffff81000000, 0xffffffff82000000]
        );
        assert_eq!(s.address("vfs_read"), Some(0xffffffff81000100));
        assert_eq!(s.addresses("some_data"), [] as [u64; 0]);
        assert_eq!(s.module("mod_fn"), Some("virtio_blk"));
        assert_eq!(s.module("vfs_read"), None);
    }

    #[test]
    fn an_address_names_the_first_function_at_or_below_it() {
        let s = KernelSymbols::parse(KALLSYMS);
        assert_eq!(s.name(0xffffffff80ffffff), None);
        assert_eq!(s.name(0xffffffff81000000), Some("mmio_read"));
        assert_eq!(s.name(0xffffffff810000ff), Some("mmio_read"));
        // The alias comes after vfs_read in the file.
        assert_eq!(s.name(0xffffffff81000100), Some("vfs_read"));
        assert_eq!(s.name(0xffffffff81000300), Some("vfs_read"));
        assert_eq!(s.name(0xffffffffc0000010), Some("mod_fn"));
        assert!(s.check_for_stacks().is_err());
    }
}
