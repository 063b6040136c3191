//! dc-report's integration tests, in one binary (one link instead of one per file): a module per topic.
//! One module runs alone with `cargo test --release -p report --test it MODULE::`.

mod answer;
mod browser;
mod diagnose;
mod diagnose_shared;
mod drishti;
mod one_pass;
mod report_safety;
mod trace_report;
