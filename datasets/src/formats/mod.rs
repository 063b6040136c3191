//! Traces and logs of other tools, read into the same [`Event`] model: one file per format.
//!
//! [`detect`] recognises a file by its first bytes; [`read`] turns it into events in
//! nanoseconds. Bad lines of text formats go through the reader's usual `file:line: field: what`
//! path; binary formats give the byte offset.

pub mod darshan;
pub mod iobench;

use std::io::Read;
use std::path::Path;

use crate::Event;
use crate::error::Error;
use crate::parse::LineError;

/// How many leading bytes [`detect`] looks at.
const SNIFF: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A Darshan 3 log (`.darshan`).
    Darshan,
    /// The L41 io-benchmark's JSON (`io-benchmark -j`, `dc-pipeline iobench -j`).
    IoBench,
}

/// What a foreign file gave.
#[derive(Debug, Default)]
pub struct Foreign {
    pub events: Vec<Event>,
    /// Text lines read; 0 for a binary file.
    pub lines: u64,
    pub bytes: u64,
    /// Bad lines: (0-based line, events read before it, error).
    pub errors: Vec<(u64, usize, LineError)>,
    /// An error that ends the file (binary formats, unreadable files).
    pub fatal: Option<Error>,
}

/// The foreign format of the file at `path`, from its first bytes; `None` for datacrumbs,
/// DFTracer and Chrome traces (and for files that cannot be opened, which the reader reports).
pub fn detect(path: &Path) -> Option<Format> {
    let mut head = Vec::with_capacity(SNIFF);
    std::fs::File::open(path)
        .ok()?
        .take(SNIFF as u64)
        .read_to_end(&mut head)
        .ok()?;
    if darshan::sniff(&head) {
        return Some(Format::Darshan);
    }
    if iobench::sniff(&head) {
        return Some(Format::IoBench);
    }
    None
}

/// Reads a whole file of a foreign format.
pub fn read(path: &Path, format: Format) -> Foreign {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(source) => {
            return Foreign {
                fatal: Some(Error::Io {
                    path: path.to_path_buf(),
                    source,
                }),
                ..Foreign::default()
            };
        }
    };
    let bytes = data.len() as u64;
    match format {
        Format::Darshan => match darshan::read(&data) {
            Ok(log) => Foreign {
                events: darshan::events(&log),
                bytes,
                ..Foreign::default()
            },
            Err(e) => Foreign {
                bytes,
                fatal: Some(Error::Binary {
                    path: path.to_path_buf(),
                    offset: e.offset,
                    field: e.field,
                    msg: e.msg,
                }),
                ..Foreign::default()
            },
        },
        Format::IoBench => match iobench::read(&data) {
            Ok((events, lines)) => Foreign {
                events,
                lines,
                bytes,
                ..Foreign::default()
            },
            Err((line, e)) => Foreign {
                lines: line + 1,
                bytes,
                errors: vec![(line, 0, e)],
                ..Foreign::default()
            },
        },
    }
}
