//! The `kernel` layer: kernel functions by name or regex over /proc/kallsyms, through
//! fentry/fexit where the kernel allows it, else kprobe/kretprobe, else reported unavailable.
//!
//! An fentry program is bound to one function when it loads, so each function in vmlinux gets its
//! own copy of the object, sharing the maps of the main one through pins in a private bpffs
//! directory. A function in a module is bound through the module's BTF, which aya cannot do:
//! [`crate::bpf::module_fentry`] loads those.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use aya::{
    Btf, Ebpf, EbpfLoader,
    programs::{FEntry, FExit, KProbe},
};
use regex::Regex;
use serde::Serialize;

use super::{Attached, Layer, LayerReport, Probes, Setup};
use crate::bpf::module_fentry::{self, End, ModuleFentry};
use crate::bpf::pins::PinDir;
use crate::bpf::{Attacher, object, reason};

/// What `--kernel-probes` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum KernelProbeMode {
    /// fentry/fexit, else kprobe/kretprobe.
    #[default]
    Auto,
    Fentry,
    Kprobe,
    Off,
}

/// VFS, ext4, page cache and bio: the functions traced when none are named.
pub const DEFAULT_FUNCTIONS: &[&str] = &[
    "vfs_read",
    "vfs_write",
    "vfs_open",
    "vfs_fsync_range",
    "vfs_iter_read",
    "vfs_iter_write",
    "ext4_file_read_iter",
    "ext4_file_write_iter",
    "ext4_sync_file",
    "ext4_da_write_begin",
    "ext4_writepages",
    "filemap_read",
    "filemap_fault",
    "filemap_write_and_wait_range",
    "generic_perform_write",
    "page_cache_ra_unbounded",
    "iomap_dio_rw",
    "submit_bio",
    "bio_endio",
];

/// Maps fentry copies share with the main object.
pub const SHARED_MAPS: &[&str] = &[
    "CONFIG", "TRACED", "EVENTS", "DROPS", "PROFILE", "KENTER", "KDEPTH",
];

/// Text symbols of /proc/kallsyms: address → name, and name → address.
#[derive(Clone, Debug, Default)]
pub struct KernelSymbols {
    by_addr: BTreeMap<u64, String>,
    by_name: BTreeMap<String, u64>,
    /// Function → module, for functions outside vmlinux.
    modules: BTreeMap<String, String>,
}

