//! Which stack layer a kernel function belongs to, so that the `kernel` layer's events carry
//! their layer (`vfs`, `ext4`, `page_cache`, `block`, ...) as their `cat`, from a TOML map:
//! `kernel_layers.toml`, shipped, or the user's `--kernel-layers FILE`.

use std::collections::HashMap;
use std::path::Path;

use crate::error::Result;
use datasets::input::Toml;
use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

use super::probeset::ProbeSet;
use super::symbols::KernelSymbols;
use crate::layers::tables;

/// The map dc-trace ships.
pub const SHIPPED: &str = include_str!("../kernel_layers.toml");
const SHIPPED_NAME: &str = "tracer/src/layers/kernel_layers.toml";

/// The `cat` of a function no pattern matches.
pub use datasets::vocab::layer::KERNEL as UNMAPPED;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    layer: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Spanned<String>,
    functions: Vec<Spanned<String>>,
}

/// Function-name patterns in order, each with its layer; the first match wins.
#[derive(Clone, Debug, Default)]
pub struct KernelLayerMap {
    rules: Vec<(Regex, String)>,
    /// Function name → layer, as found, or as the probe set files it.
    found: HashMap<String, String>,
    /// The probe set `--probes` names.
    pub probe_set: Option<ProbeSet>,
}

impl KernelLayerMap {
    /// The shipped map.
    pub fn shipped() -> KernelLayerMap {
        KernelLayerMap::parse(SHIPPED, SHIPPED_NAME, None).expect("the shipped map is valid")
    }

