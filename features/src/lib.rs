//! dc-features: the per-syscall kernel-time feature matrix.
//!
//! Data flows trace files → [`datasets`] reader → [`build`] → [`stream`] attribution per thread (or, for input out
//! of order, [`sweep`]) →
//! [`FeatureMatrix`] → Parquet, CSV or JSON lines ([`format`]).

pub mod assemble;
pub mod build;
pub mod cli;
pub mod collect;
pub mod context;
pub mod error;
pub mod exclusive;
pub mod format;
pub mod matrix;
pub mod stream;
pub mod sweep;
pub mod syscall;

pub use build::{BuildOptions, Mode, build, build_with, from_events, stream_events, sweep_events};
pub use error::InputError;
pub use matrix::{BASE_COLUMNS, CONTEXT_COLUMNS, FeatureColumn, FeatureKind, FeatureMatrix};
