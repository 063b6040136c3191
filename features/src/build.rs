//! From trace files to a [`FeatureMatrix`]: stream and attribute events per thread (or, when the input's order
//! needs it, keep every event and sweep), then assemble the columns.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel, sync_channel};
use std::sync::{Arc, Mutex};

use crate::error::Result;
use compact_str::CompactString;
use datasets::Event;
use datasets::read::{ReadStats, TraceReader};
use datasets::strings::StringTable;
use foldhash::fast::RandomState;
use rayon::prelude::*;

use crate::assemble::{Names, RowTable, assemble, renumbered};
use crate::collect::Collector;
use crate::context::Open;
use crate::matrix::FeatureMatrix;
use crate::nocall::{self, Bucket, Tables};
use crate::oncpu::Period;
use crate::options::{BuildOptions, Mode};
use crate::outside::Outside;
use crate::process::{Process, Processes};
use crate::row::Row;
use crate::stacks;
use crate::stream::Stream;

/// Builds the matrix of every file, as one dataset.
pub fn build(paths: &[PathBuf], opts: &BuildOptions) -> Result<FeatureMatrix> {
    build_with(paths, opts, |_| {}).map(|(m, _)| m)
}

/// [`build`], calling `progress` with what has been read so far, and returning what was read.
pub fn build_with(
    paths: &[PathBuf],
    opts: &BuildOptions,
    progress: impl FnMut(&ReadStats) + Send,
) -> Result<(FeatureMatrix, ReadStats)> {
    build_tables(paths, opts, progress).map(|(t, stats)| (t.matrix, stats))
}

/// [`build_with`], with the no-call table beside the matrix ([`crate::nocall`]).
///
/// Exact mode streams: files are read in parallel, each thread's events are attributed as they arrive (see
/// [`crate::stream`]), and threads are split across the rayon pool. Input the stream cannot attribute (a row that
/// starts before events already dropped, or one (pid, tid) in several files at overlapping times) is read again
/// with every event in memory, as is input with an error (so the error is the one a sequential read meets first).
/// Notebook mode always keeps every event.
pub fn build_tables(
    paths: &[PathBuf],
    opts: &BuildOptions,
    progress: impl FnMut(&ReadStats) + Send,
) -> Result<(Tables, ReadStats)> {
    let progress = Progress::new(progress, paths.len());
    let period = Period::default();
    let processes = Processes::of(paths);
    if opts.mode == Mode::Exact {
        let give_up = AtomicBool::new(false);
        let results: Vec<Result<Option<Streamed>>> = paths
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map(|(i, p)| {
                let part = stream_files(
                    std::slice::from_ref(p),
                    i,
                    opts,
                    &progress,
                    &give_up,
                    &period,
                );
                if !matches!(part, Ok(Some(_))) {
                    give_up.store(true, Ordering::Relaxed);
                }
                part
            })
            .collect();
        // On an error the sequential read below finds it again, so the same error is reported as for one stream.
        let parts: Option<Vec<Streamed>> = results.into_iter().map(|r| r.ok().flatten()).collect();
        if let Some(parts) = parts
            && !threads_meet(&parts, &processes)
        {
            let stats = merge_stats(parts.iter().map(|p| &p.stats));
            let mut t = assemble_streams(parts, &processes, opts)?;
            t.apply_samples(&period);
            return Ok((t, stats));
        }
        progress.restart();
    }
    collect_tables(paths, opts, processes, &progress, &period)
}

