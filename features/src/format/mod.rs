//! Readers and writers of [`crate::FeatureMatrix`], one module per file format, chosen by extension.

pub mod csv;
pub mod jsonl;
pub mod meta;
pub mod parquet;

use std::path::Path;

use crate::error::Result;
use datasets::output::Existing;

use crate::InputError;
use crate::matrix::FeatureMatrix;

/// The on-disk formats, chosen by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Csv,
    JsonLines,
}

impl Format {
    pub fn of(path: &Path) -> Result<Self> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("parquet") => Ok(Format::Parquet),
            Some("csv") => Ok(Format::Csv),
            Some("jsonl") | Some("ndjson") => Ok(Format::JsonLines),
            _ => Err(InputError::new(
                path,
                None,
                None,
                "unknown matrix format: use a .parquet, .csv or .jsonl extension",
            )
            .into()),
        }
    }
}

impl FeatureMatrix {
    /// Reads a matrix written by [`FeatureMatrix::write`]; the format follows the extension.
    pub fn read(path: &Path) -> Result<Self> {
        match Format::of(path)? {
            Format::Parquet => parquet::read(path),
            Format::Csv => csv::read(path),
            Format::JsonLines => jsonl::read(path),
        }
    }

    /// Writes Parquet, CSV or JSON lines by extension; CSV and JSON lines get a `.meta.json` sidecar.
    pub fn write(&self, path: &Path, existing: Existing) -> Result<()> {
        self.check_shape()?;
        match Format::of(path)? {
            Format::Parquet => parquet::write(self, path, existing),
            Format::Csv => csv::write(self, path, existing),
            Format::JsonLines => jsonl::write(self, path, existing),
        }
    }
}
