//! The `block` layer: block_bio_queue (a tracepoint, in the submitting thread), then
//! block_rq_issue and block_rq_complete (raw tracepoints, which read the request through
//! kernel struct offsets from BTF), paired in the kernel by (device, sector); block_split hands a
//! bio's start to the rest of it when it becomes two requests. A request becomes
//! two intervals of the submitting thread: `block_queue_{op}` from its first bio's queueing to its
//! issue, and `block_device_{op}` from its issue to its completion (`op` is read, write, discard,
//! flush or other). A request whose issue was not seen is one `block_device_{op}` from queueing.

use std::collections::BTreeMap;

use aya::maps::{MapData, PerCpuHashMap};
use datasets::limits::{DiskStat, Limits};
use datasets::vocab::Mechanism;
use datasets::{ArgValue, Event};
use tracer_ebpf::{BlockEvent, Config, OtherIo};

use crate::error::Result;

use super::attach::{Attached, Probes, Setup};
use super::layer::{Layer, LayerReport};
use crate::bpf::kstruct;
use crate::bpf::{Attacher, reason, tracefs};
use crate::record::complete;

pub struct Block;

impl Probes for Block {
    fn configure(&self, cfg: &mut Config) -> Result<()> {
        offsets(cfg)
    }

    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        out.reports.push(attach(at, setup.configured));
    }
}

/// Puts the queue tracepoint's field offsets and the request's struct offsets into `cfg`.
fn offsets(cfg: &mut Config) -> Result<()> {
    let q = tracefs::format("block", "block_bio_queue")?;
    cfg.bio_dev = q.offset("block/block_bio_queue", "dev")?;
    cfg.bio_sector = q.offset("block/block_bio_queue", "sector")?;
    cfg.bio_rwbs = q.offset("block/block_bio_queue", "rwbs")?;
    cfg.bio_nr_sector = q.offset("block/block_bio_queue", "nr_sector")?;
    cfg.task_flags = kstruct::offset("task_struct", "flags")?;
    let s = tracefs::format("block", "block_split")?;
    cfg.split_dev = s.offset("block/block_split", "dev")?;
    cfg.split_sector = s.offset("block/block_split", "sector")?;
    cfg.split_new_sector = s.offset("block/block_split", "new_sector")?;
    cfg.rq_q = kstruct::offset("request", "q")?;
    cfg.rq_sector = kstruct::offset("request", "__sector")?;
    cfg.q_disk = kstruct::offset("request_queue", "disk")?;
    cfg.disk_major = kstruct::offset("gendisk", "major")?;
    cfg.disk_first_minor = kstruct::offset("gendisk", "first_minor")?;
    Ok(())
}

fn attach(at: &mut Attacher, offsets_ok: &Result<()>) -> LayerReport {
    let mut report = LayerReport::new(Layer::Block, Mechanism::Tracepoint);
    if let Err(e) = offsets_ok {
        report.refuse("block", Mechanism::Tracepoint, reason(e));
        return report;
    }
    for (prog, tp) in [
        ("block_queue", "block_bio_queue"),
        ("block_split", "block_split"),
    ] {
        match at.tracepoint(prog, "block", tp) {
            Ok(()) => report.attached.push(format!("block/{tp}")),
            Err(e) => report.refuse(&format!("block/{tp}"), Mechanism::Tracepoint, reason(&e)),
        }
    }
    for (prog, tp) in [
        ("block_issue", "block_rq_issue"),
        ("block_complete", "block_rq_complete"),
    ] {
        match at.raw_tracepoint(prog, tp) {
            Ok(()) => report.attached.push(format!("block/{tp} (raw)")),
            Err(e) => report.refuse(&format!("block/{tp}"), Mechanism::RawTracepoint, reason(&e)),
        }
    }
    report
}

/// dev_t → the bios processes outside the scope submitted to it (the eBPF program's `OTHERS`).
pub type Others = PerCpuHashMap<MapData, u32, OtherIo>;

/// Empties `map`, so that it counts from a run's start.
pub fn clear_others(map: &mut Others) -> Result<()> {
    let keys = map.keys().collect::<std::result::Result<Vec<u32>, _>>()?;
    for k in keys {
        map.remove(&k)?;
    }
    Ok(())
}

