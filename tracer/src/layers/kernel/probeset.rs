//! Probe sets: the kernel functions the `kernel` layer traces, by layer, with the functions left
//! out and why. `dc-trace probes --discover [REGEX...]` writes one from this kernel (the functions
//! in /proc/kallsyms, tracefs' available_filter_functions and BTF at once, filed by the layer map);
//! `dc-trace collect --probes FILE` reads one, and reports each entry it cannot use as
//! `file:line: what`, going on with the rest unless `--strict`.
//!
//! ```toml
//! [[layer]]
//! name = "vfs"
//! functions = ["vfs_read", "^vfs_write"]   # names, or regexes
//!
//! [[exclude]]
//! function = "vfs_fallocate"
//! reason = "not in available_filter_functions"
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::path::Path;

use crate::error::{Context, Error, Result, Target, bail};
use datasets::input::Toml;
use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

use datasets::vocab::layer::KERNEL as UNMAPPED;

use super::symbols::KernelSymbols;
use crate::bpf::fentry::{function_id, read_split};
use crate::bpf::kstruct::KernelBtf;
use crate::bpf::tracefs::TRACEFS;
use crate::layers::tables;

/// The probe sets dc-trace ships, by file name: families of the functions DataCrumbs' traces
/// show, per layer.
/// Why a function ftrace cannot patch is left out.
pub const NOT_FTRACEABLE: &str = "not in available_filter_functions (notrace, or inlined)";

pub const SHIPPED: &[(&str, &str)] = &[("default.toml", include_str!("../probesets/default.toml"))];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    layer: Vec<Entry>,
    #[serde(default)]
    exclude: Vec<Exclude>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Spanned<String>,
    functions: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Exclude {
    function: String,
    reason: String,
}

/// What the kernel can attach: the functions ftrace can patch, and the BTF fentry binds them by.
pub struct Attachable {
    filter: HashSet<String>,
    vmlinux: &'static btf_rs::Btf,
    modules: HashMap<String, Option<btf_rs::Btf>>,
}

impl Attachable {
    pub fn load() -> Result<Attachable> {
        crate::bpf::tracefs::ensure_mounted()?;
        let path = format!("{TRACEFS}/available_filter_functions");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        Ok(Attachable::new(&text, KernelBtf::get()?.btf()))
    }

    /// From the text of available_filter_functions (`name` or `name [module]` per line).
    pub fn new(filter: &str, vmlinux: &'static btf_rs::Btf) -> Attachable {
        Attachable {
            filter: filter
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(str::to_owned)
                .collect(),
            vmlinux,
            modules: HashMap::new(),
        }
    }

    /// Why `function` cannot be attached, the way the kernel would refuse it; None if it can.
    pub fn refusal(&mut self, function: &str, symbols: &KernelSymbols) -> Option<&'static str> {
        if symbols.address(function).is_none() {
            return Some("not in /proc/kallsyms");
        }
        if !self.filter.contains(function) {
            return Some(NOT_FTRACEABLE);
        }
        let module = match symbols.module(function) {
            None => None,
            Some(m) => {
                let vmlinux = self.vmlinux;
                let btf = self
                    .modules
                    .entry(m.to_owned())
                    .or_insert_with(|| read_split(&format!("/sys/kernel/btf/{m}"), vmlinux).ok());
                match btf {
                    Some(b) => Some(&*b),
                    None => return Some("its module has no BTF"),
                }
            }
        };
        if function_id(self.vmlinux, module, function).is_err() {
            return Some("not a function in BTF (fentry cannot bind it)");
        }
        None
    }
}

/// A probe set read and checked against this kernel.
#[derive(Clone, Debug, Default)]
pub struct ProbeSet {
    /// Each function to attach, with the layer its events are filed under.
    pub functions: BTreeMap<String, String>,
    /// Each entry that cannot be used: `file:line: what`.
    pub problems: Vec<String>,
}

