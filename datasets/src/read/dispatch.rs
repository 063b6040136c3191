//! The dispatcher: one thread reads each file in order and cuts it into chunks for the worker
//! pool (groups of BGZF members, text inflated from plain gzip, or plain text), finding each
//! file's format and time unit, and in salvage mode the next intact member after damage.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use libdeflater::Decompressor;
use rayon::ThreadPool;

use super::around;
use super::parsed::{CHUNK_TEXT, Parsed, parse_text};
use super::spare::Spare;
use super::stats::{Compression, FileStats, ReadOptions, UnitSource};
use crate::error::{Error, Result};
use crate::parse::parse_line;
use crate::salvage::{self, BadMember};
use crate::{ArgValue, Phase, TimeUnit};
use crate::{formats, gz};

/// Starts the worker pool and the dispatcher thread, which reads `paths` in order and sends
/// what it finds through the returned queue.
pub(super) fn start(paths: &[PathBuf], opts: &ReadOptions) -> Result<Started> {
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
    let depth = threads * 2 + 2;
    let (tx, rx) = sync_channel(depth);
    let spare = Arc::new(Spare::new(depth + threads));
    let digests = Arc::new(AtomicBool::new(false));
    let d = Dispatch {
        pool: Arc::new(pool),
        tx,
        spare: spare.clone(),
        digests: digests.clone(),
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
    Ok(Started {
        rx,
        dispatcher,
        spare,
        digests,
    })
}

/// The reader's ends of what [`start`] started.
pub(super) struct Started {
    pub rx: Receiver<Item>,
    pub dispatcher: JoinHandle<()>,
    pub spare: Arc<Spare>,
    pub digests: Arc<AtomicBool>,
}

pub(super) enum Item {
    Start(FileStats),
    Chunk(Receiver<Parsed>),
    /// With [`ReadOptions::salvage`]: compressed bytes skipped to the next BGZF header.
    Gap(Range<u64>, String),
    End(Option<End>),
}

pub(super) enum End {
    Io(io::Error),
    Damaged(u64, String),
    Failed(Error),
}

struct Dispatch {
    pool: Arc<ThreadPool>,
    tx: SyncSender<Item>,
    spare: Arc<Spare>,
    /// Set by [`super::TraceReader::drop_duplicates`]: workers compute each event's digest.
    digests: Arc<AtomicBool>,
    opts: ReadOptions,
}

/// The receiver hung up: stop reading.
struct Stop;

impl Dispatch {
    fn send(&self, item: Item) -> Result<(), Stop> {
        self.tx.send(item).map_err(|_| Stop)
    }

    /// Runs `job` on the pool; it is told whether to compute each event's duplicate key ([`super::duplicates::key`]),
    /// which it does as it parses, while the event is in its cache: the reader's own thread only looks them up.
    fn spawn(&self, job: impl FnOnce(bool) -> Parsed + Send + 'static) -> Result<(), Stop> {
        let (tx, rx) = sync_channel(1);
        let keys = self.digests.clone();
        self.pool.spawn_fifo(move || {
            let _ = tx.send(job(keys.load(Ordering::Relaxed)));
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
            duplicates: 0,
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
            head_slot: false,
            events: f.events,
            digests: Vec::new(),
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
            let mut buf = self.spare.text(CHUNK_TEXT + carry.len());
            buf[..carry.len()].copy_from_slice(&carry);
            let (n, err) = fill(&mut r, &mut buf[carry.len()..]);
            let eof = err.is_some() || n < CHUNK_TEXT;
            buf.truncate(carry.len() + n);
            let u = match unit {
                Some(u) => u,
                None => {
                    let u = self.start(path, compression, &buf)?;
                    unit = Some(u);
                    u
                }
            };
            if !eof && let Some(last) = memchr::memrchr(b'\n', &buf) {
                carry = buf.split_off(last + 1);
            }
            if !buf.is_empty() {
                let spare = self.spare.clone();
                self.spawn(move |keys| {
                    let p = parse_text(&buf, u, skip, keys, spare.stale_events(), true);
                    spare.give_text(buf);
                    p
                })?;
            }
            if eof {
                return self.send(Item::End(err.map(&on_err)));
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
                    let len = gz::inflate_member(
                        &mut Decompressor::new(),
                        &group[s..s + n],
                        &mut peek,
                        0,
                    );
                    peek.truncate(len.unwrap_or(0));
                }
                unit = Some(self.start(path, Compression::Bgzf, &peek)?);
            }
            let u = unit.expect("set above");
            let had_members = !members.is_empty();
            if had_members {
                let spare = self.spare.clone();
                self.spawn(move |keys| {
                    inflate_and_parse(&group, &members, u, skip, keys, salvage, &spare)
                })?;
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
        duplicates: 0,
        text_bytes: 0,
    }
}

thread_local! {
    static INFLATER: std::cell::RefCell<Decompressor> = std::cell::RefCell::new(Decompressor::new());
}

fn inflate_and_parse(
    group: &[u8],
    members: &[(usize, usize, u64)],
    unit: TimeUnit,
    skip: bool,
    keys: bool,
    salvage: bool,
    spare: &Spare,
) -> Parsed {
    let mut text = spare.text(members.len() * gz::MAX_BLOCK);
    let mut len = 0;
    let mut bad = Vec::new();
    INFLATER.with_borrow_mut(|d| {
        for &(s, n, off) in members {
            match gz::inflate_member(d, &group[s..s + n], &mut text, len) {
                Ok(made) => len += made,
                Err(msg) => {
                    bad.push(BadMember {
                        text_at: len,
                        bytes: off..off + n as u64,
                        msg,
                    });
                    if !salvage {
                        break;
                    }
                }
            }
        }
    });
    text.truncate(len);
    let p = if salvage {
        around::parse_around(&text, &bad, unit, skip, |t, u, s, slot| {
            parse_text(t, u, s, keys, spare.stale_events(), slot)
        })
    } else {
        let mut p = parse_text(&text, unit, skip, keys, spare.stale_events(), true);
        p.damage = bad.pop().map(|b| (b.bytes.start, b.msg));
        p
    };
    spare.give_text(text);
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
    match fill(r, buf) {
        (n, None) => Ok(n),
        (_, Some(e)) => Err(e),
    }
}

/// Reads until `buf` is full or the input ends: the bytes read, and the error that stopped it, if one did.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
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
