//! The tracepoint tables (the `page_cache`, `fs`, `writeback`, `irq`, `lock`, `mm`, `iomap` and
//! `jbd2` layers): every tracepoint a layer lists that this kernel has, attached to the layer's
//! program (`tp_{layer}`), whose link's cookie is the tracepoint's slot. Enter/exit pairs (named `_enter`/`_exit`,
//! `X_start`/`X`, or listed by the layer) become intervals of the thread they fired in, the rest
//! point events. A tracepoint this kernel lacks is reported, with the reason, and left out.

pub mod table;

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use crate::error::{Context, Result};
use aya::maps::Array;
use datasets::vocab::Mechanism;
use datasets::{ArgValue, Event, Phase};
use tracer_ebpf::{TP_SLOTS, TpEvent, TpInfo, role, tpflag};

pub use table::{ProbeName, Sources, Table};

use super::attach::{Attached, Probes, Setup};
use super::block;
use super::layer::{Layer, LayerReport};
use crate::bpf::tracefs::{self, Format};
use crate::bpf::{Attacher, reason};
use crate::record::complete;

pub fn sources(layer: Layer) -> Sources {
    layer.probes().table().map_or(&[], |t| t.sources)
}

impl Probes for Table {
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let in_call = self.in_call && setup.layers.has(Layer::Sys);
        let mut report = LayerReport::new(self.layer, Mechanism::Tracepoint);
        let mut planned = plan(self.layer, &mut out.next_tp, &mut report);
        for p in &mut planned {
            if in_call {
                p.info.flags |= tpflag::IN_CALL;
            }
            for (name, flags) in self.flags {
                if p.name == *name {
                    p.info.flags |= flags;
                }
            }
        }
        out.names.tps.extend(names(&planned));
        attach(at, self.layer, &planned, &mut report, &mut out.tp_links);
        out.reports.push(report);
    }

    fn table(&self) -> Option<&Table> {
        Some(self)
    }
}

/// One tracepoint to attach and how its record reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub category: String,
    pub name: String,
    /// The event it makes: a pair's name, or its own.
    pub event: String,
    pub info: TpInfo,
    /// Names of the copied fields.
    pub fields: [Option<String>; 4],
}

const DEV: &[&str] = &["dev", "s_dev"];
const INO: &[&str] = &["ino", "i_ino"];
const THIRD: &[&str] = &[
    "index",
    "offset",
    "pos",
    "len",
    "count",
    "lblk",
    "nr_to_read",
    "nr_to_write",
    "size",
    "ret",
    "irq",
    "vec",
    "address",
];
/// A large folio's size, as a power of two pages (mm_filemap_*): a page cache event stands for `1 << order` pages.
const FOURTH: &[&str] = &["order"];

/// Which fields of `format` to copy: a device, an inode, one size or position, and a folio's order.
pub fn choose_fields(format: &Format) -> ([u16; 4], [u8; 4], [Option<String>; 4]) {
    let mut off = [0u16; 4];
    let mut size = [0u8; 4];
    let mut names: [Option<String>; 4] = Default::default();
    for (i, wanted) in [DEV, INO, THIRD, FOURTH].iter().enumerate() {
        if let Some((name, f)) = wanted.iter().find_map(|n| {
            format
                .field(n)
                .filter(|f| matches!(f.size, 1 | 2 | 4 | 8))
                .map(|f| (*n, f))
        }) {
            off[i] = f.offset;
            size[i] = f.size;
            names[i] = Some(name.to_owned());
        }
    }
    (off, size, names)
}