/// [`build_tables`] in one read of `paths` that also gives every event to `each`, with its input's index (the scope
/// its hashes resolve in), once and in file order: as the file has it, exact duplicates dropped, before stack
/// samples are expanded. A caller that needs more of the events than the matrix keeps reads them here too, instead
/// of again.
///
/// `each` runs on a thread of its own, a batch or two behind the stream, which waits for it only where it expands
/// a batch's stacks in place. The files are streamed one after the other, through one reader. Input the stream
/// cannot attribute (see [`build_tables`]) is still read to its end for `each`, then read again, without it, with
/// every event in memory. A read error ends the read at once (the outer error); once every event went to `each`,
/// the build's own error comes with what was read.
pub fn build_tables_each(
    paths: &[PathBuf],
    opts: &BuildOptions,
    progress: impl FnMut(&ReadStats) + Send,
    mut each: impl FnMut(u32, &Event) + Send,
) -> Result<(Result<Tables>, ReadStats)> {
    let progress = Progress::new(progress, 1);
    let period = Period::default();
    let processes = Processes::of(paths);
    let mut reader = TraceReader::open(paths, opts.read.clone())?.drop_duplicates();
    let mut parts: Vec<Streamed> = Vec::new();
    let mut streaming = opts.mode == Mode::Exact;
    let mut pos = 0u64;
    std::thread::scope(|scope| -> Result<()> {
        let (to_each, batches) = sync_channel::<(u32, Arc<Vec<Event>>)>(EACH_AHEAD);
        let (given_back, done) = channel::<Arc<Vec<Event>>>();
        scope.spawn(move || {
            for (input, events) in batches {
                events.iter().for_each(|e| each(input, e));
                if given_back.send(events).is_err() {
                    return;
                }
            }
        });
        // A panic of `each` ends its thread, and the scope raises it again once this returns.
        while let Some(batch) = reader.next() {
            let batch = batch?;
            let shared = Arc::new(batch.events);
            if to_each.send((batch.input, Arc::clone(&shared))).is_err() {
                return Ok(());
            }
            if streaming {
                let order = u64::from(batch.input);
                if parts.last().is_none_or(|p| p.order != order) {
                    parts.push(Streamed {
                        order,
                        stream: new_stream(opts, opts.run_of(&batch.source)),
                        stats: ReadStats::default(),
                    });
                    pos = 0;
                }
                let stream = &mut parts.last_mut().expect("pushed above").stream;
                let added = if stacks::has_stacks(&shared) {
                    // Expanded in place, the batch must be the stream's alone: `each` gives it back first.
                    let Some(mut events) = take_back(&done, shared, &reader) else {
                        return Ok(());
                    };
                    let added = stacks::expand_found(&mut events, opts, &period)
                        .and_then(|()| stream.add(&events, pos));
                    pos += events.len() as u64;
                    reader.recycle(events);
                    added
                } else {
                    let n = shared.len() as u64;
                    pos += n;
                    let added = stream.add(&shared, pos - n);
                    drop(shared);
                    added
                };
                // An error here is met again, in order, by the read below.
                streaming = added.is_ok() && !stream.disorder();
                if !streaming {
                    parts.clear();
                }
            } else {
                drop(shared);
            }
            // The batch is let go of above, so that once `each` gives it back (it may be done with it already),
            // the reader gets its memory again instead of allocating every event anew.
            while let Ok(events) = done.try_recv() {
                recycle(&reader, events);
            }
            progress.update(0, reader.stats());
        }
        drop(to_each);
        for events in done {
            recycle(&reader, events);
        }
        Ok(())
    })?;
    let stats = reader.stats().clone();
    if streaming && !threads_meet(&parts, &processes) {
        let built = assemble_streams(parts, &processes, opts).map(|mut t| {
            t.apply_samples(&period);
            t
        });
        return Ok((built, stats));
    }
    progress.restart();
    let built = collect_tables(paths, opts, processes, &progress, &period).map(|(t, _)| t);
    Ok((built, stats))
}

/// Batches read ahead of `each` ([`build_tables_each`]).
const EACH_AHEAD: usize = 2;

/// Gives a batch's memory back to the reader, once nothing else holds it.
fn recycle(reader: &TraceReader, events: Arc<Vec<Event>>) {
    if let Ok(events) = Arc::try_unwrap(events) {
        reader.recycle(events);
    }
}

