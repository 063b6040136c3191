//! From trace files to a [`FeatureMatrix`]: stream and attribute events per thread (or, when the input's order
//! needs it, keep every event and sweep), then assemble the columns.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};
use compact_str::CompactString;
use datasets::read::{ReadOptions, ReadStats, TraceReader};
use datasets::strings::StringTable;
use datasets::{Event, Phase};
use foldhash::fast::RandomState;
use rayon::prelude::*;
use regex::Regex;

use crate::assemble::{Row, RowTable, assemble};
use crate::context::Open;
use crate::matrix::FeatureMatrix;
use crate::stream::Stream;
use crate::sweep::{Cell, NO_ROW, Overlap, Span, sweep_thread};
use crate::syscall::{DEFAULT_OPS, DEFAULT_SYSCALL_CATS, op_name};

/// How events are attributed to system call rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Same pid and tid, interval inside the row's interval.
    #[default]
    Exact,
    /// The seed notebook's rule, for comparison: any overlap in time, on any thread.
    Notebook,
}

#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Operations that become rows, compared with [`op_name`] of the event name.
    pub ops: Vec<String>,
    /// Keep only rows whose resolved file name matches.
    pub file_regex: Option<Regex>,
    /// Add a `count::{cat}::{name}` column per feature.
    pub counts: bool,
    pub mode: Mode,
    pub read: ReadOptions,
    /// Layers whose events are system calls.
    pub syscall_cats: Vec<String>,
    /// The run label of each input file (the `run` column); files not listed have none.
    pub runs: HashMap<PathBuf, String>,
}

impl BuildOptions {
    /// The run label of an input file.
    pub fn run_of(&self, path: &Path) -> Option<Arc<str>> {
        self.runs.get(path).map(|r| Arc::from(r.as_str()))
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            ops: DEFAULT_OPS.iter().map(|s| s.to_string()).collect(),
            file_regex: None,
            counts: false,
            mode: Mode::Exact,
            read: ReadOptions::default(),
            syscall_cats: DEFAULT_SYSCALL_CATS.iter().map(|s| s.to_string()).collect(),
            runs: HashMap::new(),
        }
    }
}

/// Builds the matrix of every file, as one dataset.
pub fn build(paths: &[PathBuf], opts: &BuildOptions) -> Result<FeatureMatrix> {
    build_with(paths, opts, |_| {}).map(|(m, _)| m)
}

/// [`build`], calling `progress` with what has been read so far, and returning what was read.
///
/// Exact mode streams: files are read in parallel, each thread's events are attributed as they arrive (see
/// [`crate::stream`]), and threads are split across the rayon pool. Input the stream cannot attribute (a row that
/// starts before events already dropped, or one (pid, tid) in several files at overlapping times) is read again
/// with every event in memory, as is input with an error (so the error is the one a sequential read meets first).
/// Notebook mode always keeps every event.
pub fn build_with(
    paths: &[PathBuf],
    opts: &BuildOptions,
    progress: impl FnMut(&ReadStats) + Send,
) -> Result<(FeatureMatrix, ReadStats)> {
    let progress = Progress::new(progress, paths.len());
    if opts.mode == Mode::Exact {
        let give_up = AtomicBool::new(false);
        let results: Vec<Result<Option<Streamed>>> = paths
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map(|(i, p)| {
                let part = stream_files(std::slice::from_ref(p), i, opts, &progress, &give_up);
                if !matches!(part, Ok(Some(_))) {
                    give_up.store(true, Ordering::Relaxed);
                }
                part
            })
            .collect();
        // On an error the sequential read below finds it again, so the same error is reported as for one stream.
        let parts: Option<Vec<Streamed>> = results.into_iter().map(|r| r.ok().flatten()).collect();
        if let Some(parts) = parts
            && !threads_meet(&parts)
        {
            let stats = merge_stats(parts.iter().map(|p| &p.stats));
            return Ok((assemble_streams(parts, opts)?, stats));
        }
        progress.restart();
    }
    let mut reader = TraceReader::open(paths, opts.read.clone())?;
    let mut collector = Collector::new(opts);
    while let Some(batch) = reader.next() {
        let batch = batch?;
        let run = opts.run_of(&batch.source);
        for e in &batch.events {
            collector.add(e, run.as_ref())?;
        }
        progress.update(0, reader.stats());
    }
    let stats = reader.stats().clone();
    Ok((collector.finish()?, stats))
}

