//! The `kernel` layer: kernel functions by name or regex over /proc/kallsyms, through one
//! kprobe_multi session link (Linux 6.10+), or two (entry and return), for all of them where the
//! kernel has them, else fentry/fexit per function where the kernel allows it, else
//! kprobe/kretprobe, else reported unavailable. The object's programs are relocated once against
//! aya's maps; fentry then costs one program load and link per function end
//! ([`crate::bpf::fentry`]).
//!
//! [`symbols`] reads /proc/kallsyms, [`map`] files each function under its stack layer, and
//! [`probeset`] reads and discovers probe sets; this module attaches.

pub mod links;
pub mod map;
pub mod probeset;
pub mod symbols;

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::error::{Context, Result};
use aya::programs::KProbe;
use datasets::summary::Timing;
use datasets::vocab::{Mechanism, Mechanisms};

use super::attach::{Attached, Probes, Setup};
use super::layer::{Layer, LayerReport};
use crate::bpf::fentry::{End, Fentry, Link};
use crate::bpf::kprobe_multi::{self, Ends};
use crate::bpf::rawbpf::Relocated;
use crate::bpf::{Attacher, object, reason};
pub use links::{KernelLinks, KernelProbeMode};
use probeset::NOT_FTRACEABLE;
use symbols::KernelSymbols;

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

pub struct Kernel;

impl Probes for Kernel {
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let set = out.names.klayers.probe_set.as_ref();
        let functions: Vec<String> = match set {
            Some(set) => set.functions.keys().cloned().collect(),
            None if setup.kernel_functions.is_empty() => {
                DEFAULT_FUNCTIONS.iter().map(|s| s.to_string()).collect()
            }
            None => setup.kernel_functions.to_vec(),
        };
        let problems = set.map(|s| s.problems.clone()).unwrap_or_default();
        let symbols = match out.names.kallsyms() {
            Ok(s) => s,
            Err(e) => {
                let mut report = LayerReport::new(Layer::Kernel, Mechanism::None);
                report.refuse("kallsyms", Mechanism::Kallsyms, reason(&e));
                out.reports.push(report);
                return;
            }
        };
        let start = Instant::now();
        let (mut report, held, linking) = attach(at, setup.kernel_probes, &functions, &symbols);
        for p in problems {
            report.refuse("probe set", Mechanism::Probes, p);
        }
        if !report.attached.is_empty() {
            report.timing = Some(Timing {
                functions: report.attached.len(),
                prepare_us: start.elapsed().saturating_sub(linking).as_micros() as u64,
                attach_us: linking.as_micros() as u64,
                detach_us: None,
                links: held.links,
            });
        }
        out.reports.push(report);
        out.kernel = held;
        out.names.ksyms = symbols;
    }
}

