//! What a side of a comparison is read from: traces (the calls' features, and one pass over the events), a
//! feature matrix (`.parquet`, `.csv`, `.jsonl` from dc-features), or a pipeline's output directory (its
//! `data/features.parquet`).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use datasets::read::ReadOptions;
use features::FeatureMatrix;

use crate::diagnose::compare::Run;
use crate::diagnose::scan::JobScan;
use crate::load::{call_features, scan, spinner};

/// A pipeline's feature matrix, under its output directory.
pub const PIPELINE_MATRIX: &str = "data/features.parquet";

/// The matrix `path` holds, if it is one: a pipeline directory's, a CSV or JSON lines matrix, or a Parquet file
/// with dc-features' metadata (other Parquet files are KernMLOps traces).
pub fn matrix_of(path: &Path) -> Result<Option<FeatureMatrix>> {
    if path.is_dir() {
        return Ok(Some(FeatureMatrix::read(&path.join(PIPELINE_MATRIX))?));
    }
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv" | "jsonl" | "ndjson") => Ok(Some(FeatureMatrix::read(path)?)),
        Some("parquet") => Ok(FeatureMatrix::read(path).ok()),
        _ => Ok(None),
    }
}

fn name(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One side: a single matrix (or pipeline directory), or any number of traces.
pub fn load(paths: &[PathBuf], read: &ReadOptions, progress: bool) -> Result<Run> {
    if let [one] = paths
        && let Some(matrix) = matrix_of(one)?
    {
        return Ok(Run {
            name: name(paths),
            matrix,
            scan: None,
        });
    }
    for p in paths {
        if matrix_of(p)?.is_some() {
            bail!(
                "{}: a feature matrix is compared on its own, not with other inputs",
                p.display()
            );
        }
    }
    let summary = scan(paths, read, progress)?;
    let matrix = call_features(paths, read, progress, &summary)?;
    let scan = trace_scan(paths, read, &matrix, progress)?;
    Ok(Run {
        name: name(paths),
        matrix,
        scan: Some(scan),
    })
}

/// The pass over the traces besides their features.
pub fn trace_scan(
    paths: &[PathBuf],
    read: &ReadOptions,
    matrix: &FeatureMatrix,
    progress: bool,
) -> Result<JobScan> {
    let pb = spinner(progress, "diagnosis");
    let s = JobScan::run(paths, read.clone(), matrix, |st| {
        pb.set_message(format!("{} events", st.events))
    })?;
    pb.finish_with_message(format!("{} threads", s.threads.len()));
    Ok(s)
}