/// Puts into `end`'s devices what other processes submitted to each over the run; a device they sent nothing
/// has zeros. A map that cannot be read is an error, not zeros.
pub fn add_others(map: &Others, end: &mut Limits) -> Result<()> {
    let mut by_device: BTreeMap<String, DiskStat> = BTreeMap::new();
    for entry in map.iter() {
        let (dev, per_cpu) = entry?;
        let d = by_device.entry(dev_name(dev)).or_default();
        for o in per_cpu.iter() {
            d.reads += o.reads;
            d.read_bytes += o.read_bytes;
            d.writes += o.writes;
            d.write_bytes += o.write_bytes;
        }
    }
    for q in &mut end.devices {
        q.submitted_by_others = Some(by_device.get(&q.device).copied().unwrap_or_default());
    }
    Ok(())
}

/// The operations `rwbs` can name, with their queue and device event names.
const OPS: [(u8, &str, &str); 4] = [
    (b'R', "block_queue_read", "block_device_read"),
    (b'W', "block_queue_write", "block_device_write"),
    (b'D', "block_queue_discard", "block_device_discard"),
    (b'F', "block_queue_flush", "block_device_flush"),
];
const OTHER: (&str, &str) = ("block_queue_other", "block_device_other");

/// The queue and device event names of the operation `rwbs` names (`R`, `W`, `FWS`, `D`, ...).
pub fn op(rwbs: &[u8]) -> (&'static str, &'static str) {
    let end = rwbs.iter().position(|&b| b == 0).unwrap_or(rwbs.len());
    let s = &rwbs[..end];
    OPS.iter()
        .find(|(c, _, _)| s.contains(c))
        .map_or(OTHER, |&(_, q, d)| (q, d))
}

/// The kernel's dev_t as `major:minor`.
pub fn dev_name(dev: u32) -> String {
    format!("{}:{}", dev >> 20, dev & 0xfffff)
}

pub fn rwbs(ev: &BlockEvent) -> String {
    let end = ev
        .rwbs
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(ev.rwbs.len());
    String::from_utf8_lossy(&ev.rwbs[..end]).into_owned()
}

/// Fills `e` with a request's queue interval, when its issue was seen.
pub fn queue(e: &mut Event, b: &BlockEvent) -> bool {
    if b.issue_ts == 0 {
        return false;
    }
    fill(e, op(&b.rwbs).0, b);
    e.dur_ns = b.issue_ts.saturating_sub(b.hdr.ts);
    true
}

/// Fills `e` with a request's device interval (from its queueing if its issue was not seen).
pub fn device(e: &mut Event, b: &BlockEvent) {
    fill(e, op(&b.rwbs).1, b);
    if b.issue_ts != 0 {
        let end = b.hdr.ts + b.hdr.dur;
        e.ts_ns = b.issue_ts.min(end);
        e.dur_ns = end - e.ts_ns;
    }
}

fn fill(e: &mut Event, name: &str, b: &BlockEvent) {
    complete(e, name, Layer::Block.name(), &b.hdr);
    e.args.size = Some(b.nr_sector as i64 * 512);
    e.args.offset = Some(b.sector as i64 * 512);
    let other = &mut e.args.other;
    other.push(("dev".into(), ArgValue::Str(dev_name(b.dev))));
    other.push(("sector".into(), ArgValue::Int(b.sector as i64)));
    other.push(("rwbs".into(), ArgValue::Str(rwbs(b))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_operations_and_devices() {
        assert_eq!(op(b"R\0\0\0\0\0\0\0").1, "block_device_read");
        assert_eq!(op(b"WS\0\0\0\0\0\0").0, "block_queue_write");
        assert_eq!(op(b"FWS\0\0\0\0\0").1, "block_device_write");
        assert_eq!(op(b"FF\0\0\0\0\0\0").1, "block_device_flush");
        assert_eq!(op(b"N\0\0\0\0\0\0\0").1, "block_device_other");
        assert_eq!(dev_name((254 << 20) | 1), "254:1");
    }
}