/// Builds the matrix of events already in memory (their `FH` metadata included).
pub fn from_events(events: &[Event], opts: &BuildOptions) -> Result<FeatureMatrix> {
    if opts.mode == Mode::Exact
        && let Some(m) = stream_events(events, opts)?
    {
        return Ok(m);
    }
    let mut collector = Collector::new(opts);
    for e in events {
        collector.add(e, None)?;
    }
    collector.finish()
}

/// Exact mode through the stream alone: `None` when the events' order needs every event in memory (see
/// [`crate::stream`]).
pub fn stream_events(events: &[Event], opts: &BuildOptions) -> Result<Option<FeatureMatrix>> {
    let mut stream = new_stream(opts, None);
    stream.add(events, 0)?;
    if stream.disorder() {
        return Ok(None);
    }
    let part = Streamed {
        order: 0,
        stream,
        stats: ReadStats::default(),
    };
    assemble_streams(vec![part], opts).map(Some)
}

/// The streamed state of some files: their threads, rows and names.
struct Streamed<'o> {
    /// Index of the first file, for a stable row order.
    order: u64,
    stream: Stream<'o>,
    stats: ReadStats,
}

/// A stream with one shard per rayon worker.
fn new_stream(opts: &BuildOptions, run: Option<Arc<str>>) -> Stream<'_> {
    Stream::new(opts, rayon::current_num_threads(), run)
}

/// Streams `paths` as one input; `None` when it needs every event in memory, or when `give_up` is set (another
/// input needs that, or failed).
fn stream_files<'o>(
    paths: &[PathBuf],
    order: usize,
    opts: &'o BuildOptions,
    progress: &Progress<impl FnMut(&ReadStats) + Send>,
    give_up: &AtomicBool,
) -> Result<Option<Streamed<'o>>> {
    let mut reader = TraceReader::open(paths, opts.read.clone())?;
    let mut stream = new_stream(opts, paths.first().and_then(|p| opts.run_of(p)));
    let mut pos = 0u64;
    while let Some(batch) = reader.next() {
        let batch = batch?;
        stream.add(&batch.events, pos)?;
        pos += batch.events.len() as u64;
        if stream.disorder() || give_up.load(Ordering::Relaxed) {
            return Ok(None);
        }
        progress.update(order, reader.stats());
    }
    Ok(Some(Streamed {
        order: order as u64,
        stream,
        stats: reader.stats().clone(),
    }))
}

/// Whether one (pid, tid) has events in two parts at overlapping times, so that an event of one could lie inside a
/// row of the other.
fn threads_meet(parts: &[Streamed]) -> bool {
    let mut seen: HashMap<(u64, u64), (usize, u64, u64), RandomState> = HashMap::default();
    for (i, part) in parts.iter().enumerate() {
        for t in part.stream.shards.iter().flat_map(|s| &s.threads) {
            match seen.get_mut(&(t.pid, t.tid)) {
                None => {
                    seen.insert((t.pid, t.tid), (i, t.first, t.last));
                }
                Some((j, first, last)) => {
                    if *j != i && t.first <= *last && *first <= t.last {
                        return true;
                    }
                    *j = i;
                    *first = (*first).min(t.first);
                    *last = (*last).max(t.last);
                }
            }
        }
    }
    false
}

fn merge_stats<'a>(parts: impl Iterator<Item = &'a ReadStats>) -> ReadStats {
    let mut out = ReadStats::default();
    for s in parts {
        out.lines += s.lines;
        out.events += s.events;
        out.skipped += s.skipped;
        out.text_bytes += s.text_bytes;
        out.files.extend(s.files.iter().cloned());
        let room = SKIP_EXAMPLES.saturating_sub(out.skipped_examples.len());
        out.skipped_examples
            .extend(s.skipped_examples.iter().take(room).cloned());
        out.damage.extend(s.damage.iter().cloned());
    }
    out
}

