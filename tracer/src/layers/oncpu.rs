//! The `oncpu` layer: where a traced call's CPU time goes in the kernel, by sampling. A perf_event
//! program on each CPU's clock (`tracer-ebpf/src/oncpu.rs`) takes the kernel stack of a traced
//! thread inside a traced call at every tick; each sample becomes a point event `oncpu`/`sample`
//! carrying the CPU time it stands for (`period_ns`), its stack symbolized with /proc/kallsyms
//! (`stack`, innermost first) and each frame's layer by the kernel layer map (`stack_layers`),
//! so that dc-features files sampled time under the same layers as traced kernel functions.

pub mod samples;

use std::sync::Arc;

use crate::error::{Context, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::PerfEvent;
use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent};
use aya::util::online_cpus;
use datasets::Event;
use datasets::vocab::Mechanism;
use tracer_ebpf::{StackEvent, stacks};

use super::kernel::symbols::KernelSymbols;
pub use samples::Samples;

use super::attach::{Attached, Names, Probes, Setup};
use super::layer::{Layer, LayerReport};
use crate::bpf::{Attacher, reason};

pub struct Oncpu;

const PROGRAM: &str = "oncpu_sample";

impl Probes for Oncpu {
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let mut report = LayerReport::new(Layer::Oncpu, Mechanism::PerfEvent);
        if setup.sample_hz == 0 {
            report.refuse(
                "cpu-clock",
                Mechanism::PerfEvent,
                "off (a sampling rate of 0, or profile mode)",
            );
        } else {
            // Symbols first: a sample is nothing without them, and their refusal names kallsyms.
            match out.names.stack_symbols() {
                Err(e) => report.refuse("cpu-clock", Mechanism::Kallsyms, reason(&e)),
                Ok(symbols) => match attach(at, setup, &mut report, symbols) {
                    Ok(s) => {
                        out.names.samples = Some(s);
                        report
                            .with
                            .push(format!("kernel stacks at {} Hz", setup.sample_hz));
                    }
                    Err(e) => report.refuse("cpu-clock", Mechanism::PerfEvent, reason(&e)),
                },
            }
        }
        out.reports.push(report);
    }
}

/// One CPU-clock event per CPU, then samples on in the kernel: inside traced calls when the sys
/// layer says where they are.
fn attach(
    at: &mut Attacher,
    setup: &Setup,
    report: &mut LayerReport,
    symbols: Arc<KernelSymbols>,
) -> Result<Samples> {
    let cpus = online_cpus().map_err(|(what, e)| crate::error::failed!("{what}: {e}"))?;
    let period = period_ns(setup.sample_hz);
    let p: &mut PerfEvent = at.program(PROGRAM)?.try_into()?;
    for cpu in cpus {
        p.attach(
            PerfEventConfig::Software(SoftwareEvent::CpuClock),
            PerfEventScope::AllProcessesOneCpu { cpu },
            SamplePolicy::Period(period),
            false,
        )
        .with_context(|| format!("perf_event_open cpu-clock on CPU {cpu}"))?;
        report.attached.push(format!("cpu-clock/cpu{cpu}"));
    }
    let mut on: Array<_, u32> = Array::try_from(
        at.ebpf
            .map_mut("ONCPU_SAMPLES")
            .context("ONCPU_SAMPLES map")?,
    )?;
    let when = if setup.layers.has(Layer::Sys) {
        stacks::IN_CALL
    } else {
        stacks::ALWAYS
    };
    on.set(0, when, 0)?;
    Ok(Samples::new(symbols))
}

/// The sample period of `hz` samples a second of CPU time.
pub fn period_ns(hz: u32) -> u64 {
    1_000_000_000 / u64::from(hz.max(1))
}

/// Fills `e` with an on-CPU sample; false when samples were not set up (a malformed record).
pub fn decode(e: &mut Event, s: &StackEvent, names: &mut Names) -> bool {
    match &mut names.samples {
        Some(samples) => {
            samples.decode(e, s, &mut names.klayers);
            true
        }
        None => false,
    }
}

/// Samples whose stack the kernel could not read.
pub fn errors(counter: &PerCpuArray<MapData, u64>) -> u64 {
    counter
        .get(&stacks::ERRORS_ONCPU, 0)
        .map_or(0, |v| v.iter().sum())
}
