//! How far a ranking has got, for a person watching: one bar over every model fit, on stderr and only
//! when stderr is a terminal (as dc-report's progress).
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::options::RankOptions;

/// The fits of one ranked dataset (a layer or the stack model): on the training rows, one per fold,
/// and on the context columns alone.
pub fn steps(opts: &RankOptions) -> u64 {
    opts.folds as u64 + 2
}

/// A spinner saying `what` is being done, hidden when stderr is not a terminal; its clock ticks on
/// its own, so that a long step shows it is still running.
pub fn bar(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner().with_message(what.to_string());
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("static template"),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// Turns `pb` into a count of `len` fits of `what`.
pub(crate) fn count_fits(pb: &ProgressBar, len: u64, what: String) {
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}: {pos}/{len} model fits")
            .expect("static template"),
    );
    pb.set_length(len);
    pb.set_position(0);
    pb.set_message(what);
}

/// Turns `pb` into a count of `len` rows read for `what`.
pub(crate) fn count_rows(pb: &ProgressBar, len: u64, what: String) {
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}: {pos}/{len} rows")
            .expect("static template"),
    );
    pb.set_length(len);
    pb.set_position(0);
    pb.set_message(what);
}
