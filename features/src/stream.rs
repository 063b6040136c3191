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
//!
//! A row's exclusive time needs every interval inside it at once, so each row keeps those intervals until a system
//! call event that starts after the row's end arrives on its thread: in completion or start order nothing inside the
//! row can come after that, and the row is settled ([`crate::exclusive::exclusive`]) and its intervals let go. An
//! interval that still arrives inside a settled row is [`Disorder`] too.
//!
//! An event that is no system call and that no row took by the time it is let go is outside every row: it goes to its
//! thread's no-call bucket ([`crate::nocall`]), whose intervals the thread keeps to the end for their exclusive time.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use compact_str::CompactString;
use datasets::strings::StringTable;
use datasets::vocab::op;
use datasets::{Event, Phase};
use foldhash::fast::RandomState;
use hashbrown::HashTable;
use rayon::prelude::*;

use crate::context::Open;
use crate::error::Error;
use crate::exclusive::{Interval, exclusive, ranks};
use crate::nocall;
use crate::offcpu;
use crate::options::BuildOptions;
use crate::outside::Outside;
use crate::row::Row;
use crate::span::{INCLUSIVE_ONLY, NO_ROW, Span};
use crate::syscall::op_name;

/// A row started at or before an event that had been dropped: the stream cannot attribute this input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disorder;

/// One row and what has been attributed to it so far.
#[derive(Clone, Debug)]
pub struct StreamRow {
    /// Position of the event in its stream, for a stable order.
    pub pos: u64,
    pub row: Row,
    /// Where the row's [`Cells`] are: shard, and index in it.
    pub shard: u32,
    pub local: u32,
}

/// What has been attributed to one row: (key, summed durations, count), one entry per key.
pub type Cells = Vec<(u32, u64, u64)>;

/// A row's exclusive time: the intervals inside it while more may come, then (layer, ns) once settled.
#[derive(Clone, Debug)]
pub enum Exclusive {
    Open(Vec<Interval>),
    Settled(Vec<(u32, u64)>),
}

impl Default for Exclusive {
    fn default() -> Self {
        Exclusive::Open(Vec::new())
    }
}

impl Exclusive {
    /// (layer, ns) of the row, settling it now if it is still open.
    pub fn settle(&mut self, rank: &[u32]) -> &[(u32, u64)] {
        if let Exclusive::Open(intervals) = self {
            *self = Exclusive::Settled(exclusive(intervals, rank));
        }
        match self {
            Exclusive::Settled(v) => v,
            Exclusive::Open(_) => unreachable!("settled above"),
        }
    }

    fn add(&mut self, iv: Interval) -> Result<(), Disorder> {
        match self {
            Exclusive::Open(v) => {
                v.push(iv);
                Ok(())
            }
            Exclusive::Settled(_) => Err(Disorder),
        }
    }
}

/// What the stream keeps of each row: its cells and its exclusive time.
#[derive(Default)]
pub struct RowState {
    pub cells: Vec<Cells>,
    pub exclusive: Vec<Exclusive>,
}

