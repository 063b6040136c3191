//! dc-pipeline: a workload traced, turned into features, ranked per layer, and reported, in one command.
//!
//! [`config`] reads the pipeline file and [`plan`] expands it into runs; [`run`] traces each run with
//! `tracer`, builds one matrix with `features`, ranks every layer with `models`, and [`report`] draws
//! [`charts`] from the data files ([`view`]). [`iobench`] is the built-in benchmark the default sweeps.

pub mod charts;
pub mod config;
pub mod iobench;
pub mod l41;
pub mod plan;
pub mod report;
pub mod run;
pub mod size;
pub mod view;