impl ProbeSet {
    /// Reads the probe set at `path`; with `strict`, any problem is an error.
    pub fn load(path: &Path, strict: bool) -> Result<ProbeSet> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file = path.display().to_string();
        // Where tracefs or BTF cannot be read, no entry can attach: the run goes on without them.
        let checked = KernelSymbols::load().and_then(|s| Ok((s, Attachable::load()?)));
        let (symbols, mut attachable) = match checked {
            Ok(c) => c,
            Err(e) if !strict => {
                return Ok(ProbeSet {
                    problems: vec![format!(
                        "{file}: no function can attach: {}",
                        datasets::error::chain(&e)
                    )],
                    ..ProbeSet::default()
                });
            }
            Err(e) => return Err(e.context(file)),
        };
        let set = ProbeSet::parse(&text, &file, &symbols, &mut attachable)?;
        if strict && !set.problems.is_empty() {
            bail!("{}", set.problems.join("\n"));
        }
        Ok(set)
    }

    /// Parses `text` (named `file` in messages). A file that is not a probe set is an error; an
    /// entry that cannot be used is a problem, and the others are kept.
    pub fn parse(
        text: &str,
        file: &str,
        symbols: &KernelSymbols,
        attachable: &mut Attachable,
    ) -> Result<ProbeSet> {
        let input = Toml::new(text, Path::new(file));
        let parsed: File = input.parse_unnamed()?;
        let excluded: HashMap<&str, &str> = parsed
            .exclude
            .iter()
            .map(|e| (e.function.as_str(), e.reason.as_str()))
            .collect();
        let mut set = ProbeSet::default();
        for entry in &parsed.layer {
            let layer = match tables::layer(&input, "name", &entry.name, &[UNMAPPED]) {
                Ok(layer) => layer,
                Err(e) => {
                    set.problems.push(e.to_string());
                    continue;
                }
            };
            for f in &entry.functions {
                let wanted = f.get_ref();
                let mut problem = |what: String| {
                    set.problems
                        .push(input.error_at(f.span(), what).to_string())
                };
                if !KernelSymbols::is_pattern(wanted) {
                    if symbols.address(wanted).is_none() {
                        problem(format!("`{wanted}` does not exist (not in /proc/kallsyms)"));
                    } else if let Some(why) = excluded.get(wanted.as_str()) {
                        problem(format!("`{wanted}` is excluded: {why}"));
                    } else if let Some(why) = attachable.refusal(wanted, symbols) {
                        problem(format!("`{wanted}` cannot attach: {why}"));
                    } else {
                        set.functions.insert(wanted.clone(), layer.clone());
                    }
                    continue;
                }
                let re = match tables::regex(&input, None, f) {
                    Ok(re) => re,
                    Err(e) => {
                        set.problems.push(e.to_string());
                        continue;
                    }
                };
                let (mut usable, mut refused) = (0, 0);
                for name in symbols.names().filter(|n| re.is_match(n)) {
                    if excluded.contains_key(name) || attachable.refusal(name, symbols).is_some() {
                        refused += 1;
                    } else {
                        usable += 1;
                        set.functions
                            .entry(name.to_owned())
                            .or_insert_with(|| layer.clone());
                    }
                }
                if usable == 0 {
                    problem(format!(
                        "`{wanted}` matches no function that can attach ({refused} excluded or not attachable)"
                    ));
                }
            }
        }
        Ok(set)
    }
}

/// `dc-trace probes --discover`: the functions of this kernel matching any of `patterns` (with
/// none, every function the layer map files under a layer), as a probe set: each usable one
/// under its layer, the rest excluded with the reason.
/// `layer_of` files a function under its layer (the layer map's [`super::map::KernelLayerMap::layer`]).
pub fn discover(patterns: &[String], layer_of: &mut dyn FnMut(&str) -> String) -> Result<String> {
    let res: Vec<Regex> = patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|e| {
                Error::from(e)
                    .context("not a valid regex")
                    .about(Target::Discover(p.clone()))
            })
        })
        .collect::<Result<_>>()?;
    let symbols = KernelSymbols::load()?;
    let mut attachable = Attachable::load()?;
    Ok(discover_in(&symbols, &mut attachable, &res, layer_of))
}

