//! dc-features: the per-call time matrix: inclusive time per event name, exclusive time per layer, context.
//!
//! Data flows trace files → [`datasets`] reader → [`build`] → [`stream`] attribution per thread (or, for input out
//! of order, [`collect`] and [`sweep`]), each row's exclusive time from [`exclusive`] → [`assemble`] with
//! [`context`] → [`FeatureMatrix`] → Parquet, CSV or JSON lines ([`format`]).

pub mod assemble;
pub mod build;
#[cfg(feature = "cli")]
pub mod cli;
pub mod collect;
pub mod context;
pub mod error;
pub mod exclusive;
pub mod format;
pub mod frames;
pub mod matrix;
pub mod nocall;
pub mod offcpu;
pub mod oncpu;
pub mod options;
pub mod outside;
pub mod process;
pub mod row;
pub mod span;
pub mod stacks;
pub mod stream;
pub mod sweep;
pub mod syscall;

pub use build::{
    build, build_tables, build_tables_each, build_with, from_events, stream_events, stream_tables,
    sweep_events, sweep_tables, tables_of_events,
};
pub use datasets::InputError;
pub use error::Error;
pub use matrix::{BASE_COLUMNS, CONTEXT_COLUMNS, FeatureColumn, FeatureKind, FeatureMatrix};
pub use nocall::Tables;
pub use options::{BuildOptions, Mode};
