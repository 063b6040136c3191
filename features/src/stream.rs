//! Exact attribution while the trace is read, with memory bounded per (pid, tid) instead of per file.
//!
//! Each event is counted for a row at the later of their two arrivals: an event that arrives after a row is checked
//! against the thread's rows (kept, they are the output), and a row that arrives after events takes the thread's
//! pending events that lie inside it. An event stays pending while a later row could still contain it. A thread
//! is in one system call at a time, so a later row starts no earlier than the end of the latest system call event
//! seen on the thread (the floor): pending events that start before the floor are dropped. Input in completion
//! order (enclosed events first, as DataCrumbs and DFTracer write) or in start order keeps only the events since the
//! thread's last system call. A row that starts at or before a dropped event's start breaks that rule (overlapping
//! system calls, shuffled input); the stream then reports [`Disorder`] and the caller attributes with every event
//! in memory, so no event is ever lost or misattributed.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use compact_str::CompactString;
use datasets::strings::StringTable;
use datasets::{ArgValue, Event, Hash, Phase};
use foldhash::fast::RandomState;
use hashbrown::HashTable;

use crate::build::BuildOptions;
use crate::sweep::{NO_ROW, Span};
use crate::syscall::op_name;

/// A row started at or before an event that had been dropped: the stream cannot attribute this input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disorder;

/// One row and what has been attributed to it so far.
#[derive(Clone, Debug)]
pub struct StreamRow {
    /// Position of the event in its stream, for a stable order.
    pub pos: u64,
    pub op: CompactString,
    pub pid: u64,
    pub tid: u64,
    pub ts: u64,
    pub dur: u64,
    pub fhash: Option<Hash>,
    pub fname: Option<String>,
    pub size: Option<i64>,
    /// (shard-local key, summed durations, count), one entry per key.
    pub cells: Vec<(u32, u64, u64)>,
}

/// A row of one thread, for containment queries.
#[derive(Clone, Copy, Debug)]
struct RowSpan {
    ts: u64,
    end: u64,
    row: u32,
}

/// The per-thread state.
#[derive(Debug)]
pub struct ThreadStream {
    pub pid: u64,
    pub tid: u64,
    /// Every row of the thread, sorted by start.
    rows: Vec<RowSpan>,
    /// Row ends do not decrease along `rows`, so a backward scan stops at the first row that ends too early.
    ends_sorted: bool,
    longest_row: u64,
    pending: Vec<Span>,
    /// End of the latest system call event.
    floor: u64,
    /// Latest start among dropped events.
    dropped: Option<u64>,
    /// Earliest start and latest end of the thread's events.
    pub first: u64,
    pub last: u64,
}

impl ThreadStream {
    fn new(pid: u64, tid: u64) -> Self {
        ThreadStream {
            pid,
            tid,
            rows: Vec::new(),
            ends_sorted: true,
            longest_row: 0,
            pending: Vec::new(),
            floor: 0,
            dropped: None,
            first: u64::MAX,
            last: 0,
        }
    }

    /// Adds one event; `syscall` says whether it is a system call event (row or not).
    fn add(&mut self, s: Span, syscall: bool, rows: &mut [StreamRow]) -> Result<(), Disorder> {
        self.first = self.first.min(s.ts);
        self.last = self.last.max(s.end);
        self.count_in_rows(&s, rows);
        if s.row != NO_ROW {
            if self.dropped.is_some_and(|d| s.ts <= d) {
                return Err(Disorder);
            }
            let cells = &mut rows[s.row as usize].cells;
            for e in &self.pending {
                if e.ts >= s.ts && e.end <= s.end {
                    hit(cells, e.key, e.dur());
                }
            }
            self.insert_row(&s);
        }
        if syscall && s.end > self.floor {
            self.floor = s.end;
            self.compact();
        }
        if s.ts < self.floor {
            self.drop_ts(s.ts);
        } else {
            self.pending.push(s);
        }
        Ok(())
    }