/// The functions through kprobe_multi links when `mode` allows and the kernel has them, else each
/// through fentry/fexit when `mode` allows and the kernel accepts, else through kprobe/kretprobe
/// when `mode` allows. Once a mechanism is refused for a vmlinux function before any success, the
/// kernel refuses it as a whole and the other functions are not tried. Also returns the time spent
/// loading and linking programs.
fn attach(
    at: &mut Attacher,
    mode: KernelProbeMode,
    functions: &[String],
    symbols: &KernelSymbols,
) -> (LayerReport, KernelLinks, Duration) {
    let mut report = LayerReport::new(Layer::Kernel, Mechanism::None);
    let mut held = KernelLinks::default();
    let mut linking = Duration::ZERO;
    if mode == KernelProbeMode::Off {
        return (report, held, linking);
    }
    let (found, missing) = symbols.resolve(functions);
    for (w, why) in missing {
        report.refuse(&w, Mechanism::Kallsyms, why);
    }
    let mut pending: Vec<String> = found;
    let mut used = Vec::new();
    let relocated = if mode == KernelProbeMode::Kprobe || pending.is_empty() {
        None
    } else {
        Some(Relocated::new(object::OBJECT, at.ebpf))
    };
    let relocated = match relocated {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            let why = reason(&e);
            for f in &pending {
                report.refuse(f, Mechanism::Fentry, &why);
            }
            None
        }
        None => None,
    };
    if let Some(object) = &relocated {
        if matches!(mode, KernelProbeMode::Auto | KernelProbeMode::KprobeMulti) {
            // One function ftrace cannot patch fails the whole link: those are left out first.
            let ftraced = ftraceable();
            let (mut usable, mut unusable, mut addrs) = (Vec::new(), Vec::new(), Vec::new());
            for name in &pending {
                let at = match &ftraced {
                    Ok(f) if f.names.contains(name) => {
                        attach_addresses(name, symbols, f.sites.as_deref())
                    }
                    _ => Vec::new(),
                };
                if at.is_empty() {
                    unusable.push(name.clone());
                } else {
                    usable.push(name.clone());
                    addrs.extend(at);
                }
            }
            for f in &unusable {
                match &ftraced {
                    Ok(_) => report.refuse(f, Mechanism::KprobeMulti, NOT_FTRACEABLE),
                    Err(e) => report.refuse(f, Mechanism::KprobeMulti, reason(e)),
                }
            }
            if !usable.is_empty() {
                let start = Instant::now();
                let linked = kprobe_multi(object, &addrs);
                linking += start.elapsed();
                match linked {
                    Ok((fds, links)) => {
                        held.fds.extend(fds);
                        held.links += links;
                        report.attached.extend(usable);
                        pending = unusable;
                        used.push(Mechanism::KprobeMulti);
                    }
                    Err(e) => {
                        let why = reason(&e);
                        for f in &usable {
                            report.refuse(f, Mechanism::KprobeMulti, &why);
                        }
                    }
                }
            }
        }
        if matches!(mode, KernelProbeMode::Auto | KernelProbeMode::Fentry) && !pending.is_empty() {
            let (attached, left, took) = fentry(object, pending, symbols, &mut report);
            linking += took;
            if !attached.is_empty() {
                used.push(Mechanism::Fentry);
            }
            held.links += attached.len() / 2;
            held.fds.extend(attached);
            pending = left;
        }
    }
    if matches!(mode, KernelProbeMode::Auto | KernelProbeMode::Kprobe) && !pending.is_empty() {
        let mut refused_all: Option<String> = None;
        let mut attached = 0;
        let start = Instant::now();
        for f in pending {
            if let Some(why) = &refused_all {
                report.refuse(&f, Mechanism::Kprobe, why);
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
                    report.refuse(&f, Mechanism::Kprobe, why);
                }
            }
        }
        linking += start.elapsed();
        held.links += 2 * attached;
        if attached > 0 {
            used.push(Mechanism::Kprobe);
        }
    }
    if !used.is_empty() {
        report.mechanism = Mechanisms(used);
    }
    // A function attached by a later mechanism after an earlier one refused it is not refused.
    let attached: HashSet<String> = report.attached.iter().cloned().collect();
    report.refused.retain(|r| !attached.contains(&r.probe));
    report.attached.sort();
    (report, held, linking)
}

/// What ftrace can patch, from tracefs.
struct Ftraceable {
    names: HashSet<String>,
    /// The call sites, sorted, where the kernel lists them (Linux 6.5+).
    sites: Option<Vec<u64>>,
}

/// `available_filter_functions_addrs` where the kernel has it, else `available_filter_functions`
/// (the kernel formats either by looking up every site's symbol, so only one is read).
fn ftraceable() -> Result<Ftraceable> {
    crate::bpf::tracefs::ensure_mounted()?;
    let tracefs = crate::bpf::tracefs::TRACEFS;
    let addrs = format!("{tracefs}/available_filter_functions_addrs");
    if let Ok(text) = std::fs::read_to_string(addrs) {
        let (mut names, mut sites) = (HashSet::new(), Vec::new());
        for line in text.lines() {
            let mut it = line.split_whitespace();
            if let (Some(addr), Some(name)) = (it.next(), it.next())
                && let Ok(addr) = u64::from_str_radix(addr, 16)
            {
                sites.push(addr);
                names.insert(name.to_owned());
            }
        }
        sites.sort_unstable();
        return Ok(Ftraceable {
            names,
            sites: Some(sites),
        });
    }
    let path = format!("{tracefs}/available_filter_functions");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    Ok(Ftraceable {
        names: (text.lines())
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .collect(),
        sites: None,
    })
}

/// The farthest an ftrace call site lies past its function's address (`endbr64` before it).
const FTRACE_SITE_SPAN: u64 = 16;

/// The addresses to attach `function` at: each function of that name with an ftrace call site,
/// where `sites` lists them; else the first of the name. A link fails whole on one address ftrace
/// cannot patch, and a name two static functions share may name one that it cannot.
fn attach_addresses(function: &str, symbols: &KernelSymbols, sites: Option<&[u64]>) -> Vec<u64> {
    let all = symbols.addresses(function);
    let Some(sites) = sites else {
        return all.iter().take(1).copied().collect();
    };
    (all.iter().copied())
        .filter(|&a| {
            let i = sites.partition_point(|&s| s < a);
            sites.get(i).is_some_and(|&s| s - a < FTRACE_SITE_SPAN)
        })
        .collect()
}

