//! dc-report: one self-contained HTML page summarizing any traces the readers take, and the per-file table as CSV
//! beside it.

pub mod breakdown;
pub mod sections;
pub mod summary;
pub mod threads;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use datasets::output::{Existing, Output};
use datasets::read::{ReadOptions, ReadStats};
use indicatif::{ProgressBar, ProgressStyle};

use crate::diagnose;
use crate::diagnose::compare::Run;
use crate::diagnose::json::Diagnosis;
use crate::html::Page;
use breakdown::Breakdown;
use sections::Job;
use summary::{CALL_LAYERS, TraceSummary};

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

/// A spinner that shows how far a pass over the traces has read.
pub fn spinner(show: bool, what: &str) -> ProgressBar {
    let pb = if show {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    pb.set_style(
        ProgressStyle::with_template("{prefix:>9} {spinner} {elapsed_precise} {wide_msg}")
            .expect("the template is valid"),
    );
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

fn read_progress(pb: &ProgressBar) -> impl FnMut(&ReadStats) + Send + '_ {
    |s: &ReadStats| {
        pb.set_message(format!(
            "{} events, {} MB of text",
            s.events,
            s.text_bytes >> 20
        ))
    }
}

/// Reads the traces once for the summary.
pub fn scan(traces: &[PathBuf], read: &ReadOptions, progress: bool) -> Result<TraceSummary> {
    let pb = spinner(progress, "summary");
    let s = TraceSummary::scan(traces, read.clone(), read_progress(&pb))?;
    pb.finish_with_message(format!("{} events", s.read.events));
    Ok(s)
}

/// The features of every read, write and metadata call of the call layers, for the time split by layer.
///
/// Only the layers and operations that the summary saw are asked for: features refuses one the input
/// lacks, and a trace of other formats' layers still gets its page.
pub fn call_features(
    traces: &[PathBuf],
    read: &ReadOptions,
    progress: bool,
    summary: &TraceSummary,
) -> Result<features::FeatureMatrix> {
    call_tables(traces, read, progress, summary).map(|t| t.matrix)
}

/// [`call_features`], with the no-call table beside them (`features::nocall`): per thread, the kernel events outside
/// those calls.
pub fn call_tables(
    traces: &[PathBuf],
    read: &ReadOptions,
    progress: bool,
    summary: &TraceSummary,
) -> Result<features::Tables> {
    let layers: Vec<&str> = CALL_LAYERS
        .into_iter()
        .filter(|l| summary.ops.contains_key(*l))
        .collect();
    let seen = |op: &&str| layers.iter().any(|l| summary.ops[*l].contains_key(*op));
    let ops: Vec<String> = datasets::vocab::op::breakdown()
        .filter(seen)
        .map(str::to_owned)
        .collect();
    if ops.is_empty() {
        return Ok(features::Tables::default());
    }
    let opts = features::BuildOptions {
        ops,
        row_layers: layers.iter().map(|s| s.to_string()).collect(),
        read: read.clone(),
        ..Default::default()
    };
    let pb = spinner(progress, "features");
    let (t, _) = features::build_tables(traces, &opts, read_progress(&pb))?;
    pb.finish_with_message(format!("{} calls", t.matrix.n_rows()));
    Ok(t)
}

/// `report.html` → `report.files.csv`.
pub fn csv_path(html: &Path) -> PathBuf {
    let stem = html
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    html.with_file_name(format!("{stem}.files.csv"))
}

/// Writes the page and its CSV; returns the page's path.
pub fn write(o: &TraceReportOptions) -> Result<PathBuf> {
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
        let mut page = Page::new(&format!("dc-report: {}", run.name));
        diagnose::page::section(&mut page, &d.findings, d.comparison.as_ref());
        if let Some(n) = &d.limits_note {
            page.note(n);
        }
        return commit_diagnosis(page_out, page.finish(), json_out, &d).map(|_| o.output.clone());
    }
    let csv_out = Output::create(&csv, o.existing)?;
    let probes = o
        .summaries
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_str::<datasets::summary::Summary>(&text)
                .with_context(|| format!("{}: not a dc-trace --summary-json file", p.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut summary = scan(&o.traces, &o.read, o.progress)?;
    let features::Tables { matrix, no_call } =
        call_tables(&o.traces, &o.read, o.progress, &summary)?;
    summary.add_sequential(&matrix);
    let run = Run {
        name: o
            .traces
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        scan: Some(diagnose::inputs::trace_scan(
            &o.traces, &o.read, &matrix, o.progress,
        )?),
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
    let mut page = Page::new(&format!("dc-report: {}", names.join(", ")));
    diagnose::page::section(&mut page, &d.findings, d.comparison.as_ref());
    if let Some(n) = &d.limits_note {
        page.note(n);
    }
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
    Ok(o.output.clone())
}

/// Commits the diagnosis' JSON, then its page.
fn commit_diagnosis(
    mut page: Output,
    html: String,
    json: Option<Output>,
    d: &Diagnosis,
) -> Result<()> {
    if let Some(json) = json {
        d.commit(json)?;
    }
    page.write_all(html.as_bytes())?;
    page.commit()?;
    Ok(())
}

/// Fills the page and its CSV, then renames them into place, the CSV first: a write that fails (a full
/// disk) leaves neither, and once the page appears, the file it links to is there.
pub fn commit_page(mut page: Output, html: String, mut csv: Output, table: String) -> Result<()> {
    csv.write_all(table.as_bytes())?;
    page.write_all(html.as_bytes())?;
    csv.commit()?;
    page.commit()?;
    Ok(())
}
