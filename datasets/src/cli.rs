//! Command-line options for reading traces and writing files, shared by every `dc-*` binary
//! (`#[command(flatten)]`), and the hints they add to errors that a flag gets past. Behind the `cli` feature.

use std::path::PathBuf;

use crate::error::Result;
use crate::output::Existing;
use crate::read::{ReadOptions, expand_globs};
use crate::{Error, Remedy, TimeUnit};

#[derive(Clone, Debug, clap::Args)]
pub struct ReadArgs {
    /// Trace files or globs (`.pfw`, `.pfw.gz`, any gzip).
    #[arg(required = true)]
    pub traces: Vec<String>,
    /// Unit of `ts`/`dur` in files that do not state it. Default: us (microseconds), as Chrome
    /// traces, DFTracer and DataCrumbs (Python era) write; later DataCrumbs wrote ns. Files
    /// written by datacrumbs state their unit in their header, which always wins.
    #[arg(long, value_enum)]
    pub time_unit: Option<TimeUnit>,
    /// Skip lines that are not valid events, count them and report them, instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Threads for inflating and parsing (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Read what is intact in a truncated or corrupt gzip/BGZF file, skipping to the next
    /// intact block, and report the damaged byte ranges and the lines lost, instead of stopping.
    #[arg(long)]
    pub salvage: bool,
}

impl ReadArgs {
    pub fn paths(&self) -> Result<Vec<PathBuf>> {
        expand_globs(&self.traces)
    }

    pub fn options(&self) -> ReadOptions {
        ReadOptions {
            time_unit: self.time_unit,
            skip_invalid: self.skip_invalid,
            threads: self.threads,
            salvage: self.salvage,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct OutputArgs {
    /// Replace output files that already exist (a regular file only: never a symbolic link).
    #[arg(long)]
    pub force: bool,
}

impl OutputArgs {
    pub fn existing(&self) -> Existing {
        Existing::forced(self.force)
    }
}

/// The flag that gets past an error with this remedy, as a binary appends it to the message.
pub fn hint(remedy: Remedy) -> &'static str {
    match remedy {
        Remedy::Salvage => "--salvage reads every intact part and reports what is lost",
        Remedy::Replace => "give --force to replace it",
    }
}

/// The remedy of the first [`Error`] in `err`'s chain of sources, for a binary whose errors hold this crate's as a
/// source (anyhow's `?` and `context` keep it there).
pub fn remedy_in(err: &(dyn std::error::Error + 'static)) -> Option<Remedy> {
    std::iter::successors(Some(err), |e| e.source())
        .find_map(|e| e.downcast_ref::<Error>()?.remedy())
}

/// `"; HINT"` for an error whose chain holds a remedy, or `""`: what a binary prints after the message.
pub fn hint_suffix(remedy: Option<Remedy>) -> String {
    remedy.map(|r| format!("; {}", hint(r))).unwrap_or_default()
}
