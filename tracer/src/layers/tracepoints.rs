//! The tracepoint tables (the `page_cache`, `fs` and `writeback` layers): every tracepoint a
//! layer lists that this kernel has, attached to one program each (`tp_{slot}`) that tells them
//! apart by slot. Enter/exit (and start/end) pairs become intervals, the rest point events.

use std::collections::HashMap;

use anyhow::{Context, Result};
use aya::maps::Array;
use datasets::{ArgValue, Event, Phase};
use tracer_ebpf::{TP_SLOTS, TpEvent, TpInfo, role};

use super::{Attached, Layer, LayerReport, block};
use crate::bpf::tracefs::{self, Format};
use crate::bpf::{Attacher, reason};
use crate::decode::complete;

/// A layer's tracepoints by category; a kernel has some of them (6.1 and 6.18 name a few
/// differently, e.g. `ext4_readpage` and `ext4_read_folio`).
pub type Sources = &'static [(&'static str, &'static [&'static str])];

pub fn sources(layer: Layer) -> Sources {
    layer.probes().tracepoints()
}

/// One tracepoint to attach and how its record reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub category: String,
    pub name: String,
    pub info: TpInfo,
    /// Names of the copied fields.
    pub fields: [Option<String>; 3],
}

/// How a probe id reads back: its event name, layer, and copied fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeName {
    pub name: String,
    pub layer: Layer,
    pub fields: [Option<String>; 3],
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
];

/// Which fields of `format` to copy: a device, an inode, and one size or position.
pub fn choose_fields(format: &Format) -> ([u16; 3], [u8; 3], [Option<String>; 3]) {
    let mut off = [0u16; 3];
    let mut size = [0u8; 3];
    let mut names: [Option<String>; 3] = [None, None, None];
    for (i, wanted) in [DEV, INO, THIRD].iter().enumerate() {
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

/// The base name of a pair's enter side, when `name` is one.
fn pair_base<'a>(name: &'a str, all: &[String]) -> Option<(&'a str, u8)> {
    if let Some(b) = name.strip_suffix("_enter") {
        return all
            .iter()
            .any(|n| *n == format!("{b}_exit"))
            .then_some((b, role::ENTER));
    }
    if let Some(b) = name.strip_suffix("_exit") {
        return all
            .iter()
            .any(|n| *n == format!("{b}_enter"))
            .then_some((b, role::EXIT));
    }
    if let Some(b) = name.strip_suffix("_start") {
        return all.iter().any(|n| n == b).then_some((b, role::ENTER));
    }
    if all.iter().any(|n| *n == format!("{name}_start")) {
        return Some((name, role::EXIT));
    }
    None
}

/// Reads the formats of `layer`'s tracepoints. Probe ids, which are also the program slots
/// (`tp_{id}`), continue from `next_id`.
pub fn plan(layer: Layer, next_id: &mut u32, report: &mut LayerReport) -> Vec<Planned> {
    let mut out = Vec::new();
    for (category, wanted) in sources(layer) {
        let present = tracefs::events(category);
        let mut names = Vec::new();
        for w in *wanted {
            if present.iter().any(|n| n == w) {
                names.push((*w).to_owned());
            } else {
                report.refuse(
                    &format!("{category}/{w}"),
                    "tracepoint",
                    "not on this kernel",
                );
            }
        }
        let all = names.clone();
        let mut pair_ids: HashMap<String, u32> = HashMap::new();
        for name in names {
            if *next_id >= TP_SLOTS {
                let why = format!("all {TP_SLOTS} program slots are taken");
                report.refuse(&format!("{category}/{name}"), "tracepoint", why);
                continue;
            }
            let format = match tracefs::format(category, &name) {
                Ok(f) => f,
                Err(e) => {
                    report.refuse(&format!("{category}/{name}"), "tracepoint", reason(&e));
                    continue;
                }
            };
            let (off, size, fields) = choose_fields(&format);
            let probe = *next_id;
            *next_id += 1;
            let (pair, role) = match pair_base(&name, &all) {
                Some((base, r)) => (*pair_ids.entry(base.to_owned()).or_insert(probe), r),
                None => (0, role::POINT),
            };
            out.push(Planned {
                category: (*category).to_owned(),
                name,
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

/// The names probe ids decode to: a pair under its base name, a point under its own.
pub fn names(planned: &[Planned]) -> HashMap<u32, ProbeName> {
    let mut out = HashMap::new();
    for p in planned {
        let name = match p.info.role {
            role::POINT => p.name.clone(),
            _ => {
                let all: Vec<String> = planned.iter().map(|q| q.name.clone()).collect();
                pair_base(&p.name, &all).map_or_else(|| p.name.clone(), |(b, _)| b.to_owned())
            }
        };
        let id = if p.info.role == role::POINT {
            p.info.probe
        } else {
            p.info.pair
        };
        // The enter side's fields are the ones the kernel keeps.
        if p.info.role == role::EXIT && out.contains_key(&id) {
            continue;
        }
        out.insert(
            id,
            ProbeName {
                name,
                layer: Layer::from_id(p.info.layer).unwrap_or(Layer::Fs),
                fields: p.fields.clone(),
            },
        );
    }
    out
}

/// Plans, attaches and names `layer`'s tracepoints.
pub fn attach_layer(layer: Layer, at: &mut Attacher, out: &mut Attached) {
    let mut report = LayerReport::new(layer, "tracepoint");
    let planned = plan(layer, &mut out.next_tp, &mut report);
    out.names.tps.extend(names(&planned));
    attach(at, &planned, &mut report);
    out.reports.push(report);
}

pub fn attach(at: &mut Attacher, planned: &[Planned], report: &mut LayerReport) {
    if let Err(e) = fill(at, planned) {
        report.refuse("TPINFO map", "tracepoint", reason(&e));
        return;
    }
    for p in planned {
        let label = format!("{}/{}", p.category, p.name);
        match at.tracepoint(&format!("tp_{}", p.info.probe), &p.category, &p.name) {
            Ok(()) => report.attached.push(label),
            Err(e) => report.refuse(&label, "tracepoint", reason(&e)),
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
        layer,
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
        assert_eq!(
            pair_base("ext4_sync_file_enter", &all),
            Some(("ext4_sync_file", role::ENTER))
        );
        assert_eq!(
            pair_base("ext4_sync_file_exit", &all),
            Some(("ext4_sync_file", role::EXIT))
        );
        assert_eq!(pair_base("ext4_da_write_begin", &all), None);
        assert_eq!(pair_base("wb_start", &all), Some(("wb", role::ENTER)));
        assert_eq!(pair_base("wb", &all), Some(("wb", role::EXIT)));
    }

    #[test]
    fn copies_device_inode_and_index() {
        let f = parse_format(
            "ID: 9\n\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:unsigned long i_ino;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;\n\
             \tfield:dev_t s_dev;\toffset:32;\tsize:4;\tsigned:0;\n",
            "x",
        )
        .unwrap();
        let (off, size, names) = choose_fields(&f);
        assert_eq!(off, [32, 16, 24]);
        assert_eq!(size, [4, 8, 8]);
        assert_eq!(
            names,
            [
                Some("s_dev".into()),
                Some("i_ino".into()),
                Some("index".into())
            ]
        );
    }
}