/// How many skipped-line examples the merged stats keep (as the reader does for one stream).
const SKIP_EXAMPLES: usize = 10;

/// Progress of files read in parallel, summed, reported through one callback.
struct Progress<F> {
    state: Mutex<(F, Vec<ReadStats>)>,
}

impl<F: FnMut(&ReadStats) + Send> Progress<F> {
    fn new(f: F, files: usize) -> Self {
        Progress {
            state: Mutex::new((f, vec![ReadStats::default(); files.max(1)])),
        }
    }

    /// Forgets what was read: the files are read again.
    fn restart(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1.fill(ReadStats::default());
    }

    fn update(&self, file: usize, stats: &ReadStats) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (f, per_file) = &mut *state;
        per_file[file] = ReadStats {
            files: Vec::new(),
            skipped_examples: Vec::new(),
            ..stats.clone()
        };
        let total = merge_stats(per_file.iter());
        f(&total);
    }
}

/// The matrix of streamed parts: names unified, rows resolved, filtered and ordered by (ts, pid, tid, input order).
fn assemble_streams(parts: Vec<Streamed>, opts: &BuildOptions) -> Result<FeatureMatrix> {
    let mut strings = StringTable::new();
    let mut key_names: Vec<(CompactString, CompactString)> = Vec::new();
    for part in &parts {
        strings.merge(&part.stream.strings);
        key_names.extend(part.stream.key_names.iter().cloned());
    }
    key_names.sort_unstable();
    key_names.dedup();
    let mut rows: Vec<Row> = Vec::new();
    let mut opens: Vec<Open> = Vec::new();
    let mut order: Vec<(u64, u64)> = Vec::new();
    let mut row_cells: Vec<Vec<(u32, u64, u64)>> = Vec::new();
    for part in parts {
        let stream = part.stream;
        let global: Vec<u32> = stream
            .key_names
            .iter()
            .map(|k| {
                key_names
                    .binary_search(k)
                    .expect("every name was collected") as u32
            })
            .collect();
        opens.extend(stream.opens);
        for r in stream.rows {
            order.push((part.order, r.pos));
            let cells = &stream.shards[r.shard as usize].cells[r.local as usize];
            row_cells.push(
                cells
                    .iter()
                    .map(|&(k, t, c)| (global[k as usize], t, c))
                    .collect(),
            );
            rows.push(r.row);
        }
    }
    let table = RowTable::new(rows, &opens, &strings, opts, |i| order[i as usize]);
    let cells: Vec<Cell> = table
        .kept
        .iter()
        .enumerate()
        .flat_map(|(rank, &i)| {
            row_cells[i as usize]
                .iter()
                .map(move |&(key, time_ns, count)| Cell {
                    row: rank as u32,
                    key,
                    time_ns,
                    count,
                })
        })
        .collect();
    Ok(assemble(&table, &key_names, cells, opts.counts))
}

/// Streams events into compact per-thread spans; keeps full detail only for rows.
struct Collector<'o> {
    opts: &'o BuildOptions,
    keys: HashMap<CompactString, HashMap<CompactString, u32, RandomState>, RandomState>,
    key_names: Vec<(CompactString, CompactString)>,
    thread_index: HashMap<(u64, u64), usize, RandomState>,
    threads: Vec<Vec<Span>>,
    last_thread: Option<((u64, u64), usize)>,
    rows: Vec<Row>,
    opens: Vec<Open>,
    strings: StringTable,
}

impl<'o> Collector<'o> {
    fn new(opts: &'o BuildOptions) -> Self {
        Collector {
            opts,
            keys: HashMap::default(),
            key_names: Vec::new(),
            thread_index: HashMap::default(),
            threads: Vec::new(),
            last_thread: None,
            rows: Vec::new(),
            opens: Vec::new(),
            strings: StringTable::new(),
        }
    }

