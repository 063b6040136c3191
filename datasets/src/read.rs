//! Streaming, parallel trace reading.
//!
//! One dispatcher thread reads each file in order and cuts it into chunks of text: for a BGZF
//! file it finds members through their size field and hands groups of still-compressed members
//! to the worker pool, which inflates and parses them on every core; for a single-member gzip it
//! inflates on its own thread and hands text chunks to the pool for parsing; a plain file it
//! reads in chunks. Results come back in file order through a bounded queue, so memory does not
//! grow with the file size. A line that spans two chunks is stitched and parsed in order.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use flate2::Decompress;
use rayon::ThreadPool;

use crate::error::{Error, Result};
use crate::parse::{LineError, parse_line, parse_line_into, parse_written_line};
use crate::salvage::{self, BadMember, Damage, Gap, Ledger};
use crate::strings::StringTable;
use crate::{ArgValue, Event, Phase, TimeUnit};
use crate::{formats, gz};

/// Text handed to one parse task.
const CHUNK_TEXT: usize = 1 << 20;
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
    pub events: u64,
    pub skipped: u64,
    /// Uncompressed bytes.
    pub text_bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ReadStats {
    pub lines: u64,
    pub events: u64,
    pub skipped: u64,
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
    /// 1-based line number of the first line this batch covers.
    pub first_line: u64,
    pub events: Vec<Event>,
}