/// A row of one thread, for containment queries.
#[derive(Clone, Copy, Debug)]
struct RowSpan {
    ts: u64,
    end: u64,
    row: u32,
    layer: u32,
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
    pending: Vec<Pending>,
    /// End of the latest system call event.
    floor: u64,
    /// Latest start among dropped events.
    dropped: Option<u64>,
    /// Rows whose exclusive time a later event could still change.
    unsettled: Vec<RowSpan>,
    /// The events let go that no row holds.
    outside: Outside,
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
            unsettled: Vec::new(),
            outside: Outside::default(),
            first: u64::MAX,
            last: 0,
        }
    }

    /// Adds one event; `syscall` says whether it is a system call event (row or not), `bucket` whether it goes to the
    /// no-call bucket when no row holds it.
    fn add(
        &mut self,
        s: Span,
        syscall: bool,
        bucket: bool,
        state: &mut RowState,
        rank: &[u32],
    ) -> Result<(), Disorder> {
        self.first = self.first.min(s.ts);
        self.last = self.last.max(s.end);
        let held = self.count_in_rows(&s, state)?;
        if s.row != NO_ROW {
            if self.dropped.is_some_and(|d| s.ts <= d) {
                return Err(Disorder);
            }
            let (cells, excl) = (
                &mut state.cells[s.row as usize],
                &mut state.exclusive[s.row as usize],
            );
            for p in &mut self.pending {
                let e = &p.span;
                if e.ts >= s.ts && e.end <= s.end {
                    hit(cells, e.key, e.dur());
                    if let Some(iv) = e.interval_in(s.layer) {
                        excl.add(iv)?;
                    }
                    p.outside = false;
                }
            }
            self.insert_row(&s);
        }
        if syscall {
            self.unsettled.retain(|r| {
                let done = r.end < s.ts;
                if done {
                    state.exclusive[r.row as usize].settle(rank);
                }
                !done
            });
            if s.end > self.floor {
                self.floor = s.end;
                self.compact();
            }
        }
        let outside = bucket && !held;
        if s.ts < self.floor {
            self.drop_ts(s.ts);
            if outside {
                self.outside.add(&s);
            }
        } else {
            self.pending.push(Pending { span: s, outside });
        }
        Ok(())
    }

    /// Counts `s` for the rows already seen that contain it; whether there was one.
    fn count_in_rows(&self, s: &Span, state: &mut RowState) -> Result<bool, Disorder> {
        let mut held = false;
        let mut i = match self.rows.last() {
            Some(r) if r.ts <= s.ts => self.rows.len(),
            _ => self.rows.partition_point(|r| r.ts <= s.ts),
        };
        while i > 0 {
            i -= 1;
            let r = self.rows[i];
            if r.end >= s.end {
                held = true;
                hit(&mut state.cells[r.row as usize], s.key, s.dur());
                if let Some(iv) = s.interval_in(r.layer) {
                    state.exclusive[r.row as usize].add(iv)?;
                }
            } else if self.ends_sorted {
                break;
            }
            if r.ts.saturating_add(self.longest_row) < s.end {
                break;
            }
        }
        Ok(held)
    }

    fn insert_row(&mut self, s: &Span) {
        let r = RowSpan {
            ts: s.ts,
            end: s.end,
            row: s.row,
            layer: s.layer,
        };
        self.unsettled.push(r);
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
        let outside = &mut self.outside;
        self.pending.retain(|p| {
            let e = &p.span;
            let keep = e.ts >= floor;
            if !keep {
                dropped = Some(dropped.map_or(e.ts, |d| d.max(e.ts)));
                if p.outside {
                    outside.add(e);
                }
            }
            keep
        });
        self.dropped = dropped;
    }

    /// The thread's events that no row holds, once its input has ended: no later row can take those still pending.
    pub fn outside(&mut self) -> Outside {
        for p in self.pending.drain(..) {
            if p.outside {
                self.outside.add(&p.span);
            }
        }
        std::mem::take(&mut self.outside)
    }

    /// Events still held.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Rows whose intervals are still held for their exclusive time.
    pub fn unsettled(&self) -> usize {
        self.unsettled.len()
    }
}

/// An event a later row could still hold, and whether it is outside every row so far (a system call event never is:
/// it is a call, not time outside one).
#[derive(Clone, Copy, Debug)]
struct Pending {
    span: Span,
    outside: bool,
}

fn hit(cells: &mut Cells, key: u32, dur: u64) {
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
    layer: u32,
    syscall: bool,
    /// An event of a layer below the calls: the no-call bucket takes it when no row does ([`nocall::below_calls`]).
    bucket: bool,
    row: bool,
    /// The name is an open, whose flags give `direct`.
    open: bool,
    hash: u64,
}

/// Events are parsed on other cores, so each one arrives as a cache miss: ask for them this far ahead (4 and 8
/// measured the same; together about 8% less CPU for the whole build). A name longer than 24 bytes is in memory of
/// its own, asked for once its event has come (half as far ahead).
const PREFETCH_AHEAD: usize = 8;