    fn add(&mut self, e: &Event, run: Option<&Arc<str>>) -> Result<()> {
        match e.ph {
            Phase::Complete | Phase::Instant => {}
            Phase::Metadata => {
                self.strings.insert_event(e);
                return Ok(());
            }
            _ => return Ok(()),
        }
        let key = self.key(e)?;
        let row = if self.is_row(e) {
            self.push_row(e, run)?
        } else {
            NO_ROW
        };
        self.opens.extend(Open::of(e));
        let thread = self.thread(e.pid, e.tid);
        self.threads[thread].push(Span {
            ts: e.ts_ns,
            end: e.end_ns(),
            key,
            row,
        });
        Ok(())
    }

    fn is_row(&self, e: &Event) -> bool {
        self.opts.syscall_cats.iter().any(|c| c == e.cat.as_str())
            && self.opts.ops.iter().any(|op| op == op_name(&e.name))
    }

    fn push_row(&mut self, e: &Event, run: Option<&Arc<str>>) -> Result<u32> {
        let index = u32::try_from(self.rows.len()).ok().filter(|&i| i != NO_ROW);
        let Some(index) = index else {
            bail!("more than {} system call rows", NO_ROW)
        };
        self.rows.push(Row::of(e, run));
        Ok(index)
    }

    fn key(&mut self, e: &Event) -> Result<u32> {
        if let Some(&k) = self
            .keys
            .get(e.cat.as_str())
            .and_then(|names| names.get(e.name.as_str()))
        {
            return Ok(k);
        }
        let Ok(k) = u32::try_from(self.key_names.len()) else {
            bail!("more than {} event names", u32::MAX)
        };
        self.key_names.push((e.cat.clone(), e.name.clone()));
        self.keys
            .entry(e.cat.clone())
            .or_default()
            .insert(e.name.clone(), k);
        Ok(k)
    }

    fn thread(&mut self, pid: u64, tid: u64) -> usize {
        if let Some((t, i)) = self.last_thread
            && t == (pid, tid)
        {
            return i;
        }
        let next = self.threads.len();
        let i = *self.thread_index.entry((pid, tid)).or_insert(next);
        if i == next {
            self.threads.push(Vec::new());
        }
        self.last_thread = Some(((pid, tid), i));
        i
    }

    fn finish(self) -> Result<FeatureMatrix> {
        let table = RowTable::new(self.rows, &self.opens, &self.strings, self.opts, |i| i);
        let rank = table.ranks();
        let renumber = |s: &mut Span| {
            if s.row != NO_ROW {
                s.row = rank[s.row as usize].unwrap_or(NO_ROW);
            }
        };
        let mut threads = self.threads;
        let cells: Vec<Cell> = match self.opts.mode {
            Mode::Exact => threads
                .par_iter_mut()
                .flat_map_iter(|spans| {
                    spans.iter_mut().for_each(renumber);
                    sweep_thread(spans)
                })
                .collect(),
            Mode::Notebook => {
                let mut by_key: Vec<Vec<Span>> = vec![Vec::new(); self.key_names.len()];
                let mut rows: Vec<Span> = Vec::with_capacity(table.kept.len());
                for spans in threads.iter_mut() {
                    for mut s in spans.drain(..) {
                        renumber(&mut s);
                        if s.row != NO_ROW {
                            rows.push(s);
                        }
                        by_key[s.key as usize].push(s);
                    }
                }
                rows.sort_unstable_by_key(|s| s.row);
                notebook_cells(&by_key, &rows)
            }
        };
        Ok(assemble(&table, &self.key_names, cells, self.opts.counts))
    }
}

/// The notebook rule for every (row, key) pair that has at least one overlapping event.
fn notebook_cells(by_key: &[Vec<Span>], rows: &[Span]) -> Vec<Cell> {
    by_key
        .par_iter()
        .enumerate()
        .filter(|(_, spans)| !spans.is_empty())
        .flat_map_iter(|(key, spans)| {
            let key = key as u32;
            let overlap = Overlap::new(spans);
            rows.iter().filter_map(move |r| {
                let (mut time_ns, mut count) = overlap.query(r.ts, r.end);
                if r.key == key {
                    time_ns -= r.dur();
                    count -= 1;
                }
                (count > 0).then_some(Cell {
                    row: r.row,
                    key,
                    time_ns,
                    count,
                })
            })
        })
        .collect()
}
