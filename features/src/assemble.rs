//! From attributed rows to a [`FeatureMatrix`]: rows resolved, ordered and filtered, context computed, cells laid
//! out as columns.

use std::sync::Arc;

use compact_str::CompactString;
use datasets::strings::StringTable;
use datasets::{Event, Hash};

use crate::build::BuildOptions;
use crate::context::{self, Call, FileKey, Open};
use crate::matrix::{FeatureColumn, FeatureKind, FeatureMatrix, bandwidth_mibs};
use crate::stream::row_size;
use crate::sweep::Cell;
use crate::syscall::op_name;

/// A row: what the matrix keeps of its event.
#[derive(Clone, Debug)]
pub struct Row {
    pub op: CompactString,
    pub pid: u64,
    pub tid: u64,
    pub ts: u64,
    pub dur: u64,
    pub fhash: Option<Hash>,
    pub fname: Option<String>,
    pub size: Option<i64>,
    pub offset: Option<i64>,
    /// The run label of the input the row came from.
    pub run: Option<Arc<str>>,
}

impl Row {
    pub fn of(e: &Event, run: Option<&Arc<str>>) -> Row {
        Row {
            op: op_name(&e.name).into(),
            pid: e.pid,
            tid: e.tid,
            ts: e.ts_ns,
            dur: e.dur_ns,
            fhash: e.args.fhash,
            fname: e.args.fname.clone(),
            size: row_size(e),
            offset: e.args.offset,
            run: run.cloned(),
        }
    }
}

/// Every row of the input with its file resolved and its context, in output order.
pub struct RowTable {
    pub rows: Vec<Row>,
    pub files: Vec<Option<String>>,
    pub direct: Vec<Option<bool>>,
    pub sequential: Vec<Option<bool>>,
    /// Indices of the rows that pass `--file`, in output order: (ts, pid, tid, then the caller's tie-break).
    pub kept: Vec<u32>,
}

impl RowTable {
    pub fn new<T: Ord>(
        rows: Vec<Row>,
        opens: &[Open],
        strings: &StringTable,
        opts: &BuildOptions,
        tie: impl Fn(u32) -> T,
    ) -> Self {
        let resolve = |name: &Option<String>, hash: Option<Hash>| {
            name.clone()
                .or_else(|| hash.and_then(|h| strings.file(h)).map(str::to_owned))
        };
        let files: Vec<Option<String>> = rows.iter().map(|r| resolve(&r.fname, r.fhash)).collect();
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_by_key(|&i| {
            let r = &rows[i as usize];
            (r.ts, r.pid, r.tid, tie(i))
        });
        let calls: Vec<Call> = rows
            .iter()
            .zip(&files)
            .map(|(r, f)| Call {
                pid: r.pid,
                ts: r.ts,
                file: FileKey::of(f.as_deref(), r.fhash),
                offset: r.offset,
                size: r.size,
            })
            .collect();
        let opens: Vec<(Option<FileKey>, Open)> = opens
            .iter()
            .map(|o| {
                let name = resolve(&o.fname, o.fhash);
                (FileKey::of(name.as_deref(), o.fhash), o.clone())
            })
            .collect();
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

/// The matrix of `table`'s kept rows; `cells` name rows by their rank in `table.kept`.
pub fn assemble(
    table: &RowTable,
    key_names: &[(CompactString, CompactString)],
    cells: Vec<Cell>,
    counts: bool,
) -> FeatureMatrix {
    let mut used: Vec<u32> = cells.iter().map(|c| c.key).collect();
    used.sort_unstable();
    used.dedup();
    used.sort_by(|&a, &b| key_names[a as usize].cmp(&key_names[b as usize]));
    let mut column_of = vec![usize::MAX; key_names.len()];
    for (col, &k) in used.iter().enumerate() {
        column_of[k as usize] = col;
    }
    let kept = &table.kept;
    let n = kept.len();
    let mut time = vec![vec![0f64; n]; used.len()];
    let mut count = vec![vec![0f64; if counts { n } else { 0 }]; used.len()];
    for c in &cells {
        let col = column_of[c.key as usize];
        time[col][c.row as usize] = c.time_ns as f64;
        if counts {
            count[col][c.row as usize] = c.count as f64;
        }
    }
    let column = |kind, (k, values): (&u32, Vec<f64>)| {
        let (cat, name) = &key_names[*k as usize];
        FeatureColumn::new(cat, name, kind, values)
    };
    let mut features: Vec<FeatureColumn> = used
        .iter()
        .zip(time)
        .map(|kv| column(FeatureKind::TimeNs, kv))
        .collect();
    if counts {
        features.extend(
            used.iter()
                .zip(count)
                .map(|kv| column(FeatureKind::Count, kv)),
        );
    }
    let row = |i: &u32| &table.rows[*i as usize];
    let pick = |v: &[Option<bool>]| kept.iter().map(|&i| v[i as usize]).collect();
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
        self_ns: kept.iter().map(|i| row(i).dur).collect(),
        features,
    }
}
