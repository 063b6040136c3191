//! The `oncpu` layer: where a traced call's CPU time goes in the kernel, by sampling. A perf_event
//! program on each CPU's clock (`tracer-ebpf/src/oncpu.rs`) takes the kernel stack of a traced
//! thread inside a traced call at every tick; each sample becomes a point event `oncpu`/`sample`
//! carrying the CPU time it stands for (`period_ns`), its stack symbolized with /proc/kallsyms
//! (`stack`, innermost first) and each frame's layer by the kernel layer map (`stack_layers`),
//! so that dc-features files sampled time under the same layers as traced kernel functions.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::PerfEvent;
use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent};
use aya::util::online_cpus;
use datasets::vocab::Mechanism;
use datasets::{ArgValue, Event, Phase};
use tracer_ebpf::{STACK_DEPTH, StackEvent, stacks};

use super::kernel::map::KernelLayerMap;
use super::kernel::symbols::KernelSymbols;
use super::{Attached, Layer, LayerReport, Names, Probes, Setup};
use crate::bpf::{Attacher, reason};
use crate::record::complete;

pub struct Oncpu;

const PROGRAM: &str = "oncpu_sample";

impl Probes for Oncpu {
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached) {
        let mut report = LayerReport::new(Layer::Oncpu, Mechanism::PerfEvent);
        if setup.sample_hz == 0 {
            report.refuse(
                "cpu-clock",
                Mechanism::PerfEvent,
                "off (--sample-hz 0, or profile mode)",
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
    let cpus = online_cpus().map_err(|(what, e)| anyhow::anyhow!("{what}: {e}"))?;
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
    Ok(Samples {
        symbols,
        explained: HashMap::new(),
    })
}

/// The sample period of `hz` samples a second of CPU time.
pub fn period_ns(hz: u32) -> u64 {
    1_000_000_000 / u64::from(hz.max(1))
}

/// What the decoder needs to name samples: symbols, and each distinct stack's names and layers.
pub struct Samples {
    symbols: Arc<KernelSymbols>,
    /// Frames → (`stack`, `stack_layers`).
    explained: HashMap<Vec<u64>, (String, String)>,
}

impl Samples {
    /// Fills `e` with the sample `s`.
    fn decode(&mut self, e: &mut Event, s: &StackEvent, klayers: &mut KernelLayerMap) {
        let n = (s.len as usize / 8).min(STACK_DEPTH);
        let frames = &s.frames[..n];
        if !self.explained.contains_key(frames) {
            let names: Vec<&str> = frames
                .iter()
                .map(|&a| self.symbols.name(a).unwrap_or("?"))
                .collect();
            let x = (names.join(";"), klayers.stack_layers(&names));
            self.explained.insert(frames.to_vec(), x);
        }
        let (stack, layers) = &self.explained[frames];
        let hdr = tracer_ebpf::EventHeader { dur: 0, ..s.hdr };
        complete(e, "sample", Layer::Oncpu.name(), &hdr);
        e.ph = Phase::Instant;
        let other = &mut e.args.other;
        other.push(("period_ns".into(), ArgValue::Int(s.hdr.dur as i64)));
        other.push(("stack".into(), ArgValue::Str(stack.clone())));
        other.push(("stack_layers".into(), ArgValue::Str(layers.clone())));
    }
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
