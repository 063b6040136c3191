//! Errors that name what was wrong with the input: the layer, the column, the row.
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ModelError {
    #[error("layer {layer}: {rows} rows have a {target}; {model} needs at least {min} ({why})")]
    TooFewRows {
        layer: String,
        target: String,
        rows: usize,
        model: String,
        min: usize,
        why: String,
    },
    #[error(
        "layer {layer}: column {column} is constant ({value}) over all {rows} rows that have a target; \
         the ranking's drop_constant option (on by default) leaves such columns out"
    )]
    ConstantColumn {
        layer: String,
        column: String,
        value: f64,
        rows: usize,
    },
    #[error(
        "row {row}, column {column}: value {value} is not finite; features and target must be finite"
    )]
    NonFinite {
        row: usize,
        column: String,
        value: f64,
    },
    #[error(
        "layer {layer}: all {columns} feature columns are constant over the rows that have a target"
    )]
    AllConstant { layer: String, columns: usize },
    #[error("layer {layer} has no feature columns (layers present: {available})")]
    EmptyLayer { layer: String, available: String },
    #[error("no layer could be ranked: {reasons}")]
    NoLayer { reasons: String },
    #[error("target {target}: {reason}")]
    Target { target: String, reason: String },
    #[error("layer {layer}: {reason}")]
    Model { layer: String, reason: String },
    #[error("option {option}: {reason}")]
    Option { option: String, reason: String },
    /// A matrix that could not be read (the reader's error names the file, row and field).
    #[error(transparent)]
    Matrix(#[from] features::Error),
    /// A matrix that changed between the passes that read it.
    #[error("{}: row {row}: {what} the first pass did not see; the file changed while it was read", path.display())]
    Changed {
        path: std::path::PathBuf,
        /// 1-based.
        row: usize,
        what: String,
    },
    #[error(
        "{rows} rows × {columns} columns: {what} needs about {} of memory, and {} is available",
        size(*need),
        size(*available)
    )]
    TooLarge {
        rows: usize,
        columns: usize,
        /// The full fit, or the sample's.
        what: String,
        /// Whether `what` is the sample's fit.
        sampled: bool,
        /// Bytes.
        need: u64,
        available: u64,
    },
    #[error("interrupted; nothing was written")]
    Interrupted,
}

/// Bytes as GB, or as MB below a GB.
fn size(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

pub type Result<T> = std::result::Result<T, ModelError>;

impl ModelError {
    /// A matrix that could not be read (the reader's error names the file, row and field).
    pub fn matrix(e: features::Error) -> Self {
        Self::Matrix(e)
    }
}

pub(crate) fn model_err(layer: &str, reason: impl Into<String>) -> ModelError {
    ModelError::Model {
        layer: layer.to_string(),
        reason: reason.into(),
    }
}