    /// The user's map at `path`; each pattern must match a function of `symbols`.
    pub fn load(path: &Path, symbols: &KernelSymbols) -> Result<KernelLayerMap> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| crate::error::failed!("{}: {e}", path.display()))?;
        KernelLayerMap::parse(&text, &path.display().to_string(), Some(symbols))
    }

    /// Parses `text` (named `file` in errors, `file:line: what`). With `symbols`, a pattern that
    /// matches none of their functions is an error.
    pub fn parse(
        text: &str,
        file: &str,
        symbols: Option<&KernelSymbols>,
    ) -> Result<KernelLayerMap> {
        let input = Toml::new(text, Path::new(file));
        let parsed: File = input.parse_unnamed()?;
        let mut rules = Vec::new();
        for entry in &parsed.layer {
            let layer = tables::layer(&input, "name", &entry.name, &[])?;
            for f in &entry.functions {
                let re = tables::regex(&input, Some("functions"), f)?;
                if let Some(s) = symbols
                    && !s.names().any(|n| re.is_match(n))
                {
                    let what = format!("functions: `{}` matches no kernel function", f.get_ref());
                    return Err(input.error_at(f.span(), what).into());
                }
                rules.push((re, layer.clone()));
            }
        }
        Ok(KernelLayerMap {
            rules,
            ..KernelLayerMap::default()
        })
    }

    /// The user's map `layers` when given, else the shipped one; with the probe set `probe_set`,
    /// whose layers come first (`strict`: any unusable entry of it fails).
    pub fn for_run(
        layers: Option<&Path>,
        probe_set: Option<&Path>,
        strict: bool,
    ) -> Result<KernelLayerMap> {
        let mut map = match layers {
            Some(path) => KernelLayerMap::load(path, &KernelSymbols::load()?)?,
            None => KernelLayerMap::shipped(),
        };
        if let Some(path) = probe_set {
            let set = ProbeSet::load(path, strict)?;
            map.found.extend(set.functions.clone());
            map.probe_set = Some(set);
        }
        Ok(map)
    }

    /// The layer of `function`, or [`UNMAPPED`].
    pub fn layer(&mut self, function: &str) -> &str {
        if !self.found.contains_key(function) {
            let layer = self
                .rules
                .iter()
                .find(|(re, _)| re.is_match(function))
                .map_or(UNMAPPED, |(_, l)| l.as_str());
            self.found.insert(function.to_owned(), layer.to_owned());
        }
        &self.found[function]
    }

    /// The layer of each of `functions`, joined by `;` as a stack's names are (`stack_layers`).
    pub fn stack_layers(&mut self, functions: &[&str]) -> String {
        let mut layers = String::new();
        for (i, f) in functions.iter().enumerate() {
            if i > 0 {
                layers.push(';');
            }
            layers.push_str(self.layer(f));
        }
        layers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::vocab::layer::kernel_function_layers;

    #[test]
    fn the_shipped_map_files_the_default_functions_under_their_layers() {
        let mut m = KernelLayerMap::shipped();
        let layers: Vec<(&str, String)> = super::super::DEFAULT_FUNCTIONS
            .iter()
            .map(|f| (*f, m.layer(f).to_owned()))
            .collect();
        let want = [
            ("vfs_read", "vfs"),
            ("vfs_write", "vfs"),
            ("vfs_open", "vfs"),
            ("vfs_fsync_range", "vfs"),
            ("vfs_iter_read", "vfs"),
            ("vfs_iter_write", "vfs"),
            ("ext4_file_read_iter", "ext4"),
            ("ext4_file_write_iter", "ext4"),
            ("ext4_sync_file", "ext4"),
            ("ext4_da_write_begin", "ext4"),
            ("ext4_writepages", "ext4"),
            ("filemap_read", "page_cache"),
            ("filemap_fault", "page_cache"),
            ("filemap_write_and_wait_range", "page_cache"),
            ("generic_perform_write", "page_cache"),
            ("page_cache_ra_unbounded", "page_cache"),
            ("iomap_dio_rw", "iomap"),
            ("submit_bio", "block"),
            ("bio_endio", "block"),
        ];
        assert_eq!(
            layers,
            want.map(|(f, l)| (f, l.to_owned())).to_vec(),
            "every default function has its layer"
        );
        assert_eq!(m.layer("do_sys_poll"), UNMAPPED);
    }

    const KALLSYMS: &str = "ffffffff816b89f0 T vfs_read\nffffffff817a7860 t ext4_file_read_iter\n";

    fn error(text: &str) -> String {
        let symbols = KernelSymbols::parse(KALLSYMS);
        datasets::error::chain(
            &KernelLayerMap::parse(text, "map.toml", Some(&symbols)).unwrap_err(),
        )
    }

    #[test]
    fn bad_maps_are_reported_by_file_and_line() {
        assert_eq!(
            error(
                "[[layer]]\nname = \"vfs\"\nfunctions = [\"^vfs_\"]\n\n[[layer]]\nname = \"disk\"\nfunctions = [\"^ext4_\"]\n"
            ),
            format!(
                "map.toml:6: name: `disk` is not a layer (layers: {})",
                kernel_function_layers().join(", ")
            )
        );
        assert!(
            error("[[layer]]\nname = \"vfs\"\nfunctions = [\n  \"^vfs_\",\n  \"^(ext4\",\n]\n")
                .starts_with("map.toml:5: functions: `^(ext4` is not a valid regex: "),
        );
        assert_eq!(
            error("[[layer]]\nname = \"ext4\"\nfunctions = [\"^ext4_\", \"^xfs_\"]\n"),
            "map.toml:3: functions: `^xfs_` matches no kernel function"
        );
        assert!(
            error("[[layer]]\nname = \"vfs\"\npatterns = []\n")
                .starts_with("map.toml:3: unknown field `patterns`"),
        );
    }

    #[test]
    fn a_user_map_overrides_and_the_first_match_wins() {
        let symbols = KernelSymbols::parse(KALLSYMS);
        let mut m = KernelLayerMap::parse(
            "[[layer]]\nname = \"fs\"\nfunctions = [\"^ext4_file\"]\n\
             [[layer]]\nname = \"vfs\"\nfunctions = [\"_read\"]\n",
            "map.toml",
            Some(&symbols),
        )
        .unwrap();
        assert_eq!(m.layer("ext4_file_read_iter"), "fs");
        assert_eq!(m.layer("vfs_read"), "vfs");
    }
}
