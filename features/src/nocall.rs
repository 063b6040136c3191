//! The no-call table: per thread, the events that lie inside no row, so that an event of a layer below the calls
//! (a page fault of an mmap'd read, an off-CPU wait between calls) is in a row or in its thread's bucket, never
//! lost. It is a table of its own, written beside the matrix, so the matrix stays one row per call for the models.
//!
//! A bucket is one row, op [`OP`], of the same columns a row gets: `{cat}::{name}` the summed durations,
//! `count::{cat}::{name}` the number of events (every name: the bucket's event count is their sum), and
//! `excl::{layer}` its events' exclusive time by the rule of [`crate::exclusive`]. It has no enclosing interval, so
//! its `dur` is the sum of that exclusive time and `self_ns` is 0. Only the layers below the calls take part (those
//! of the layer table but the system call, libc and application layers, see [`below_calls`]): a libc or application
//! interval encloses calls (DataCrumbs' `app::main` spans the whole run), it is not time spent outside them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datasets::strings::StringTable;
use datasets::vocab::layer::{self, APP, LIBC, SYS};

use crate::assemble::{Names, RowTable, assemble, renumbered};
use crate::context;
use crate::exclusive::{exclusive, ranks};
use crate::matrix::FeatureMatrix;
use crate::oncpu::{self, Period};
use crate::options::BuildOptions;
use crate::outside::Outside;
use crate::process::Process;
use crate::row::Row;

/// The op of a bucket row.
pub const OP: &str = "(no call)";

/// One thread's bucket: the thread (scoped as rows are, by [`Process`]), the first input it has events in (which
/// scopes its names), and its run label.
pub struct Bucket {
    pub process: Process,
    pub tid: u64,
    pub input: u32,
    pub run: Option<Arc<str>>,
    pub outside: Outside,
}

/// The table of `buckets` (one per thread) whose keys and layers are `names`: one row per thread with an event
/// outside every row, ordered by (ts, pid, tid).
pub fn table(
    buckets: Vec<Bucket>,
    names: Names,
    strings: &StringTable,
    opts: &BuildOptions,
) -> FeatureMatrix {
    let call = |cat: &str| !below_calls(cat) || opts.is_row_layer(cat);
    let rank = ranks(names.layers);
    let mut rows: Vec<Row> = Vec::new();
    let mut row_cells: Vec<Vec<(u32, u64, u64)>> = Vec::new();
    let mut row_excl: Vec<Vec<(u32, u64)>> = Vec::new();
    for mut b in buckets {
        b.outside
            .cells
            .retain(|c| !call(&names.keys[c.0 as usize].0));
        b.outside
            .intervals
            .retain(|iv| !call(&names.layers[iv.layer as usize]));
        let Some(ts) = b.outside.cells.iter().map(|c| c.3).min() else {
            continue;
        };
        let excl = exclusive(&mut b.outside.intervals, &rank);
        rows.push(Row {
            op: OP.into(),
            pid: b.process.pid,
            tid: b.tid,
            ts,
            dur: excl.iter().map(|&(_, ns)| ns).sum(),
            fhash: None,
            fname: None,
            input: b.input,
            size: None,
            offset: None,
            run: b.run,
        });
        row_cells.push(b.outside.cells.iter().map(|c| (c.0, c.1, c.2)).collect());
        row_excl.push(excl);
    }
    let mut kept: Vec<u32> = (0..rows.len() as u32).collect();
    kept.sort_by_key(|&i| {
        let r = &rows[i as usize];
        (r.ts, r.pid, r.tid, r.input)
    });
    let (cells, excl) = renumbered(&kept, &row_cells, &row_excl);
    let (thread, process) = context::names(&rows, strings.threads());
    let table = RowTable {
        files: vec![None; rows.len()],
        direct: vec![None; rows.len()],
        sequential: vec![None; rows.len()],
        thread,
        process,
        kept,
        rows,
    };
    assemble(&table, names, cells, excl, true)
}

/// Whether events of layer `cat` happen below the calls: a kernel layer of the layer table, or off-CPU time. Not
/// the system call layers, libc (DFTracer's `STDIO`) or the application, nor layers the table does not know, which
/// are an application's own (DFTracer's `reader`, `dlio_benchmark`).
pub fn below_calls(cat: &str) -> bool {
    layer::find(cat).is_some_and(|l| ![SYS, LIBC, APP].contains(&l.name))
}

/// How many events the table holds: the sum of its count columns.
pub fn events(table: &FeatureMatrix) -> u64 {
    table
        .features
        .iter()
        .filter(|f| f.kind == crate::FeatureKind::Count)
        .flat_map(|f| &f.values)
        .sum::<f64>() as u64
}

/// Where the table of the matrix at `matrix` is written: beside it, `NAME.no-call.EXT`.
pub fn path(matrix: &Path) -> PathBuf {
    let stem = matrix.file_stem().unwrap_or_default().to_string_lossy();
    let name = match matrix.extension() {
        Some(ext) => format!("{stem}.no-call.{}", ext.to_string_lossy()),
        None => format!("{stem}.no-call"),
    };
    matrix.with_file_name(name)
}

/// The matrix and its no-call table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tables {
    pub matrix: FeatureMatrix,
    pub no_call: FeatureMatrix,
}

impl Tables {
    /// Turns both tables' sample counts into time ([`crate::oncpu::apply`]).
    pub fn apply_samples(&mut self, period: &Period) {
        oncpu::apply(&mut self.matrix, period);
        oncpu::apply(&mut self.no_call, period);
    }
}