/// Asks for the `len` bytes at `start`.
fn prefetch(start: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for offset in (0..len).step_by(64) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: prefetching is a hint that never faults; the address is not dereferenced.
        unsafe { _mm_prefetch(start.wrapping_add(offset).cast::<i8>(), _MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}

/// A batch this small (a chunk of the reader holds about 2,000 events) is attributed on the calling thread: waking
/// the pool for each one showed as scheduler time in the kernel (11% of a build's CPU with it, 9.5% without).
const PARALLEL_APPLY: usize = 1 << 14;

/// One event, resolved, for the shard that owns its thread.
#[derive(Clone, Copy, Debug)]
struct Item {
    thread: u32,
    syscall: bool,
    bucket: bool,
    /// `row` is the shard's row index.
    span: Span,
}

/// Some threads and what their rows have so far. Shards work in parallel.
#[derive(Default)]
pub struct Shard {
    pub threads: Vec<ThreadStream>,
    pub rows: RowState,
    /// Rows given to this shard so far.
    row_count: u32,
    items: Vec<Item>,
    disorder: bool,
}

impl Shard {
    fn apply(&mut self, rank: &[u32]) {
        let n = self.row_count as usize;
        self.rows.cells.resize_with(n, Cells::new);
        self.rows.exclusive.resize_with(n, Exclusive::default);
        for it in self.items.drain(..) {
            if self.disorder {
                continue;
            }
            let t = &mut self.threads[it.thread as usize];
            if t.add(it.span, it.syscall, it.bucket, &mut self.rows, rank)
                .is_err()
            {
                self.disorder = true;
            }
        }
    }
}

/// One input read in order: names, threads and rows are resolved here in one pass over each batch, then each
/// shard attributes its threads' events, the shards in parallel.
pub struct Stream<'o> {
    opts: &'o BuildOptions,
    /// (layer, name) → index into `key_names`, looked up by borrowed strings.
    keys: HashTable<KeyInfo>,
    hasher: RandomState,
    pub key_names: Vec<(CompactString, CompactString)>,
    /// Layers by index, and their ranks in the layer order.
    pub layer_names: Vec<CompactString>,
    pub layer_ranks: Vec<u32>,
    /// (pid, tid) → (shard, index in the shard).
    thread_index: HashMap<(u64, u64), (u32, u32), RandomState>,
    last_thread: Option<((u64, u64), (u32, u32))>,
    pub rows: Vec<StreamRow>,
    pub opens: Vec<Open>,
    /// The names of this one input (input 0 of its rows, opens and strings).
    pub strings: StringTable,
    pub shards: Vec<Shard>,
    /// The run label of this input's rows.
    run: Option<Arc<str>>,
}

impl<'o> Stream<'o> {
    pub fn new(opts: &'o BuildOptions, shards: usize, run: Option<Arc<str>>) -> Self {
        Stream {
            opts,
            keys: HashTable::new(),
            hasher: RandomState::default(),
            key_names: Vec::new(),
            layer_names: Vec::new(),
            layer_ranks: Vec::new(),
            thread_index: HashMap::default(),
            last_thread: None,
            rows: Vec::new(),
            opens: Vec::new(),
            strings: StringTable::new(),
            shards: (0..shards.max(1)).map(|_| Shard::default()).collect(),
            run,
        }
    }

    /// The run label of this input's rows.
    pub fn run(&self) -> Option<&Arc<str>> {
        self.run.as_ref()
    }

    /// Whether a row started at or before an event already dropped: this input needs every event in memory.
    pub fn disorder(&self) -> bool {
        self.shards.iter().any(|s| s.disorder)
    }

    /// Adds a batch; `pos` is the stream position of `events[0]`.
    pub fn add(&mut self, events: &[Event], pos: u64) -> Result<(), Error> {
        for (i, e) in events.iter().enumerate() {
            if let Some(ahead) = events.get(i + PREFETCH_AHEAD) {
                prefetch((ahead as *const Event).cast(), size_of::<Event>());
            }
            if let Some(near) = events.get(i + PREFETCH_AHEAD / 2) {
                prefetch(near.name.as_ptr(), near.name.len());
            }
            match e.ph {
                Phase::Complete | Phase::Instant => {}
                Phase::Metadata => {
                    self.strings.insert_event(e);
                    continue;
                }
                _ => continue,
            }
            let info = self.key(e)?;
            if info.open {
                self.opens.extend(Open::of(e, 0));
            }
            let (shard, thread) = self.thread(e.pid, e.tid);
            let row = if info.row {
                self.push_row(e, pos + i as u64, shard)?
            } else {
                NO_ROW
            };
            self.shards[shard as usize].items.push(Item {
                thread,
                syscall: info.syscall,
                bucket: info.bucket,
                span: Span {
                    ts: e.ts_ns,
                    end: e.end_ns(),
                    key: info.key,
                    layer: info.layer,
                    row,
                },
            });
        }
        let rank = &self.layer_ranks;
        if events.len() < PARALLEL_APPLY {
            self.shards.iter_mut().for_each(|s| s.apply(rank));
        } else {
            self.shards.par_iter_mut().for_each(|s| s.apply(rank));
        }
        Ok(())
    }

    fn key(&mut self, e: &Event) -> Result<KeyInfo, Error> {
        let filed = offcpu::feature(e);
        let (cat, name) = match &filed {
            Some((c, n)) => (c, n),
            None => (&e.cat, &e.name),
        };
        let hash = {
            let mut h = self.hasher.build_hasher();
            h.write(cat.as_bytes());
            h.write_u8(0xff);
            h.write(name.as_bytes());
            h.finish()
        };
        let names = &self.key_names;
        let same = |k: &KeyInfo| {
            let (c, n) = &names[k.key as usize];
            n == name && c == cat
        };
        if let Some(&info) = self.keys.find(hash, same) {
            return Ok(info);
        }
        let Ok(key) = u32::try_from(self.key_names.len()) else {
            return Err(Error::TooMany {
                what: "event names",
                limit: u32::MAX.into(),
            });
        };
        let syscall = self.opts.is_row_layer(cat);
        let layer = match self.layer_names.iter().position(|l| l == cat) {
            _ if offcpu::is_inclusive(name) => INCLUSIVE_ONLY,
            Some(l) => l as u32,
            None => {
                self.layer_names.push(cat.clone());
                self.layer_ranks = ranks(&self.layer_names);
                self.layer_names.len() as u32 - 1
            }
        };
        let info = KeyInfo {
            key,
            layer,
            syscall,
            bucket: self.opts.no_call && !syscall && nocall::below_calls(cat),
            row: syscall && self.opts.is_row_op(name),
            open: op::opens(op_name(name)),
            hash,
        };
        self.key_names.push((cat.clone(), name.clone()));
        self.keys.insert_unique(hash, info, |k| k.hash);
        Ok(info)
    }

    /// The row's index in its shard.
    fn push_row(&mut self, e: &Event, pos: u64, shard: u32) -> Result<u32, Error> {
        let count = &mut self.shards[shard as usize].row_count;
        let local = *count;
        if local == NO_ROW {
            return Err(Error::TooMany {
                what: "system call rows",
                limit: NO_ROW.into(),
            });
        }
        *count += 1;
        self.rows.push(StreamRow {
            pos,
            row: Row::of(e, self.run.as_ref(), 0),
            shard,
            local,
        });
        Ok(local)
    }

    /// New threads go to the shards in turn.
    fn thread(&mut self, pid: u64, tid: u64) -> (u32, u32) {
        if let Some((t, i)) = self.last_thread
            && t == (pid, tid)
        {
            return i;
        }
        let i = match self.thread_index.get(&(pid, tid)) {
            Some(&i) => i,
            None => {
                let shard = self.thread_index.len() % self.shards.len();
                let threads = &mut self.shards[shard].threads;
                let i = (shard as u32, threads.len() as u32);
                threads.push(ThreadStream::new(pid, tid));
                self.thread_index.insert((pid, tid), i);
                i
            }
        };
        self.last_thread = Some(((pid, tid), i));
        i
    }
}
