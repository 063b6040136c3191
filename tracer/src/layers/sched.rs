//! The `sched` layer: off-CPU intervals of traced threads, from sched/sched_switch.

use anyhow::Result;
use datasets::{ArgValue, Event};
use tracer_ebpf::{Config, TpEvent};

use super::{Attached, Layer, LayerReport, Probes, Setup};
use crate::bpf::{Attacher, reason, tracefs};
use crate::decode::complete;

pub struct Sched;

impl Probes for Sched {
    fn configure(&self, cfg: &mut Config) -> Result<()> {
        offsets(cfg)
    }

    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        out.reports.push(attach(at, setup.configured));
    }
}

fn offsets(cfg: &mut Config) -> Result<()> {
    let f = tracefs::format("sched", "sched_switch")?;
    cfg.switch_prev_pid = f.offset("sched/sched_switch", "prev_pid")?;
    cfg.switch_prev_state = f.offset("sched/sched_switch", "prev_state")?;
    cfg.switch_next_pid = f.offset("sched/sched_switch", "next_pid")?;
    Ok(())
}

fn attach(at: &mut Attacher, offsets_ok: &Result<()>) -> LayerReport {
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

/// Fills `e` with an off-CPU interval and the state its thread left the CPU in.
pub fn decode(e: &mut Event, t: &TpEvent) {
    complete(e, "offcpu", Layer::Sched, &t.hdr);
    e.args
        .other
        .push(("state".into(), ArgValue::Str(state_name(t.vals[0]).into())));
}