impl KernelSymbols {
    pub fn load() -> Result<KernelSymbols> {
        let text = std::fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
        Ok(KernelSymbols::parse(&text))
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
            s.by_name.entry(name.to_owned()).or_insert(addr);
        }
        s
    }

    /// Every function's name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
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

    /// Functions named in `wanted`: exact names, or regexes when they contain regex syntax.
    /// Returns the names found and, for each entry that found nothing, why.
    pub fn resolve(&self, wanted: &[String]) -> (Vec<String>, Vec<(String, String)>) {
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for w in wanted {
            if w.chars().any(|c| "^$*+?[](){}|\\.".contains(c)) {
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

/// fentry/fexit bound to one function; attached while it lives.
pub enum Bound {
    /// A copy of the object, for a function in vmlinux.
    Copy(Ebpf),
    /// The pair loaded against a module's BTF.
    Module([module_fentry::Link; 2]),
}

pub struct Kernel;

impl Probes for Kernel {
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let opts = setup.opts;
        let functions: Vec<String> = if opts.kernel_functions.is_empty() {
            DEFAULT_FUNCTIONS.iter().map(|s| s.to_string()).collect()
        } else {
            opts.kernel_functions.clone()
        };
        let symbols = match KernelSymbols::load() {
            Ok(s) => s,
            Err(e) => {
                let mut report = LayerReport::new(Layer::Kernel, "none");
                report.refuse("kallsyms", "kallsyms", reason(&e));
                out.reports.push(report);
                return;
            }
        };
        let (pins, pin_error) = match setup.pins.take() {
            Some(Ok(p)) => (Some(p), None),
            Some(Err(e)) => (None, Some(reason(&e))),
            None => (None, None),
        };
        let (mut report, copies) = attach(
            at,
            object::OBJECT,
            opts.kernel_probes,
            &functions,
            pins.as_ref(),
            &symbols,
        );
        if let Some(e) = pin_error {
            report.refuse("bpffs", "fentry", e);
        }
        out.reports.push(report);
        out.copies = copies;
        out.names.ksyms = symbols;
    }
}

/// Each function through fentry/fexit when `mode` allows and the kernel accepts, else through
/// kprobe/kretprobe when `mode` allows. Once a mechanism is refused for a vmlinux function
/// before any success, the kernel refuses it as a whole and the other functions are not tried.
fn attach(
    at: &mut Attacher,
    object: &[u8],
    mode: KernelProbeMode,
    functions: &[String],
    pins: Option<&PinDir>,
    symbols: &KernelSymbols,
) -> (LayerReport, Vec<Bound>) {
    let mut report = LayerReport::new(Layer::Kernel, "none");
    let mut copies = Vec::new();
    if mode == KernelProbeMode::Off {
        return (report, copies);
    }
    let (found, missing) = symbols.resolve(functions);
    for (w, why) in missing {
        report.refuse(&w, "kallsyms", why);
    }
    let mut pending: Vec<String> = found;
    let mut used = Vec::new();
    if matches!(mode, KernelProbeMode::Auto | KernelProbeMode::Fentry) && !pending.is_empty() {
        let mut fentry = Fentry::new(object, pins, &at.map_names());
        let mut refused_all: Option<String> = None;
        let mut left = Vec::new();
        for f in pending {
            if let Some(why) = &refused_all {
                report.refuse(&f, "fentry", why);
                left.push(f);
                continue;
            }
            match fentry.attach(&f, symbols.module(&f), at.ebpf) {
                Ok(copy) => {
                    copies.push(copy);
                    report.attached.push(f);
                }
                Err(e) => {
                    let why = reason(&e);
                    if copies.is_empty() && symbols.module(&f).is_none() {
                        refused_all = Some(why.clone());
                    }
                    report.refuse(&f, "fentry", why);
                    left.push(f);
                }
            }
        }
        if !copies.is_empty() {
            used.push("fentry");
        }
        pending = left;
    }
    if matches!(mode, KernelProbeMode::Auto | KernelProbeMode::Kprobe) && !pending.is_empty() {
        let mut refused_all: Option<String> = None;
        let mut attached = 0;
        for f in pending {
            if let Some(why) = &refused_all {
                report.refuse(&f, "kprobe", why);
                continue;
            }
            match kprobe(at, &f) {
                Ok(()) => {
                    attached += 1;
                    report.attached.push(f);
                }
                Err(e) => {
                    let why = reason(&e);
                    if attached == 0 {
                        refused_all = Some(why.clone());
                    }
                    report.refuse(&f, "kprobe", why);
                }
            }
        }
        if attached > 0 {
            used.push("kprobe");
        }
    }
    if !used.is_empty() {
        report.mechanism = used.join("+");
    }
    // A function attached by kprobe after fentry refused it is not refused.
    let attached = report.attached.clone();
    report.refused.retain(|r| !attached.contains(&r.probe));
    report.attached.sort();
    (report, copies)
}

/// Loads fentry/fexit programs bound to one function each.
struct Fentry<'a> {
    object: &'a [u8],
    pins: Option<&'a PinDir>,
    maps: Vec<String>,
    btf: Option<Btf>,
    modules: Option<ModuleFentry>,
}

impl<'a> Fentry<'a> {
    fn new(object: &'a [u8], pins: Option<&'a PinDir>, maps: &[String]) -> Fentry<'a> {
        Fentry {
            object,
            pins,
            maps: maps.to_vec(),
            btf: None,
            modules: None,
        }
    }

    /// Binds the pair to `f`, in `module` or else in vmlinux; `loaded` is the main object.
    fn attach(&mut self, f: &str, module: Option<&str>, loaded: &Ebpf) -> Result<Bound> {
        match module {
            Some(m) => self.attach_module(f, m, loaded).map(Bound::Module),
            None => self.attach_copy(f).map(Bound::Copy),
        }
    }

    fn attach_module(
        &mut self,
        f: &str,
        module: &str,
        loaded: &Ebpf,
    ) -> Result<[module_fentry::Link; 2]> {
        if self.modules.is_none() {
            self.modules = Some(ModuleFentry::new(self.object, loaded)?);
        }
        let m = self.modules.as_mut().expect("set above");
        let entry = m.attach("kfunc_fentry", End::Entry, module, f)?;
        let exit = m.attach("kfunc_fexit", End::Exit, module, f)?;
        Ok([entry, exit])
    }

    fn attach_copy(&mut self, f: &str) -> Result<Ebpf> {
        let pins = self
            .pins
            .context("no bpffs directory to share maps through")?;
        if self.btf.is_none() {
            self.btf = Some(Btf::from_sys_fs().context("reading /sys/kernel/btf/vmlinux")?);
        }
        let btf = self.btf.as_ref().expect("set above");
        let mut loader = EbpfLoader::new();
        let paths: Vec<(&str, PathBuf)> = SHARED_MAPS.iter().map(|m| (*m, pins.path(m))).collect();
        for (m, p) in &paths {
            loader.map_pin_path(m, p.as_path());
        }
        for m in self
            .maps
            .iter()
            .filter(|m| !SHARED_MAPS.contains(&m.as_str()))
        {
            loader.map_max_entries(m.as_str(), 1);
        }
        let mut copy = loader
            .load(self.object)
            .context("loading a copy of the object")?;
        let entry: &mut FEntry = copy
            .program_mut("kfunc_fentry")
            .context("kfunc_fentry")?
            .try_into()?;
        entry
            .load(f, btf)
            .with_context(|| format!("loading fentry on {f}"))?;
        entry
            .attach()
            .with_context(|| format!("attaching fentry on {f}"))?;
        let exit: &mut FExit = copy
            .program_mut("kfunc_fexit")
            .context("kfunc_fexit")?
            .try_into()?;
        exit.load(f, btf)
            .with_context(|| format!("loading fexit on {f}"))?;
        exit.attach()
            .with_context(|| format!("attaching fexit on {f}"))?;
        Ok(copy)
    }
}

