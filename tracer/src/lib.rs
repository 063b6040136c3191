//! dc-trace: loads the eBPF programs of `tracer-ebpf`, follows a workload through every layer of
//! the I/O stack, and writes what it sees as a `datasets` trace.
//!
//! The layers are in `layers`, one module each; the kernel plumbing they share is in `bpf`.
//! What needs a kernel (`collect`, `bpf`, the layers' `attach`) is apart from what does not
//! (decoding, symbol resolution, /proc, format parsing, options), which tests run without root.

pub mod bpf;
pub mod calibrate;
pub mod caps;
#[cfg(feature = "cli")]
pub mod cli;
pub mod clock;
pub mod collect;
pub mod decode;
pub mod drain;
pub mod error;
pub mod layers;
pub mod limits;
pub mod options;
pub mod pidfd;
pub mod probes;
pub mod procfs;
pub mod profile;
pub mod record;
pub mod scope;
pub mod session;
pub mod signals;
pub mod skipped;
pub mod spool;
pub mod threads;

pub use collect::collect;
pub use datasets::summary::Summary;
pub use error::{Error, Remedy, Target};
pub use layers::{Layer, LayerReport, Refused};
pub use options::{
    CollectOptions, KernelProbeMode, LayerSelection, Mode, ModeKind, SAMPLE_HZ, UprobeTarget,
};
pub use session::Session;
