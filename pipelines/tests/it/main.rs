//! dc-pipeline's integration tests, in one binary (one link instead of one per file): a module per topic.
//! Many need root (they trace) and are ignored, with the reason, when run as another user.
//! One module runs alone with `cargo test --release -p pipelines --test it MODULE::`.
//! Every test that needs root holds `test_support::machine()` for its whole run; the test VM, the blkio throttle and
//! headless Chromium are `test-support`'s too (`tracer/test-support`).

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
mod vm;