fn kprobe(at: &mut Attacher, f: &str) -> Result<()> {
    for prog in ["kfunc_kprobe", "kfunc_kretprobe"] {
        let k: &mut KProbe = at.program(prog)?.try_into()?;
        k.attach(f, 0)
            .with_context(|| format!("attaching {prog} to {f}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALLSYMS: &str = "ffffffff816b89f0 T vfs_read\n\
ffffffff816b8b00 T vfs_write\n\
ffffffff817a7860 t ext4_file_read_iter\n\
ffffffff817a7900 t ext4_file_write_iter\n\
ffffffff82000000 D some_data\n\
ffffffffc0000000 t mod_fn\t[virtio_blk]\n";

    #[test]
    fn resolves_names_and_regexes_and_says_what_is_missing() {
        let s = KernelSymbols::parse(KALLSYMS);
        let wanted =
            ["vfs_read", "^ext4_file_.*_iter$", "no_such_fn", "some_data"].map(String::from);
        let (found, missing) = s.resolve(&wanted);
        assert_eq!(
            found,
            ["ext4_file_read_iter", "ext4_file_write_iter", "vfs_read"]
        );
        assert_eq!(
            missing,
            [
                ("no_such_fn".to_owned(), "not in /proc/kallsyms".to_owned()),
                ("some_data".to_owned(), "not in /proc/kallsyms".to_owned()),
            ]
        );
        assert_eq!(s.name(0xffffffff816b89f0), Some("vfs_read"));
        assert_eq!(s.name(0xffffffff816b89f4), Some("vfs_read"));
    }
}
