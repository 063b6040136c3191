//! The error every bad-input path returns: which file, which line (or row), which field, and why.

use std::fmt;
use std::path::{Path, PathBuf};

/// Bad user input. `line` is 1-based: the text line for CSV/JSON lines and traces, the data row for Parquet.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct InputError {
    pub file: PathBuf,
    pub line: Option<u64>,
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(
        file: &Path,
        line: Option<u64>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        InputError {
            file: file.to_path_buf(),
            line,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}
