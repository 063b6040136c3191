//! The jobs of the `pipelines` crate, one folder each:
//!
//! - [`pipeline`] is dc-pipeline: [`pipeline::config`] reads the pipeline file and [`pipeline::plan`] expands it
//!   into runs; [`pipeline::run`] traces each run with `tracer`, builds one matrix with `features`, ranks every
//!   layer with `models`, and [`pipeline::report`] draws the page from the data files ([`pipeline::records`]).
//! - [`trace_report`] is dc-report: [`trace_report::summary`] reads any traces once, [`trace_report::breakdown`]
//!   splits call time by layer from the feature matrix, and [`trace_report::sections`] writes them onto a page.
//! - [`diagnose`] turns both into findings, and compares a baseline run with a candidate.
//! - [`scenario`] runs a workload plain and with one injected bottleneck, and checks the diagnosis names it.
//! - [`apps`] starts, stops and measures real applications (fio, PostgreSQL, RocksDB, DLIO) for a pipeline.
//! - [`bench`] is the built-in I/O benchmark the default pipeline sweeps, and the L41 lab's command line.
//! - [`charts`] draws every chart of every page; [`html`] is the page they go on, and [`size`] reads byte sizes
//!   wherever a user writes one.

pub mod apps;
pub mod bench;
pub mod charts;
pub mod diagnose;
pub mod html;
pub mod overhead;
pub mod pipeline;
pub mod scenario;
pub mod size;
pub mod trace_report;
