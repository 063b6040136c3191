//! dc-model: which layers and functions explain I/O bandwidth.
//!
//! [`rank`] takes a [`features::FeatureMatrix`], builds one [`Dataset`] per layer, and
//! [`rank_dataset`] fits correlation, PCA, Lasso and gradient boosting on the same held-out split; [`RankReport`] carries
//! the ranking, every importance and the held-out quality of every model.
pub mod autoreg;
pub mod correlation;
pub mod dataset;
pub mod error;
pub mod export;
pub mod gbm;
pub mod importance;
pub mod input;
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
pub use input::rank;

pub use rank::{RankOptions, rank_dataset};
pub use report::{ImportanceKind, RankReport};
