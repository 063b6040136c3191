//! Types shared by the eBPF programs (`main.rs`, built for `bpfel-unknown-none`) and by `dc-trace`
//! in userspace. Each is `#[repr(C)]` and defined only here.
#![no_std]

/// Number of events a test probe counted, indexed by slot.
pub const PROBE_COUNTER_SLOTS: u32 = 1;

/// Key of the process filter map: a thread-group id the tracer follows.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedPid {
    pub tgid: u32,
}

#[cfg(feature = "user")]
unsafe impl aya::Pod for TracedPid {}
