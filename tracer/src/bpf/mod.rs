//! The kernel plumbing the layers stand on, apart from any one layer: the embedded object,
//! loading and attaching programs, raw bpf(2) calls aya lacks, the kernel's BTF, tracefs, the
//! bpffs directory fentry copies share maps through, and the teardown of a run.

pub mod attach;
pub mod kstruct;
pub mod module_fentry;
pub mod object;
pub mod pins;
pub mod rawbpf;
pub mod teardown;
pub mod tracefs;

pub use attach::{Attacher, reason};
