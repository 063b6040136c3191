//! The `block` layer: block_bio_queue (a tracepoint, in the submitting thread), then
//! block_rq_issue and block_rq_complete (raw tracepoints, which read the request through
//! kernel struct offsets from BTF), paired in the kernel by (device, sector).

use anyhow::Result;
use datasets::{ArgValue, Event};
use tracer_ebpf::{BlockEvent, Config};

use super::{Attached, Layer, LayerReport, Probes, Setup};
use crate::bpf::kstruct::KernelBtf;
use crate::bpf::{Attacher, reason, tracefs};
use crate::decode::complete;

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
    let btf = KernelBtf::get()?;
    cfg.rq_q = btf.offset("request", "q")?;
    cfg.rq_sector = btf.offset("request", "__sector")?;
    cfg.q_disk = btf.offset("request_queue", "disk")?;
    cfg.disk_major = btf.offset("gendisk", "major")?;
    cfg.disk_first_minor = btf.offset("gendisk", "first_minor")?;
    Ok(())
}

fn attach(at: &mut Attacher, offsets_ok: &Result<()>) -> LayerReport {
    let mut report = LayerReport::new(Layer::Block, "tracepoint");
    if let Err(e) = offsets_ok {
        report.refuse("block", "tracepoint", reason(e));
        return report;
    }
    let tp = "block_bio_queue";
    match at.tracepoint("block_queue", "block", tp) {
        Ok(()) => report.attached.push(format!("block/{tp}")),
        Err(e) => report.refuse(&format!("block/{tp}"), "tracepoint", reason(&e)),
    }
    for (prog, tp) in [
        ("block_issue", "block_rq_issue"),
        ("block_complete", "block_rq_complete"),
    ] {
        match at.raw_tracepoint(prog, tp) {
            Ok(()) => report.attached.push(format!("block/{tp} (raw)")),
            Err(e) => report.refuse(&format!("block/{tp}"), "raw_tracepoint", reason(&e)),
        }
    }
    report
}

/// The operation named by the first letters of `rwbs` (`R`, `W`, `FWS`, `D`, ...).
pub fn op(rwbs: &[u8]) -> &'static str {
    let end = rwbs.iter().position(|&b| b == 0).unwrap_or(rwbs.len());
    let s = &rwbs[..end];
    if s.contains(&b'R') {
        "block_read"
    } else if s.contains(&b'W') {
        "block_write"
    } else if s.contains(&b'D') {
        "block_discard"
    } else if s.contains(&b'F') {
        "block_flush"
    } else {
        "block_other"
    }
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

/// Fills `e` with a block request's event, in the submitting thread.
pub fn decode(e: &mut Event, b: &BlockEvent) {
    complete(e, op(&b.rwbs), Layer::Block, &b.hdr);
    e.args.size = Some(b.nr_sector as i64 * 512);
    e.args.offset = Some(b.sector as i64 * 512);
    let other = &mut e.args.other;
    other.push(("dev".into(), ArgValue::Str(dev_name(b.dev))));
    other.push(("sector".into(), ArgValue::Int(b.sector as i64)));
    other.push(("rwbs".into(), ArgValue::Str(rwbs(b))));
    if b.issue_ts != 0 {
        other.push((
            "queue_ns".into(),
            ArgValue::Int(b.issue_ts.saturating_sub(b.hdr.ts) as i64),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_operations_and_devices() {
        assert_eq!(op(b"R\0\0\0\0\0\0\0"), "block_read");
        assert_eq!(op(b"WS\0\0\0\0\0\0"), "block_write");
        assert_eq!(op(b"FWS\0\0\0\0\0"), "block_write");
        assert_eq!(op(b"FF\0\0\0\0\0\0"), "block_flush");
        assert_eq!(dev_name((254 << 20) | 1), "254:1");
    }
}