    /// Counts `s` for the rows already seen that contain it.
    fn count_in_rows(&self, s: &Span, rows: &mut [StreamRow]) {
        let mut i = match self.rows.last() {
            Some(r) if r.ts <= s.ts => self.rows.len(),
            _ => self.rows.partition_point(|r| r.ts <= s.ts),
        };
        while i > 0 {
            i -= 1;
            let r = self.rows[i];
            if r.end >= s.end {
                hit(&mut rows[r.row as usize].cells, s.key, s.dur());
            } else if self.ends_sorted {
                break;
            }
            if r.ts.saturating_add(self.longest_row) < s.end {
                break;
            }
        }
    }

    fn insert_row(&mut self, s: &Span) {
        let r = RowSpan {
            ts: s.ts,
            end: s.end,
            row: s.row,
        };
        let at = match self.rows.last() {
            Some(last) if last.ts > r.ts => self.rows.partition_point(|x| x.ts <= r.ts),
            _ => self.rows.len(),
        };
        if at > 0 && self.rows[at - 1].end > r.end
            || at < self.rows.len() && r.end > self.rows[at].end
        {
            self.ends_sorted = false;
        }
        self.longest_row = self.longest_row.max(s.dur());
        self.rows.insert(at, r);
    }

    fn drop_ts(&mut self, ts: u64) {
        self.dropped = Some(self.dropped.map_or(ts, |d| d.max(ts)));
    }

    /// Drops the pending events no later row can contain. Each event is dropped once, so this is O(1) per event.
    fn compact(&mut self) {
        let floor = self.floor;
        let mut dropped = self.dropped;
        self.pending.retain(|e| {
            let keep = e.ts >= floor;
            if !keep {
                dropped = Some(dropped.map_or(e.ts, |d| d.max(e.ts)));
            }
            keep
        });
        self.dropped = dropped;
    }

    /// Events still held.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

fn hit(cells: &mut Vec<(u32, u64, u64)>, key: u32, dur: u64) {
    match cells.iter_mut().find(|c| c.0 == key) {
        Some(c) => {
            c.1 += dur;
            c.2 += 1;
        }
        None => cells.push((key, dur, 1)),
    }
}

/// What a (cat, name) is to the stream.
#[derive(Clone, Copy, Debug)]
struct KeyInfo {
    key: u32,
    syscall: bool,
    row: bool,
    hash: u64,
}

/// Splits batches of events between shards by thread, and keeps the metadata strings.
pub struct Router {
    lists: Vec<Vec<u32>>,
    last: Option<((u64, u64), usize)>,
    pub strings: StringTable,
}

impl Router {
    pub fn new(shards: usize) -> Self {
        Router {
            lists: vec![Vec::new(); shards.max(1)],
            last: None,
            strings: StringTable::new(),
        }
    }

    /// The indices of the events each shard takes, in order.
    pub fn route(&mut self, events: &[Event]) -> &[Vec<u32>] {
        self.lists.iter_mut().for_each(Vec::clear);
        let n = self.lists.len() as u64;
        for (i, e) in events.iter().enumerate() {
            match e.ph {
                Phase::Complete | Phase::Instant => {}
                Phase::Metadata => {
                    self.strings.insert_event(e);
                    continue;
                }
                _ => continue,
            }
            let thread = (e.pid, e.tid);
            let shard = match self.last {
                Some((t, s)) if t == thread => s,
                _ => {
                    // Any fixed mix works: the output does not depend on which shard a thread lands in.
                    let h = (e.pid.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ e.tid)
                        .wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    let s = (((h >> 32) * n) >> 32) as usize;
                    self.last = Some((thread, s));
                    s
                }
            };
            self.lists[shard].push(i as u32);
        }
        &self.lists
    }
}

/// Some threads, with their rows and the feature names they saw.
pub struct Shard<'o> {
    opts: &'o BuildOptions,
    /// (layer, name) → index into `key_names`, looked up by borrowed strings.
    keys: HashTable<KeyInfo>,
    hasher: RandomState,
    pub key_names: Vec<(CompactString, CompactString)>,
    thread_index: HashMap<(u64, u64), u32, RandomState>,
    last_thread: Option<((u64, u64), u32)>,
    pub threads: Vec<ThreadStream>,
    pub rows: Vec<StreamRow>,
    pub disorder: bool,
}

