//! One module per layer of the I/O stack, pulsar-style: each owns its probe list, its attach
//! (which maps it fills, which programs it attaches where) and the decoding of its records into
//! trace events. The kernel side mirrors it in `tracer-ebpf/src/<layer>.rs`; the plumbing they
//! share is in [`crate::bpf`], and what every layer builds on in [`layer`] and [`attach`]. A new
//! layer is one file here (and, unless it is a tracepoint table, one in `tracer-ebpf`) plus its
//! line in [`layer`]'s list and its probes in [`Layer::probes`] below.

pub mod aio;
pub mod attach;
pub mod block;
pub mod fs;
pub mod iomap;
pub mod irq;
pub mod jbd2;
pub mod kernel;
pub mod layer;
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
pub mod uring;
pub mod writeback;

pub use attach::{Attached, Names, Probes, Setup};
pub use layer::{Layer, LayerReport, LayerSelection, Refused};

impl Layer {
    /// The layer's probes: its module's [`Probes`].
    pub fn probes(self) -> &'static dyn Probes {
        match self {
            Layer::Sys => &sys::Sys,
            Layer::Libc => &uprobe::Uprobes::LIBC,
            Layer::App => &uprobe::Uprobes::APP,
            Layer::Block => &block::Block,
            Layer::PageCache => &page_cache::TABLE,
            Layer::Fs => &fs::TABLE,
            Layer::Writeback => &writeback::TABLE,
            Layer::Sched => &sched::Sched,
            Layer::Irq => &irq::TABLE,
            Layer::Lock => &lock::TABLE,
            Layer::Mm => &mm::TABLE,
            Layer::Iomap => &iomap::TABLE,
            Layer::Jbd2 => &jbd2::TABLE,
            Layer::Kernel => &kernel::Kernel,
            Layer::Oncpu => &oncpu::Oncpu,
        }
    }
}
