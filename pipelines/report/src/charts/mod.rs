//! The report's charts, each drawn once per backend: SVG, and an RGB buffer encoded as PNG.
//!
//! [`draw`] holds what every chart shares; [`summary`] draws the charts of dc-report's job summary.
//! dc-pipeline's own charts (`pipelines::charts`) are drawn with [`draw`] too.

pub mod draw;
pub mod summary;

pub use draw::{Area, Chart, DrawResult, PALETTE, draw_legend, line_legend, render, svg};
