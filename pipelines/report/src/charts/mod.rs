//! The report's charts, each drawn once per backend: SVG, and an RGB buffer encoded as PNG.
//!
//! [`draw`] holds what every chart shares: dc-report's summary charts (`trace_report::charts`) and dc-pipeline's
//! own (`pipelines::pipeline::charts`) are drawn with it.

pub mod draw;

pub use draw::{
    Area, Chart, ChartError, DrawResult, PALETTE, draw_legend, line_legend, render, svg,
};
