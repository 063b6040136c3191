//! The reads of traces, with a spinner: the summary alone ([`crate::summary`]), and the options of the calls'
//! features, which both the page and the diagnosis read (`crate::diagnose::inputs::read_once` reads them all at
//! once).

use std::path::PathBuf;
use std::time::Duration;

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

/// Shows on `pb` how much a read has read.
pub fn read_progress(pb: &ProgressBar) -> impl FnMut(&ReadStats) + Send + '_ {
    |s: &ReadStats| {
        pb.set_message(format!(
            "{} events, {} MB of text",
            s.events,
            s.text_bytes >> 20
        ))
    }
}

/// Reads the traces once for the summary.
pub fn scan(
    traces: &[PathBuf],
    read: &ReadOptions,
    progress: bool,
) -> Result<TraceSummary, datasets::Error> {
    let pb = spinner(progress, "summary");
    let s = TraceSummary::scan(traces, read.clone(), read_progress(&pb))?;
    pb.finish_with_message(format!("{} events", s.read.events));
    Ok(s)
}

/// What the report asks of the calls: the features of every read, write and metadata call of the call layers, for
/// the time split by layer, with the no-call table beside them (`features::nocall`): per thread, the kernel events
/// outside those calls.
///
/// Only the layers and operations that the summary saw are asked for: features refuses one the input lacks, and a
/// trace of other formats' layers still gets its page. `None` when the summary saw none.
pub fn call_options(summary: &TraceSummary, read: &ReadOptions) -> Option<features::BuildOptions> {
    let layers: Vec<&str> = CALL_LAYERS
        .into_iter()
        .filter(|l| summary.ops.contains_key(*l))
        .collect();
    let seen = |op: &&str| layers.iter().any(|l| summary.ops[*l].contains_key(*op));
    let ops: Vec<String> = datasets::vocab::op::breakdown()
        .filter(seen)
        .map(str::to_owned)
        .collect();
    (!ops.is_empty()).then(|| features::BuildOptions {
        ops,
        row_layers: layers.iter().map(|s| s.to_string()).collect(),
        read: read.clone(),
        ..Default::default()
    })
}

/// [`call_options`] before the summary is known: every operation of every call layer. On the layers and operations
/// the input has, the build gives what [`call_options`] gives: an operation or a layer without events adds no row
/// (the one difference: a stack frame filed under a call layer that has no events stays `kernel`'s).
pub fn all_call_options(read: &ReadOptions) -> features::BuildOptions {
    features::BuildOptions {
        ops: datasets::vocab::op::breakdown()
            .map(str::to_owned)
            .collect(),
        row_layers: CALL_LAYERS.map(str::to_owned).to_vec(),
        read: read.clone(),
        ..Default::default()
    }
}