/// A whole trace in memory: events in file order and the strings their hashes resolve to.
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
    for batch in reader.by_ref() {
        let batch = batch?;
        for e in &batch.events {
            strings.insert_event(e);
        }
        events.extend(batch.events);
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
    pub events: Vec<Event>,
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

fn parse_text(text: &[u8], unit: TimeUnit, skip_invalid: bool) -> Parsed {
    let mut p = Parsed {
        head: Vec::new(),
        head_event: false,
        // Lines are rarely shorter; a shorter one costs a reallocation, not a failure.
        events: Vec::with_capacity(text.len() / 128 + 1),
        errors: Vec::new(),
        lines: 0,
        tail: Vec::new(),
        text_bytes: text.len() as u64,
        damage: None,
        gaps: Vec::new(),
    };
    let mut start = 0;
    while start < text.len() {
        let rest = &text[start..];
        let (len, parsed) = match parse_written_line(rest, unit, &mut p.events) {
            Some(len) => (len, Ok(true)),
            None => match memchr::memchr(b'\n', rest) {
                Some(len) => (len, parse_line_into(&rest[..len], unit, &mut p.events)),
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
            Ok(true) => p.head_event |= idx == 0,
            Err(e) => {
                let later = p.events.len() - usize::from(p.head_event);
                p.errors.push((idx, later, e));
                // The first line may be the end of a line the previous chunk began.
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
    p
}

enum Item {
    Start(FileStats),
    Chunk(Receiver<Parsed>),
    /// With [`ReadOptions::salvage`]: compressed bytes skipped to the next BGZF header.
    Gap(Range<u64>, String),
    End(Option<End>),
}

enum End {
    Io(io::Error),
    Damaged(u64, String),
    Failed(Error),
}

struct Dispatch {
    pool: Arc<ThreadPool>,
    tx: SyncSender<Item>,
    opts: ReadOptions,
}

/// The receiver hung up: stop reading.
struct Stop;

impl Dispatch {
    fn send(&self, item: Item) -> Result<(), Stop> {
        self.tx.send(item).map_err(|_| Stop)
    }

    fn spawn(&self, job: impl FnOnce() -> Parsed + Send + 'static) -> Result<(), Stop> {
        let (tx, rx) = sync_channel(1);
        self.pool.spawn_fifo(move || {
            let _ = tx.send(job());
        });
        self.send(Item::Chunk(rx))
    }

    fn unit(&self, first_text: &[u8]) -> (TimeUnit, UnitSource) {
        if let Some(u) = header_unit(first_text) {
            (u, UnitSource::Header)
        } else if let Some(u) = self.opts.time_unit {
            (u, UnitSource::Option)
        } else {
            (TimeUnit::Us, UnitSource::Default)
        }
    }

    fn start(
        &self,
        path: &Path,
        compression: Compression,
        first_text: &[u8],
    ) -> Result<TimeUnit, Stop> {
        let (time_unit, unit_source) = self.unit(first_text);
        self.send(Item::Start(FileStats {
            path: path.to_path_buf(),
            compression,
            time_unit,
            unit_source,
            lines: 0,
            events: 0,
            skipped: 0,
            text_bytes: 0,
        }))?;
        Ok(time_unit)
    }

    /// A file of another tool's format ([`formats`]), read whole on this thread.
    fn foreign(&self, path: &Path, format: formats::Format) -> Result<(), Stop> {
        let f = formats::read(path, format, self.opts.skip_invalid);
        self.send(Item::Start(FileStats {
            time_unit: TimeUnit::Ns,
            unit_source: UnitSource::Header,
            ..placeholder(path)
        }))?;
        let (tx, rx) = sync_channel(1);
        let _ = tx.send(Parsed {
            head: Vec::new(),
            head_event: false,
            events: f.events,
            errors: f.errors,
            // A binary file counts as one line, so that its events are taken.
            lines: f.lines.max(1),
            tail: Vec::new(),
            text_bytes: f.bytes,
            damage: None,
            gaps: Vec::new(),
        });
        self.send(Item::Chunk(rx))?;
        self.send(Item::End(f.fatal.map(End::Failed)))
    }

    fn file(&self, path: &Path) -> Result<(), Stop> {
        if let Some(format) = formats::detect(path) {
            return self.foreign(path, format);
        }
        let mut f = match File::open(path) {
            Ok(f) => BufReader::with_capacity(1 << 17, f),
            Err(e) => {
                self.send(Item::Start(placeholder(path)))?;
                return self.send(Item::End(Some(End::Io(e))));
            }
        };
        let mut magic = [0u8; gz::FIXED_HEADER];
        let n = match read_full(&mut f, &mut magic) {
            Ok(n) => n,
            Err(e) => {
                self.send(Item::Start(placeholder(path)))?;
                return self.send(Item::End(Some(End::Io(e))));
            }
        };
        let prefix = Cursor::new(magic[..n].to_vec());
        if n >= 2 && magic[..2] == [0x1f, 0x8b] {
            self.gzip(path, &magic[..n], f)
        } else {
            self.stream(path, Compression::Plain, prefix.chain(f), None, |e| {
                End::Io(e)
            })
        }
    }

    fn gzip(&self, path: &Path, fixed: &[u8], mut f: BufReader<File>) -> Result<(), Stop> {
        let mut extra = Vec::new();
        if fixed.len() == gz::FIXED_HEADER && fixed[3] & 4 != 0 {
            let xlen = usize::from(u16::from_le_bytes([fixed[10], fixed[11]]));
            extra.resize(xlen, 0);
            let n = read_full(&mut f, &mut extra).unwrap_or(0);
            extra.truncate(n);
        }
        let mut first = fixed.to_vec();
        first.extend_from_slice(&extra);
        if gz::bgzf_block_size(fixed, &extra).is_some() {
            self.bgzf(path, first, f)
        } else {
            self.stream_gzip(path, Compression::Gzip, 0, first, f, None)
        }
    }

    /// Inflates on this thread (gzip that has no member sizes) and parses on the pool.
    fn stream_gzip(
        &self,
        path: &Path,
        compression: Compression,
        offset: u64,
        already: Vec<u8>,
        f: BufReader<File>,
        unit: Option<TimeUnit>,
    ) -> Result<(), Stop> {
        let counted = Arc::new(std::sync::atomic::AtomicU64::new(offset));
        let input = Counting {
            inner: Cursor::new(already).chain(f),
            count: counted.clone(),
        };
        let dec = flate2::read::MultiGzDecoder::new(input);
        self.stream(path, compression, dec, unit, move |e| {
            End::Damaged(
                counted.load(std::sync::atomic::Ordering::Relaxed),
                e.to_string(),
            )
        })
    }

    /// Cuts text from `r` into newline-aligned chunks for the pool.
    fn stream(
        &self,
        path: &Path,
        compression: Compression,
        mut r: impl Read,
        mut unit: Option<TimeUnit>,
        on_err: impl Fn(io::Error) -> End,
    ) -> Result<(), Stop> {
        let skip = self.opts.skip_invalid;
        let mut carry = Vec::new();
        loop {
            let mut buf = Vec::with_capacity(CHUNK_TEXT + carry.len());
            buf.append(&mut carry);
            let res = fill(&mut r, &mut buf, CHUNK_TEXT);
            let u = match unit {
                Some(u) => u,
                None => {
                    let u = self.start(path, compression, &buf)?;
                    unit = Some(u);
                    u
                }
            };
            let eof = match &res {
                Ok(eof) => *eof,
                Err(_) => true,
            };
            if !eof && let Some(last) = memchr::memrchr(b'\n', &buf) {
                carry = buf.split_off(last + 1);
            }
            if !buf.is_empty() {
                self.spawn(move || parse_text(&buf, u, skip))?;
            }
            if eof {
                return self.send(Item::End(res.err().map(&on_err)));
            }
        }
    }

    fn bgzf(&self, path: &Path, mut first: Vec<u8>, mut f: BufReader<File>) -> Result<(), Stop> {
        let skip = self.opts.skip_invalid;
        let salvage = self.opts.salvage;
        let mut offset = 0u64;
        let mut unit = None;
        loop {
            // Group members until they hold about CHUNK_TEXT of text.
            let mut group = Vec::with_capacity(CHUNK_TEXT / 3);
            let mut members: Vec<(usize, usize, u64)> = Vec::new();
            let mut text = 0usize;
            let mut fallback = None;
            while text < CHUNK_TEXT {
                let head = if first.is_empty() {
                    let mut fixed = [0u8; gz::FIXED_HEADER];
                    let n = read_full(&mut f, &mut fixed).unwrap_or(0);
                    let mut h = fixed[..n].to_vec();
                    if n == gz::FIXED_HEADER && fixed[3] & 4 != 0 {
                        let mut extra =
                            vec![0; usize::from(u16::from_le_bytes([fixed[10], fixed[11]]))];
                        let m = read_full(&mut f, &mut extra).unwrap_or(0);
                        h.extend_from_slice(&extra[..m]);
                    }
                    h
                } else {
                    std::mem::take(&mut first)
                };
                if head.is_empty() {
                    break;
                }
                let size = (head.len() >= gz::FIXED_HEADER)
                    .then(|| {
                        gz::bgzf_block_size(&head[..gz::FIXED_HEADER], &head[gz::FIXED_HEADER..])
                    })
                    .flatten()
                    .filter(|s| *s >= head.len() + 8);
                let Some(size) = size else {
                    fallback = Some((head, false));
                    break;
                };
                let start = group.len();
                group.extend_from_slice(&head);
                group.resize(start + size, 0);
                let n = read_full(&mut f, &mut group[start + head.len()..]).unwrap_or(0);
                if head.len() + n < size {
                    let cut = group.split_off(start);
                    fallback = Some((cut[..head.len() + n].to_vec(), true));
                    break;
                }
                let isize = u32::from_le_bytes(
                    group[start + size - 4..start + size]
                        .try_into()
                        .expect("4 bytes"),
                );
                text += isize as usize;
                members.push((start, size, offset));
                offset += size as u64;
            }
            if unit.is_none() {
                let mut peek = Vec::new();
                if let Some(&(s, n, _)) = members.first() {
                    let _ = gz::inflate_member(
                        &mut Decompress::new(false),
                        &group[s..s + n],
                        &mut peek,
                    );
                }
                unit = Some(self.start(path, Compression::Bgzf, &peek)?);
            }
            let u = unit.expect("set above");
            let had_members = !members.is_empty();
            if had_members {
                self.spawn(move || inflate_and_parse(&group, &members, u, skip, salvage))?;
            }
            match fallback {
                None if !had_members => return self.send(Item::End(None)),
                None => {}
                Some((_, false)) if salvage => {
                    let next = salvage::next_bgzf_header(&mut f, offset + 1);
                    let end = match &next {
                        Ok(Some(at)) => *at,
                        _ => f.seek(SeekFrom::End(0)).unwrap_or(offset),
                    };
                    let msg = match &next {
                        Err(e) => format!("not a BGZF member header; looking for the next: {e}"),
                        Ok(_) => "not a BGZF member header".to_owned(),
                    };
                    self.send(Item::Gap(offset..end, msg))?;
                    match next {
                        Ok(Some(at)) if f.seek(SeekFrom::Start(at)).is_ok() => offset = at,
                        _ => return self.send(Item::End(None)),
                    }
                }
                Some((bytes, truncated)) => {
                    let at = offset;
                    return if truncated {
                        let dec = flate2::read::MultiGzDecoder::new(Cursor::new(bytes));
                        let file_len = at + dec.get_ref().get_ref().len() as u64;
                        self.stream(path, Compression::Bgzf, dec, unit, move |e| {
                            End::Damaged(
                                at,
                                format!(
                                    "the member starting here is cut short at byte {file_len}: {e}"
                                ),
                            )
                        })
                    } else {
                        self.stream_gzip(path, Compression::Bgzf, at, bytes, f, unit)
                    };
                }
            }
        }
    }
}

fn placeholder(path: &Path) -> FileStats {
    FileStats {
        path: path.to_path_buf(),
        compression: Compression::Plain,
        time_unit: TimeUnit::Us,
        unit_source: UnitSource::Default,
        lines: 0,
        events: 0,
        skipped: 0,
        text_bytes: 0,
    }
}

thread_local! {
    static INFLATER: std::cell::RefCell<Decompress> = std::cell::RefCell::new(Decompress::new(false));
}

fn inflate_and_parse(
    group: &[u8],
    members: &[(usize, usize, u64)],
    unit: TimeUnit,
    skip: bool,
    salvage: bool,
) -> Parsed {
    let mut text = Vec::with_capacity(members.len() * gz::MAX_BLOCK);
    let mut bad = Vec::new();
    INFLATER.with_borrow_mut(|d| {
        for &(s, n, off) in members {
            let before = text.len();
            if let Err(msg) = gz::inflate_member(d, &group[s..s + n], &mut text) {
                text.truncate(before);
                bad.push(BadMember {
                    text_at: before,
                    bytes: off..off + n as u64,
                    msg,
                });
                if !salvage {
                    break;
                }
            }
        }
    });
    if salvage {
        return salvage::parse_around(&text, &bad, unit, skip, parse_text);
    }
    let mut p = parse_text(&text, unit, skip);
    p.damage = bad.pop().map(|b| (b.bytes.start, b.msg));
    p
}

/// The unit a datacrumbs header near the top of the file declares (`args.time_unit`).
fn header_unit(text: &[u8]) -> Option<TimeUnit> {
    text.split(|&b| b == b'\n')
        .take(8)
        .find_map(|line| match parse_line(line, TimeUnit::Us) {
            Ok(Some(e)) if e.ph == Phase::Metadata => match e.args.get("time_unit") {
                Some(ArgValue::Str(s)) => TimeUnit::parse(s),
                _ => None,
            },
            _ => None,
        })
}

/// Reads until `buf` is full or the input ends.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Appends up to `want` bytes; `Ok(true)` at end of input.
fn fill(r: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    let target = buf.len() + want;
    while buf.len() < target {
        let n = r
            .by_ref()
            .take((target - buf.len()) as u64)
            .read_to_end(buf)?;
        if n == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

struct Counting<R> {
    inner: R,
    count: Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Streams batches of events from files in order. See the module documentation.
pub struct TraceReader {
    rx: Option<Receiver<Item>>,
    _dispatcher: JoinHandle<()>,
    opts: ReadOptions,
    stats: ReadStats,
    ready: VecDeque<Result<Batch>>,
    source: Option<Arc<Path>>,
    /// Lines of the current file completed so far.
    line: u64,
    carry: Vec<u8>,
    /// The current file's ids around its gaps.
    ledger: Ledger,
    /// The previous chunk ended in a gap, so this one's first line may be the end of a cut line.
    after_gap: bool,
}

impl TraceReader {
    pub fn open(paths: &[PathBuf], opts: ReadOptions) -> Result<TraceReader> {
        let threads = if opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            opts.threads
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("dc-read-{i}"))
            .build()
            .map_err(|e| Error::io("<thread pool>", io::Error::other(e)))?;
        let (tx, rx) = sync_channel(threads * 2 + 2);
        let d = Dispatch {
            pool: Arc::new(pool),
            tx,
            opts: opts.clone(),
        };
        let paths = paths.to_vec();
        let dispatcher = std::thread::Builder::new()
            .name("dc-read-dispatch".into())
            .spawn(move || {
                for p in &paths {
                    if d.file(p).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::io("<dispatcher thread>", e))?;
        Ok(TraceReader {
            rx: Some(rx),
            _dispatcher: dispatcher,
            opts,
            stats: ReadStats::default(),
            ready: VecDeque::new(),
            source: None,
            line: 0,
            carry: Vec::new(),
            ledger: Ledger::default(),
            after_gap: false,
        })
    }

    /// Counts so far; complete once the iterator has ended.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    fn path(&self) -> PathBuf {
        self.source
            .as_deref()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    fn fail(&mut self, e: Error) {
        self.ready.push_back(Err(e));
        self.rx = None;
    }

    fn line_error(&self, line: u64, e: LineError) -> Error {
        Error::Parse {
            path: self.path(),
            line,
            field: e.field.into_owned(),
            msg: e.msg,
        }
    }

    fn count(&mut self, events: u64, lines: u64, skipped: u64, text: u64) {
        let f = self.stats.files.last_mut().expect("Start precedes data");
        f.events += events;
        f.lines += lines;
        f.skipped += skipped;
        f.text_bytes += text;
        self.stats.events += events;
        self.stats.lines += lines;
        self.stats.skipped += skipped;
        self.stats.text_bytes += text;
    }

    fn chunk(&mut self, mut p: Parsed) {
        let unit = self
            .stats
            .files
            .last()
            .expect("Start precedes data")
            .time_unit;
        if p.gaps.first().is_some_and(|g| g.cuts_carry) {
            self.carry.clear();
        }
        if std::mem::take(&mut self.after_gap) && self.carry.is_empty() {
            p.errors.retain(|(i, _, _)| *i != 0);
        }
        if p.lines == 0 && p.gaps.is_empty() {
            self.carry.extend_from_slice(&p.tail);
            self.count(0, 0, 0, p.text_bytes);
            return self.damaged(p.damage);
        }
        let first_line = self.line + 1;
        let mut shift = 0isize;
        if !self.carry.is_empty() {
            self.carry.extend_from_slice(&p.head);
            if p.head_event {
                p.events.remove(0);
                shift -= 1;
            }
            p.errors.retain(|(i, _, _)| *i != 0);
            p.head_event = false;
            match parse_line(&self.carry, unit) {
                Ok(None) => {}
                Ok(Some(e)) => {
                    p.events.insert(0, e);
                    p.head_event = true;
                    shift += 1;
                }
                Err(e) => p.errors.insert(0, (0, 0, e)),
            }
            self.carry.clear();
        }
        let mut skipped = 0;
        let mut fatal = None;
        for (i, later, e) in p.errors {
            if self.opts.skip_invalid {
                skipped += 1;
                if self.stats.skipped_examples.len() < SKIP_EXAMPLES {
                    let msg = self.line_error(first_line + i, e).to_string();
                    self.stats.skipped_examples.push(msg);
                }
            } else {
                p.events
                    .truncate(later + usize::from(p.head_event && i > 0));
                fatal = Some(self.line_error(first_line + i, e));
                break;
            }
        }
        self.line += p.lines;
        self.carry = p.tail;
        self.count(p.events.len() as u64, p.lines, skipped, p.text_bytes);
        self.account(&p.events, p.gaps, shift);
        if !p.events.is_empty() {
            let source = self.source.clone().expect("Start precedes data");
            self.ready.push_back(Ok(Batch {
                source,
                first_line,
                events: p.events,
            }));
        }
        if let Some(e) = fatal {
            return self.fail(e);
        }
        self.damaged(p.damage);
    }

    /// Follows the ids of a chunk's events, opening each gap where it falls among them.
    fn account(&mut self, events: &[Event], gaps: Vec<Gap>, shift: isize) {
        let path = self.path();
        let mut gaps = gaps.into_iter().peekable();
        for (i, e) in events.iter().enumerate() {
            while let Some(g) = gaps.next_if(|g| g.events_before.saturating_add_signed(shift) <= i)
            {
                self.open_gap(&path, g.bytes, g.msg);
            }
            if let Some(id) = e.id {
                self.ledger.see(id, &mut self.stats.damage);
            }
        }
        for g in gaps {
            self.after_gap = g.at_end;
            self.open_gap(&path, g.bytes, g.msg);
        }
    }

    fn open_gap(&mut self, path: &Path, bytes: Range<u64>, msg: String) {
        let d = Damage {
            path: path.to_path_buf(),
            bytes,
            msg,
            lost_ids: None,
        };
        self.ledger.open(&mut self.stats.damage, d);
    }

    /// With [`ReadOptions::salvage`], a gap that no chunk of this file holds: what the file
    /// reader skipped, or the end of a file cut short. The line it cut is dropped.
    fn gap(&mut self, bytes: Range<u64>, msg: String) {
        self.carry.clear();
        self.after_gap = true;
        let path = self.path();
        self.open_gap(&path, bytes, msg);
    }

    fn damaged(&mut self, damage: Option<(u64, String)>) {
        if let Some((offset, msg)) = damage {
            let e = Error::Damaged {
                path: self.path(),
                offset,
                line: self.line,
                msg,
            };
            self.fail(e);
        }
    }

    fn end(&mut self, end: Option<End>) {
        match end {
            Some(End::Io(e)) => {
                let e = Error::io(self.path(), e);
                self.fail(e)
            }
            Some(End::Damaged(offset, msg)) if self.opts.salvage => {
                let end = std::fs::metadata(self.path()).map_or(offset, |m| m.len());
                self.gap(offset..end, msg);
            }
            Some(End::Damaged(offset, msg)) => self.damaged(Some((offset, msg))),
            Some(End::Failed(e)) => self.fail(e),
            None if !self.carry.is_empty() => {
                let carry = std::mem::take(&mut self.carry);
                let p = Parsed {
                    head: Vec::new(),
                    head_event: false,
                    events: Vec::new(),
                    errors: Vec::new(),
                    lines: 0,
                    tail: Vec::new(),
                    text_bytes: 0,
                    damage: None,
                    gaps: Vec::new(),
                };
                // Parse the unterminated last line as if it ended with a newline.
                self.carry = carry;
                self.chunk(Parsed { lines: 1, ..p });
            }
            None => {}
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Some(b);
            }
            let item = self.rx.as_ref()?.recv();
            match item {
                Err(_) => {
                    self.rx = None;
                    return None;
                }
                Ok(Item::Start(fs)) => {
                    self.source = Some(Arc::from(fs.path.as_path()));
                    self.stats.files.push(fs);
                    self.line = 0;
                    self.carry.clear();
                    self.ledger = Ledger::default();
                    self.after_gap = false;
                }
                Ok(Item::Gap(bytes, msg)) => self.gap(bytes, msg),
                Ok(Item::Chunk(rx)) => match rx.recv() {
                    Ok(p) => self.chunk(p),
                    Err(_) => {
                        let e = Error::io(self.path(), io::Error::other("a reader worker stopped"));
                        self.fail(e);
                    }
                },
                Ok(Item::End(end)) => self.end(end),
            }
        }
    }
}
