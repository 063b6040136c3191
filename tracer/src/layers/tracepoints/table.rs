//! What a tracepoint-table layer is ([`Table`]) and how its probe ids read back ([`ProbeName`]): the eight table
//! layers and the layers' contract ([`crate::layers::attach`]) build on it; it imports neither.

use crate::layers::layer::Layer;

/// A layer's tracepoints by category; a kernel has some of them (6.1 and 6.18 name a few
/// differently, e.g. `ext4_readpage` and `ext4_read_folio`).
pub type Sources = &'static [(&'static str, &'static [&'static str])];

/// A tracepoint-table layer.
pub struct Table {
    pub layer: Layer,
    pub sources: Sources,
    /// Pairs whose names do not say so: enter, exit, and the event's name.
    pub pairs: &'static [(&'static str, &'static str, &'static str)],
    /// Tracepoints whose interval starts when they fire and lasts the milliseconds their `pause`
    /// field says.
    pub spans: &'static [&'static str],
    /// Only inside a traced system call, when the sys layer is on: these fire for the whole
    /// machine, so the kernel filters them by one lookup of the thread.
    pub in_call: bool,
    /// `tpflag` bits a tracepoint's slot carries, by its name.
    pub flags: &'static [(&'static str, u8)],
}

/// How a probe id reads back: its event name, layer, and copied fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeName {
    pub name: String,
    pub layer: Layer,
    pub fields: [Option<String>; 4],
}