/// `batch` alone, once `each` is done with it (and with the batches before it, recycled); `None` when `each`'s thread
/// ended early.
fn take_back(
    done: &Receiver<Arc<Vec<Event>>>,
    batch: Arc<Vec<Event>>,
    reader: &TraceReader,
) -> Option<Vec<Event>> {
    loop {
        let events = done.recv().ok()?;
        if Arc::ptr_eq(&events, &batch) {
            drop(events);
            return Arc::try_unwrap(batch).ok();
        }
        recycle(reader, events);
    }
}

/// Reads `paths` in order with every event in memory, attributed once all are in.
fn collect_tables(
    paths: &[PathBuf],
    opts: &BuildOptions,
    processes: Processes,
    progress: &Progress<impl FnMut(&ReadStats) + Send>,
    period: &Period,
) -> Result<(Tables, ReadStats)> {
    let mut reader = TraceReader::open(paths, opts.read.clone())?.drop_duplicates();
    let mut collector = Collector::new(opts, processes);
    while let Some(batch) = reader.next() {
        let mut batch = batch?;
        let run = opts.run_of(&batch.source);
        stacks::expand_batch(&mut batch.events, opts, period)?;
        for e in &batch.events {
            collector.add(e, run.as_ref(), batch.input)?;
        }
        reader.recycle(batch.events);
        progress.update(0, reader.stats());
    }
    let stats = reader.stats().clone();
    let (matrix, no_call) = collector.finish()?;
    let mut t = Tables { matrix, no_call };
    t.apply_samples(period);
    Ok((t, stats))
}

/// Builds the matrix of events already in memory (their `FH` metadata included).
pub fn from_events(events: &[Event], opts: &BuildOptions) -> Result<FeatureMatrix> {
    tables_of_events(events, opts).map(|t| t.matrix)
}

/// [`from_events`], with the no-call table beside the matrix.
pub fn tables_of_events(events: &[Event], opts: &BuildOptions) -> Result<Tables> {
    let period = Period::default();
    let events = stacks::expand(events, opts, &period)?;
    let mut m = match opts.mode {
        Mode::Exact => match stream_tables(&events, opts)? {
            Some(m) => m,
            None => sweep_tables(&events, opts)?,
        },
        Mode::Notebook => sweep_tables(&events, opts)?,
    };
    m.apply_samples(&period);
    Ok(m)
}

/// The in-memory path alone, whatever the events' order: every event kept, then swept per thread.
pub fn sweep_events(events: &[Event], opts: &BuildOptions) -> Result<FeatureMatrix> {
    sweep_tables(events, opts).map(|t| t.matrix)
}

/// [`sweep_events`], with the no-call table beside the matrix.
pub fn sweep_tables(events: &[Event], opts: &BuildOptions) -> Result<Tables> {
    let mut collector = Collector::new(opts, Processes::default());
    for e in events {
        collector.add(e, None, 0)?;
    }
    let (matrix, no_call) = collector.finish()?;
    Ok(Tables { matrix, no_call })
}

/// Exact mode through the stream alone: `None` when the events' order needs every event in memory (see
/// [`crate::stream`]).
pub fn stream_events(events: &[Event], opts: &BuildOptions) -> Result<Option<FeatureMatrix>> {
    stream_tables(events, opts).map(|t| t.map(|t| t.matrix))
}

