//! The `libc` and `app` layers: uprobe/uretprobe pairs on functions found by reading the ELF
//! symbol tables ourselves, each attached with its probe id as the cookie, through one
//! uprobe_multi link per binary and end where the kernel has them.

pub mod target;

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::{Context, Result};
use aya::{
    maps::HashMap,
    programs::{
        UProbe, uprobe::UProbeAttachLocation, uprobe::UProbeAttachPoint, uprobe::UProbeScope,
    },
};
use datasets::vocab::Mechanism;
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use regex::Regex;
use tracer_ebpf::{ARG_NONE as N, ARG_RET as R, UprobeSpec, size_rule as S};

pub use target::{UprobeLinks, UprobeTarget};

use super::attach::{Attached, Probes, Setup};
use super::layer::{Layer, LayerReport};
use crate::bpf::rawbpf::{self, Relocated};
use crate::bpf::{Attacher, reason};

/// The libc layer attaches the app layer's targets too (one link per binary and end for both);
/// the app layer attaches them alone when libc is not traced.
pub struct Uprobes {
    layer: Layer,
}

impl Uprobes {
    pub const LIBC: Uprobes = Uprobes { layer: Layer::Libc };
    pub const APP: Uprobes = Uprobes { layer: Layer::App };
}

impl Probes for Uprobes {
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let libc = setup.layers.has(Layer::Libc);
        if self.layer == Layer::App && libc {
            return;
        }
        let (planned, errors) = plan(libc, setup.uprobes);
        out.names.uprobes = planned
            .iter()
            .map(|p| (p.function.name.clone(), p.layer))
            .collect();
        let (reports, held) = attach(at, &planned, &errors);
        out.reports.extend(reports);
        out.uprobes = held;
    }
}

/// A function in an ELF file: its name and the file offset a uprobe attaches at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub offset: u64,
}

