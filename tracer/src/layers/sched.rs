//! The `sched` layer: off-CPU intervals of traced threads, from sched/sched_switch.

use anyhow::Result;
use tracer_ebpf::Config;

use super::{Attacher, Layer, LayerReport, reason};
use crate::tracefs;

pub fn offsets(cfg: &mut Config) -> Result<()> {
    let f = tracefs::format("sched", "sched_switch")?;
    cfg.switch_prev_pid = f.offset("sched/sched_switch", "prev_pid")?;
    cfg.switch_prev_state = f.offset("sched/sched_switch", "prev_state")?;
    cfg.switch_next_pid = f.offset("sched/sched_switch", "next_pid")?;
    Ok(())
}

pub fn attach(at: &mut Attacher, offsets_ok: &Result<()>) -> LayerReport {
    let mut report = LayerReport::new(Layer::Sched, "tracepoint");
    match offsets_ok {
        Err(e) => report.refuse("sched/sched_switch", "tracepoint", reason(e)),
        Ok(()) => match at.tracepoint("sched_switch", "sched", "sched_switch") {
            Ok(()) => report.attached.push("sched/sched_switch".to_owned()),
            Err(e) => report.refuse("sched/sched_switch", "tracepoint", reason(&e)),
        },
    }
    report
}

/// The state a task left the CPU in, as `ps` letters: `R` means preempted, anything else waited.
pub fn state_name(state: u64) -> &'static str {
    match state & 0xff {
        0 => "R",
        1 => "S",
        2 => "D",
        4 => "T",
        8 => "t",
        _ => "other",
    }
}
