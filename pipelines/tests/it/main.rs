//! dc-pipeline's integration tests, in one binary (one link instead of one per file): a module per topic.
//! Many need root (they trace) and are ignored, with the reason, when run as another user.
//! One module runs alone with `cargo test --release -p pipelines --test it MODULE::`.

mod apps;
mod apps_overhead;
mod cli;
mod diagnose_trace;
mod docs;
mod iobench;
mod limits;
mod pipeline;
mod readme;
mod report;
mod scenarios;
#[path = "../../../tracer/tests/it/support/throttle.rs"]
mod throttle;
mod vm;

/// Held by every test that needs root, for its whole run: they trace, throttle the disk, load the CPU, change
/// machine-wide settings or move this process into a cgroup, which would change what the tests of other modules
/// measure.
fn machine() -> std::sync::MutexGuard<'static, ()> {
    static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}
