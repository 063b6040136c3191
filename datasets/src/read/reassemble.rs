//! Reassembly: the reader's side of the queue. Chunks come back in file order; a line cut
//! between two chunks is stitched and parsed, line numbers and counts are kept per file, and
//! with salvage each gap is placed among the events and its lost ids found.

use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use super::dispatch::{self, End, Item};
use super::duplicates::{self, Seen};
use super::parsed::Parsed;
use super::spare::Spare;
use super::stats::{Batch, Compression, ReadOptions, ReadStats, SKIP_EXAMPLES};
use crate::error::{Error, Result};
use crate::parse::{LineError, parse_line};
use crate::salvage::{Damage, Gap, Ledger};
use crate::{Event, InputError};

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
    /// The current file's events, to drop exact duplicates when [`TraceReader::drop_duplicates`] asked to.
    seen: Option<Seen>,
    spare: Arc<Spare>,
    /// Tells the workers to compute each event's digest for `seen`.
    digests: Arc<AtomicBool>,
}

impl TraceReader {
    pub fn open(paths: &[PathBuf], opts: ReadOptions) -> Result<TraceReader> {
        let started = dispatch::start(paths, &opts)?;
        Ok(TraceReader {
            rx: Some(started.rx),
            _dispatcher: started.dispatcher,
            opts,
            stats: ReadStats::default(),
            ready: VecDeque::new(),
            source: None,
            line: 0,
            carry: Vec::new(),
            ledger: Ledger::default(),
            after_gap: false,
            seen: None,
            spare: started.spare,
            digests: started.digests,
        })
    }

    /// Gives a batch's events back once they are used, so the next chunk parses into their memory instead of new
    /// pages.
    pub fn recycle(&self, events: Vec<Event>) {
        self.spare.give_events(events);
    }

    /// Drops every event with an id that repeats an earlier event of its file exactly (see [`super::duplicates`]),
    /// counting it in [`ReadStats::duplicates`]. Without this, the reader gives every line as the file has it.
    pub fn drop_duplicates(mut self) -> TraceReader {
        self.seen = Some(Seen::default());
        self.digests.store(true, Ordering::Relaxed);
        self
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
        Error::Parse(InputError {
            file: self.path(),
            line: Some(line),
            field: Some(e.field.into_owned()),
            message: e.msg,
        })
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
        let digests = p.digests.len() == p.events.len();
        if !self.carry.is_empty() {
            self.carry.extend_from_slice(&p.head);
            p.errors.retain(|(i, _, _)| *i != 0);
            match parse_line(&self.carry, unit) {
                Ok(Some(e)) if p.head_event => {
                    if digests {
                        p.digests[0] = duplicates::key(&e);
                    }
                    p.events[0] = e;
                }
                Ok(Some(e)) => {
                    if digests {
                        p.digests.insert(0, duplicates::key(&e));
                    }
                    p.events.insert(0, e);
                    p.head_event = true;
                    shift += 1;
                }
                stitched => {
                    if p.head_event {
                        remove_head(&mut p, digests);
                        shift -= 1;
                    }
                    if let Err(e) = stitched {
                        p.errors.insert(0, (0, 0, e));
                    }
                }
            }
            self.carry.clear();
        } else if p.head_slot {
            remove_head(&mut p, digests);
            shift -= 1;
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
                let keep = later + usize::from(p.head_event && i > 0);
                p.events.truncate(keep);
                p.digests.truncate(keep);
                fatal = Some(self.line_error(first_line + i, e));
                break;
            }
        }
        self.line += p.lines;
        self.carry = p.tail;
        self.account(&p.events, p.gaps, shift);
        if let Some(seen) = &mut self.seen {
            let duplicates = seen.drop_repeats(&mut p.events, &p.digests);
            self.stats
                .files
                .last_mut()
                .expect("Start precedes data")
                .duplicates += duplicates;
            self.stats.duplicates += duplicates;
        }
        self.count(p.events.len() as u64, p.lines, skipped, p.text_bytes);
        if !p.events.is_empty() {
            let source = self.source.clone().expect("Start precedes data");
            self.ready.push_back(Ok(Batch {
                source,
                input: self.stats.files.len() as u32 - 1,
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
        if gaps.is_empty() {
            // Without a gap here, only the first id (closing earlier gaps) and the last one count.
            let first = events.iter().find_map(|e| e.id);
            let last = events.iter().rev().find_map(|e| e.id);
            for id in first.into_iter().chain(last) {
                self.ledger.see(id, &mut self.stats.damage);
            }
            return;
        }
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
                    head_slot: false,
                    events: Vec::new(),
                    digests: Vec::new(),
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
            None => self.empty_gzip(),
        }
    }

    /// A gzip file is written to hold a trace: one with no data at all is not a trace, whatever a plain empty file
    /// may be.
    fn empty_gzip(&mut self) {
        let path = self.path();
        let f = self.stats.files.last().expect("Start precedes End");
        let named_gz = path.extension().is_some_and(|x| x == "gz");
        if f.text_bytes > 0 || f.compression == Compression::Plain && !named_gz {
            return;
        }
        if self.stats.damage.iter().any(|d| d.path == path) {
            return;
        }
        let msg = if f.compression == Compression::Plain {
            "an empty file, not gzip data (0 bytes); a trace was expected"
        } else {
            "gzip data that holds nothing (0 bytes of text); a trace was expected"
        };
        self.fail(Error::NotATrace {
            path,
            msg: msg.into(),
        });
    }
}

/// Drops `events[0]` (and its digest) from a chunk.
fn remove_head(p: &mut Parsed, digests: bool) {
    p.events.remove(0);
    if digests {
        p.digests.remove(0);
    }
    p.head_event = false;
    p.head_slot = false;
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
                    if let Some(seen) = &mut self.seen {
                        *seen = Seen::default();
                    }
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
