//! Streaming, parallel trace reading.
//!
//! One dispatcher thread reads each file in order and cuts it into chunks of text: for a BGZF
//! file it finds members through their size field and hands groups of still-compressed members
//! to the worker pool, which inflates and parses them on every core; for a single-member gzip it
//! inflates on its own thread and hands text chunks to the pool for parsing; a plain file it
//! reads in chunks. Results come back in file order through a bounded queue, so memory does not
//! grow with the file size. A line that spans two chunks is stitched and parsed in order.

mod around;
mod dispatch;
mod duplicates;
mod reassemble;
mod spare;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use reassemble::TraceReader;

use crate::error::{Error, Result};
use crate::parse::{LineError, Slots, parse_line_into, parse_written_line};
use crate::salvage::{Damage, Gap};
use crate::strings::StringTable;
use crate::{Event, Phase, TimeUnit};

/// Text handed to one parse task: its events (about 600 KB) stay in the caches between the worker that parses them
/// and the thread that reads them, where 1 MiB chunks took about 4% more CPU.
const CHUNK_TEXT: usize = 1 << 18;
/// How many skipped-line errors [`ReadStats`] keeps as examples.
const SKIP_EXAMPLES: usize = 10;

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
    /// Events dropped as exact duplicates of an earlier event of the file ([`TraceReader::drop_duplicates`]).
    pub duplicates: u64,
    /// Uncompressed bytes.
    pub text_bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ReadStats {
    pub lines: u64,
    pub events: u64,
    pub skipped: u64,
    /// Events dropped as exact duplicates of an earlier event of their file ([`TraceReader::drop_duplicates`]).
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

/// A whole trace in memory: events in file order and the strings their hashes resolve to (an event's own input is
/// not kept, so [`StringTable::file_of`] resolves only the hashes every input agrees on).
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<Event>,
    pub strings: StringTable,
    pub stats: ReadStats,
}

/// Expands shell-style globs (`traces/*.pfw.gz`), sorted per pattern. A pattern without glob
/// characters is taken as a path as it is; a glob that matches nothing is an error.
pub fn expand_globs(patterns: &[String]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in patterns {
        if !p.contains(['*', '?', '[']) {
            out.push(PathBuf::from(p));
            continue;
        }
        let gerr = |msg: String| Error::Glob {
            pattern: p.clone(),
            msg,
        };
        let mut found = Vec::new();
        for entry in glob::glob(p).map_err(|e| gerr(e.to_string()))? {
            found.push(entry.map_err(|e| gerr(e.to_string()))?);
        }
        if found.is_empty() {
            return Err(gerr("matches no file".into()));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Reads every file into memory.
pub fn read_all(paths: &[PathBuf], opts: ReadOptions) -> Result<Trace> {
    let mut reader = TraceReader::open(paths, opts)?;
    let mut events = Vec::new();
    let mut strings = StringTable::new();
    while let Some(batch) = reader.next() {
        let mut batch = batch?;
        for e in &batch.events {
            strings.insert_event_in(batch.input, e);
        }
        events.append(&mut batch.events);
        reader.recycle(batch.events);
    }
    Ok(Trace {
        events,
        strings,
        stats: reader.stats().clone(),
    })
}

/// What a worker made of one chunk of text.
pub(crate) struct Parsed {
    /// The first line's bytes, kept in case it continues a line from the previous chunk.
    pub head: Vec<u8>,
    /// Whether `events[0]` came from the first line.
    pub head_event: bool,
    /// Whether `events[0]` only holds the place of a first line that did not parse: it is often the end of a line
    /// the previous chunk began, and the stitched line's event takes the slot without moving the others.
    pub head_slot: bool,
    pub events: Vec<Event>,
    /// The (id, digest) of each event ([`duplicates::key`]), when the reader drops duplicates and a worker computed
    /// them.
    pub digests: Vec<(u64, u64)>,
    /// (line index within the chunk, events of later lines before it, error).
    pub errors: Vec<(u64, usize, LineError)>,
    /// Complete lines (newlines) in the chunk.
    pub lines: u64,
    /// Bytes after the last newline.
    pub tail: Vec<u8>,
    pub text_bytes: u64,
    /// Compressed data that did not inflate: (file offset, message).
    pub damage: Option<(u64, String)>,
    /// With [`ReadOptions::salvage`]: the members skipped among these events.
    pub gaps: Vec<Gap>,
}

/// Parses `text` over `events` (stale events whose memory is reused, or none), with each event's duplicate key when
/// `keys` asks for them. With `slot`, a first line that does not parse gets a placeholder event
/// ([`Parsed::head_slot`]).
fn parse_text(
    text: &[u8],
    unit: TimeUnit,
    skip_invalid: bool,
    keys: bool,
    mut events: Vec<Event>,
    slot: bool,
) -> Parsed {
    // Lines are rarely shorter; a shorter one costs a reallocation, not a failure.
    events.reserve((text.len() / 128 + 1).saturating_sub(events.len()));
    let mut out = Slots::new(events);
    let mut p = Parsed {
        head: Vec::new(),
        head_event: false,
        head_slot: false,
        events: Vec::new(),
        digests: Vec::new(),
        errors: Vec::new(),
        lines: 0,
        tail: Vec::new(),
        text_bytes: text.len() as u64,
        damage: None,
        gaps: Vec::new(),
    };
    if keys {
        p.digests.reserve(text.len() / 128 + 1);
    }
    let mut start = 0;
    while start < text.len() {
        let rest = &text[start..];
        let (len, parsed) = match parse_written_line(rest, unit, &mut out) {
            Some(len) => (len, Ok(true)),
            None => match memchr::memchr(b'\n', rest) {
                Some(len) => (len, parse_line_into(&rest[..len], unit, &mut out)),
                None => break,
            },
        };
        let idx = p.lines;
        p.lines += 1;
        start += len + 1;
        if idx == 0 {
            p.head = rest[..len].to_vec();
        }
        match parsed {
            Ok(false) => {}
            Ok(true) => {
                p.head_event |= idx == 0;
                if keys {
                    p.digests.push(duplicates::key(out.last()));
                }
            }
            Err(e) => {
                let later = out.len() - usize::from(p.head_event);
                p.errors.push((idx, later, e));
                // The first line may be the end of a line the previous chunk began.
                if idx == 0 && slot {
                    out.push(Event::new("", "", Phase::Other(0)));
                    if keys {
                        p.digests.push((0, 0));
                    }
                    p.head_event = true;
                    p.head_slot = true;
                }
                if !skip_invalid && idx > 0 {
                    break;
                }
            }
        }
    }
    if p.errors
        .last()
        .is_none_or(|(i, _, _)| *i == 0 || skip_invalid)
    {
        p.tail = text[start..].to_vec();
    }
    p.events = out.into_events();
    p
}
