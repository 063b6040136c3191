//! The trace writer: the format datacrumbs writes, fast enough for a tracer's drain thread.
//!
//! A file is `[`, then one Chrome trace event per line, then `]`. The first event is a header
//! (`ph: "M"`, name [`HEADER_EVENT`]) that records the writer, its version, the time unit, the
//! clock, the host and the kernel. Strings are interned through `FH` (file), `HH` (host) and `SH`
//! (other) metadata events, written once per distinct string before the first event that uses
//! them, with XXH3-64 hashes ([`crate::hash::hash_str`]) that fit in a u64. `ts`/`dur` are
//! microseconds with three decimals (`12.345`) unless the header says `ns`.
//!
//! A path ending in `.gz` is written as BGZF: independent gzip members of whole lines, each
//! recording its size in the gzip extra field. `gunzip` reads it as one stream. Members are
//! independent, so [`WriteOptions::compress_threads`] can compress them on other threads while
//! the caller formats events; the file is the same, byte for byte, unless those threads fall
//! behind and catch up at a cheaper level.

mod format;
mod pipeline;

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub use format::format_event;
use format::push_u64;
pub(crate) use format::{push_arg, push_str};
use libdeflater::Compressor;
use pipeline::{Pipeline, TEXT_CAPACITY};

use crate::error::{Error, Result};
use crate::hash::hash_str;
use crate::output::{self, Existing, Output};
use crate::strings::StringKind;
use crate::{ArgValue, Event, Hash, Phase, TimeUnit, gz};

/// Name of the header metadata event.
pub const HEADER_EVENT: &str = "dc_header";
/// Name of the closing metadata event.
pub const CLOSING_EVENT: &str = "dc_closing";
/// Category of datacrumbs' own metadata events.
pub const META_CAT: &str = "datacrumbs";
/// Category DFTracer and DataCrumbs give `FH`/`HH`/`SH` events.
pub const INTERN_CAT: &str = "dftracer";
/// Compression level: at 7, libdeflate's BGZF members came out smaller than `gzip -6` of the same
/// text on every trace measured (bytes per event: a dc-trace dd trace 12.4 against 13.5,
/// DataCrumbs' case-read-simple rewritten 6.8 against 7.2, DFTracer's DLIO 10.6 against 10.8);
/// at 6 the last two were 4% and 13% larger than gzip's.
pub const DEFAULT_LEVEL: u32 = 7;

/// What the header event records.
#[derive(Clone, Debug)]
pub struct Header {
    pub writer: String,
    pub version: String,
    pub time_unit: TimeUnit,
    /// The clock `ts` is read from, e.g. `CLOCK_MONOTONIC`.
    pub clock: String,
    pub host: String,
    pub kernel: String,
    /// The layers the writer traced, comma-separated (dc-trace's); empty for none said, and then not written.
    pub layers: String,
}

impl Header {
    /// A header for this machine: host name and kernel release from `/proc`, microseconds,
    /// `CLOCK_MONOTONIC`.
    pub fn new(writer: &str, version: &str) -> Header {
        let proc = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        Header {
            writer: writer.to_owned(),
            version: version.to_owned(),
            time_unit: TimeUnit::Us,
            clock: "CLOCK_MONOTONIC".to_owned(),
            host: proc("/proc/sys/kernel/hostname"),
            kernel: proc("/proc/sys/kernel/osrelease"),
            layers: String::new(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Events other than metadata: what `dftracer_event_count` counts.
    pub events: u64,
    /// Metadata events: header, interned strings, closing.
    pub metadata: u64,
    /// Uncompressed bytes.
    pub text_bytes: u64,
    /// Bytes in the file.
    pub file_bytes: u64,
    /// Gzip members, the end-of-file member included (0 for plain text).
    pub members: u64,
}

/// How [`TraceWriter::create_with`] writes a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Compression level, 0 to [`gz::MAX_LEVEL`] (higher values count as the highest).
    pub level: u32,
    /// Threads that compress and write BGZF members while the caller goes on formatting
    /// events; 0 does it all on the calling thread. The file is byte-identical either way while
    /// the threads keep up; blocks they take while every other block waits are compressed
    /// at level 1, so that they catch up.
    /// Plain-text files ignore it.
    pub compress_threads: usize,
    /// Whether an existing file at the path is replaced.
    pub existing: Existing,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            level: DEFAULT_LEVEL,
            compress_threads: 0,
            existing: Existing::Refuse,
        }
    }
}

