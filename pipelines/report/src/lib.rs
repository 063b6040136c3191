//! dc-report's library, apart from the tracer so that the report builds without the eBPF object and runs without
//! root:
//!
//! - [`trace_report`] is dc-report: [`trace_report::summary`] reads any traces once, [`trace_report::breakdown`]
//!   splits call time by layer from the feature matrix, and [`trace_report::sections`] writes them onto a page.
//! - [`diagnose`] turns both into findings, and compares a baseline run with a candidate.
//! - [`charts`] draws the charts of dc-report's page; [`html`] is the page they go on, and [`size`] reads byte sizes
//!   wherever a user writes one.
//!
//! dc-pipeline's pages are drawn with the same pieces.

pub mod charts;
pub mod diagnose;
pub mod html;
pub mod size;
pub mod trace_report;
