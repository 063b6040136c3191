//! dc-model: which layers and functions explain I/O bandwidth.
//!
//! [`rank`] takes a [`features::FeatureMatrix`], builds one [`Dataset`] per layer (its columns and the
//! call's context), and [`rank_dataset`] fits correlation, PCA, Lasso and gradient boosting on the same
//! held-out split (the latest calls, by default); [`stack`] fits one model over every layer.
//! [`RankReport`] carries the ranking, every importance and the held-out quality of every model.
pub mod autoreg;
pub mod correlation;
pub mod dataset;
pub mod error;
pub mod export;
pub mod fit;
pub mod forest;
pub mod gbm;
pub mod importance;
pub mod input;
pub mod lasso;
pub mod model;
pub mod options;
pub mod pca;
pub mod rank;
pub mod report;
pub mod rules;
pub mod split;
pub mod stack;
pub mod stats;
pub mod table;

pub use dataset::Dataset;
pub use error::ModelError;
pub use input::rank;

pub use options::RankOptions;
pub use rank::rank_dataset;
pub use report::{ImportanceKind, RankReport};
pub use split::SplitKind;
