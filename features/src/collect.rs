//! The in-memory path: every event of the input kept as a compact per-thread span, then attributed by a sweep per
//! thread (exact mode) or by prefix sums per name (notebook mode).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use compact_str::CompactString;
use datasets::strings::StringTable;
use datasets::{Event, Phase};
use foldhash::fast::RandomState;
use rayon::prelude::*;

use crate::assemble::{Names, RowTable, assemble};
use crate::context::Open;
use crate::exclusive::{Excl, ranks};
use crate::matrix::FeatureMatrix;
use crate::nocall::{self, Bucket};
use crate::offcpu;
use crate::options::{BuildOptions, Mode};
use crate::outside::Outside;
use crate::process::{Process, Processes};
use crate::row::Row;
use crate::span::{Cell, INCLUSIVE_ONLY, NO_ROW, Span};
use crate::sweep::{Overlap, sweep_thread};

/// The row of a call `--file` leaves out, while the sweep runs.
const LEFT_OUT: u32 = NO_ROW - 1;

/// Streams events into compact per-thread spans; keeps full detail only for rows.
pub struct Collector<'o> {
    opts: &'o BuildOptions,
    keys: HashMap<CompactString, HashMap<CompactString, u32, RandomState>, RandomState>,
    key_names: Vec<(CompactString, CompactString)>,
    /// The layer of each key.
    key_layers: Vec<u32>,
    layer_names: Vec<CompactString>,
    processes: Processes,
    thread_index: HashMap<(Process, u64), usize, RandomState>,
    threads: Vec<Vec<Span>>,
    /// Who each of `threads` is: the thread, the first input it has events in, and that input's run label.
    thread_ids: Vec<(Process, u64, u32, Option<Arc<str>>)>,
    last_thread: Option<((Process, u64), usize)>,
    rows: Vec<Row>,
    opens: Vec<Open>,
    strings: StringTable,
}

impl<'o> Collector<'o> {
    /// A collector of inputs whose processes are `processes`.
    pub fn new(opts: &'o BuildOptions, processes: Processes) -> Self {
        Collector {
            opts,
            keys: HashMap::default(),
            key_names: Vec::new(),
            key_layers: Vec::new(),
            layer_names: Vec::new(),
            processes,
            thread_index: HashMap::default(),
            threads: Vec::new(),
            thread_ids: Vec::new(),
            last_thread: None,
            rows: Vec::new(),
            opens: Vec::new(),
            strings: StringTable::new(),
        }
    }

    /// Adds one event of input `input` (its index among the inputs), labelled `run`.
    pub fn add(&mut self, e: &Event, run: Option<&Arc<str>>, input: u32) -> Result<()> {
        match e.ph {
            Phase::Complete | Phase::Instant => {}
            Phase::Metadata => {
                self.strings.insert_event_in(input, e);
                return Ok(());
            }
            _ => return Ok(()),
        }
        let key = self.key(e)?;
        let row = if self.is_row(e) {
            self.push_row(e, run, input)?
        } else {
            NO_ROW
        };
        self.opens.extend(Open::of(e, input));
        let thread = self.thread(self.processes.process(input, e.pid), e.tid);
        let id = &mut self.thread_ids[thread];
        if input < id.2 {
            (id.2, id.3) = (input, run.cloned());
        }
        self.threads[thread].push(Span {
            ts: e.ts_ns,
            end: e.end_ns(),
            key,
            layer: self.key_layers[key as usize],
            row,
        });
        Ok(())
    }

    fn is_row(&self, e: &Event) -> bool {
        self.opts.is_row_layer(&e.cat) && self.opts.is_row_op(&e.name)
    }

    fn push_row(&mut self, e: &Event, run: Option<&Arc<str>>, input: u32) -> Result<u32> {
        let index = u32::try_from(self.rows.len())
            .ok()
            .filter(|&i| i < LEFT_OUT);
        let Some(index) = index else {
            return Err(Error::TooMany {
                what: "system call rows",
                limit: LEFT_OUT.into(),
            });
        };
        self.rows.push(Row::of(e, run, input));
        Ok(index)
    }

