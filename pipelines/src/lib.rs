//! The jobs of the `pipelines` crate, one folder each:
//!
//! - [`pipeline`] is dc-pipeline: [`pipeline::config`] reads the pipeline file and [`pipeline::plan`] expands it
//!   into runs; [`pipeline::run`] traces each run with `tracer`, builds one matrix with `features`, ranks every
//!   layer with `models`, and [`pipeline::report`] draws the page from the data files ([`pipeline::records`]).
//! - [`scenario`] runs a workload plain and with one injected bottleneck, and checks the diagnosis names it.
//! - [`apps`] starts, stops and measures real applications (fio, PostgreSQL, RocksDB, DLIO) for a pipeline.
//! - [`bench`] is the built-in I/O benchmark the default pipeline sweeps, and the L41 lab's command line.
//! - [`error`] is the I/O failure on a path that every job's error enum holds.
//!
//! dc-report, the diagnosis, the page and the charts they share are the `report` crate's, which needs no tracer.

pub mod apps;
pub mod bench;
pub mod error;
pub mod overhead;
pub mod pipeline;
pub mod scenario;
