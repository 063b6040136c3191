//! The one error type of building, reading and writing feature matrices. Every variant about user input names the
//! file, and where it can, the line and the field ([`InputError`]); a variant's message already holds its cause, so
//! none also returns it as its `source()`.

use std::path::PathBuf;

use datasets::{InputError, Remedy};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the traces, or an output file that may not be written.
    #[error(transparent)]
    Trace(#[from] datasets::Error),
    /// A matrix file, its metadata or a column of it that is not valid.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A matrix file that could not be written.
    #[error("cannot write {}: {cause}", path.display())]
    Write { path: PathBuf, cause: WriteCause },
    /// A matrix whose columns do not all have a value per row.
    #[error("matrix column `{column}` has {rows} rows, `op` has {op_rows}")]
    Shape {
        column: String,
        rows: usize,
        op_rows: usize,
    },
    #[error("feature column `{column}` clashes with a base column")]
    Clash { column: String },
    /// More rows or event names than the build's indices hold.
    #[error("more than {limit} {what}")]
    TooMany { what: &'static str, limit: u64 },
    #[error("an oncpu sample at ts {ts} (pid {pid}, tid {tid}) has no period_ns")]
    NoPeriod { ts: u64, pid: u64, tid: u64 },
    /// Inputs sampled at different rates, whose counts cannot be summed into one time.
    #[error("oncpu samples at two periods, {seen} ns and {ns} ns (pid {pid}, tid {tid}, ts {ts})")]
    Periods {
        seen: u64,
        ns: u64,
        pid: u64,
        tid: u64,
        ts: u64,
    },
    /// Row layers asked for that no event of the input has.
    #[error(
        "row layer {asked}: no event of the input is of this layer; the layers the input has: {has}"
    )]
    RowLayer { asked: String, has: String },
    /// Operations asked for that no call of the row layers has.
    #[error(
        "operation {asked}: no call of the row layer(s) {layers} in the input is of these operations; the \
         operations of these layers the input has: {has}"
    )]
    RowOp {
        asked: String,
        layers: String,
        has: String,
    },
}

/// What failed while writing a matrix file.
#[derive(Debug, thiserror::Error)]
pub enum WriteCause {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
}

impl Error {
    /// What the caller could ask for to get past this error, as [`datasets::Error::remedy`].
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            Error::Trace(e) => e.remedy(),
            _ => None,
        }
    }

    pub(crate) fn write(path: &std::path::Path, cause: impl Into<WriteCause>) -> Error {
        Error::Write {
            path: path.to_owned(),
            cause: cause.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
