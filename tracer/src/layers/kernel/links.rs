//! What the kernel layer shares with the rest of the tracer: the mode `--kernel-probes` asks for, the links it
//! holds for the run, and how long they took. The layer's contract ([`crate::layers::attach`]) and its report
//! ([`crate::layers::layer`]) name them; this module imports neither.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What `--kernel-probes` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
// A pipeline file spells a mode as the flag does (`kprobe-multi`); the summary JSON as its other fields.
#[serde(rename_all(serialize = "snake_case", deserialize = "kebab-case"))]
pub enum KernelProbeMode {
    /// kprobe_multi, else fentry/fexit, else kprobe/kretprobe.
    #[default]
    Auto,
    KprobeMulti,
    Fentry,
    Kprobe,
    Off,
}

/// The kernel layer's programs and links outside aya's object; closing them detaches.
#[derive(Default)]
pub struct KernelLinks {
    pub(super) fds: Vec<OwnedFd>,
    /// How many of `fds` are links.
    pub(super) links: usize,
}

/// Threads closing the fds at most: each link's detach waits for the kernel (an RCU grace period
/// per fentry trampoline), and those waits overlap across threads.
const DETACH_THREADS: usize = 256;

impl KernelLinks {
    /// Closes every link and program, from parallel threads; returns how long it took.
    pub fn detach(self) -> Duration {
        let start = Instant::now();
        let mut fds = self.fds;
        let per_thread = fds.len().div_ceil(DETACH_THREADS).max(1);
        std::thread::scope(|s| {
            while !fds.is_empty() {
                let chunk: Vec<OwnedFd> = fds.drain(..fds.len().min(per_thread)).collect();
                // A thread that cannot start drops its closure: the fds close at once.
                let _ = std::thread::Builder::new().spawn_scoped(s, move || drop(chunk));
            }
        });
        start.elapsed()
    }
}
