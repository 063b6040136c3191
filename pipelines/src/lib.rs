//! dc-pipeline: a workload traced, turned into features, ranked per layer, and reported, in one command.
//!
//! [`config`] reads the pipeline file, [`iobench`] is the built-in benchmark it usually sweeps.

pub mod config;
pub mod iobench;
pub mod size;
