//! One pass over the traces each, with a spinner: the summary ([`crate::summary`]) and the calls' features, which
//! both the page and the diagnosis read.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use datasets::read::{ReadOptions, ReadStats};
use indicatif::{ProgressBar, ProgressStyle};

use crate::summary::{CALL_LAYERS, TraceSummary};

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
