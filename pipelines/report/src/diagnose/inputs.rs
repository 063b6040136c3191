//! What a side of a comparison is read from: traces (the calls' features, and one pass over the events), a
//! feature matrix (`.parquet`, `.csv`, `.jsonl` from dc-features), or a pipeline's output directory (its
//! `data/features.parquet`).

use std::path::{Path, PathBuf};

use datasets::Remedy;
use datasets::read::ReadOptions;
use features::FeatureMatrix;

use crate::diagnose::compare::Run;
use crate::diagnose::scan::{JobScan, PendingScan};
use crate::load::{all_call_options, call_options, read_progress, spinner};
use crate::pass::Pass;
use crate::summary::{Summarizer, TraceSummary};

/// Why a side of a comparison could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading the traces: the reader's own error, as a read of the traces alone meets it.
    #[error(transparent)]
    Trace(#[from] datasets::Error),
    /// Building the calls' features, or reading a feature matrix.
    #[error(transparent)]
    Features(features::Error),
    /// A feature matrix given with other inputs.
    #[error("{}: a feature matrix is compared on its own, not with other inputs", path.display())]
    MatrixWithOthers { path: PathBuf },
}

impl From<features::Error> for LoadError {
    fn from(e: features::Error) -> Self {
        match e {
            features::Error::Trace(e) => LoadError::Trace(e),
            e => LoadError::Features(e),
        }
    }
}

impl LoadError {
    /// What the caller could ask for to get past this error (to salvage damaged data).
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            LoadError::Trace(e) => e.remedy(),
            LoadError::Features(e) => e.remedy(),
            LoadError::MatrixWithOthers { .. } => None,
        }
    }
}

/// A pipeline's feature matrix, under its output directory.
pub const PIPELINE_MATRIX: &str = "data/features.parquet";

/// The matrix `path` holds, if it is one: a pipeline directory's, a CSV or JSON lines matrix, or a Parquet file
/// with dc-features' metadata (other Parquet files are KernMLOps traces).
pub fn matrix_of(path: &Path) -> Result<Option<FeatureMatrix>, LoadError> {
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
pub fn load(paths: &[PathBuf], read: &ReadOptions, progress: bool) -> Result<Run, LoadError> {
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
            return Err(LoadError::MatrixWithOthers { path: p.clone() });
        }
    }
    let once = read_once(paths, read, progress)?;
    Ok(Run {
        name: name(paths),
        matrix: once.tables.matrix,
        scan: Some(once.scan),
    })
}

/// What one read of traces gives: their summary, the calls' tables ([`call_options`]) and the job scan.
#[derive(Clone, Debug)]
pub struct ReadOnce {
    pub summary: TraceSummary,
    pub tables: features::Tables,
    pub scan: JobScan,
}

/// Reads the traces once, and builds from the same events the summary, the calls' tables and the job scan: what
/// [`TraceSummary::scan`], `features::build_tables` with [`call_options`] and [`JobScan::run`] give, in one pass
/// instead of three.
///
/// The build asks for every call layer and operation ([`all_call_options`]), since the summary that narrows them
/// is only known at the end; where the summary saw no call, the report has no calls' tables, as before.
pub fn read_once(
    paths: &[PathBuf],
    read: &ReadOptions,
    progress: bool,
) -> Result<ReadOnce, LoadError> {
    let pb = spinner(progress, "reading");
    let mut summarizer = Summarizer::new(paths);
    let mut pending = PendingScan::default();
    let mut pass = Pass::default();
    let read_all = features::build_tables_each(
        paths,
        &all_call_options(read),
        read_progress(&pb),
        |input, e| {
            let seen = pass.see(input, e);
            summarizer.add(&seen);
            pending.add(&seen);
        },
    );
    let (built, stats) = read_all?;
    let summary = summarizer.finish(stats.clone(), &pass.kinds);
    let tables = match (call_options(&summary, read), built) {
        (None, _) => features::Tables::default(),
        (Some(_), Ok(tables)) => tables,
        // The build with the narrower options names them in its refusal, or takes the calls (the default rows
        // are never refused): it is the build the report asked for, so it answers.
        (Some(narrow), Err(features::Error::RowLayer { .. } | features::Error::RowOp { .. })) => {
            features::build_tables(paths, &narrow, |_| {})?.0
        }
        (Some(_), Err(e)) => return Err(e.into()),
    };
    let scan = pending.finish(&tables.matrix, stats);
    pb.finish_with_message(format!(
        "{} events, {} calls",
        summary.read.events,
        tables.matrix.n_rows()
    ));
    Ok(ReadOnce {
        summary,
        tables,
        scan,
    })
}
