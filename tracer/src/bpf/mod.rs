//! The kernel plumbing the layers stand on, apart from any one layer: the embedded object,
//! loading and attaching programs, raw bpf(2) calls aya lacks (fentry by BTF id, kprobe_multi),
//! the kernel's BTF, tracefs, and the teardown of a run.

pub mod attach;
pub mod bootcache;
pub mod fentry;
pub mod kprobe_multi;
pub mod kstruct;
pub mod object;
pub mod rawbpf;
pub mod teardown;
pub mod tracefs;

pub use attach::{Attacher, reason};
