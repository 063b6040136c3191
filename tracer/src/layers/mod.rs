//! One module per layer of the I/O stack, pulsar-style: each owns its probe list, its attach
//! (which maps it fills, which programs it attaches where) and the decoding of its records into
//! trace events. The kernel side mirrors it in `tracer-ebpf/src/<layer>.rs`; the plumbing they
//! share is in [`crate::bpf`]. A new layer is one file here (and, unless it is a tracepoint
//! table, one in `tracer-ebpf`) plus its line in [`layers!`] below.

pub mod block;
pub mod fs;
pub mod iomap;
pub mod irq;
pub mod jbd2;
pub mod kernel;
pub mod lock;
pub mod mm;
pub mod oncpu;
pub mod page_cache;
pub mod sched;
pub mod stacks;
pub mod sys;
pub(crate) mod tables;
pub mod tracepoints;
pub mod uprobe;
pub mod writeback;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use anyhow::Result;
use datasets::vocab::layer as cat;
use serde::Serialize;
use tracer_ebpf::{Config, layer};

use crate::bpf::Attacher;
use kernel::KernelProbeMode;
use kernel::map::KernelLayerMap;
use kernel::symbols::KernelSymbols;
use tracepoints::ProbeName;

pub use datasets::summary::{LayerReport, Refused};

/// What probe ids mean in this run.
#[derive(Default)]
pub struct Names {
    /// Uprobe id → function name and layer.
    pub uprobes: Vec<(String, Layer)>,
    /// Tracepoint probe id → name, layer and fields.
    pub tps: HashMap<u32, ProbeName>,
    pub ksyms: KernelSymbols,
    /// Kernel function → the layer its events are filed under.
    pub klayers: KernelLayerMap,
    /// Off-CPU stacks' symbols and wait table, when the sched layer takes them.
    pub waits: Option<stacks::Waits>,
    /// On-CPU samples' symbols, when the oncpu layer samples.
    pub samples: Option<oncpu::Samples>,
    /// /proc/kallsyms for both stack symbolizers, read once for the run.
    stack_symbols: Option<Arc<KernelSymbols>>,
}

impl Names {
    /// The symbols the off-CPU waits and the on-CPU samples are named with, loaded on first use.
    pub fn stack_symbols(&mut self) -> Result<Arc<KernelSymbols>> {
        if let Some(s) = &self.stack_symbols {
            return Ok(s.clone());
        }
        let s = Arc::new(KernelSymbols::load_for_stacks()?);
        self.stack_symbols = Some(s.clone());
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
    fn table(&self) -> Option<&tracepoints::Table> {
        None
    }
}

/// What a layer's attach is given: the parts of the run's options that layers read.
pub struct Setup<'a> {
    pub layers: &'a LayerSelection,
    pub uprobes: &'a [uprobe::UprobeTarget],
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
    pub kernel: kernel::KernelLinks,
    pub uprobes: uprobe::UprobeLinks,
    /// The next free program slot of the tracepoint tables.
    pub next_tp: u32,
}

/// Declares the layers, in attach order: variant, name (the `cat` of its events, from the
/// vocabulary), the id the kernel side tags its records with, and its probes.
macro_rules! layers {
    ($($variant:ident $name:path, $id:ident $probes:expr;)*) => {
        /// A layer of the I/O stack; its name is the `cat` of its events.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Layer {
            $($variant),*
        }

        impl Layer {
            pub const ALL: &[Layer] = &[$(Layer::$variant),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Layer::$variant => $name),*
                }
            }

            /// The id the kernel side tags records and drop counters with.
            pub fn id(self) -> u8 {
                match self {
                    $(Layer::$variant => layer::$id),*
                }
            }

            pub fn probes(self) -> &'static dyn Probes {
                match self {
                    $(Layer::$variant => $probes),*
                }
            }
        }
    };
}

layers! {
    Sys cat::SYS, SYS &sys::Sys;
    Libc cat::LIBC, LIBC &uprobe::Uprobes::LIBC;
    App cat::APP, APP &uprobe::Uprobes::APP;
    Block cat::BLOCK, BLOCK &block::Block;
    PageCache cat::PAGE_CACHE, PAGE_CACHE &page_cache::TABLE;
    Fs cat::FS, FS &fs::TABLE;
    Writeback cat::WRITEBACK, WRITEBACK &writeback::TABLE;
    Sched cat::SCHED, SCHED &sched::Sched;
    Irq cat::IRQ, IRQ &irq::TABLE;
    Lock cat::LOCK, LOCK &lock::TABLE;
    Mm cat::MM, MM &mm::TABLE;
    Iomap cat::IOMAP, IOMAP &iomap::TABLE;
    Jbd2 cat::JBD2, JBD2 &jbd2::TABLE;
    Kernel cat::KERNEL, KFUNC &kernel::Kernel;
    Oncpu cat::ONCPU, ONCPU &oncpu::Oncpu;
}

/// The layers to trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerSelection(pub BTreeSet<Layer>);

impl Default for LayerSelection {
    fn default() -> LayerSelection {
        LayerSelection::all()
    }
}

impl LayerSelection {
    pub fn all() -> LayerSelection {
        LayerSelection(Layer::ALL.iter().copied().collect())
    }

    pub fn only(layers: &[Layer]) -> LayerSelection {
        LayerSelection(layers.iter().copied().collect())
    }

    pub fn has(&self, l: Layer) -> bool {
        self.0.contains(&l)
    }

    /// `all`, or a comma-separated list of layer names.
    pub fn parse(s: &str) -> Result<LayerSelection, String> {
        if s == "all" {
            return Ok(LayerSelection::all());
        }
        s.split(',')
            .map(|p| p.trim().parse::<Layer>())
            .collect::<Result<BTreeSet<_>, _>>()
            .map(LayerSelection)
    }
}

impl Layer {
    pub fn from_id(id: u8) -> Option<Layer> {
        Layer::ALL.iter().copied().find(|l| l.id() == id)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layer {
    type Err = String;

    fn from_str(s: &str) -> Result<Layer, String> {
        Layer::ALL
            .iter()
            .copied()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
                format!("unknown layer `{s}` (layers: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_is_a_canonical_layer_of_the_vocabulary() {
        for l in Layer::ALL {
            let def = cat::find(l.name()).map(|d| d.name);
            assert_eq!(def, Some(l.name()), "{l:?}");
        }
        assert!(cat::find(cat::SCOPE).is_none());
    }
}