pub struct TraceWriter {
    path: PathBuf,
    /// Text not yet compressed or written.
    text: Vec<u8>,
    sink: Sink,
    unit: TimeUnit,
    next_id: u64,
    interned: [HashSet<Hash>; 3],
    stats: WriteStats,
}

/// Where whole blocks of text go.
enum Sink {
    /// Plain text, or BGZF members compressed on the calling thread.
    Inline {
        out: BufWriter<Output>,
        deflate: Option<Compressor>,
        zbuf: Vec<u8>,
        /// The write error that stopped the file: a buffered writer may take later writes after
        /// a short one failed, and a trace with a hole in it must not go on as if whole.
        failed: Option<io::Error>,
    },
    Background(Pipeline),
}

impl TraceWriter {
    /// Creates `path`: BGZF when it ends in `.gz`, plain text otherwise.
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<TraceWriter> {
        Self::create_with_level(path, header, DEFAULT_LEVEL)
    }

    pub fn create_with_level(
        path: impl AsRef<Path>,
        header: Header,
        level: u32,
    ) -> Result<TraceWriter> {
        let opts = WriteOptions {
            level,
            ..WriteOptions::default()
        };
        Self::create_with(path, header, opts)
    }

    pub fn create_with(
        path: impl AsRef<Path>,
        header: Header,
        opts: WriteOptions,
    ) -> Result<TraceWriter> {
        let path = path.as_ref().to_path_buf();
        let out = BufWriter::with_capacity(1 << 18, Output::create(&path, opts.existing)?);
        let gzip = path.extension().is_some_and(|e| e == "gz");
        let level = opts.level.min(gz::MAX_LEVEL);
        let sink = if gzip && opts.compress_threads > 0 {
            Sink::Background(Pipeline::start(out, level, opts.compress_threads))
        } else {
            Sink::Inline {
                out,
                deflate: gzip.then(|| gz::compressor(level)),
                zbuf: Vec::with_capacity(gz::MAX_BLOCK * 2),
                failed: None,
            }
        };
        let mut w = TraceWriter {
            path,
            text: Vec::with_capacity(TEXT_CAPACITY),
            sink,
            unit: header.time_unit,
            next_id: 0,
            interned: Default::default(),
            stats: WriteStats::default(),
        };
        w.text.extend_from_slice(b"[\n");
        let mut args = vec![
            ("writer", ArgValue::Str(header.writer)),
            ("version", ArgValue::Str(header.version)),
            ("time_unit", ArgValue::Str(header.time_unit.as_str().into())),
            ("clock", ArgValue::Str(header.clock)),
            ("host", ArgValue::Str(header.host)),
            ("kernel", ArgValue::Str(header.kernel)),
        ];
        if !header.layers.is_empty() {
            args.push(("layers", ArgValue::Str(header.layers)));
        }
        w.meta(HEADER_EVENT, META_CAT, &args)?;
        Ok(w)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes every event so far to the file, as whole members, so that a reader of the partial
    /// file ([`Output::partial_path`]) sees them even if the writer is killed. With compression
    /// threads, the file gets them once the threads have compressed them.
    pub fn flush(&mut self) -> Result<()> {
        if !self.text.is_empty() {
            self.flush_text(self.text.len())?;
        }
        if let Sink::Inline { out, .. } = &mut self.sink {
            out.flush().map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Counts so far. With compression threads, `file_bytes` leaves out members still being
    /// compressed until [`TraceWriter::finish`].
    pub fn stats(&self) -> &WriteStats {
        &self.stats
    }

    pub fn intern_file(&mut self, s: &str) -> Result<Hash> {
        self.intern(StringKind::File, s)
    }

    pub fn intern_host(&mut self, s: &str) -> Result<Hash> {
        self.intern(StringKind::Host, s)
    }

    /// Returns the hash of `s`, writing its `FH`/`HH`/`SH` event the first time it is seen.
    pub fn intern(&mut self, kind: StringKind, s: &str) -> Result<Hash> {
        let h = hash_str(s);
        if self.interned[kind as usize].insert(h) {
            let args = [
                ("name", ArgValue::Str(s.to_owned())),
                ("value", ArgValue::BigInt(h.0 as i128)),
            ];
            self.meta(kind.event_name(), INTERN_CAT, &args)?;
        }
        Ok(h)
    }

    fn meta(&mut self, name: &str, cat: &str, args: &[(&str, ArgValue)]) -> Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let t = &mut self.text;
        let start = t.len();
        t.extend_from_slice(b"{\"id\":");
        push_u64(t, id);
        t.extend_from_slice(b",\"name\":");
        push_str(t, name);
        t.extend_from_slice(b",\"cat\":");
        push_str(t, cat);
        t.extend_from_slice(b",\"pid\":0,\"tid\":0,\"ts\":0,\"ph\":\"M\",\"args\":{");
        for (i, (k, v)) in args.iter().enumerate() {
            if i > 0 {
                t.push(b',');
            }
            push_str(t, k);
            t.push(b':');
            push_arg(t, v);
        }
        t.extend_from_slice(b"}}\n");
        self.stats.metadata += 1;
        self.after_line(start)
    }

    /// Writes one event. Events without an `id` get the writer's running number.
    pub fn write(&mut self, e: &Event) -> Result<()> {
        let id = e.id.unwrap_or(self.next_id);
        self.next_id = self.next_id.max(id.saturating_add(1));
        let start = self.text.len();
        format_event(&mut self.text, e, Some(id), self.unit);
        if e.ph == Phase::Metadata {
            self.stats.metadata += 1;
        } else {
            self.stats.events += 1;
        }
        self.after_line(start)
    }

    /// Flushes whole members once the buffer holds a member's worth of text.
    fn after_line(&mut self, line_start: usize) -> Result<()> {
        let limit = match &self.sink {
            Sink::Inline { deflate: None, .. } => 1 << 16,
            Sink::Inline { .. } => gz::BLOCK_TEXT,
            Sink::Background(p) => {
                if p.failed() {
                    return Err(Error::io(&self.path, p.error()));
                }
                gz::BLOCK_TEXT
            }
        };
        if self.text.len() < limit {
            return Ok(());
        }
        if line_start > 0 {
            self.flush_text(line_start)?;
        }
        if self.text.len() >= limit {
            self.flush_text(self.text.len())?;
        }
        Ok(())
    }

    /// Compresses and writes the first `n` bytes of text, or hands them to the pipeline.
    fn flush_text(&mut self, n: usize) -> Result<()> {
        match &mut self.sink {
            Sink::Inline {
                out,
                deflate,
                zbuf,
                failed,
            } => {
                if let Some(e) = failed {
                    return Err(Error::io(&self.path, output::copy_error(e)));
                }
                let bytes = match deflate {
                    Some(c) => {
                        zbuf.clear();
                        gz::deflate_member(c, &self.text[..n], zbuf);
                        self.stats.members += 1;
                        &zbuf[..]
                    }
                    None => &self.text[..n],
                };
                if let Err(e) = out.write_all(bytes) {
                    let again = output::copy_error(&e);
                    *failed = Some(e);
                    return Err(Error::io(&self.path, again));
                }
                self.stats.file_bytes += bytes.len() as u64;
                self.text.drain(..n);
            }
            Sink::Background(p) => {
                p.submit(&mut self.text, n)
                    .map_err(|e| Error::io(&self.path, e))?;
                self.stats.members += 1;
                self.stats.file_bytes = p.file_bytes();
            }
        }
        self.stats.text_bytes += n as u64;
        Ok(())
    }

    /// Writes the closing metadata event (e.g. drop counters), `]`, and the BGZF end member.
    pub fn finish(mut self, closing: Vec<(String, ArgValue)>) -> Result<WriteStats> {
        let mut args: Vec<(&str, ArgValue)> = closing
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let events = self.stats.events;
        args.push(("events", ArgValue::Int(events as i64)));
        self.meta(CLOSING_EVENT, META_CAT, &args)?;
        self.text.extend_from_slice(b"]\n");
        self.flush_text(self.text.len())?;
        let path = self.path;
        let mut stats = self.stats;
        let (mut out, gzip) = match self.sink {
            Sink::Inline { out, deflate, .. } => (out, deflate.is_some()),
            Sink::Background(p) => {
                let (out, file_bytes) = p.finish().map_err(|e| Error::io(&path, e))?;
                stats.file_bytes = file_bytes;
                (out, true)
            }
        };
        if gzip {
            out.write_all(&gz::EOF_BLOCK)
                .map_err(|e| Error::io(&path, e))?;
            stats.members += 1;
            stats.file_bytes += gz::EOF_BLOCK.len() as u64;
        }
        let out = out
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        out.commit()?;
        Ok(stats)
    }
}