/// Defined functions of `path` whose names match `pattern`, one per address (aliases collapse
/// onto the shortest name), sorted by name.
pub fn functions(path: &Path, pattern: &Regex) -> Result<Vec<Function>> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file = object::File::parse(&*data)
        .with_context(|| format!("{}: not an ELF file object can read", path.display()))?;
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|s| (s.address(), s.size(), s.file_range().0))
        .collect();
    let mut by_addr: BTreeMap<u64, String> = BTreeMap::new();
    for sym in file.dynamic_symbols().chain(file.symbols()) {
        if sym.kind() != SymbolKind::Text || sym.is_undefined() || sym.address() == 0 {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        // Versioned dynamic names (`fopen@@GLIBC_2.2.5`) match by their base name.
        let name = name.split('@').next().unwrap_or(name);
        if !pattern.is_match(name) {
            continue;
        }
        let slot = by_addr
            .entry(sym.address())
            .or_insert_with(|| name.to_owned());
        if name.len() < slot.len() {
            *slot = name.to_owned();
        }
    }
    let mut out: Vec<Function> = by_addr
        .into_iter()
        .filter_map(|(addr, name)| {
            let (seg_addr, _, seg_off) = segments
                .iter()
                .find(|(a, size, _)| (*a..a + size).contains(&addr))?;
            Some(Function {
                name,
                offset: addr - seg_addr + seg_off,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The libc functions traced by default, with where their fd, stream and size are: the C library's own buffered
/// I/O (stdio), which no system call shows as such, and the mappings of files.
pub const LIBC: &[(&str, UprobeSpec)] = &[
    ("fopen", spec(N, R, S::NONE)),
    ("fopen64", spec(N, R, S::NONE)),
    ("freopen", spec(N, R, S::NONE)),
    ("fread", spec(N, 3, S::RET_TIMES_ARG1)),
    ("fwrite", spec(N, 3, S::RET_TIMES_ARG1)),
    ("fclose", spec(N, 0, S::NONE)),
    ("fseek", spec(N, 0, S::NONE)),
    ("fseeko", spec(N, 0, S::NONE)),
    ("ftell", spec(N, 0, S::NONE)),
    ("fflush", spec(N, 0, S::NONE)),
    ("fgets", spec(N, 2, S::NONE)),
    ("fputs", spec(N, 1, S::NONE)),
    ("mmap", spec(N, N, S::NONE)),
    ("mmap64", spec(N, N, S::NONE)),
    ("munmap", spec(N, N, S::NONE)),
];

/// libc's wrappers of the system calls the `sys` layer records. Not traced by default: each adds a uprobe's trap
/// at entry and at return to every call, and shows only the wrapper's few instructions beyond the system call (on
/// the 2-core project VM, db_bench's 100,000 WAL writes took 1.3 s longer with them). A `--uprobe` target on libc
/// that names them gets them in the `libc` layer, with their fd and size.
pub const LIBC_POSIX: &[(&str, UprobeSpec)] = &[
    ("open", spec(R, N, S::NONE)),
    ("open64", spec(R, N, S::NONE)),
    ("openat", spec(R, N, S::NONE)),
    ("creat", spec(R, N, S::NONE)),
    ("read", spec(0, N, S::RET)),
    ("write", spec(0, N, S::RET)),
    ("pread", spec(0, N, S::RET)),
    ("pread64", spec(0, N, S::RET)),
    ("pwrite", spec(0, N, S::RET)),
    ("pwrite64", spec(0, N, S::RET)),
    ("readv", spec(0, N, S::RET)),
    ("writev", spec(0, N, S::RET)),
    ("close", spec(0, N, S::NONE)),
    ("lseek", spec(0, N, S::NONE)),
    ("lseek64", spec(0, N, S::NONE)),
    ("fsync", spec(0, N, S::NONE)),
    ("fdatasync", spec(0, N, S::NONE)),
    ("ftruncate", spec(0, N, S::NONE)),
];

/// The `libc` layer's spec of a libc function, default or not.
fn libc_spec(name: &str) -> Option<UprobeSpec> {
    LIBC.iter()
        .chain(LIBC_POSIX)
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

const fn spec(fd: u8, stream: u8, size: u8) -> UprobeSpec {
    UprobeSpec {
        layer: tracer_ebpf::layer::LIBC,
        fd_arg: fd,
        stream_arg: stream,
        size_rule: size,
    }
}

/// The C library this process runs with, from its own mappings.
pub fn libc_path() -> Result<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").context("reading /proc/self/maps")?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libc.so") || n.starts_with("libc-"))
        })
        .map(PathBuf::from)
        .context("no libc in /proc/self/maps")
}

/// A binary or target that yielded no probe: its layer, what it was, and why.
pub type PlanError = (Layer, String, String);

/// A probe to attach: where, and how its record decodes.
#[derive(Clone, Debug)]
pub struct Planned {
    pub layer: Layer,
    pub binary: PathBuf,
    pub function: Function,
    pub spec: UprobeSpec,
}

/// The libc functions (when `libc` is on) and every user target's matches, numbered from 0.
pub fn plan(libc: bool, targets: &[UprobeTarget]) -> (Vec<Planned>, Vec<PlanError>) {
    let mut planned = Vec::new();
    let mut errors = Vec::new();
    if libc {
        match libc_path() {
            Ok(path) => {
                let names = format!(
                    "^({})$",
                    LIBC.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("|")
                );
                let re = Regex::new(&names).expect("names are literal");
                match functions(&path, &re) {
                    Ok(found) => {
                        for f in found {
                            if let Some(spec) = libc_spec(&f.name) {
                                planned.push(Planned {
                                    layer: Layer::Libc,
                                    binary: path.clone(),
                                    function: f,
                                    spec,
                                });
                            }
                        }
                    }
                    Err(e) => errors.push((Layer::Libc, path.display().to_string(), reason(&e))),
                }
            }
            Err(e) => errors.push((Layer::Libc, "libc".to_owned(), reason(&e))),
        }
    }
    for t in targets {
        match functions(&t.binary, &t.pattern) {
            Ok(found) if found.is_empty() => errors.push((
                Layer::App,
                format!("{}:{}", t.binary.display(), t.pattern),
                "no defined function matches".to_owned(),
            )),
            Ok(found) => {
                let on_libc = libc_path().is_ok_and(|l| same_file(&l, &t.binary));
                // A libc function the libc layer already traces is not attached twice.
                let taken: Vec<String> = (planned.iter())
                    .filter(|p| on_libc && p.layer == Layer::Libc)
                    .map(|p| p.function.name.clone())
                    .collect();
                let found = found.into_iter().filter(|f| !taken.contains(&f.name));
                planned.extend(found.map(|function| {
                    match libc_spec(&function.name).filter(|_| on_libc) {
                        Some(spec) => Planned {
                            layer: Layer::Libc,
                            binary: t.binary.clone(),
                            function,
                            spec,
                        },
                        None => Planned {
                            layer: Layer::App,
                            binary: t.binary.clone(),
                            function,
                            spec: UprobeSpec {
                                layer: tracer_ebpf::layer::APP,
                                fd_arg: N,
                                stream_arg: N,
                                size_rule: S::NONE,
                            },
                        },
                    }
                }));
            }
            Err(e) => errors.push((Layer::App, t.binary.display().to_string(), reason(&e))),
        }
    }
    (planned, errors)
}

/// Whether two paths name one file (a symlink such as `/lib` to `/usr/lib` included).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

/// The entry and return programs.
const PROGRAMS: [&str; 2] = ["uprobe_enter", "uprobe_exit"];

/// Attaches every planned probe: per binary, one uprobe_multi link for the entries and one for
/// the returns, else (a kernel before 6.6) one uprobe per function and end. Returns the reports
/// of `libc` and `app`.
///
/// uprobe_multi is the fast way: the kernel waits for RCU grace periods in every uprobe detach,
/// under one mutex, about 150 ms each here, which made the libc layer's 54 uprobes take 8 s to
/// detach; a uprobe_multi link waits once for all its functions.
pub fn attach(
    at: &mut Attacher,
    planned: &[Planned],
    errors: &[PlanError],
) -> (Vec<LayerReport>, UprobeLinks) {
    let mut libc = LayerReport::new(Layer::Libc, Mechanism::Uprobe);
    let mut app = LayerReport::new(Layer::App, Mechanism::Uprobe);
    let mut held = UprobeLinks::default();
    for (layer, what, why) in errors {
        let report = if *layer == Layer::Libc {
            &mut libc
        } else {
            &mut app
        };
        report.refuse(what, Mechanism::Uprobe, why);
    }
    if let Err(e) = fill_specs(at, planned) {
        libc.refuse("UPROBES map", Mechanism::Uprobe, reason(&e));
        return (vec![libc, app], held);
    }
    let mut by_binary: BTreeMap<&Path, Vec<(u64, &Planned)>> = BTreeMap::new();
    for (id, p) in planned.iter().enumerate() {
        by_binary.entry(&p.binary).or_default().push((id as u64, p));
    }
    let mut multi = !planned.is_empty()
        && match load_multi(at) {
            Ok(programs) => {
                held.programs = programs;
                true
            }
            Err(e) => {
                log::debug!(
                    "uprobe_multi unavailable, one uprobe per function: {}",
                    datasets::error::chain(&e)
                );
                false
            }
        };
    for (binary, probes) in by_binary {
        if multi {
            match attach_multi(&held.programs, binary, &probes) {
                Ok(links) => {
                    held.links.extend(links);
                    for (_, p) in &probes {
                        let report = if p.layer == Layer::Libc {
                            &mut libc
                        } else {
                            &mut app
                        };
                        report.mechanism = Mechanism::UprobeMulti.into();
                        report.attached.push(label(p));
                    }
                    continue;
                }
                Err(e) => {
                    log::debug!(
                        "{}; one uprobe per function from now on",
                        datasets::error::chain(&e)
                    );
                    multi = false;
                }
            }
        }
        for (id, p) in probes {
            let report = if p.layer == Layer::Libc {
                &mut libc
            } else {
                &mut app
            };
            match attach_one(at, id, p) {
                Ok(()) => report.attached.push(label(p)),
                Err(e) => report.refuse(&label(p), Mechanism::Uprobe, reason(&e)),
            }
        }
    }
    (vec![libc, app], held)
}

fn label(p: &Planned) -> String {
    format!("{}:{}", file_name(&p.binary), p.function.name)
}

fn load_multi(at: &Attacher) -> Result<Vec<(&'static str, OwnedFd)>> {
    let object = Relocated::new(crate::bpf::object::OBJECT, at.ebpf)?;
    PROGRAMS
        .iter()
        .map(|name| Ok((*name, object.load_uprobe_multi(name)?)))
        .collect()
}

/// The entry and return links of `probes`, all in `binary`.
fn attach_multi(
    programs: &[(&'static str, OwnedFd)],
    binary: &Path,
    probes: &[(u64, &Planned)],
) -> Result<Vec<OwnedFd>> {
    let offsets: Vec<u64> = probes.iter().map(|(_, p)| p.function.offset).collect();
    let cookies: Vec<u64> = probes.iter().map(|(id, _)| *id).collect();
    programs
        .iter()
        .map(|(name, fd)| {
            let ret = *name == PROGRAMS[1];
            rawbpf::uprobe_multi(fd.as_fd(), binary, &offsets, &cookies, ret)
        })
        .collect()
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn fill_specs(at: &mut Attacher, planned: &[Planned]) -> Result<()> {
    let mut map: HashMap<_, u32, UprobeSpec> =
        HashMap::try_from(at.ebpf.map_mut("UPROBES").context("UPROBES map")?)?;
    for (id, p) in planned.iter().enumerate() {
        map.insert(id as u32, p.spec, 0)?;
    }
    Ok(())
}

fn attach_one(at: &mut Attacher, cookie: u64, p: &Planned) -> Result<()> {
    for prog in PROGRAMS {
        let u: &mut UProbe = at.program(prog)?.try_into()?;
        let point = UProbeAttachPoint {
            location: UProbeAttachLocation::AbsoluteOffset(p.function.offset),
            cookie: Some(cookie),
        };
        u.attach(point, &p.binary, UProbeScope::AllProcesses)
            .with_context(|| {
                format!("{prog} at {}+{:#x}", p.binary.display(), p.function.offset)
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_libc_functions_with_offsets_inside_the_file() {
        let path = libc_path().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let found = functions(&path, &Regex::new("^(fread|fwrite|pread64)$").unwrap()).unwrap();
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["fread", "fwrite", "pread64"]);
        assert!(found.iter().all(|f| f.offset > 0 && f.offset < len));
    }

    /// By default the libc layer takes stdio and the mappings, not the system calls' wrappers; a target on libc
    /// that names a wrapper gets it in the libc layer with its fd and size, and another function in the app layer.
    #[test]
    fn libcs_wrappers_come_only_when_named() {
        let (planned, errors) = plan(true, &[]);
        assert_eq!(errors, []);
        let names: Vec<&str> = planned.iter().map(|p| p.function.name.as_str()).collect();
        assert!(
            names.contains(&"fread") && names.contains(&"mmap"),
            "{names:?}"
        );
        assert!(
            !names.contains(&"read") && !names.contains(&"write"),
            "{names:?}"
        );
        let libc = libc_path().unwrap();
        let target = UprobeTarget::parse(&format!("{}:^(write|getpid)$", libc.display())).unwrap();
        let (planned, errors) = plan(false, &[target]);
        assert_eq!(errors, []);
        let got: Vec<(&str, Layer, u8, u8)> = planned
            .iter()
            .map(|p| {
                (
                    p.function.name.as_str(),
                    p.layer,
                    p.spec.fd_arg,
                    p.spec.size_rule,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("getpid", Layer::App, N, S::NONE),
                ("write", Layer::Libc, 0, S::RET)
            ]
        );
        let target = UprobeTarget::parse(&format!("{}:^(fread|read)$", libc.display())).unwrap();
        let (planned, _) = plan(true, &[target]);
        let count = |n: &str| planned.iter().filter(|p| p.function.name == n).count();
        assert_eq!((count("fread"), count("read")), (1, 1));
    }

    #[test]
    fn a_pattern_matching_nothing_is_reported() {
        let target = UprobeTarget::parse("/proc/self/exe:^no_such_function_here$").unwrap();
        let (planned, errors) = plan(false, &[target]);
        assert!(planned.is_empty());
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].2, "no defined function matches");
    }
}
