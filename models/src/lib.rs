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
pub mod interrupt;
pub mod lasso;
pub mod limit;
pub mod options;
pub mod pca;
pub mod progress;
pub mod rank;
pub mod report;
pub mod rules;
pub mod sample;
pub mod sampled;
pub mod split;
pub mod stack;
pub mod stats;
pub mod table;

pub use dataset::Dataset;
pub use error::ModelError;

pub use options::RankOptions;
pub use rank::{rank, rank_dataset, rank_held_out, rank_with_progress};
pub use report::{ImportanceKind, RankReport};
pub use sample::SampleOptions;
pub use sampled::rank_sampled;
pub use split::SplitKind;
