//! Kinds of call: operation × buffered or direct × size class, with each kind's time summed per layer and per
//! feature column.

use std::collections::HashMap;

use features::{FeatureKind, FeatureMatrix};
use serde::{Deserialize, Serialize};

use crate::summary::{Direction, SIZE_BINS, direction};

/// A kind of call. Reads and writes are named by direction (`read` covers pread64, readv, fread, ...); other calls
/// by their operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Kind {
    pub op: String,
    /// `buffered` or `direct`; none when the trace does not say how the file was opened, or for other calls.
    pub mode: Option<String>,
    /// Darshan's access-size bin of a read or write (`100K-1M`); none for other calls or without a size.
    pub size_class: Option<String>,
}

impl Kind {
    pub fn of(m: &FeatureMatrix, row: usize) -> Kind {
        let op = m.op[row].as_str();
        let Some(d) = direction(op) else {
            return Kind {
                op: op.to_owned(),
                mode: None,
                size_class: None,
            };
        };
        Kind {
            // A copy between files (copy_file_range, sendfile, splice) reads its source in and writes: its waits
            // are not a write's.
            op: match d {
                _ if datasets::vocab::op::copies(op) => op,
                Direction::Read => "read",
                Direction::Write => "write",
            }
            .to_owned(),
            mode: m.direct[row].map(|d| if d { "direct" } else { "buffered" }.to_owned()),
            size_class: m.size[row]
                .filter(|s| *s >= 0)
                .map(|s| size_class(s as u64).to_owned()),
        }
    }

    pub fn label(&self) -> String {
        [Some(&self.op), self.mode.as_ref(), self.size_class.as_ref()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn direction(&self) -> Option<Direction> {
        direction(&self.op)
    }

    pub fn is_buffered_data(&self) -> bool {
        self.direction().is_some() && self.mode.as_deref() != Some("direct")
    }
}

/// The Darshan size bin `size` falls in.
pub fn size_class(size: u64) -> &'static str {
    SIZE_BINS
        .iter()
        .find(|(hi, _)| size < *hi)
        .map(|(_, l)| *l)
        .expect("the last bin is open")
}

/// A feature column's identity, by its index in the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub layer: String,
    pub name: String,
    pub kind: FeatureKind,
}

/// One kind's calls, summed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindStats {
    pub rows: Vec<usize>,
    pub dur_ns: u128,
    pub self_ns: u128,
    pub bytes: u128,
    pub sized: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Per feature column (the matrix's order), the sum over the kind's rows.
    pub sums: Vec<f64>,
}

impl KindStats {
    pub fn calls(&self) -> u64 {
        self.rows.len() as u64
    }

    pub fn mean_ns(&self) -> f64 {
        self.dur_ns as f64 / self.calls().max(1) as f64
    }

    /// Wall time from the kind's first call's start to its last call's end.
    pub fn span_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }

    /// MiB per second of time spent in the calls.
    pub fn bandwidth_mibs(&self) -> Option<f64> {
        (self.sized > 0 && self.dur_ns > 0)
            .then(|| self.bytes as f64 / (1 << 20) as f64 / (self.dur_ns as f64 * 1e-9))
    }
}

/// Every kind of call in a matrix, most total time first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindTable {
    pub columns: Vec<Column>,
    pub kinds: Vec<(Kind, KindStats)>,
}

impl KindTable {
    pub fn of(m: &FeatureMatrix) -> KindTable {
        KindTable::weighted(m, &vec![1.0; m.n_rows()])
    }

    /// The calls' time scaled per row by `weights` (what is left of it after other findings claimed theirs); rows
    /// of weight 0 are left out.
    pub fn weighted(m: &FeatureMatrix, weights: &[f64]) -> KindTable {
        let columns: Vec<Column> = m
            .features
            .iter()
            .map(|c| Column {
                layer: c.layer.clone(),
                name: c.name.clone(),
                kind: c.kind,
            })
            .collect();
        let mut index: HashMap<Kind, usize> = HashMap::new();
        let mut kinds: Vec<(Kind, KindStats)> = Vec::new();
        for (row, &w) in weights.iter().enumerate().take(m.n_rows()) {
            if w <= 0.0 {
                continue;
            }
            let kind = Kind::of(m, row);
            let i = *index.entry(kind.clone()).or_insert_with(|| {
                kinds.push((
                    kind,
                    KindStats {
                        first_ns: u64::MAX,
                        sums: vec![0.0; columns.len()],
                        ..Default::default()
                    },
                ));
                kinds.len() - 1
            });
            let scaled = |v: u64| (v as f64 * w).round() as u128;
            let s = &mut kinds[i].1;
            s.rows.push(row);
            s.dur_ns += scaled(m.dur_ns[row]);
            s.self_ns += scaled(m.self_ns[row]);
            if let Some(b) = m.size[row].filter(|b| *b >= 0) {
                s.bytes += b as u128;
                s.sized += 1;
            }
            s.first_ns = s.first_ns.min(m.ts_ns[row]);
            s.last_ns = s.last_ns.max(m.ts_ns[row] + m.dur_ns[row]);
            for (sum, c) in s.sums.iter_mut().zip(&m.features) {
                *sum += c.values[row] * if c.kind == FeatureKind::Count { 1.0 } else { w };
            }
        }
        kinds.sort_by(|a, b| b.1.dur_ns.cmp(&a.1.dur_ns).then_with(|| a.0.cmp(&b.0)));
        KindTable { columns, kinds }
    }

    /// Only `rows`, whole.
    pub fn of_rows(m: &FeatureMatrix, rows: &[usize]) -> KindTable {
        let mut w = vec![0.0; m.n_rows()];
        for &r in rows {
            w[r] = 1.0;
        }
        KindTable::weighted(m, &w)
    }

    /// Every call's duration, summed.
    pub fn io_ns(&self) -> f64 {
        self.kinds.iter().map(|(_, s)| s.dur_ns as f64).sum()
    }

    /// A kind's exclusive time per layer (layers with none left out), in the matrix's column order.
    pub fn exclusive(&self, s: &KindStats) -> Vec<(String, f64)> {
        self.columns
            .iter()
            .zip(&s.sums)
            .filter(|(c, v)| c.kind == FeatureKind::ExclusiveNs && **v != 0.0)
            .map(|(c, v)| (c.layer.clone(), *v))
            .collect()
    }

    /// A kind's inclusive time per event name of `layer`, as (name, ns), names with none left out.
    pub fn events<'a>(
        &'a self,
        s: &'a KindStats,
        layer: &'a str,
    ) -> impl Iterator<Item = (&'a str, f64)> {
        self.sum_of(s, layer, FeatureKind::TimeNs)
    }

    /// A kind's event counts per event name of `layer` (the `count::` columns).
    pub fn counts<'a>(
        &'a self,
        s: &'a KindStats,
        layer: &'a str,
    ) -> impl Iterator<Item = (&'a str, f64)> {
        self.sum_of(s, layer, FeatureKind::Count)
    }

    fn sum_of<'a>(
        &'a self,
        s: &'a KindStats,
        layer: &'a str,
        kind: FeatureKind,
    ) -> impl Iterator<Item = (&'a str, f64)> {
        self.columns
            .iter()
            .zip(&s.sums)
            .filter(move |(c, v)| c.kind == kind && c.layer == layer && **v != 0.0)
            .map(|(c, v)| (c.name.as_str(), *v))
    }

    pub fn get(&self, kind: &Kind) -> Option<&KindStats> {
        self.kinds.iter().find(|(k, _)| k == kind).map(|(_, s)| s)
    }
}
