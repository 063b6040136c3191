//! What the integration tests of several crates share, in one place instead of files each test binary includes by
//! path: the kernel test VM ([`vm`]), bpftrace as an independent oracle and the BPF objects a process holds
//! ([`oracle`]), the test workload's name and waiting for its trace ([`workload`]), a journalled ext4 on a loop
//! device ([`ext4`]), a blkio read throttle ([`throttle`]) and headless Chromium on dc-report's pages
//! ([`chromium`]). Only tests use it (a dev-dependency); it links neither the tracer nor aya, so that dc-report's tests
//! build without the eBPF object.
//!
//! Where a helper needs what only a test's own compilation knows (`CARGO_TARGET_TMPDIR`, `CARGO_BIN_EXE_*`), the test
//! passes it in.

pub mod chromium;
pub mod ext4;
pub mod oracle;
pub mod throttle;
pub mod vm;
pub mod workload;

use std::sync::{Mutex, MutexGuard};

/// Held by every test that needs root, for its whole run. They share the machine (kptr_restrict, blkio throttles,
/// the CPU, bpftrace oracles that count by command name) and the test process (its BPF fds, its SIGINT handler, its
/// cgroup), which tests of other modules check, change or measure: in one test binary they would otherwise overlap.
/// The lock is per test process, as each test binary is one: cargo runs the binaries one after another.
pub fn machine() -> MutexGuard<'static, ()> {
    static MACHINE: Mutex<()> = Mutex::new(());
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}
