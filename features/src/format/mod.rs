//! Readers and writers of [`crate::FeatureMatrix`], one module per file format, chosen by extension.

pub mod csv;
pub mod jsonl;
pub mod parquet;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use datasets::output::{self, Existing};

use crate::InputError;
use crate::matrix::{FeatureColumn, FeatureMatrix, Metadata};

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
            _ => bail!(InputError::new(
                path,
                None,
                None,
                "unknown matrix format: use a .parquet, .csv or .jsonl extension"
            )),
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

/// The sidecar that carries [`Metadata`] next to a CSV or JSON lines file.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".meta.json");
    name.into()
}

/// Reads the sidecar metadata of a CSV or JSON lines matrix.
fn read_sidecar(path: &Path) -> Result<Metadata> {
    let sidecar = sidecar_path(path);
    let text = std::fs::read_to_string(&sidecar).map_err(|e| {
        InputError::new(
            &sidecar,
            None,
            None,
            format!("cannot read the layer metadata of {}: {e}", path.display()),
        )
    })?;
    Metadata::parse(&text, &sidecar)
}

fn write_sidecar(matrix: &FeatureMatrix, path: &Path, existing: Existing) -> Result<()> {
    let text = serde_json::to_string_pretty(&Metadata::of(matrix))?;
    Ok(output::write(sidecar_path(path), existing, text + "\n")?)
}

/// Empty feature columns described by the metadata, in its order.
fn empty_features(meta: &Metadata) -> Vec<FeatureColumn> {
    meta.features
        .iter()
        .map(|f| FeatureColumn {
            column: f.column.clone(),
            layer: f.layer.clone(),
            name: f.name.clone(),
            kind: f.kind,
            values: Vec::new(),
        })
        .collect()
}
