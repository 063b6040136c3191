//! What a layer's attach is given and gives back: the [`Probes`] every layer implements, the run's [`Setup`], and
//! the [`Attached`] links and [`Names`] its records decode with. Every layer module builds on it; it imports none
//! of them but the types they hand over (kernel links and maps, uprobe targets, stack symbols, tracepoint tables).

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::Result;
use tracer_ebpf::Config;

use super::kernel::links::{KernelLinks, KernelProbeMode};
use super::kernel::map::KernelLayerMap;
use super::kernel::symbols::KernelSymbols;
use super::layer::{Layer, LayerReport, LayerSelection};
use super::oncpu::samples::Samples;
use super::stacks::Waits;
use super::tracepoints::table::{ProbeName, Table};
use super::uprobe::target::{UprobeLinks, UprobeTarget};
use crate::bpf::Attacher;

/// What probe ids mean in this run.
#[derive(Default)]
pub struct Names {
    /// Uprobe id → function name and layer.
    pub uprobes: Vec<(String, Layer)>,
    /// Tracepoint probe id → name, layer and fields.
    pub tps: HashMap<u32, ProbeName>,
    /// io_uring opcode → event name; empty when io_uring is not traced.
    pub uring: Vec<String>,
    pub ksyms: Arc<KernelSymbols>,
    /// Kernel function → the layer its events are filed under.
    pub klayers: KernelLayerMap,
    /// Off-CPU stacks' symbols and wait table, when the sched layer takes them.
    pub waits: Option<Waits>,
    /// On-CPU samples' symbols, when the oncpu layer samples.
    pub samples: Option<Samples>,
    /// /proc/kallsyms, read once for the run: the kernel layer and both stack symbolizers share it.
    kallsyms: Option<Arc<KernelSymbols>>,
    /// Its reading, when it was started early on a thread of its own ([`KernelSymbols::load_ahead`]).
    pub kallsyms_reading: Option<JoinHandle<Result<KernelSymbols>>>,
}

impl Names {
    /// /proc/kallsyms's text symbols, loaded on first use.
    pub fn kallsyms(&mut self) -> Result<Arc<KernelSymbols>> {
        if let Some(s) = &self.kallsyms {
            return Ok(s.clone());
        }
        let s = match self.kallsyms_reading.take().map(JoinHandle::join) {
            Some(Ok(read)) => read?,
            Some(Err(_)) => crate::error::bail!("the thread reading /proc/kallsyms panicked"),
            None => KernelSymbols::load()?,
        };
        let s = Arc::new(s);
        self.kallsyms = Some(s.clone());
        Ok(s)
    }

    /// The symbols the off-CPU waits and the on-CPU samples are named with, refused when
    /// /proc/kallsyms hides addresses.
    pub fn stack_symbols(&mut self) -> Result<Arc<KernelSymbols>> {
        let s = self.kallsyms()?;
        s.check_for_stacks()?;
        Ok(s)
    }
}

/// A layer's probes: what its kernel programs are told, and how they attach.
pub trait Probes: Sync {
    /// Fills the part of `cfg` its programs read (tracepoint field and struct offsets, measured
    /// on this kernel); an error refuses the layer.
    fn configure(&self, _cfg: &mut Config) -> Result<()> {
        Ok(())
    }

    /// Attaches its probes, adding its report and what its records decode with to `out`.
    fn attach(&self, at: &mut Attacher, setup: &mut Setup, out: &mut Attached);

    /// The layer's tracepoint table, when it is one.
    fn table(&self) -> Option<&Table> {
        None
    }
}

/// What a layer's attach is given: the parts of the run's options that layers read.
pub struct Setup<'a> {
    pub layers: &'a LayerSelection,
    pub uprobes: &'a [UprobeTarget],
    pub kernel_probes: KernelProbeMode,
    /// Kernel functions by name or regex; empty means the default list.
    pub kernel_functions: &'a [String],
    /// What the layer's [`Probes::configure`] returned.
    pub configured: &'a Result<()>,
    /// Whether the sched layer takes the kernel stack of each wait.
    pub offcpu_stacks: bool,
    /// The user's wait table, instead of the shipped one.
    pub wait_table: Option<&'a std::path::Path>,
    /// On-CPU samples a second of CPU time; 0 is off.
    pub sample_hz: u32,
}

/// What attaching the layers built for the run.
#[derive(Default)]
pub struct Attached {
    pub reports: Vec<LayerReport>,
    pub names: Names,
    /// The kernel layer's programs and links outside aya's object, which live as long as the trace.
    pub kernel: KernelLinks,
    pub uprobes: UprobeLinks,
    /// The next free slot of the tracepoint tables.
    pub next_tp: u32,
    /// The tracepoint tables' links, which aya does not hold (they carry a cookie).
    pub tp_links: Vec<OwnedFd>,
}

impl Attached {
    /// The links aya's object does not hold, for [`crate::bpf::teardown::detach_all`]: the
    /// uprobes' and the tracepoint tables'.
    pub fn take_links(&mut self) -> Vec<OwnedFd> {
        let mut links = std::mem::take(&mut self.uprobes).into_fds();
        links.append(&mut self.tp_links);
        links
    }
}
