//! From attributed rows to a [`FeatureMatrix`]: rows resolved, ordered and filtered, context computed, cells laid
//! out as columns.

use compact_str::CompactString;
use datasets::Hash;
use datasets::strings::{Scope, StringTable};

use crate::context::{self, Call, FileKey, Open};
use crate::exclusive::Excl;
use crate::matrix::{FeatureColumn, FeatureKind, FeatureMatrix, bandwidth_mibs};
use crate::options::BuildOptions;
use crate::process::Processes;
use crate::row::Row;
use crate::span::Cell;

/// Every row of the input with its file resolved and its context, in output order.
pub struct RowTable {
    pub rows: Vec<Row>,
    pub files: Vec<Option<String>>,
    pub direct: Vec<Option<bool>>,
    pub sequential: Vec<Option<bool>>,
    /// The thread's and the process's names at each row's start.
    pub thread: Vec<Option<String>>,
    pub process: Vec<Option<String>>,
    /// Indices of the rows that pass `--file`, in output order: (ts, pid, tid, then the caller's tie-break).
    pub kept: Vec<u32>,
}

impl RowTable {
    pub fn new<T: Ord>(
        rows: Vec<Row>,
        opens: &[Open],
        strings: &StringTable,
        processes: &Processes,
        opts: &BuildOptions,
        tie: impl Fn(u32) -> T,
    ) -> Self {
        let resolve = |name: &Option<String>, input: u32, pid: u64, hash: Option<Hash>| {
            name.clone().or_else(|| {
                hash.and_then(|h| strings.file_in(Scope { input, pid }, h))
                    .map(str::to_owned)
            })
        };
        let files: Vec<Option<String>> = rows
            .iter()
            .map(|r| resolve(&r.fname, r.input, r.pid, r.fhash))
            .collect();
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_by_key(|&i| {
            let r = &rows[i as usize];
            (r.ts, r.pid, r.tid, tie(i))
        });
        let calls: Vec<Call> = rows
            .iter()
            .zip(&files)
            .map(|(r, f)| Call {
                process: processes.process(r.input, r.pid),
                ts: r.ts,
                file: FileKey::of(f.as_deref(), r.input, r.fhash),
                offset: r.offset,
                size: r.size,
            })
            .collect();
        let opens: Vec<_> = opens
            .iter()
            .map(|o| {
                let name = resolve(&o.fname, o.input, o.pid, o.fhash);
                let file = FileKey::of(name.as_deref(), o.input, o.fhash);
                (processes.process(o.input, o.pid), file, o.clone())
            })
            .collect();
        let (thread, process) = context::names(&rows, strings.threads());
        let direct = context::direct(&calls, &order, &opens);
        let sequential = context::sequential(&calls, &order);
        let kept = order
            .into_iter()
            .filter(|&i| match &opts.file_regex {
                Some(re) => files[i as usize].as_deref().is_some_and(|f| re.is_match(f)),
                None => true,
            })
            .collect();
        RowTable {
            rows,
            files,
            direct,
            sequential,
            thread,
            process,
            kept,
        }
    }

    /// The rank in the output of every row, `None` for rows `--file` leaves out.
    pub fn ranks(&self) -> Vec<Option<u32>> {
        let mut rank = vec![None; self.rows.len()];
        for (new, &old) in self.kept.iter().enumerate() {
            rank[old as usize] = Some(new as u32);
        }
        rank
    }
}

/// The cells and exclusive time of the rows `kept` (indices into the per-row lists), each row numbered by its place
/// in `kept`.
pub fn renumbered(
    kept: &[u32],
    row_cells: &[Vec<(u32, u64, u64)>],
    row_excl: &[Vec<(u32, u64)>],
) -> (Vec<Cell>, Vec<Excl>) {
    let mut cells = Vec::new();
    let mut excl = Vec::new();
    for (row, &i) in kept.iter().enumerate() {
        let row = row as u32;
        cells.extend(
            row_cells[i as usize]
                .iter()
                .map(|&(key, time_ns, count)| Cell {
                    row,
                    key,
                    time_ns,
                    count,
                }),
        );
        excl.extend(
            row_excl[i as usize]
                .iter()
                .map(|&(layer, ns)| Excl { row, layer, ns }),
        );
    }
    (cells, excl)
}

/// Names of the keys ((cat, name) by index) and of the layers (cat by index) that cells refer to.
#[derive(Clone, Copy)]
pub struct Names<'a> {
    pub keys: &'a [(CompactString, CompactString)],
    pub layers: &'a [CompactString],
}

