//! Traces and logs of other tools, read into the same [`Event`] model: one file per format.
//!
//! [`detect`] recognises a file by its first bytes; [`read`] turns it into events in
//! nanoseconds. Text formats report bad lines as `file:line: field: what` through the reader's
//! usual path (and `--skip-invalid` skips them); binary formats give the byte offset.

mod args;
pub mod bpftrace;
pub mod darshan;
pub mod iobench;
#[cfg(feature = "parquet")]
pub mod kernmlops;

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
    /// bpftrace or bcc tool output with a known table header ([`bpftrace`]).
    BpftraceText,
    /// `bpftrace -f json` output.
    BpftraceJson,
    /// A KernMLOps Parquet table ([`kernmlops`]).
    #[cfg(feature = "parquet")]
    KernMlops,
}

impl Format {
    /// Whether a file of this format numbers its processes on its own, so that a pid of one file is never a process
    /// of another: a Darshan log's pids are its MPI ranks, from 0 in every log.
    pub fn numbers_processes_per_file(self) -> bool {
        self == Format::Darshan
    }
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

impl Foreign {
    /// What a text or table format gave: its events and bad lines.
    fn rows(
        events: Vec<Event>,
        errors: Vec<(u64, usize, LineError)>,
        lines: u64,
        bytes: u64,
    ) -> Foreign {
        Foreign {
            events,
            lines,
            bytes,
            errors,
            fatal: None,
        }
    }
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
    #[cfg(feature = "parquet")]
    if kernmlops::sniff(&head) {
        return Some(Format::KernMlops);
    }
    if bpftrace::sniff_json(&head) {
        return Some(Format::BpftraceJson);
    }
    if bpftrace::sniff_text(&head) {
        return Some(Format::BpftraceText);
    }
    None
}

/// Reads a whole file of a foreign format. With `skip_invalid`, bad lines of text formats are
/// all listed in [`Foreign::errors`] instead of ending at the first.
pub fn read(path: &Path, format: Format, skip_invalid: bool) -> Foreign {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(cause) => {
            return Foreign {
                fatal: Some(Error::io(path, cause)),
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
            Ok((events, lines)) => Foreign::rows(events, Vec::new(), lines, bytes),
            Err((line, e)) => Foreign::rows(Vec::new(), vec![(line, 0, e)], line + 1, bytes),
        },
        #[cfg(feature = "parquet")]
        Format::KernMlops => {
            let (events, errors, lines) = kernmlops::read(data, skip_invalid);
            Foreign::rows(events, errors, lines, bytes)
        }
        Format::BpftraceText | Format::BpftraceJson => {
            let text = String::from_utf8_lossy(&data);
            let (events, errors) = if format == Format::BpftraceJson {
                bpftrace::read_json(&text, skip_invalid)
            } else {
                bpftrace::read_text(&text, skip_invalid)
            };
            // Without skipping, reading stopped at the error: the lines up to it were read.
            let lines = match errors.last() {
                Some((line, _, _)) if !skip_invalid => line + 1,
                _ => text.lines().count() as u64,
            };
            Foreign::rows(events, errors, lines, bytes)
        }
    }
}
