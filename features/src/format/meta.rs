//! The layer metadata of a matrix beside its columns: the `.meta.json` sidecar of a CSV or JSON lines file, and the
//! empty columns it describes, which each format's reader fills. The readers share it; it imports none of them.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use datasets::output::{self, Existing};

use crate::InputError;
use crate::matrix::{FeatureColumn, FeatureMatrix, Metadata};

/// The sidecar that carries [`Metadata`] next to a CSV or JSON lines file.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".meta.json");
    name.into()
}

/// Reads the sidecar metadata of a CSV or JSON lines matrix.
pub(super) fn read_sidecar(path: &Path) -> Result<Metadata> {
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

pub(super) fn write_sidecar(matrix: &FeatureMatrix, path: &Path, existing: Existing) -> Result<()> {
    let sidecar = sidecar_path(path);
    let text = serde_json::to_string_pretty(&Metadata::of(matrix))
        .map_err(|e| Error::write(&sidecar, e))?;
    Ok(output::write(sidecar, existing, text + "\n")?)
}

/// Empty feature columns described by the metadata, in its order.
pub(super) fn empty_features(meta: &Metadata) -> Vec<FeatureColumn> {
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
