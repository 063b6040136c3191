//! `datacrumbs._native`: the Rust readers, feature builder and ranking, called from Python.
//!
//! Each function is a thin call into `datasets`, `features` or `models`; tables leave as Arrow record batches
//! through the Arrow C data interface (`arrow-pyarrow`), so pyarrow, polars, pandas and DuckDB take them without a
//! copy. The Python package (`python/datacrumbs`) gives these functions their documented signatures.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{PyArrowType, Table};
use arrow_schema::Schema;
use clap::ValueEnum;
use datasets::TimeUnit;
use datasets::output::Existing;
use datasets::parquet::{EventBatches, event_schema};
use datasets::read::{ReadOptions, ReadStats, TraceReader, expand_globs};
use features::process::Processes;
use features::{BuildOptions, FeatureMatrix, Mode};
use models::RankOptions;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use regex::Regex;

pyo3::create_exception!(
    _native,
    InputError,
    PyValueError,
    "Bad input: the message is the command-line tools' `file:line: field: what`."
);

/// Raises [`InputError`] with the text the `dc-*` tools print after their name; damaged compressed data says how
/// to salvage it from Python.
fn input_error(e: anyhow::Error) -> PyErr {
    let remedy = e
        .downcast_ref::<features::Error>()
        .and_then(features::Error::remedy)
        .or_else(|| e.downcast_ref::<datasets::Error>()?.remedy());
    let hint = match remedy {
        Some(datasets::Remedy::Salvage) => {
            "; salvage=True reads every intact part and reports what is lost"
        }
        _ => "",
    };
    InputError::new_err(format!("{e:#}{hint}"))
}

fn read_options(
    time_unit: Option<&str>,
    skip_invalid: bool,
    salvage: bool,
    threads: usize,
) -> Result<ReadOptions> {
    let time_unit = time_unit
        .map(|u| {
            TimeUnit::parse(u).with_context(|| format!("time_unit: `{u}` is neither `ns` nor `us`"))
        })
        .transpose()?;
    Ok(ReadOptions {
        time_unit,
        skip_invalid,
        threads,
        salvage,
    })
}

/// What a read skipped, for Python to warn about: (lines skipped, the first few of their errors, each damaged
/// range salvaged around with the lines it lost).
type Skipped = (u64, Vec<String>, Vec<String>);

fn skipped(stats: &ReadStats) -> Skipped {
    let damage = stats.damage.iter().map(ToString::to_string).collect();
    (stats.skipped, stats.skipped_examples.clone(), damage)
}

fn table(batches: Vec<RecordBatch>, schema: Schema) -> PyResult<PyArrowType<Table>> {
    Table::try_new(batches, schema.into())
        .map(PyArrowType)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The paths that `patterns` (paths or globs) name, in order.
#[pyfunction]
fn expand(patterns: Vec<String>) -> PyResult<Vec<PathBuf>> {
    expand_globs(&patterns).map_err(|e| input_error(e.into()))
}

/// The event table's schema (`datasets::parquet::event_schema`).
#[pyfunction]
fn event_table_schema() -> PyArrowType<Schema> {
    PyArrowType(event_schema().as_ref().clone())
}

/// Every event of the traces, one row each, hashes resolved to names.
#[pyfunction]
#[pyo3(signature = (paths, time_unit=None, skip_invalid=false, threads=0, salvage=false))]
fn read_trace(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    time_unit: Option<&str>,
    skip_invalid: bool,
    threads: usize,
    salvage: bool,
) -> PyResult<(PyArrowType<Table>, Skipped)> {
    let opts = read_options(time_unit, skip_invalid, salvage, threads).map_err(input_error)?;
    let (batches, stats) = py
        .detach(|| -> Result<_> {
            let mut events = EventBatches::open(&paths, opts)?;
            let batches = events.by_ref().collect::<Result<Vec<_>, _>>()?;
            Ok((batches, events.stats()))
        })
        .map_err(input_error)?;
    Ok((
        table(batches, event_schema().as_ref().clone())?,
        skipped(&stats.read),
    ))
}

/// The feature matrix of the traces, as `dc-features build` writes it (layer metadata in the schema metadata).
#[pyfunction]
#[pyo3(signature = (paths, ops=None, counts=false, file_regex=None, mode="exact", row_layers=None,
    time_unit=None, skip_invalid=false, threads=0, salvage=false))]
