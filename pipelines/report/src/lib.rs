//! dc-report's library, apart from the tracer so that the report builds without the eBPF object and runs without
//! root:
//!
//! - [`summary`] reads any traces once and [`load`] runs that pass and the calls' features with a spinner; both the
//!   page and the diagnosis read them; [`pass`] is what the readers of that pass share (the names, each event's
//!   kind).
//! - [`trace_report`] is dc-report: [`trace_report::breakdown`] splits call time by layer from the feature matrix,
//!   [`trace_report::charts`] draws the summary's charts and [`trace_report::sections`] writes them onto a page.
//! - [`diagnose`] turns both into findings, and compares a baseline run with a candidate; [`answer`] says them in
//!   words, once, and renders them to the terminal, to Markdown and to the page.
//! - [`charts`] holds the drawing pieces every page's charts share; [`html`] is the page they go on, and [`size`] reads byte sizes
//!   wherever a user writes one.
//!
//! dc-pipeline's pages are drawn with the same pieces. The library's errors are typed, one enum per job beside it
//! ([`error`] holds the one they share, writing an output); dc-report's main prints their chain.

pub mod answer;
pub mod charts;
pub mod diagnose;
pub mod error;
pub mod html;
pub mod load;
pub mod pass;
pub mod size;
pub mod summary;
pub mod trace_report;
