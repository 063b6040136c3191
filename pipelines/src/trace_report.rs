//! dc-report: one self-contained HTML page summarizing any traces the readers take, and the per-file table as CSV
//! beside it.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use datasets::read::{ReadOptions, ReadStats};
use indicatif::{ProgressBar, ProgressStyle};

use crate::breakdown::Breakdown;
use crate::html::Page;
use crate::sections::{self, Job};
use crate::summary::{CALL_LAYERS, READ_OPS, TraceSummary, WRITE_OPS};

/// Calls besides reads and writes that the time breakdown covers.
pub const META_OPS: [&str; 9] = [
    "openat",
    "open",
    "open64",
    "close",
    "lseek",
    "lseek64",
    "fsync",
    "fdatasync",
    "fstat",
];

#[derive(Clone, Debug)]
pub struct TraceReportOptions {
    pub traces: Vec<PathBuf>,
    pub read: ReadOptions,
    pub output: PathBuf,
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
pub fn call_features(
    traces: &[PathBuf],
    read: &ReadOptions,
    progress: bool,
) -> Result<features::FeatureMatrix> {
    let opts = features::BuildOptions {
        ops: READ_OPS
            .iter()
            .chain(&WRITE_OPS)
            .chain(&META_OPS)
            .map(|s| s.to_string())
            .collect(),
        row_layers: CALL_LAYERS.iter().map(|s| s.to_string()).collect(),
        read: read.clone(),
        ..Default::default()
    };
    let pb = spinner(progress, "features");
    let (m, _) = features::build_with(traces, &opts, read_progress(&pb))?;
    pb.finish_with_message(format!("{} calls", m.n_rows()));
    Ok(m)
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
    let probes = o
        .summaries
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_str::<tracer::Summary>(&text)
                .with_context(|| format!("{}: not a dc-trace --summary-json file", p.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut summary = scan(&o.traces, &o.read, o.progress)?;
    let matrix = call_features(&o.traces, &o.read, o.progress)?;
    summary.add_sequential(&matrix);
    let csv = csv_path(&o.output);
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
    sections::operations(&mut page, &summary)?;
    let csv_name = csv
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    sections::per_file(&mut page, &summary, &csv_name);
    sections::timeline(&mut page, &summary)?;
    fs::write(&o.output, page.finish())
        .with_context(|| format!("writing {}", o.output.display()))?;
    fs::write(&csv, sections::files_csv(&summary))
        .with_context(|| format!("writing {}", csv.display()))?;
    Ok(o.output.clone())
}