/// The matrix of `table`'s kept rows; `cells` and `exclusive` name rows by their rank in `table.kept`.
///
/// A name gets a time column when its time is nonzero in some row, and a count column when its time is zero in
/// every row (point events) or `counts` is set. A layer gets an `excl::` column when its exclusive time is nonzero
/// in some row; `self_ns` is the rest of the row's duration.
pub fn assemble(
    table: &RowTable,
    names: Names,
    cells: Vec<Cell>,
    exclusive: Vec<Excl>,
    counts: bool,
) -> FeatureMatrix {
    let kept = &table.kept;
    let n = kept.len();
    let mut timed = vec![false; names.keys.len()];
    let mut used = vec![false; names.keys.len()];
    for c in &cells {
        used[c.key as usize] = true;
        timed[c.key as usize] |= c.time_ns > 0;
    }
    let columns = |pick: &dyn Fn(usize) -> bool| {
        let mut keys: Vec<usize> = (0..names.keys.len()).filter(|&k| pick(k)).collect();
        keys.sort_by(|&a, &b| names.keys[a].cmp(&names.keys[b]));
        let mut column_of = vec![usize::MAX; names.keys.len()];
        for (col, &k) in keys.iter().enumerate() {
            column_of[k] = col;
        }
        (keys, column_of)
    };
    let (time_keys, time_col) = columns(&|k| timed[k]);
    let (count_keys, count_col) = columns(&|k| used[k] && (counts || !timed[k]));
    let mut time = vec![vec![0f64; n]; time_keys.len()];
    let mut count = vec![vec![0f64; n]; count_keys.len()];
    for c in &cells {
        let k = c.key as usize;
        if timed[k] {
            time[time_col[k]][c.row as usize] = c.time_ns as f64;
        }
        if count_col[k] != usize::MAX {
            count[count_col[k]][c.row as usize] = c.count as f64;
        }
    }
    let named = |kind, keys: Vec<usize>, values: Vec<Vec<f64>>| {
        keys.into_iter().zip(values).map(move |(k, v)| {
            let (cat, name) = &names.keys[k];
            FeatureColumn::new(cat, name, kind, v)
        })
    };
    let mut layers: Vec<u32> = exclusive
        .iter()
        .filter(|e| e.ns > 0)
        .map(|e| e.layer)
        .collect();
    layers.sort_unstable();
    layers.dedup();
    layers.sort_by(|&a, &b| names.layers[a as usize].cmp(&names.layers[b as usize]));
    let mut excl = vec![vec![0f64; n]; layers.len()];
    let mut self_ns: Vec<u64> = kept.iter().map(|&i| table.rows[i as usize].dur).collect();
    for e in &exclusive {
        if let Ok(col) = layers
            .binary_search_by(|&l| names.layers[l as usize].cmp(&names.layers[e.layer as usize]))
        {
            excl[col][e.row as usize] = e.ns as f64;
        }
        self_ns[e.row as usize] -= e.ns;
    }
    let mut features: Vec<FeatureColumn> = named(FeatureKind::TimeNs, time_keys, time).collect();
    features.extend(layers.iter().zip(excl).map(|(&l, v)| {
        FeatureColumn::new(&names.layers[l as usize], "", FeatureKind::ExclusiveNs, v)
    }));
    features.extend(named(FeatureKind::Count, count_keys, count));
    let row = |i: &u32| &table.rows[*i as usize];
    let pick = |v: &[Option<bool>]| kept.iter().map(|&i| v[i as usize]).collect();
    let pick_name = |v: &[Option<String>]| kept.iter().map(|&i| v[i as usize].clone()).collect();
    FeatureMatrix {
        op: kept.iter().map(|i| row(i).op.to_string()).collect(),
        pid: kept.iter().map(|i| row(i).pid).collect(),
        tid: kept.iter().map(|i| row(i).tid).collect(),
        ts_ns: kept.iter().map(|i| row(i).ts).collect(),
        dur_ns: kept.iter().map(|i| row(i).dur).collect(),
        file: kept
            .iter()
            .map(|&i| table.files[i as usize].clone())
            .collect(),
        size: kept.iter().map(|i| row(i).size).collect(),
        bandwidth_mibs: kept
            .iter()
            .map(|i| bandwidth_mibs(row(i).size, row(i).dur))
            .collect(),
        direct: pick(&table.direct),
        sequential: pick(&table.sequential),
        run: kept
            .iter()
            .map(|i| row(i).run.as_deref().map(str::to_owned))
            .collect(),
        thread: pick_name(&table.thread),
        process: pick_name(&table.process),
        self_ns,
        features,
    }
}