fn discover_in(
    symbols: &KernelSymbols,
    attachable: &mut Attachable,
    patterns: &[Regex],
    layer_of: &mut dyn FnMut(&str) -> String,
) -> String {
    let mut layers: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut excluded: Vec<(&str, &str)> = Vec::new();
    for name in symbols.names() {
        let wanted = if patterns.is_empty() {
            layer_of(name) != UNMAPPED
        } else {
            patterns.iter().any(|re| re.is_match(name))
        };
        if !wanted {
            continue;
        }
        match attachable.refusal(name, symbols) {
            Some(why) => excluded.push((name, why)),
            None => layers.entry(layer_of(name)).or_default().push(name),
        }
    }
    // A JSON string is a TOML basic string.
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let found: usize = layers.values().map(Vec::len).sum();
    let mut out = format!(
        "# dc-trace probes --discover: {found} functions in {} layers, {} excluded\n",
        layers.len(),
        excluded.len()
    );
    for (layer, functions) in &layers {
        let _ = writeln!(out, "\n[[layer]]\nname = {}\nfunctions = [", quote(layer));
        for f in functions {
            let _ = writeln!(out, "  {},", quote(f));
        }
        out.push_str("]\n");
    }
    for (f, why) in excluded {
        let _ = writeln!(
            out,
            "\n[[exclude]]\nfunction = {}\nreason = {}",
            quote(f),
            quote(why)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::vocab::layer::kernel_function_layers;

    /// Real vmlinux functions of this host, so that BTF is the kernel's own.
    const KALLSYMS: &str = "ffffffff816b89f0 T vfs_read\n\
ffffffff816b8b00 T vfs_write\n\
ffffffff816b8c00 t vfs_no_btf_here\n\
ffffffff816b8d00 T vfs_fsync_range\n\
ffffffff817a7860 T filemap_read\n";
    const FILTER: &str = "vfs_read\nvfs_write\nvfs_no_btf_here\nfilemap_read\n";

    fn attachable() -> Attachable {
        Attachable::new(FILTER, KernelBtf::get().unwrap().btf())
    }

    #[test]
    fn each_unusable_entry_is_named_by_file_and_line_and_the_rest_is_kept() {
        let symbols = KernelSymbols::parse(KALLSYMS);
        let text = "[[layer]]\nname = \"vfs\"\nfunctions = [\n  \"vfs_read\",\n  \"vfs_fsync_range\",\n  \"no_such_fn\",\n  \"vfs_write\",\n  \"^(vfs\",\n  \"^vfs_no\",\n]\n\n\
[[layer]]\nname = \"disk\"\nfunctions = [\"filemap_read\"]\n\n\
[[layer]]\nname = \"page_cache\"\nfunctions = [\"^filemap_\"]\n\n\
[[exclude]]\nfunction = \"vfs_write\"\nreason = \"too hot\"\n";
        let set = ProbeSet::parse(text, "p.toml", &symbols, &mut attachable()).unwrap();
        assert_eq!(
            set.functions,
            BTreeMap::from([
                ("filemap_read".to_owned(), "page_cache".to_owned()),
                ("vfs_read".to_owned(), "vfs".to_owned()),
            ])
        );
        let bad = String::from("^(vfs");
        let regex_error = Regex::new(&bad).unwrap_err();
        assert_eq!(
            set.problems,
            [
                "p.toml:5: `vfs_fsync_range` cannot attach: not in available_filter_functions (notrace, or inlined)".to_owned(),
                "p.toml:6: `no_such_fn` does not exist (not in /proc/kallsyms)".to_owned(),
                "p.toml:7: `vfs_write` is excluded: too hot".to_owned(),
                format!("p.toml:8: `^(vfs` is not a valid regex: {regex_error}"),
                "p.toml:9: `^vfs_no` matches no function that can attach (1 excluded or not attachable)".to_owned(),
                format!(
                    "p.toml:13: name: `disk` is not a layer (layers: {}, kernel)",
                    kernel_function_layers().join(", ")
                ),
            ]
        );
        let e = ProbeSet::parse(
            "[[layer]]\nname = 3\n",
            "p.toml",
            &symbols,
            &mut attachable(),
        )
        .unwrap_err();
        let text = datasets::error::chain(&e);
        assert!(text.starts_with("p.toml:2: "), "{text}");
    }

    #[test]
    fn discovery_files_usable_functions_by_layer_and_excludes_the_rest_with_the_reason() {
        let symbols = KernelSymbols::parse(KALLSYMS);
        let mut map = super::super::map::KernelLayerMap::shipped();
        let text = discover_in(&symbols, &mut attachable(), &[], &mut |n| {
            map.layer(n).to_owned()
        });
        assert_eq!(
            text,
            "# dc-trace probes --discover: 3 functions in 2 layers, 2 excluded\n\n\
[[layer]]\nname = \"page_cache\"\nfunctions = [\n  \"filemap_read\",\n]\n\n\
[[layer]]\nname = \"vfs\"\nfunctions = [\n  \"vfs_read\",\n  \"vfs_write\",\n]\n\n\
[[exclude]]\nfunction = \"vfs_fsync_range\"\nreason = \"not in available_filter_functions (notrace, or inlined)\"\n\n\
[[exclude]]\nfunction = \"vfs_no_btf_here\"\nreason = \"not a function in BTF (fentry cannot bind it)\"\n"
        );
        let set = ProbeSet::parse(&text, "d.toml", &symbols, &mut attachable()).unwrap();
        assert_eq!(set.functions.len(), 3);
        assert!(set.problems.is_empty(), "{:?}", set.problems);
    }

    /// Every family of the shipped sets names functions DataCrumbs traced under that layer.
    #[test]
    fn shipped_families_come_from_datacrumbs_traces() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/fixtures/datacrumbs");
        let paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .collect();
        assert_eq!(paths.len(), 5, "{}", dir.display());
        let trace =
            datasets::read::read_all(&paths, datasets::read::ReadOptions::default()).unwrap();
        let names: HashSet<&str> = trace
            .events
            .iter()
            .map(|e| e.name.trim_end_matches(" [kernel]"))
            .collect();
        for (file, text) in SHIPPED {
            let parsed: File = toml::from_str(text).unwrap();
            assert!(!parsed.layer.is_empty(), "{file}");
            for entry in parsed.layer {
                for f in entry.functions {
                    let re = Regex::new(f.get_ref()).unwrap();
                    let n = names.iter().filter(|n| re.is_match(n)).count();
                    assert!(
                        n > 0,
                        "{file}: `{}` matches no traced function",
                        f.get_ref()
                    );
                }
            }
        }
    }
}