impl<'o> Shard<'o> {
    pub fn new(opts: &'o BuildOptions) -> Self {
        Shard {
            opts,
            keys: HashTable::new(),
            hasher: RandomState::default(),
            key_names: Vec::new(),
            thread_index: HashMap::default(),
            last_thread: None,
            threads: Vec::new(),
            rows: Vec::new(),
            disorder: false,
        }
    }

    /// Adds `events[i]` for each `i` in `indices` ([`Router::route`]); `pos` is the stream position of `events[0]`.
    pub fn add_events(
        &mut self,
        events: &[Event],
        indices: &[u32],
        pos: u64,
    ) -> Result<(), anyhow::Error> {
        if self.disorder {
            return Ok(());
        }
        for &i in indices {
            if self.add(&events[i as usize], pos + u64::from(i))?.is_err() {
                self.disorder = true;
                return Ok(());
            }
        }
        Ok(())
    }

    fn add(&mut self, e: &Event, pos: u64) -> Result<Result<(), Disorder>, anyhow::Error> {
        let info = self.key(e)?;
        let row = if info.row {
            self.push_row(e, pos)?
        } else {
            NO_ROW
        };
        let t = self.thread(e.pid, e.tid);
        let span = Span {
            ts: e.ts_ns,
            end: e.end_ns(),
            key: info.key,
            row,
        };
        Ok(self.threads[t].add(span, info.syscall, &mut self.rows))
    }

    fn key(&mut self, e: &Event) -> Result<KeyInfo, anyhow::Error> {
        let hash = {
            let mut h = self.hasher.build_hasher();
            h.write(e.cat.as_bytes());
            h.write_u8(0xff);
            h.write(e.name.as_bytes());
            h.finish()
        };
        let names = &self.key_names;
        let same = |k: &KeyInfo| {
            let (cat, name) = &names[k.key as usize];
            *name == e.name && *cat == e.cat
        };
        if let Some(&info) = self.keys.find(hash, same) {
            return Ok(info);
        }
        let Ok(key) = u32::try_from(self.key_names.len()) else {
            anyhow::bail!("more than {} event names", u32::MAX)
        };
        let syscall = self.opts.syscall_cats.iter().any(|c| c == e.cat.as_str());
        let info = KeyInfo {
            key,
            syscall,
            row: syscall && self.opts.ops.iter().any(|op| op == op_name(&e.name)),
            hash,
        };
        self.key_names.push((e.cat.clone(), e.name.clone()));
        self.keys.insert_unique(hash, info, |k| k.hash);
        Ok(info)
    }

    fn push_row(&mut self, e: &Event, pos: u64) -> Result<u32, anyhow::Error> {
        let index = u32::try_from(self.rows.len()).ok().filter(|&i| i != NO_ROW);
        let Some(index) = index else {
            anyhow::bail!("more than {} system call rows", NO_ROW)
        };
        self.rows.push(StreamRow {
            pos,
            op: op_name(&e.name).into(),
            pid: e.pid,
            tid: e.tid,
            ts: e.ts_ns,
            dur: e.dur_ns,
            fhash: e.args.fhash,
            fname: e.args.fname.clone(),
            size: row_size(e),
            cells: Vec::new(),
        });
        Ok(index)
    }

    fn thread(&mut self, pid: u64, tid: u64) -> usize {
        if let Some((t, i)) = self.last_thread
            && t == (pid, tid)
        {
            return i as usize;
        }
        let next = self.threads.len() as u32;
        let i = *self.thread_index.entry((pid, tid)).or_insert(next);
        if i == next {
            self.threads.push(ThreadStream::new(pid, tid));
        }
        self.last_thread = Some(((pid, tid), i));
        i as usize
    }
}

/// Bytes a row transferred: `args.size`, or `args.size_sum` in DataCrumbs traces.
pub fn row_size(e: &Event) -> Option<i64> {
    e.args.size.or_else(|| match e.args.get("size_sum") {
        Some(ArgValue::Int(v)) => Some(*v),
        _ => None,
    })
}