/// One session link over the functions at `addrs` (from [`attach_addresses`]), or where the
/// kernel has no kprobe sessions (before 6.10) an entry and a return link, each function named by
/// its cookie: its address in /proc/kallsyms, which the decoder names it by. Returns the links and
/// programs, and how many of them are links.
fn kprobe_multi(object: &Relocated, addrs: &[u64]) -> Result<(Vec<OwnedFd>, usize)> {
    let session = kprobe_multi::load(object, "kfunc_ksession", Ends::Session).and_then(|p| {
        let link = kprobe_multi::link(p.as_fd(), addrs, addrs, Ends::Session)?;
        Ok(vec![link, p])
    });
    match session {
        Ok(fds) => return Ok((fds, 1)),
        Err(e) => log::info!(
            "{}: an entry and a return link instead",
            datasets::error::chain(&e)
        ),
    }
    let entry = kprobe_multi::load(object, "kfunc_kmulti", Ends::Entry)?;
    let exit = kprobe_multi::load(object, "kfunc_kmulti_ret", Ends::Return)?;
    let entry_link = kprobe_multi::link(entry.as_fd(), addrs, addrs, Ends::Entry)?;
    let exit_link = kprobe_multi::link(exit.as_fd(), addrs, addrs, Ends::Return)?;
    Ok((vec![entry_link, exit_link, entry, exit], 2))
}

/// The fentry/fexit pair on each function of `pending`: returns their fds, the functions refused
/// (whose reasons go to `report`) and the time spent loading and linking.
fn fentry(
    object: &Relocated,
    pending: Vec<String>,
    symbols: &KernelSymbols,
    report: &mut LayerReport,
) -> (Vec<OwnedFd>, Vec<String>, Duration) {
    let mut fds = Vec::new();
    let mut left = Vec::new();
    let mut fentry = match Fentry::new(object) {
        Ok(f) => f,
        Err(e) => {
            let why = reason(&e);
            for f in &pending {
                report.refuse(f, Mechanism::Fentry, &why);
            }
            return (fds, pending, Duration::ZERO);
        }
    };
    let start = Instant::now();
    let mut refused_all: Option<String> = None;
    for f in pending {
        if let Some(why) = &refused_all {
            report.refuse(&f, Mechanism::Fentry, why);
            left.push(f);
            continue;
        }
        let module = symbols.module(&f);
        let pair = fentry
            .attach("kfunc_fentry", End::Entry, module, &f)
            .and_then(|entry| Ok([entry, fentry.attach("kfunc_fexit", End::Exit, module, &f)?]));
        match pair {
            Ok(pair) => {
                fds.extend(pair.into_iter().flat_map(Link::into_fds));
                report.attached.push(f);
            }
            Err(e) => {
                let why = reason(&e);
                if fds.is_empty() && module.is_none() {
                    refused_all = Some(why.clone());
                }
                report.refuse(&f, Mechanism::Fentry, why);
                left.push(f);
            }
        }
    }
    (fds, left, start.elapsed())
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
    fn a_shared_name_attaches_at_each_function_that_ftrace_can_patch() {
        let s = KernelSymbols::parse(
            "ffffffff81000000 t mmio_read\n\
             ffffffff81000100 T vfs_read\n\
             ffffffff82000000 t mmio_read\n\
             ffffffff82000040 t mem32_serial_in\n\
             ffffffff82000080 t mem32_serial_in\n",
        );
        assert_eq!(
            s.addresses("mmio_read"),
            [0xffffffff81000000, 0xffffffff82000000]
        );
        assert_eq!(s.address("mmio_read"), Some(0xffffffff81000000));
        // Call sites: after an endbr64, at the start, and none for the first mem32_serial_in.
        let sites = [
            0xffffffff81000004,
            0xffffffff81000104,
            0xffffffff82000000,
            0xffffffff82000084,
        ];
        let at = |f: &str| attach_addresses(f, &s, Some(&sites));
        assert_eq!(at("mmio_read"), [0xffffffff81000000, 0xffffffff82000000]);
        assert_eq!(at("vfs_read"), [0xffffffff81000100]);
        assert_eq!(at("mem32_serial_in"), [0xffffffff82000080]);
        assert_eq!(at("no_such_fn"), [] as [u64; 0]);
        assert_eq!(
            attach_addresses("mem32_serial_in", &s, None),
            [0xffffffff82000040]
        );
    }

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
