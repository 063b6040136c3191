//! dc-pipeline: a workload traced, turned into features, ranked per layer, and reported, in one command.
//!
//! [`config`] reads the pipeline file and [`plan`] expands it into runs; [`run`] traces each run with
//! `tracer`, builds one matrix with `features`, ranks every layer with `models`, and [`report`] draws
//! [`charts`] from the data files ([`records`]). [`iobench`] is the built-in benchmark the default sweeps.
//!
//! [`trace_report`] is dc-report: [`summary`] reads any traces once, [`breakdown`] splits call time by layer from
//! the feature matrix, and [`sections`] writes them onto an [`html`] page with [`summary_charts`].

pub mod apps;
pub mod breakdown;
pub mod charts;
pub mod config;
pub mod diagnose;
pub mod html;
pub mod iobench;
pub mod l41;
pub mod plan;
pub mod records;
pub mod report;
pub mod report_html;
pub mod run;
pub mod scenario;
pub mod sections;
pub mod size;
pub mod summary;
pub mod summary_charts;
pub mod trace_report;
pub mod verdict;
