//! Command-line options for reading traces, shared by every `dc-*` binary (`#[command(flatten)]`).

use std::path::PathBuf;

use crate::TimeUnit;
use crate::error::Result;
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
        }
    }
}
