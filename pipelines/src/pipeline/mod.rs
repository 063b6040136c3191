//! dc-pipeline: a workload traced, turned into features, ranked per layer, and reported, in one command.

pub mod app_report;
pub mod charts;
pub mod config;
pub mod error;
pub mod plan;
pub mod records;
pub mod report;
pub mod report_html;
pub mod run;
pub mod verdict;
