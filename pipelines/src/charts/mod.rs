//! dc-pipeline's charts, drawn with the report's shared pieces (`report::charts::draw`): [`bandwidth`] draws the
//! benchmark's samples and [`rank`] the ranking.

pub mod bandwidth;
pub mod rank;

pub use bandwidth::{BandwidthChart, quartiles};
pub use rank::{HeatmapChart, ImportanceChart, PcaChart, PredictionChart};
