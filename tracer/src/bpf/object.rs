//! The compiled eBPF object, embedded at build time by `build.rs`.

use anyhow::{Context, Result};
use aya::Ebpf;

/// The eBPF object built from `tracer-ebpf` for `bpfel-unknown-none`.
pub static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer-ebpf"));

/// Loads the embedded object into the kernel.
pub fn load() -> Result<Ebpf> {
    Ebpf::load(OBJECT).context("loading the tracer-ebpf object into the kernel")
}
