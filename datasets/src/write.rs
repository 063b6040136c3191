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
//! the caller formats events; the file is the same, byte for byte.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use flate2::Compress;

use crate::error::{Error, Result};
use crate::hash::hash_str;
use crate::output::{Existing, Output};
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

/// How [`TraceWriter::create_with`] writes a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Gzip level, 0 to 9 (higher values count as 9).
    pub level: u32,
    /// Threads that compress and write BGZF members while the caller goes on formatting
    /// events; 0 does it all on the calling thread. The file is byte-identical either way.
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
        deflate: Option<Compress>,
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
        let level = opts.level.min(9);
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
                    return Err(Error::io(
                        &self.path,
                        io::Error::new(e.kind(), e.to_string()),
                    ));
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
                    let again = io::Error::new(e.kind(), e.to_string());
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

/// Room for a member's worth of text and the line that crosses the limit.
const TEXT_CAPACITY: usize = gz::MAX_BLOCK + 4096;

/// BGZF members compressed on worker threads and written in order. A block of text carries its
/// sequence number; workers take blocks in that order, and each writes its member once all
/// earlier ones are written. Memory stays bounded: only a fixed number of blocks exist, and the
/// caller waits for one to come back before it hands over more text.
struct Pipeline {
    workers: Workers,
    free: Receiver<Block>,
    shared: Arc<Shared>,
    next_seq: u64,
}

/// The job queue and the threads that drain it; dropping it closes the queue and waits for them.
struct Workers {
    jobs: Option<SyncSender<Block>>,
    threads: Vec<JoinHandle<()>>,
}

struct Block {
    seq: u64,
    text: Vec<u8>,
    member: Vec<u8>,
}

struct Shared {
    turn: Mutex<Turn>,
    turn_taken: Condvar,
    failed: AtomicBool,
    /// Bytes written to the file, read by the caller without waiting for a write in progress.
    file_bytes: AtomicU64,
    /// Blocks handed to the workers: the worker that writes the last of them flushes the file,
    /// so the file holds every member as soon as the workers are idle.
    submitted: AtomicU64,
}

/// The file and the sequence number of the member to be written next.
struct Turn {
    next: u64,
    out: BufWriter<Output>,
    error: Option<io::Error>,
}

impl Pipeline {
    fn start(out: BufWriter<Output>, level: u32, threads: usize) -> Pipeline {
        // A few blocks per thread: enough that a thread descheduled on a busy machine does not
        // stall the others at once; at most (64 KiB of text + its member) each.
        let blocks = 4 * threads + 4;
        let (jobs, job_rx) = mpsc::sync_channel::<Block>(blocks);
        let (free_tx, free) = mpsc::channel();
        for _ in 0..blocks {
            let block = Block {
                seq: 0,
                text: Vec::with_capacity(TEXT_CAPACITY),
                member: Vec::new(),
            };
            free_tx.send(block).expect("receiver is alive");
        }
        let shared = Arc::new(Shared {
            turn: Mutex::new(Turn {
                next: 0,
                out,
                error: None,
            }),
            turn_taken: Condvar::new(),
            failed: AtomicBool::new(false),
            file_bytes: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
        });
        let job_rx = Arc::new(Mutex::new(job_rx));
        let threads = (0..threads)
            .map(|_| {
                let (job_rx, free_tx, shared) = (job_rx.clone(), free_tx.clone(), shared.clone());
                std::thread::Builder::new()
                    .name("trace-deflate".into())
                    .spawn(move || compress_and_write(level, &job_rx, &free_tx, &shared))
                    .expect("spawn a compression thread")
            })
            .collect();
        Pipeline {
            workers: Workers {
                jobs: Some(jobs),
                threads,
            },
            free,
            shared,
            next_seq: 0,
        }
    }

    fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
    }

    /// The write error that stopped the pipeline, again for every caller that asks.
    fn error(&self) -> io::Error {
        let turn = lock(&self.shared.turn);
        match &turn.error {
            Some(e) => io::Error::new(e.kind(), e.to_string()),
            None => io::Error::other("a compression thread stopped"),
        }
    }

    fn file_bytes(&self) -> u64 {
        self.shared.file_bytes.load(Ordering::Relaxed)
    }

    /// Hands the first `n` bytes of `text` to the workers, keeping the rest in `text`. The
    /// buffers are swapped, so only the rest is copied.
    fn submit(&mut self, text: &mut Vec<u8>, n: usize) -> io::Result<()> {
        let stopped = || io::Error::other("compression threads stopped");
        let mut block = self.free.recv().map_err(|_| stopped())?;
        if self.failed() {
            return Err(self.error());
        }
        std::mem::swap(&mut block.text, text);
        text.clear();
        text.extend_from_slice(&block.text[n..]);
        block.text.truncate(n);
        block.seq = self.next_seq;
        self.next_seq += 1;
        self.shared.submitted.store(self.next_seq, Ordering::SeqCst);
        let jobs = self.workers.jobs.as_ref().expect("open until finish");
        jobs.send(block).map_err(|_| stopped())
    }

    /// Waits for every member to be written and returns the file and its size so far.
    fn finish(self) -> io::Result<(BufWriter<Output>, u64)> {
        let Pipeline {
            workers,
            shared,
            next_seq,
            ..
        } = self;
        drop(workers);
        let shared = Arc::into_inner(shared).expect("the workers have exited");
        let file_bytes = shared.file_bytes.into_inner();
        let turn = shared
            .turn
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        match turn.error {
            Some(e) => Err(e),
            None if turn.next != next_seq => Err(io::Error::other(format!(
                "compression threads stopped after {} of {next_seq} members",
                turn.next
            ))),
            None => Ok((turn.out, file_bytes)),
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Stops the pipeline if its worker panics, so that workers waiting for its turn and the caller
/// waiting for a block do not wait forever.
struct PanicGuard<'a>(&'a Shared);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut turn = lock(&self.0.turn);
            turn.error
                .get_or_insert_with(|| io::Error::other("a compression thread panicked"));
            self.0.failed.store(true, Ordering::Relaxed);
            drop(turn);
            self.0.turn_taken.notify_all();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A worker: takes blocks in sequence order, compresses each into a member, waits for its turn,
/// writes it (unless an earlier write failed) and returns the block.
fn compress_and_write(
    level: u32,
    jobs: &Mutex<Receiver<Block>>,
    free: &Sender<Block>,
    shared: &Shared,
) {
    let _guard = PanicGuard(shared);
    let mut deflate = gz::compressor(level);
    loop {
        let Ok(mut block) = lock(jobs).recv() else {
            return;
        };
        block.member.clear();
        gz::deflate_member(&mut deflate, &block.text, &mut block.member);
        let mut turn = lock(&shared.turn);
        while turn.next != block.seq && turn.error.is_none() {
            turn = shared
                .turn_taken
                .wait(turn)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if turn.error.is_none() {
            let last = block.seq + 1 == shared.submitted.load(Ordering::SeqCst);
            let written = turn.out.write_all(&block.member);
            match written.and_then(|()| if last { turn.out.flush() } else { Ok(()) }) {
                Ok(()) => {
                    let n = block.member.len() as u64;
                    shared.file_bytes.fetch_add(n, Ordering::Relaxed);
                }
                Err(e) => {
                    turn.error = Some(e);
                    shared.failed.store(true, Ordering::Relaxed);
                }
            }
        }
        turn.next += 1;
        drop(turn);
        shared.turn_taken.notify_all();
        // The writer may be gone (dropped without finishing); the block is then not needed.
        let _ = free.send(block);
    }
}

/// Appends one event as a line of the format, `id` first when there is one.
pub fn format_event(t: &mut Vec<u8>, e: &Event, id: Option<u64>, unit: TimeUnit) {
    match id {
        Some(id) => {
            t.extend_from_slice(b"{\"id\":");
            push_u64(t, id);
            t.extend_from_slice(b",\"name\":");
        }
        None => t.extend_from_slice(b"{\"name\":"),
    }
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
    t.extend_from_slice(b",\"ph\":\"?\"");
    let ph = t.len() - 2;
    t[ph] = e.ph.as_byte();
    push_args(t, &e.args);
    t.extend_from_slice(b"}\n");
}

/// Two decimal digits for each value below 100.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `v` in decimal. Room for the longest number is added as a constant-size block and
/// the digits are written into it in place, then cut back: no copy of a run-time length (a
/// `memcpy` call), and no wide read of digits just stored in pieces (which stalls the CPU).
#[inline(always)]
fn push_u64(t: &mut Vec<u8>, mut v: u64) {
    let n = decimal_digits(v);
    let start = t.len();
    t.extend_from_slice(&[0; 20]);
    let buf = &mut t[start..start + 20];
    let mut i = n;
    while v >= 10_000 {
        let r = (v % 10_000) as usize;
        v /= 10_000;
        let (hi, lo) = (r / 100 * 2, r % 100 * 2);
        buf[i - 4..i - 2].copy_from_slice(&PAIRS[hi..hi + 2]);
        buf[i - 2..i].copy_from_slice(&PAIRS[lo..lo + 2]);
        i -= 4;
    }
    let mut v = v as usize;
    if v >= 100 {
        let lo = v % 100 * 2;
        v /= 100;
        buf[i - 2..i].copy_from_slice(&PAIRS[lo..lo + 2]);
        i -= 2;
    }
    if v >= 10 {
        buf[i - 2..i].copy_from_slice(&PAIRS[v * 2..v * 2 + 2]);
    } else {
        buf[i - 1] = b'0' + v as u8;
    }
    t.truncate(start + n);
}

/// Digits in `v` written in decimal: estimated from its bit length, corrected by one compare.
fn decimal_digits(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let v = v | 1;
    let estimate = ((64 - v.leading_zeros() as usize) * 1233) >> 12;
    estimate + usize::from(v >= POW10[estimate])
}

fn push_i64(t: &mut Vec<u8>, v: i64) {
    if v < 0 {
        t.push(b'-');
    }
    push_u64(t, v.unsigned_abs());
}

fn push_time(t: &mut Vec<u8>, ns: u64, unit: TimeUnit) {
    match unit {
        TimeUnit::Ns => push_u64(t, ns),
        TimeUnit::Us => {
            push_u64(t, ns / 1000);
            let frac = (ns % 1000) as usize;
            let r = frac % 100 * 2;
            t.extend_from_slice(&[b'.', b'0' + (frac / 100) as u8, PAIRS[r], PAIRS[r + 1]]);
        }
    }
}

/// Bytes a JSON string cannot hold as they are: `"`, `\` and control characters.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Writes `s` as a JSON string.
pub(crate) fn push_str(t: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    t.push(b'"');
    if b.iter().any(|&c| NEEDS_ESCAPE[usize::from(c)]) {
        push_escaped(t, b);
    } else {
        t.extend_from_slice(b);
    }
    t.push(b'"');
}

fn push_escaped(t: &mut Vec<u8>, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    for (i, &c) in b.iter().enumerate() {
        if !NEEDS_ESCAPE[usize::from(c)] {
            continue;
        }
        t.extend_from_slice(&b[run..i]);
        match c {
            b'"' => t.extend_from_slice(b"\\\""),
            b'\\' => t.extend_from_slice(b"\\\\"),
            b'\n' => t.extend_from_slice(b"\\n"),
            b'\r' => t.extend_from_slice(b"\\r"),
            b'\t' => t.extend_from_slice(b"\\t"),
            _ => t.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(c >> 4)],
                HEX[usize::from(c & 15)],
            ]),
        }
        run = i + 1;
    }
    t.extend_from_slice(&b[run..]);
}