/// [`stream_events`], with the no-call table beside the matrix.
pub fn stream_tables(events: &[Event], opts: &BuildOptions) -> Result<Option<Tables>> {
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
    assemble_streams(vec![part], &Processes::default(), opts).map(Some)
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
    period: &Period,
) -> Result<Option<Streamed<'o>>> {
    let mut reader = TraceReader::open(paths, opts.read.clone())?.drop_duplicates();
    let mut stream = new_stream(opts, paths.first().and_then(|p| opts.run_of(p)));
    let mut pos = 0u64;
    while let Some(batch) = reader.next() {
        let mut batch = batch?;
        stacks::expand_batch(&mut batch.events, opts, period)?;
        stream.add(&batch.events, pos)?;
        pos += batch.events.len() as u64;
        reader.recycle(batch.events);
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
/// row of the other. A part whose processes are its own meets no other.
fn threads_meet(parts: &[Streamed], processes: &Processes) -> bool {
    let mut seen: HashMap<(u64, u64), (usize, u64, u64), RandomState> = HashMap::default();
    for (i, part) in parts.iter().enumerate() {
        if processes.own(part.order as u32) {
            continue;
        }
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
        out.duplicates += s.duplicates;
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

/// The index in `all` (sorted) of each of `names`.
fn global_ids<T: Ord>(names: &[T], all: &[T]) -> Vec<u32> {
    names
        .iter()
        .map(|n| all.binary_search(n).expect("every name was collected") as u32)
        .collect()
}

/// The matrix of streamed parts: names unified, rows resolved, filtered and ordered by (ts, pid, tid, input order).
fn assemble_streams(
    parts: Vec<Streamed>,
    processes: &Processes,
    opts: &BuildOptions,
) -> Result<Tables> {
    let mut strings = StringTable::new();
    let mut key_names: Vec<(CompactString, CompactString)> = Vec::new();
    let mut layer_names: Vec<CompactString> = Vec::new();
    for part in &parts {
        strings.merge_input(part.order as u32, &part.stream.strings);
        key_names.extend(part.stream.key_names.iter().cloned());
        layer_names.extend(part.stream.layer_names.iter().cloned());
    }
    key_names.sort_unstable();
    key_names.dedup();
    opts.check_rows(&key_names)?;
    layer_names.sort_unstable();
    layer_names.dedup();
    let mut rows: Vec<Row> = Vec::new();
    let mut opens: Vec<Open> = Vec::new();
    let mut order: Vec<(u64, u64)> = Vec::new();
    let mut row_cells: Vec<Vec<(u32, u64, u64)>> = Vec::new();
    let mut row_excl: Vec<Vec<(u32, u64)>> = Vec::new();
    let mut buckets: HashMap<(Process, u64), Bucket, RandomState> = HashMap::default();
    for part in parts {
        let mut stream = part.stream;
        let keys = global_ids(&stream.key_names, &key_names);
        let layers = global_ids(&stream.layer_names, &layer_names);
        let input = part.order as u32;
        let run = stream.run().cloned();
        for t in stream.shards.iter_mut().flat_map(|s| &mut s.threads) {
            let mut outside = t.outside();
            outside.renumber(&keys, &layers);
            let process = processes.process(input, t.pid);
            let b = buckets.entry((process, t.tid)).or_insert_with(|| Bucket {
                process,
                tid: t.tid,
                input,
                run: run.clone(),
                outside: Outside::default(),
            });
            if input < b.input {
                (b.input, b.run) = (input, run.clone());
            }
            b.outside.merge(outside);
        }
        opens.extend(stream.opens.into_iter().map(|o| Open { input, ..o }));
        for mut r in stream.rows {
            r.row.input = input;
            order.push((part.order, r.pos));
            let state = &mut stream.shards[r.shard as usize].rows;
            let cells = &state.cells[r.local as usize];
            row_cells.push(
                cells
                    .iter()
                    .map(|&(k, t, c)| (keys[k as usize], t, c))
                    .collect(),
            );
            let excl = state.exclusive[r.local as usize].settle(&stream.layer_ranks);
            row_excl.push(
                excl.iter()
                    .map(|&(l, ns)| (layers[l as usize], ns))
                    .collect(),
            );
            rows.push(r.row);
        }
    }
    let table = RowTable::new(rows, &opens, &strings, processes, opts, |i| {
        order[i as usize]
    });
    let (cells, exclusive) = renumbered(&table.kept, &row_cells, &row_excl);
    let names = Names {
        keys: &key_names,
        layers: &layer_names,
    };
    let no_call = if opts.no_call {
        nocall::table(buckets.into_values().collect(), names, &strings, opts)
    } else {
        FeatureMatrix::default()
    };
    Ok(Tables {
        matrix: assemble(&table, names, cells, exclusive, opts.counts),
        no_call,
    })
}
