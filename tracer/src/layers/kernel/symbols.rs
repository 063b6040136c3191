//! Text symbols of /proc/kallsyms, shared by the kernel layer (which functions exist), the stack
//! symbolizers (off-CPU waits, on-CPU samples) and the kernel layer map.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use regex::Regex;

/// Text symbols of /proc/kallsyms: address → name, and name → addresses (static functions of
/// different files can share a name).
#[derive(Clone, Debug, Default)]
pub struct KernelSymbols {
    by_addr: BTreeMap<u64, String>,
    by_name: BTreeMap<String, Vec<u64>>,
    /// Function → module, for functions outside vmlinux.
    modules: BTreeMap<String, String>,
}

impl KernelSymbols {
    pub fn load() -> Result<KernelSymbols> {
        let text = std::fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
        Ok(KernelSymbols::parse(&text))
    }

    /// The symbols kernel stacks are named with, refused when /proc/kallsyms hides addresses.
    pub fn load_for_stacks() -> Result<KernelSymbols> {
        let symbols = KernelSymbols::load()?;
        if symbols.address("schedule").is_none_or(|a| a == 0) {
            anyhow::bail!(
                "/proc/kallsyms has no address for `schedule` (empty, or hidden by kptr_restrict)"
            );
        }
        Ok(symbols)
    }

    pub fn parse(text: &str) -> KernelSymbols {
        let mut s = KernelSymbols::default();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            // A fourth column names the module (`[ext4]`) of a function outside vmlinux.
            if !matches!(kind, "t" | "T") {
                continue;
            }
            if let Some(m) = it.next() {
                s.modules.insert(
                    name.to_owned(),
                    m.trim_matches(|c| c == '[' || c == ']').to_owned(),
                );
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            s.by_addr.entry(addr).or_insert_with(|| name.to_owned());
            s.by_name.entry(name.to_owned()).or_default().push(addr);
        }
        s
    }

    /// Every function's name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// The address of function `name`, the first in /proc/kallsyms when several functions share it.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.addresses(name).first().copied()
    }

    /// The addresses of every function named `name`.
    pub fn addresses(&self, name: &str) -> &[u64] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// The module `name` is in, when it is not in vmlinux.
    pub fn module(&self, name: &str) -> Option<&str> {
        self.modules.get(name).map(String::as_str)
    }

    /// The function containing `addr`.
    pub fn name(&self, addr: u64) -> Option<&str> {
        self.by_addr
            .range(..=addr)
            .next_back()
            .map(|(_, n)| n.as_str())
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
                        found.extend(self.by_name.keys().filter(|n| re.is_match(n)).cloned());
                        if found.len() == before {
                            missing.push((w.clone(), "no kernel function matches".to_owned()));
                        }
                    }
                    Err(e) => missing.push((w.clone(), format!("not a valid regex: {e}"))),
                }
            } else if self.by_name.contains_key(w) {
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
