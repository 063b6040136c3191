//! Command-line options for reading traces and writing files, shared by every `dc-*` binary
//! (`#[command(flatten)]`).

use std::path::PathBuf;

use crate::TimeUnit;
use crate::error::Result;
use crate::output::Existing;
use crate::read::{ReadOptions, expand_globs};

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
