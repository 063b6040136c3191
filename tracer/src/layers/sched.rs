//! The `sched` layer: off-CPU intervals of traced threads, from sched/sched_switch, named by the
//! state the thread left the CPU in (`offcpu_D` waiting for I/O, `offcpu_S` sleeping, `offcpu_R`
//! preempted), with the task that woke it, from sched/sched_waking where the kernel has it, and
//! for a wait inside a call, the function it waited in and that function's layer ([`stacks`]).

use crate::error::{Context, Result};
use aya::maps::Array;
use compact_str::{CompactString, format_compact};
use datasets::vocab::Mechanism;
use datasets::vocab::layer::KERNEL;
use datasets::vocab::wake::{SOFTIRQS, WokenIn};
use datasets::{ArgValue, Event};
use tracer_ebpf::{Config, SchedEvent, StackEvent, woken_in};

use super::attach::{Attached, Names, Probes, Setup};
use super::layer::{Layer, LayerReport};
use super::stacks::{self, WaitTable, Waits};
use crate::bpf::{Attacher, reason, tracefs};
use crate::record::complete;
use crate::threads::comm;

pub struct Sched;

impl Probes for Sched {
    fn configure(&self, cfg: &mut Config) -> Result<()> {
        offsets(cfg)
    }

    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let mut report = attach(at, setup.configured);
        if setup.offcpu_stacks && report.attached.iter().any(|p| p == SWITCH) {
            match waits(at, setup, &mut out.names) {
                Ok(w) => {
                    out.names.waits = Some(w);
                    report.with.push(STACKS.to_owned());
                }
                Err(e) => report.refuse(STACKS, Mechanism::Kallsyms, reason(&e)),
            }
        }
        out.reports.push(report);
    }
}

const SWITCH: &str = "sched/sched_switch";
/// What the report calls the off-CPU stacks.
const STACKS: &str = "kernel stacks";

/// Symbols and the wait table, then stacks on in the kernel: inside traced calls when the system
/// call layer says where they are, else at every wait.
fn waits(at: &mut Attacher, setup: &Setup, names: &mut Names) -> Result<Waits> {
    let table = WaitTable::for_run(setup.wait_table)?;
    let symbols = names.stack_symbols()?;
    stacks::enable(at.ebpf, setup.layers.has(Layer::Sys))?;
    Ok(Waits::new(symbols, table))
}

fn offsets(cfg: &mut Config) -> Result<()> {
    let f = tracefs::format("sched", "sched_switch")?;
    cfg.switch_prev_pid = f.offset("sched/sched_switch", "prev_pid")?;
    cfg.switch_prev_state = f.offset("sched/sched_switch", "prev_state")?;
    cfg.switch_next_pid = f.offset("sched/sched_switch", "next_pid")?;
    if let Ok(w) = tracefs::format("sched", "sched_waking") {
        cfg.waking_pid = w.offset("sched/sched_waking", "pid")?;
    }
    if let Ok(w) = tracefs::format("workqueue", "workqueue_execute_start") {
        cfg.work_function = w.offset(WORK, "function")?;
    }
    Ok(())
}

/// What kernel workers do: the work function of a worker that woke a traced thread or held its CPU.
const WORK: &str = "workqueue/workqueue_execute_start";

fn attach(at: &mut Attacher, offsets_ok: &Result<()>) -> LayerReport {
    let mut report = LayerReport::new(Layer::Sched, Mechanism::Tracepoint);
    match offsets_ok {
        Err(e) => report.refuse(SWITCH, Mechanism::Tracepoint, reason(e)),
        Ok(()) => match at
            .tracepoint("sched_switch", "sched", "sched_switch")
            .and_then(|()| end_scope_at_switch(at))
        {
            Ok(()) => report.attached.push(SWITCH.to_owned()),
            Err(e) => report.refuse(SWITCH, Mechanism::Tracepoint, reason(&e)),
        },
    }
    if offsets_ok.is_ok() {
        let waking = tracefs::format("sched", "sched_waking")
            .and_then(|_| at.tracepoint("sched_waking", "sched", "sched_waking"));
        match waking {
            Ok(()) => report.attached.push("sched/sched_waking".to_owned()),
            Err(e) => report.refuse("sched/sched_waking", Mechanism::Tracepoint, reason(&e)),
        }
        let work = tracefs::format("workqueue", "workqueue_execute_start").and_then(|_| {
            at.tracepoint(
                "workqueue_execute_start",
                "workqueue",
                "workqueue_execute_start",
            )
        });
        match work {
            Ok(()) => report.attached.push(WORK.to_owned()),
            Err(e) => report.refuse(WORK, Mechanism::Tracepoint, reason(&e)),
        }
    }
    report
}

/// From now on a traced thread leaves the scope at its last switch (see `Config`). Until this
/// runs, sched_process_exit ends it, so no thread is ever left in the scope.
fn end_scope_at_switch(at: &mut Attacher) -> Result<()> {
    let mut config: Array<_, Config> =
        Array::try_from(at.ebpf.map_mut("CONFIG").context("CONFIG map")?)?;
    let mut cfg = config.get(&0, 0)?;
    cfg.scope_ends_at_switch = 1;
    config.set(0, cfg, 0)?;
    Ok(())
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

/// The event name of an off-CPU interval in `state`.
pub fn event_name(state: u64) -> &'static str {
    match state_name(state) {
        "R" => "offcpu_R",
        "S" => "offcpu_S",
        "D" => "offcpu_D",
        "T" => "offcpu_T",
        "t" => "offcpu_t",
        _ => "offcpu_other",
    }
}