/// The event name of a pair's side and its role, when `name` is one: a pair the layer lists, or
/// one named `X_enter`/`X_exit` or `X_start`/`X` whose other side is in `all`.
fn pair_base(
    name: &str,
    all: &[String],
    pairs: &[(&'static str, &'static str, &'static str)],
) -> Option<(String, u8)> {
    for &(enter, exit, event) in pairs {
        if name == enter && all.iter().any(|n| n == exit) {
            return Some((event.to_owned(), role::ENTER));
        }
        if name == exit && all.iter().any(|n| n == enter) {
            return Some((event.to_owned(), role::EXIT));
        }
    }
    if let Some(b) = name.strip_suffix("_enter") {
        return all
            .iter()
            .any(|n| *n == format!("{b}_exit"))
            .then(|| (b.to_owned(), role::ENTER));
    }
    if let Some(b) = name.strip_suffix("_exit") {
        return all
            .iter()
            .any(|n| *n == format!("{b}_enter"))
            .then(|| (b.to_owned(), role::EXIT));
    }
    if let Some(b) = name.strip_suffix("_start") {
        return all
            .iter()
            .any(|n| n == b)
            .then(|| (b.to_owned(), role::ENTER));
    }
    if all.iter().any(|n| *n == format!("{name}_start")) {
        return Some((name.to_owned(), role::EXIT));
    }
    None
}

/// Reads the formats of `layer`'s tracepoints. Probe ids, which are also their slots (the links'
/// cookies), continue from `next_id`.
pub fn plan(layer: Layer, next_id: &mut u32, report: &mut LayerReport) -> Vec<Planned> {
    let mut out = Vec::new();
    let Some(table) = layer.probes().table() else {
        return out;
    };
    for (category, wanted) in table.sources {
        let present = tracefs::events(category);
        let mut names = Vec::new();
        for w in *wanted {
            if present.iter().any(|n| n == w) {
                names.push((*w).to_owned());
            } else {
                report.refuse(
                    &format!("{category}/{w}"),
                    Mechanism::Tracepoint,
                    "not on this kernel",
                );
            }
        }
        let all = names.clone();
        let mut pair_ids: HashMap<String, u32> = HashMap::new();
        for name in names {
            if *next_id >= TP_SLOTS {
                let why = format!("all {TP_SLOTS} slots are taken");
                report.refuse(&format!("{category}/{name}"), Mechanism::Tracepoint, why);
                continue;
            }
            let format = match tracefs::format(category, &name) {
                Ok(f) => f,
                Err(e) => {
                    report.refuse(
                        &format!("{category}/{name}"),
                        Mechanism::Tracepoint,
                        reason(&e),
                    );
                    continue;
                }
            };
            let (mut off, mut size, mut fields) = choose_fields(&format);
            let span = table.spans.contains(&name.as_str());
            if span {
                match format.field("pause") {
                    Some(f) if f.size == 8 => {
                        off[2] = f.offset;
                        size[2] = 8;
                        fields[2] = Some("pause_ms".to_owned());
                    }
                    _ => {
                        let why = "no 8-byte `pause` field to make the interval of";
                        report.refuse(&format!("{category}/{name}"), Mechanism::Tracepoint, why);
                        continue;
                    }
                }
            }
            let probe = *next_id;
            *next_id += 1;
            let (pair, role, event) = match pair_base(&name, &all, table.pairs) {
                Some((base, r)) => (*pair_ids.entry(base.clone()).or_insert(probe), r, base),
                None if span => (0, role::SPAN_MS, name.clone()),
                None => (0, role::POINT, name.clone()),
            };
            out.push(Planned {
                category: (*category).to_owned(),
                name,
                event,
                info: TpInfo {
                    probe,
                    pair,
                    layer: layer.id(),
                    role,
                    off,
                    size,
                    ..TpInfo::default()
                },
                fields,
            });
        }
    }
    out
}

/// The names probe ids decode to: a pair under its event name (on the enter's id), the rest
/// under their own.
pub fn names(planned: &[Planned]) -> HashMap<u32, ProbeName> {
    let mut out = HashMap::new();
    for p in planned {
        let paired = matches!(p.info.role, role::ENTER | role::EXIT);
        let id = if paired { p.info.pair } else { p.info.probe };
        // The enter side's fields are the ones the kernel keeps.
        if p.info.role == role::EXIT && out.contains_key(&id) {
            continue;
        }
        out.insert(
            id,
            ProbeName {
                name: p.event.clone(),
                layer: Layer::from_id(p.info.layer).unwrap_or(Layer::Fs),
                fields: p.fields.clone(),
            },
        );
    }
    out
}

/// Attaches `layer`'s program, `tp_{layer}`, to each tracepoint of `planned` with its slot as the
/// link's cookie, adding the links to `links`.
pub fn attach(
    at: &mut Attacher,
    layer: Layer,
    planned: &[Planned],
    report: &mut LayerReport,
    links: &mut Vec<OwnedFd>,
) {
    if let Err(e) = fill(at, planned) {
        report.refuse("TPINFO map", Mechanism::Tracepoint, reason(&e));
        return;
    }
    let program = format!("tp_{}", layer.name());
    for p in planned {
        let label = format!("{}/{}", p.category, p.name);
        match at.tracepoint_cookie(&program, &p.category, &p.name, p.info.probe as u64) {
            Ok(link) => {
                links.push(link);
                report.attached.push(label);
            }
            Err(e) => report.refuse(&label, Mechanism::Tracepoint, reason(&e)),
        }
    }
}

fn fill(at: &mut Attacher, planned: &[Planned]) -> Result<()> {
    let mut map: Array<_, TpInfo> =
        Array::try_from(at.ebpf.map_mut("TPINFO").context("TPINFO map")?)?;
    for p in planned {
        map.set(p.info.probe, p.info, 0)?;
    }
    Ok(())
}

/// Fills `e` with a table tracepoint's event: a pair under its base name, a point under its own.
pub fn decode(e: &mut Event, t: &TpEvent, layer: Layer, tps: &HashMap<u32, ProbeName>) {
    let probe = tps.get(&t.probe);
    complete(
        e,
        probe.map_or("unknown", |p| p.name.as_str()),
        layer.name(),
        &t.hdr,
    );
    if let Some(p) = probe {
        for (name, v) in p.fields.iter().zip(t.vals) {
            let Some(name) = name else { continue };
            let value = if name.ends_with("dev") {
                ArgValue::Str(block::dev_name(v as u32))
            } else {
                ArgValue::Int(v as i64)
            };
            e.args.other.push((name.as_str().into(), value));
        }
    }
    if t.role == role::POINT as u32 {
        e.ph = Phase::Instant;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::tracefs::parse_format;

    #[test]
    fn every_table_layer_has_its_program_in_the_object() {
        let object = aya_obj::Object::parse(crate::bpf::object::OBJECT).unwrap();
        let tables: Vec<Layer> = (Layer::ALL.iter().copied())
            .filter(|l| l.probes().table().is_some())
            .collect();
        assert_eq!(tables.len(), 8);
        for l in tables {
            let name = format!("tp_{}", l.name());
            assert!(
                object.programs.contains_key(&name),
                "no {name} in the eBPF object"
            );
        }
    }

    #[test]
    fn pairs_enter_exit_and_start_end() {
        let all: Vec<String> = [
            "ext4_sync_file_enter",
            "ext4_sync_file_exit",
            "ext4_da_write_begin",
            "wb_start",
            "wb",
        ]
        .map(String::from)
        .to_vec();
        let listed = [("ext4_da_write_begin", "wb", "listed")];
        let base = |n: &str| pair_base(n, &all, &[]);
        assert_eq!(
            base("ext4_sync_file_enter"),
            Some(("ext4_sync_file".into(), role::ENTER))
        );
        assert_eq!(
            base("ext4_sync_file_exit"),
            Some(("ext4_sync_file".into(), role::EXIT))
        );
        assert_eq!(base("ext4_da_write_begin"), None);
        assert_eq!(base("wb_start"), Some(("wb".into(), role::ENTER)));
        assert_eq!(base("wb"), Some(("wb".into(), role::EXIT)));
        assert_eq!(
            pair_base("ext4_da_write_begin", &all, &listed),
            Some(("listed".into(), role::ENTER))
        );
        assert_eq!(
            pair_base("wb", &all, &listed),
            Some(("listed".into(), role::EXIT))
        );
    }

    #[test]
    fn copies_device_inode_index_and_a_folios_order() {
        let format = "ID: 9\n\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:unsigned long i_ino;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;\n\
             \tfield:dev_t s_dev;\toffset:32;\tsize:4;\tsigned:0;\n";
        let (off, size, names) = choose_fields(&parse_format(format, "x").unwrap());
        assert_eq!(off, [32, 16, 24, 0]);
        assert_eq!(size, [4, 8, 8, 0]);
        assert_eq!(
            names,
            [
                Some("s_dev".into()),
                Some("i_ino".into()),
                Some("index".into()),
                None
            ]
        );
        // Newer kernels add the folio's order; older ones have none, and each event is one page.
        let with_order =
            format!("{format}\tfield:unsigned char order;\toffset:36;\tsize:1;\tsigned:0;\n");
        let (off, size, names) = choose_fields(&parse_format(&with_order, "x").unwrap());
        assert_eq!((off[3], size[3]), (36, 1));
        assert_eq!(names[3].as_deref(), Some("order"));
    }
}