#[allow(clippy::too_many_arguments)]
fn build_features(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    ops: Option<Vec<String>>,
    counts: bool,
    file_regex: Option<&str>,
    mode: &str,
    row_layers: Option<Vec<String>>,
    time_unit: Option<&str>,
    skip_invalid: bool,
    threads: usize,
    salvage: bool,
) -> PyResult<(PyArrowType<Table>, Skipped)> {
    // Options this binding does not name keep the tool's defaults.
    let mut opts = BuildOptions::default();
    if let Some(ops) = ops {
        opts.ops = ops;
    }
    if let Some(layers) = row_layers {
        opts.row_layers = layers;
    }
    opts.file_regex = file_regex
        .map(|r| Regex::new(r).with_context(|| format!("file_regex: `{r}`")))
        .transpose()
        .map_err(input_error)?;
    opts.counts = counts;
    opts.mode =
        Mode::from_str(mode, true).map_err(|e| input_error(anyhow::anyhow!("mode: {e}")))?;
    opts.read = read_options(time_unit, skip_invalid, salvage, threads).map_err(input_error)?;
    let (batches, schema, stats) = py
        .detach(|| -> Result<_> {
            let (matrix, stats) = features::build_with(&paths, &opts, |_| {})?;
            let (batches, schema) = matrix_batches(&matrix)?;
            Ok((batches, schema, stats))
        })
        .map_err(input_error)?;
    Ok((table(batches, schema)?, skipped(&stats)))
}

/// The matrix as `dc-features build` writes it: through its Parquet writer, so that the columns, their types and
/// the layer metadata are the writer's own, and follow it when it changes.
fn matrix_batches(matrix: &FeatureMatrix) -> Result<(Vec<RecordBatch>, Schema)> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let path = dir.path().join("features.parquet");
    matrix.write(&path, Existing::Refuse)?;
    let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    // The writer's key-value metadata (the layer metadata) becomes the schema's, as pyarrow reads the file.
    let metadata: HashMap<String, String> = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .filter(|kv| kv.key != "ARROW:schema")
        .filter_map(|kv| Some((kv.key.clone(), kv.value.clone()?)))
        .collect();
    let reader = builder.build()?;
    let schema = reader.schema().as_ref().clone().with_metadata(metadata);
    let batches = reader
        .map(|b| Ok(b?.with_schema(schema.clone().into())?))
        .collect::<Result<Vec<_>>>()?;
    Ok((batches, schema))
}

/// `dc-model rank --json` of a matrix file: the report as JSON text. `source` names the matrix in errors;
/// `options` is a JSON object of [`RankOptions`] fields, refused by field name when one is unknown or bad.
#[pyfunction]
fn rank(py: Python<'_>, path: PathBuf, source: String, options: &str) -> PyResult<String> {
    let opts: RankOptions = serde_json::from_str(options)
        .map_err(|e| input_error(anyhow::anyhow!("rank options: {e}")))?;
    py.detach(|| -> Result<String> {
        let matrix = FeatureMatrix::read(&path).with_context(|| source.clone())?;
        let report = models::rank(&matrix, &opts).with_context(|| source.clone())?;
        Ok(serde_json::to_string_pretty(&report)?)
    })
    .map_err(input_error)
}

/// Per (pid, tid) of one file, the first start and the last end of its events (metadata left out), in ns: what
/// tells whether a thread's events span files. None for a file whose processes are its own (a Darshan log's ranks).
#[pyfunction]
#[pyo3(signature = (path, time_unit=None, skip_invalid=false, salvage=false))]
fn thread_spans(
    py: Python<'_>,
    path: PathBuf,
    time_unit: Option<&str>,
    skip_invalid: bool,
    salvage: bool,
) -> PyResult<Vec<(u64, u64, u64, u64)>> {
    let opts = read_options(time_unit, skip_invalid, salvage, 1).map_err(input_error)?;
    py.detach(|| spans_of(&path, opts)).map_err(input_error)
}

fn spans_of(path: &Path, opts: ReadOptions) -> Result<Vec<(u64, u64, u64, u64)>> {
    if Processes::of(&[path.to_path_buf()]).own(0) {
        return Ok(Vec::new());
    }
    let mut spans = std::collections::BTreeMap::<(u64, u64), (u64, u64)>::new();
    for batch in TraceReader::open(&[path.to_path_buf()], opts)? {
        for e in batch?.events {
            if e.ph == datasets::Phase::Metadata {
                continue;
            }
            let span = spans.entry((e.pid, e.tid)).or_insert((e.ts_ns, e.end_ns()));
            span.0 = span.0.min(e.ts_ns);
            span.1 = span.1.max(e.end_ns());
        }
    }
    Ok(spans
        .into_iter()
        .map(|((pid, tid), (first, last))| (pid, tid, first, last))
        .collect())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(event_table_schema, m)?)?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(build_features, m)?)?;
    m.add_function(wrap_pyfunction!(rank, m)?)?;
    m.add_function(wrap_pyfunction!(thread_spans, m)?)?;
    Ok(())
}