/// Keeps the stack of a wait until the wait ends.
pub fn stack(s: &StackEvent, names: &mut Names) {
    if let Some(w) = &mut names.waits {
        w.stack(s);
    }
}

/// When a thread that waited was woken before it ran again: from then on it was runnable, waiting
/// for a CPU. None for a preempted thread (runnable throughout) or a waking outside the interval.
pub fn woken(s: &SchedEvent) -> Option<u64> {
    let end = s.hdr.ts.saturating_add(s.hdr.dur);
    (state_name(s.state) != "R" && s.woken > s.hdr.ts && s.woken < end).then_some(s.woken)
}

/// The interrupt sched_waking fired in, when it did ([`WokenIn`]). The waker fields then name the task it
/// interrupted, or the one a softirq ran in (ksoftirqd, or a task enabling softirqs).
pub fn woken_in(context: u32) -> Option<String> {
    match context & 0xff {
        woken_in::TASK => None,
        woken_in::HARDIRQ => Some(WokenIn::Hardirq.to_string()),
        woken_in::TIMER => Some(WokenIn::Timer.to_string()),
        _ => {
            let vector = context >> 8;
            Some(match SOFTIRQS.get(vector as usize) {
                Some(name) => WokenIn::Softirq(name).to_string(),
                None => WokenIn::Softirq(&vector.to_string()).to_string(),
            })
        }
    }
}

/// Fills `e` with an off-CPU interval, the state its thread left the CPU in, its waker, and what
/// its stack says. A wait ends when the thread is woken ([`woken`]); [`runnable`] is the rest.
pub fn decode(e: &mut Event, s: &SchedEvent, names: &mut Names) {
    complete(e, event_name(s.state), Layer::Sched.name(), &s.hdr);
    if let Some(w) = woken(s) {
        e.dur_ns = w - s.hdr.ts;
    }
    let other = &mut e.args.other;
    other.push(("state".into(), ArgValue::Str(state_name(s.state).into())));
    if s.waker_tid != 0 {
        other.push(("waker_pid".into(), ArgValue::Int(s.waker_tgid as i64)));
        other.push(("waker_tid".into(), ArgValue::Int(s.waker_tid as i64)));
        other.push(("waker_comm".into(), ArgValue::Str(comm(&s.waker_comm))));
        work(other, "waker", s.waker_work, names);
    }
    // An interrupt of the idle task names no waker, but still says it was one.
    if let Some(context) = woken_in(s.woken_in) {
        other.push(("woken_in".into(), ArgValue::Str(context)));
    }
    if state_name(s.state) == "R" {
        held_by(other, s, names);
    }
    if let Some(w) = &mut names.waits {
        w.explain(e, s, &mut names.klayers);
    }
}

/// Fills `e` with the part of a wait after its thread was woken, until it ran: `offcpu_R`, as a
/// preempted thread's, with the state it had waited in.
pub fn runnable(e: &mut Event, s: &SchedEvent, woken: u64, names: &mut Names) {
    complete(e, event_name(0), Layer::Sched.name(), &s.hdr);
    e.ts_ns = woken;
    e.dur_ns = s.hdr.ts + s.hdr.dur - woken;
    let other = &mut e.args.other;
    other.push(("state".into(), ArgValue::Str(state_name(0).into())));
    other.push((
        "woken_from".into(),
        ArgValue::Str(state_name(s.state).into()),
    ));
    held_by(other, s, names);
}

/// A wait for a CPU names the task that held it last (the one that left the CPU to it): another thread of the same
/// job means the job was working meanwhile, which a critical path follows.
fn held_by(other: &mut Vec<(CompactString, ArgValue)>, s: &SchedEvent, names: &mut Names) {
    if s.holder_tid != 0 {
        other.push(("held_by_pid".into(), ArgValue::Int(s.holder_tgid as i64)));
        other.push(("held_by_tid".into(), ArgValue::Int(s.holder_tid as i64)));
        other.push(("held_by_comm".into(), ArgValue::Str(comm(&s.holder_comm))));
        work(other, "held_by", s.holder_work, names);
    }
}

/// A kernel worker's work function (`{who}_work`) and, when the kernel layer map files it under one, its layer
/// (`{who}_work_layer`): the work done for the job elsewhere, or that kept it off the CPU. Nothing when the task ran
/// no work item, or /proc/kallsyms names no function there.
fn work(other: &mut Vec<(CompactString, ArgValue)>, who: &str, addr: u64, names: &mut Names) {
    if addr == 0 {
        return;
    }
    let Ok(symbols) = names.kallsyms() else {
        return;
    };
    let Some(function) = symbols.name(addr) else {
        return;
    };
    other.push((
        format_compact!("{who}_work"),
        ArgValue::Str(function.into()),
    ));
    let layer = names.klayers.layer(function);
    if layer != KERNEL {
        other.push((
            format_compact!("{who}_work_layer"),
            ArgValue::Str(layer.into()),
        ));
    }
}
