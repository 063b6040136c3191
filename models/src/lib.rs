//! dc-model: which layers and functions explain I/O bandwidth.
//!
//! [`rank_dataset`] takes one layer's [`Dataset`] and fits
//! correlation, PCA, Lasso and gradient boosting on the same held-out split; [`RankReport`] carries
//! the ranking, every importance and the held-out quality of every model.
pub mod autoreg;
pub mod correlation;
pub mod dataset;
pub mod error;
pub mod gbm;
pub mod importance;
pub mod lasso;
pub mod model;
pub mod pca;
pub mod rank;
pub mod report;
pub mod split;
pub mod stats;
pub mod table;

pub use dataset::Dataset;
pub use error::ModelError;

pub use rank::{RankOptions, rank_dataset};
pub use report::{ImportanceKind, RankReport};
