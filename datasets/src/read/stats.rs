//! What a read is asked for and what it found: the options, each file's and the whole read's counts, and the
//! batches of events it hands out. The reader's parts share these; this module imports none of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::salvage::Damage;
use crate::{Event, TimeUnit};

/// How many skipped-line errors [`ReadStats`] keeps as examples.
pub(super) const SKIP_EXAMPLES: usize = 10;

#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Unit of `ts`/`dur` for files without a datacrumbs header. `None` means microseconds,
    /// the unit of Chrome traces, DFTracer and DataCrumbs (Python era). A file whose header
    /// states its unit is always read in that unit.
    pub time_unit: Option<TimeUnit>,
    /// Skip lines that are not valid events, counting them in [`ReadStats::skipped`], instead of
    /// stopping at the first one.
    pub skip_invalid: bool,
    /// Worker threads for inflating and parsing; 0 means one per core.
    pub threads: usize,
    /// Read what is intact in damaged compressed data, recording each gap in
    /// [`ReadStats::damage`], instead of stopping at the first (see [`crate::salvage`]).
    pub salvage: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Plain,
    /// Gzip that is not BGZF (one member, or members without size fields): inflated on one thread.
    Gzip,
    /// Block gzip: members inflated in parallel.
    Bgzf,
}

/// Where a file's time unit came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitSource {
    /// The file's datacrumbs header.
    Header,
    /// [`ReadOptions::time_unit`].
    Option,
    /// Neither: microseconds.
    Default,
}

#[derive(Clone, Debug)]
pub struct FileStats {
    pub path: PathBuf,
    pub compression: Compression,
    pub time_unit: TimeUnit,
    pub unit_source: UnitSource,
    /// Lines read, including blank lines and the `[`/`]` frame.
    pub lines: u64,
    /// Events read, exact duplicates not included.
    pub events: u64,
    pub skipped: u64,
    /// Events dropped as exact duplicates of an earlier event of the file ([`super::TraceReader::drop_duplicates`]).
    pub duplicates: u64,
    /// Uncompressed bytes.
    pub text_bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ReadStats {
    pub lines: u64,
    pub events: u64,
    pub skipped: u64,
    /// Events dropped as exact duplicates of an earlier event of their file ([`super::TraceReader::drop_duplicates`]).
    pub duplicates: u64,
    pub text_bytes: u64,
    pub files: Vec<FileStats>,
    /// The first few skipped lines' errors, to report.
    pub skipped_examples: Vec<String>,
    /// What [`ReadOptions::salvage`] could not read.
    pub damage: Vec<Damage>,
}

/// Events of consecutive lines of one file.
#[derive(Clone, Debug)]
pub struct Batch {
    pub source: Arc<Path>,
    /// The index of the source among the files read, the `input` of its names' [`crate::strings::Scope`].
    pub input: u32,
    /// 1-based line number of the first line this batch covers.
    pub first_line: u64,
    pub events: Vec<Event>,
}
