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
mod parsed;
mod reassemble;
mod spare;
mod stats;

use std::path::PathBuf;

pub use reassemble::TraceReader;
pub use stats::{Batch, Compression, FileStats, ReadOptions, ReadStats, UnitSource};

use crate::Event;
use crate::error::{Error, Result};
use crate::strings::StringTable;

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
