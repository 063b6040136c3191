//! Readers and writers of [`crate::FeatureMatrix`], one module per file format.

pub mod csv;
pub mod jsonl;
pub mod parquet;

use std::path::Path;

use anyhow::Result;
use datasets::output::{self, Existing};

use crate::error::InputError;
use crate::matrix::{FeatureColumn, FeatureMatrix, Metadata, sidecar_path};

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
