//! The compiled eBPF object, committed beside this file and embedded at build time, so that building dc-trace needs
//! no eBPF toolchain. `scripts/build-ebpf.sh` rebuilds it from `tracer-ebpf`, and `tests/ebpf_object.rs` fails while
//! the committed object differs from what its source builds.

use crate::error::{Context, Result};
use aya::Ebpf;

/// The eBPF object built from `tracer-ebpf` for `bpfel-unknown-none`.
pub static OBJECT: &[u8] = aya::include_bytes_aligned!("tracer-ebpf.bpfel.o");

/// Loads the embedded object into the kernel.
pub fn load() -> Result<Ebpf> {
    Ebpf::load(OBJECT).context("loading the tracer-ebpf object into the kernel")
}
