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
//! recording its size in the gzip extra field. `gunzip` reads it as one stream.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compress;

use crate::error::{Error, Result};
use crate::hash::hash_str;
use crate::strings::StringKind;
use crate::{ArgValue, Args, Event, Hash, Phase, TimeUnit, gz};

/// Name of the header metadata event.
pub const HEADER_EVENT: &str = "dc_header";
/// Name of the closing metadata event.
pub const CLOSING_EVENT: &str = "dc_closing";
/// Category of datacrumbs' own metadata events.
pub const META_CAT: &str = "datacrumbs";
/// Category DFTracer and DataCrumbs give `FH`/`HH`/`SH` events.
pub const INTERN_CAT: &str = "dftracer";
/// Gzip level: 1 keeps a drain thread ahead of millions of events per second.
pub const DEFAULT_LEVEL: u32 = 1;

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

pub struct TraceWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// Text not yet compressed or written.
    text: Vec<u8>,
    deflate: Option<Compress>,
    zbuf: Vec<u8>,
    unit: TimeUnit,
    next_id: u64,
    interned: [HashSet<Hash>; 3],
    stats: WriteStats,
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
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let gzip = path.extension().is_some_and(|e| e == "gz");
        let mut w = TraceWriter {
            out: BufWriter::with_capacity(1 << 18, file),
            path,
            text: Vec::with_capacity(gz::MAX_BLOCK + 4096),
            deflate: gzip.then(|| gz::compressor(level.min(9))),
            zbuf: Vec::with_capacity(gz::MAX_BLOCK * 2),
            unit: header.time_unit,
            next_id: 0,
            interned: Default::default(),
            stats: WriteStats::default(),
        };
        w.text.extend_from_slice(b"[\n");
        let args = [
            ("writer", ArgValue::Str(header.writer)),
            ("version", ArgValue::Str(header.version)),
            ("time_unit", ArgValue::Str(header.time_unit.as_str().into())),
            ("clock", ArgValue::Str(header.clock)),
            ("host", ArgValue::Str(header.host)),
            ("kernel", ArgValue::Str(header.kernel)),
        ];
        w.meta(HEADER_EVENT, META_CAT, &args)?;
        Ok(w)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn stats(&self) -> &WriteStats {
        &self.stats
    }

    pub fn intern_file(&mut self, s: &str) -> Result<Hash> {
        self.intern(StringKind::File, s)
    }

    pub fn intern_host(&mut self, s: &str) -> Result<Hash> {
        self.intern(StringKind::Host, s)
    }

    pub fn intern_string(&mut self, s: &str) -> Result<Hash> {
        self.intern(StringKind::String, s)
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
        let limit = if self.deflate.is_some() {
            gz::BLOCK_TEXT
        } else {
            1 << 16
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

    fn flush_text(&mut self, n: usize) -> Result<()> {
        let bytes = match &mut self.deflate {
            Some(c) => {
                self.zbuf.clear();
                gz::deflate_member(c, &self.text[..n], &mut self.zbuf);
                self.stats.members += 1;
                &self.zbuf[..]
            }
            None => &self.text[..n],
        };
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        self.stats.text_bytes += n as u64;
        self.stats.file_bytes += bytes.len() as u64;
        self.text.drain(..n);
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
        if self.deflate.is_some() {
            self.out
                .write_all(&gz::EOF_BLOCK)
                .map_err(|e| Error::io(&self.path, e))?;
            self.stats.members += 1;
            self.stats.file_bytes += gz::EOF_BLOCK.len() as u64;
        }
        self.out.flush().map_err(|e| Error::io(&self.path, e))?;
        Ok(self.stats)
    }
}

/// Appends one event as a line of the format, `id` first when there is one.
pub fn format_event(t: &mut Vec<u8>, e: &Event, id: Option<u64>, unit: TimeUnit) {
    t.push(b'{');
    if let Some(id) = id {
        t.extend_from_slice(b"\"id\":");
        push_u64(t, id);
        t.push(b',');
    }
    t.extend_from_slice(b"\"name\":");
    push_str(t, &e.name);
    t.extend_from_slice(b",\"cat\":");
    push_str(t, &e.cat);
    t.extend_from_slice(b",\"pid\":");
    push_u64(t, e.pid);
    t.extend_from_slice(b",\"tid\":");
    push_u64(t, e.tid);
    t.extend_from_slice(b",\"ts\":");
    push_time(t, e.ts_ns, unit);
    if e.dur_ns != 0 || e.ph == Phase::Complete {
        t.extend_from_slice(b",\"dur\":");
        push_time(t, e.dur_ns, unit);
    }
    t.extend_from_slice(b",\"ph\":\"");
    t.push(e.ph.as_byte());
    t.push(b'"');
    push_args(t, &e.args);
    t.extend_from_slice(b"}\n");
}

fn push_u64(t: &mut Vec<u8>, v: u64) {
    t.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn push_time(t: &mut Vec<u8>, ns: u64, unit: TimeUnit) {
    match unit {
        TimeUnit::Ns => push_u64(t, ns),
        TimeUnit::Us => {
            push_u64(t, ns / 1000);
            let frac = (ns % 1000) as u16;
            t.extend_from_slice(&[
                b'.',
                b'0' + (frac / 100) as u8,
                b'0' + (frac / 10 % 10) as u8,
                b'0' + (frac % 10) as u8,
            ]);
        }
    }
}

/// Writes `s` as a JSON string.
pub(crate) fn push_str(t: &mut Vec<u8>, s: &str) {
    t.push(b'"');
    let b = s.as_bytes();
    let mut run = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        t.extend_from_slice(&b[run..i]);
        if esc.is_empty() {
            t.extend_from_slice(format!("\\u{c:04x}").as_bytes());
        } else {
            t.extend_from_slice(esc);
        }
        run = i + 1;
    }
    t.extend_from_slice(&b[run..]);
    t.push(b'"');
}

pub(crate) fn push_arg(t: &mut Vec<u8>, v: &ArgValue) {
    match v {
        ArgValue::Null => t.extend_from_slice(b"null"),
        ArgValue::Bool(b) => t.extend_from_slice(if *b { b"true" } else { b"false" }),
        ArgValue::Int(n) => t.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        ArgValue::BigInt(n) => t.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        ArgValue::Float(f) if f.is_finite() => {
            t.extend_from_slice(ryu::Buffer::new().format_finite(*f).as_bytes())
        }
        ArgValue::Float(_) => t.extend_from_slice(b"null"),
        ArgValue::Str(s) => push_str(t, s),
        ArgValue::Json(j) => t.extend_from_slice(j.as_bytes()),
    }
}

fn push_hash(t: &mut Vec<u8>, h: Hash) {
    t.extend_from_slice(itoa::Buffer::new().format(h.0).as_bytes());
}

fn push_args(t: &mut Vec<u8>, a: &Args) {
    let start = t.len();
    t.extend_from_slice(b",\"args\":{");
    let open = t.len();
    let key = |t: &mut Vec<u8>, k: &str| {
        if t.len() > open {
            t.push(b',');
        }
        push_str(t, k);
        t.push(b':');
    };
    if let Some(h) = a.fhash {
        key(t, "fhash");
        push_hash(t, h);
    }
    if let Some(h) = a.hhash {
        key(t, "hhash");
        push_hash(t, h);
    }
    for (k, v) in [("size", a.size), ("ret", a.ret), ("offset", a.offset)] {
        if let Some(v) = v {
            key(t, k);
            t.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        }
    }
    for (k, v) in [
        ("fname", &a.fname),
        ("hostname", &a.hostname),
        ("name", &a.name),
    ] {
        if let Some(v) = v {
            key(t, k);
            push_str(t, v);
        }
    }
    if let Some(h) = a.value {
        key(t, "value");
        push_hash(t, h);
    }
    for (k, v) in &a.other {
        key(t, k);
        push_arg(t, v);
    }
    if t.len() == open {
        t.truncate(start);
    } else {
        t.push(b'}');
    }
}
