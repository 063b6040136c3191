//! Gradient-boosted regression trees with gain importance and exact TreeSHAP.
//!
//! Built here because no maintained crate fits: perpetual 3.0.0-rc.2 is a release candidate whose
//! booster has no depth, learning rate or tree count to match scikit-learn's reference, and forust-ml
//! is unmaintained; smartcore's XGRegressor keeps its trees private (no importances, no SHAP).
mod bins;
mod boost;
mod grow;
mod shap;
mod tree;

pub use bins::{Binned, Binner, MAX_BINS};
pub use boost::{Gbm, GbmParams};
pub use tree::{Node, Split, Tree};
