//! dc-report: one self-contained HTML page summarizing any traces the readers take, and the per-file table as CSV
//! beside it.

pub mod breakdown;
pub mod charts;
pub mod sections;
pub mod threads;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use datasets::Remedy;
use datasets::output::{Existing, Output};
use datasets::read::ReadOptions;

use crate::answer::{self, Answer};
use crate::charts::ChartError;
use crate::diagnose;
use crate::diagnose::compare::{CompareError, Run};
use crate::diagnose::inputs::{LoadError, ReadOnce, read_once};
use crate::diagnose::json::Diagnosis;
use crate::error::WriteError;
use crate::html::Page;
use breakdown::Breakdown;
use sections::Job;

/// Why dc-report wrote no page.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the traces, the baseline, or a feature matrix.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Comparing the run with its baseline.
    #[error(transparent)]
    Compare(#[from] CompareError),
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// Creating or writing the page, its CSV or the JSON.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A `--summary-json` file that could not be read.
    #[error("reading {}", path.display())]
    Summary {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A `--summary-json` file that is not one: the JSON error names its line and column.
    #[error("{}: not a summary dc-trace wrote (JSON)", path.display())]
    NotSummary {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl From<datasets::Error> for Error {
    fn from(e: datasets::Error) -> Self {
        Error::Write(e.into())
    }
}

impl Error {
    /// What the caller could ask for to get past this error: to salvage damaged data, or to replace a file.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            Error::Load(e) => e.remedy(),
            Error::Write(e) => e.remedy(),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct TraceReportOptions {
    pub traces: Vec<PathBuf>,
    pub read: ReadOptions,
    pub output: PathBuf,
    /// Whether the page and its CSV may replace files already there (`--force`).
    pub existing: Existing,
    /// The run to compare with (`--baseline`): traces, a feature matrix or a pipeline's directory; empty: none.
    pub baseline: Vec<PathBuf>,
    /// Where the diagnosis goes as JSON (`--json`).
    pub json: Option<PathBuf>,
    /// dc-trace's `--summary-json` files: the probes that attached.
    pub summaries: Vec<PathBuf>,
    /// A spinner on stderr while reading (drawn only on a terminal).
    pub progress: bool,
}

/// `report.html` → `report.files.csv`.
pub fn csv_path(html: &Path) -> PathBuf {
    let stem = html
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    html.with_file_name(format!("{stem}.files.csv"))
}

/// What [`write`] wrote, and the answer its page opens with.
#[derive(Clone, Debug)]
pub struct Written {
    pub page: PathBuf,
    pub answer: Answer,
}

/// Writes the page and its CSV (and the JSON when asked); returns the page's path and its answer.
pub fn write(o: &TraceReportOptions) -> Result<Written, Error> {
    let csv = csv_path(&o.output);
    // Every output is created before the inputs are read, so that a path that cannot be written fails at once.
    let page_out = Output::create(&o.output, o.existing)?;
    let json_out = o
        .json
        .as_ref()
        .map(|p| Output::create(p, o.existing))
        .transpose()?;
    let baseline = (!o.baseline.is_empty())
        .then(|| diagnose::inputs::load(&o.baseline, &o.read, o.progress))
        .transpose()?;
    if let [one] = o.traces.as_slice()
        && let Some(matrix) = diagnose::inputs::matrix_of(one)?
    {
        let run = Run {
            name: one.display().to_string(),
            matrix,
            scan: None,
        };
        let d = Diagnosis::of(&run, baseline.as_ref())?;
        let answer = Answer::of(&d);
        let mut page = Page::new(&format!("dc-report: {}", run.name));
        answer::html::section(&mut page, &answer, d.comparison.as_ref());
        commit_diagnosis(page_out, page.finish(), json_out, &d)?;
        return Ok(Written {
            page: o.output.clone(),
            answer,
        });
    }
    let csv_out = Output::create(&csv, o.existing)?;
    let probes = o
        .summaries
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).map_err(|source| Error::Summary {
                path: p.clone(),
                source,
            })?;
            serde_json::from_str::<datasets::summary::Summary>(&text).map_err(|source| {
                Error::NotSummary {
                    path: p.clone(),
                    source,
                }
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let ReadOnce {
        mut summary,
        tables: features::Tables { matrix, no_call },
        scan,
    } = read_once(&o.traces, &o.read, o.progress)?;
    summary.add_sequential(&matrix);
    let run = Run {
        name: o
            .traces
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        scan: Some(scan),
        matrix,
    };
    let d = Diagnosis::of(&run, baseline.as_ref())?;
    let matrix = run.matrix;
    let names: Vec<String> = o
        .traces
        .iter()
        .map(|p| {
            p.file_name()
                .unwrap_or(p.as_os_str())
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let answer = Answer::of(&d);
    let mut page = Page::new(&format!("dc-report: {}", names.join(", ")));
    answer::html::section(&mut page, &answer, d.comparison.as_ref());
    sections::job(
        &mut page,
        &summary,
        &Job {
            commands: Vec::new(),
            probes,
        },
    );
    sections::time(
        &mut page,
        "Each call's time split by the layer active at each instant (the innermost interval on its thread); self is the call's own time.",
        "operation",
        &Breakdown::by_op(&matrix),
    )?;
    threads::section(&mut page, &threads::rows(&matrix, &no_call));
    sections::operations(&mut page, &summary)?;
    let csv_name = csv
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    sections::per_file(&mut page, &summary, &csv_name);
    sections::timeline(&mut page, &summary)?;
    if let Some(json) = json_out {
        d.commit(json)?;
    }
    commit_page(
        page_out,
        page.finish(),
        csv_out,
        sections::files_csv(&summary),
    )?;
    Ok(Written {
        page: o.output.clone(),
        answer,
    })
}

/// Commits the diagnosis' JSON, then its page.
fn commit_diagnosis(
    mut page: Output,
    html: String,
    json: Option<Output>,
    d: &Diagnosis,
) -> Result<(), WriteError> {
    if let Some(json) = json {
        d.commit(json)?;
    }
    page.write_all(html.as_bytes())?;
    page.commit()?;
    Ok(())
}

/// Fills the page and its CSV, then renames them into place, the CSV first: a write that fails (a full
/// disk) leaves neither, and once the page appears, the file it links to is there.
pub fn commit_page(
    mut page: Output,
    html: String,
    mut csv: Output,
    table: String,
) -> Result<(), WriteError> {
    csv.write_all(table.as_bytes())?;
    page.write_all(html.as_bytes())?;
    csv.commit()?;
    page.commit()?;
    Ok(())
}