    fn key(&mut self, e: &Event) -> Result<u32> {
        let filed = offcpu::feature(e);
        let (cat, name) = match &filed {
            Some((c, n)) => (c, n),
            None => (&e.cat, &e.name),
        };
        if let Some(&k) = self
            .keys
            .get(cat.as_str())
            .and_then(|names| names.get(name.as_str()))
        {
            return Ok(k);
        }
        let Ok(k) = u32::try_from(self.key_names.len()) else {
            return Err(Error::TooMany {
                what: "event names",
                limit: u32::MAX.into(),
            });
        };
        self.key_names.push((cat.clone(), name.clone()));
        let layer = match self.layer_names.iter().position(|l| l == cat) {
            _ if offcpu::is_inclusive(name) => INCLUSIVE_ONLY,
            Some(l) => l as u32,
            None => {
                self.layer_names.push(cat.clone());
                self.layer_names.len() as u32 - 1
            }
        };
        self.key_layers.push(layer);
        self.keys
            .entry(cat.clone())
            .or_default()
            .insert(name.clone(), k);
        Ok(k)
    }

    fn thread(&mut self, process: Process, tid: u64) -> usize {
        if let Some((t, i)) = self.last_thread
            && t == (process, tid)
        {
            return i;
        }
        let next = self.threads.len();
        let i = *self.thread_index.entry((process, tid)).or_insert(next);
        if i == next {
            self.threads.push(Vec::new());
            self.thread_ids.push((process, tid, u32::MAX, None));
        }
        self.last_thread = Some(((process, tid), i));
        i
    }

    /// The matrix of every event added, and its no-call table ([`crate::nocall`]; empty in notebook mode or without
    /// [`BuildOptions::no_call`]).
    pub fn finish(self) -> Result<(FeatureMatrix, FeatureMatrix)> {
        self.opts.check_rows(&self.key_names)?;
        let table = RowTable::new(
            self.rows,
            &self.opens,
            &self.strings,
            &self.processes,
            self.opts,
            |i| i,
        );
        let rank = table.ranks();
        let renumber = |s: &mut Span| {
            if s.row != NO_ROW {
                s.row = rank[s.row as usize].unwrap_or(NO_ROW);
            }
        };
        let mut threads = self.threads;
        let layer_rank = ranks(&self.layer_names);
        let mut buckets: Vec<Bucket> = Vec::new();
        let (cells, exclusive): (Vec<Cell>, Vec<Excl>) = match self.opts.mode {
            Mode::Exact => {
                // A row `--file` leaves out still holds its events, as it does in the stream.
                let left_out = |s: &mut Span| {
                    if s.row != NO_ROW {
                        s.row = rank[s.row as usize].unwrap_or(LEFT_OUT);
                    }
                };
                let per_thread: Vec<(Vec<Cell>, Vec<Excl>, Outside)> = threads
                    .par_iter_mut()
                    .map(|spans| {
                        spans.iter_mut().for_each(left_out);
                        sweep_thread(spans, &layer_rank)
                    })
                    .collect();
                let (mut cells, mut excl) = (Vec::new(), Vec::new());
                for ((c, x, outside), (process, tid, input, run)) in
                    per_thread.into_iter().zip(self.thread_ids)
                {
                    cells.extend(c.into_iter().filter(|c| c.row != LEFT_OUT));
                    excl.extend(x.into_iter().filter(|x| x.row != LEFT_OUT));
                    buckets.push(Bucket {
                        process,
                        tid,
                        input,
                        run,
                        outside,
                    });
                }
                (cells, excl)
            }
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
                (notebook_cells(&by_key, &rows), Vec::new())
            }
        };
        let names = Names {
            keys: &self.key_names,
            layers: &self.layer_names,
        };
        let no_call = if self.opts.no_call {
            nocall::table(buckets, names, &self.strings, self.opts)
        } else {
            FeatureMatrix::default()
        };
        Ok((
            assemble(&table, names, cells, exclusive, self.opts.counts),
            no_call,
        ))
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
