//! dc-trace: loads the eBPF programs of `tracer-ebpf` and turns what they see into a trace.

pub mod ebpf;
pub mod tracefs;