pub(crate) fn push_arg(t: &mut Vec<u8>, v: &ArgValue) {
    match v {
        ArgValue::Null => t.extend_from_slice(b"null"),
        ArgValue::Bool(b) => t.extend_from_slice(if *b { b"true" } else { b"false" }),
        ArgValue::Int(n) => push_i64(t, *n),
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
    match h.as_u64() {
        Some(v) => push_u64(t, v),
        None => t.extend_from_slice(itoa::Buffer::new().format(h.0).as_bytes()),
    }
}

/// `,"args":{...}`, or nothing when there are none. Every key is written with a leading comma;
/// the first one's becomes the `{`.
fn push_args(t: &mut Vec<u8>, a: &Args) {
    const ARGS: &[u8] = b",\"args\":";
    let start = t.len();
    t.extend_from_slice(ARGS);
    let open = t.len();
    if let Some(h) = a.fhash {
        t.extend_from_slice(b",\"fhash\":");
        push_hash(t, h);
    }
    if let Some(h) = a.hhash {
        t.extend_from_slice(b",\"hhash\":");
        push_hash(t, h);
    }
    if let Some(v) = a.size {
        t.extend_from_slice(b",\"size\":");
        push_i64(t, v);
    }
    if let Some(v) = a.ret {
        t.extend_from_slice(b",\"ret\":");
        push_i64(t, v);
    }
    if let Some(v) = a.offset {
        t.extend_from_slice(b",\"offset\":");
        push_i64(t, v);
    }
    if let Some(v) = &a.fname {
        t.extend_from_slice(b",\"fname\":");
        push_str(t, v);
    }
    if let Some(v) = &a.hostname {
        t.extend_from_slice(b",\"hostname\":");
        push_str(t, v);
    }
    if let Some(v) = &a.name {
        t.extend_from_slice(b",\"name\":");
        push_str(t, v);
    }
    if let Some(h) = a.value {
        t.extend_from_slice(b",\"value\":");
        push_hash(t, h);
    }
    for (k, v) in &a.other {
        t.push(b',');
        push_str(t, k);
        t.push(b':');
        push_arg(t, v);
    }
    if t.len() == open {
        t.truncate(start);
    } else {
        t[open] = b'{';
        t.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_numbers_at_every_length_edge() {
        let mut values = vec![0u64, u64::MAX, u64::MAX - 1];
        for k in 0..20 {
            let p = 10u64.pow(k);
            values.extend([p - 1, p, p + 1, p.saturating_mul(5), p / 2 * 3 + 7]);
        }
        for v in values {
            let mut t = b"x".to_vec();
            push_u64(&mut t, v);
            assert_eq!(t, format!("x{v}").as_bytes());
            let n = v as i64;
            let mut t = Vec::new();
            push_i64(&mut t, n);
            assert_eq!(t, n.to_string().as_bytes());
            let mut t = Vec::new();
            push_time(&mut t, v, TimeUnit::Us);
            assert_eq!(t, format!("{}.{:03}", v / 1000, v % 1000).as_bytes());
        }
    }
}
