//! The `block` layer: block_bio_queue (in the submitting thread), block_rq_issue and
//! block_rq_complete, paired in the kernel by (device, sector).

use anyhow::Result;
use tracer_ebpf::{BlockEvent, Config};

use super::{Attacher, Layer, LayerReport, reason};
use crate::tracefs;

const PROBES: [(&str, &str); 3] = [
    ("block_queue", "block_bio_queue"),
    ("block_issue", "block_rq_issue"),
    ("block_complete", "block_rq_complete"),
];

/// Puts the three tracepoints' field offsets into `cfg`.
pub fn offsets(cfg: &mut Config) -> Result<()> {
    let q = tracefs::format("block", "block_bio_queue")?;
    let c = tracefs::format("block", "block_rq_complete")?;
    let i = tracefs::format("block", "block_rq_issue")?;
    cfg.bio_dev = q.offset("block/block_bio_queue", "dev")?;
    cfg.bio_sector = q.offset("block/block_bio_queue", "sector")?;
    cfg.bio_rwbs = q.offset("block/block_bio_queue", "rwbs")?;
    cfg.rq_dev = c.offset("block/block_rq_complete", "dev")?;
    cfg.rq_sector = c.offset("block/block_rq_complete", "sector")?;
    cfg.rq_nr_sector = c.offset("block/block_rq_complete", "nr_sector")?;
    cfg.rq_rwbs = c.offset("block/block_rq_complete", "rwbs")?;
    // The issue program reads the request's key with the completion's offsets.
    for f in ["dev", "sector"] {
        anyhow::ensure!(
            i.field(f) == c.field(f),
            "block_rq_issue and block_rq_complete disagree on the offset of `{f}`"
        );
    }
    Ok(())
}

pub fn attach(at: &mut Attacher, offsets_ok: &Result<()>) -> LayerReport {
    let mut report = LayerReport::new(Layer::Block, "tracepoint");
    if let Err(e) = offsets_ok {
        report.refuse("block", "tracepoint", reason(e));
        return report;
    }
    for (prog, tp) in PROBES {
        match at.tracepoint(prog, "block", tp) {
            Ok(()) => report.attached.push(format!("block/{tp}")),
            Err(e) => report.refuse(&format!("block/{tp}"), "tracepoint", reason(&e)),
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
