//! The report's charts, each drawn once per backend: SVG, and an RGB buffer encoded as PNG.
//!
//! [`draw`] holds what every chart shares; [`bandwidth`] draws the benchmark's samples, [`rank`] the ranking and
//! [`summary`] the charts of dc-report's job summary.

pub mod bandwidth;
pub mod draw;
pub mod rank;
pub mod summary;

pub use bandwidth::{BandwidthChart, quartiles};
pub use draw::{Area, Chart, DrawResult, PALETTE, draw_legend, line_legend, render, svg};
pub use rank::{HeatmapChart, ImportanceChart, PcaChart, PredictionChart};
