//! The feature matrix: one row per system call, base columns plus one column per (layer, name).

use std::path::Path;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::InputError;

/// What a feature column measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeatureKind {
    /// Sum of durations, in nanoseconds.
    TimeNs,
    /// Number of events.
    Count,
    /// The call's time that one layer, and no other, accounts for, in nanoseconds (`excl::{layer}`).
    ExclusiveNs,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FeatureColumn {
    /// `{cat}::{name}` for [`FeatureKind::TimeNs`], `count::{cat}::{name}` for [`FeatureKind::Count`],
    /// `excl::{cat}` for [`FeatureKind::ExclusiveNs`].
    pub column: String,
    /// The layer: the event's `cat`.
    pub layer: String,
    /// The event name; empty for [`FeatureKind::ExclusiveNs`], which is one column per layer.
    pub name: String,
    pub kind: FeatureKind,
    pub values: Vec<f64>,
}

impl FeatureColumn {
    pub fn column_name(layer: &str, name: &str, kind: FeatureKind) -> String {
        match kind {
            FeatureKind::TimeNs => format!("{layer}::{name}"),
            FeatureKind::Count => format!("count::{layer}::{name}"),
            FeatureKind::ExclusiveNs => format!("excl::{layer}"),
        }
    }

    /// The same column without values.
    pub fn clone_empty(&self) -> Self {
        FeatureColumn {
            column: self.column.clone(),
            layer: self.layer.clone(),
            name: self.name.clone(),
            kind: self.kind,
            values: Vec::new(),
        }
    }

    pub fn new(layer: &str, name: &str, kind: FeatureKind, values: Vec<f64>) -> Self {
        FeatureColumn {
            column: Self::column_name(layer, name, kind),
            layer: layer.to_owned(),
            name: name.to_owned(),
            kind,
            values,
        }
    }
}

/// Rows are calls; `ts_ns`, `dur_ns` and `self_ns` are nanoseconds, `bandwidth_mibs` is MiB/s.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FeatureMatrix {
    pub op: Vec<String>,
    pub pid: Vec<u64>,
    pub tid: Vec<u64>,
    pub ts_ns: Vec<u64>,
    pub dur_ns: Vec<u64>,
    pub file: Vec<Option<String>>,
    pub size: Vec<Option<i64>>,
    pub bandwidth_mibs: Vec<Option<f64>>,
    /// The file was opened with O_DIRECT (the flags of its latest open on the same pid); `None` when unknown.
    pub direct: Vec<Option<bool>>,
    /// The offset is the previous call's offset plus its size, on the same file and pid; `None` when either
    /// offset is unknown.
    pub sequential: Vec<Option<bool>>,
    /// The run or workload point the row's input file belongs to, as the caller labelled it.
    pub run: Vec<Option<String>>,
    /// The name the call's thread had when the call started (`thread_name` metadata); `None` when the trace has none.
    pub thread: Vec<Option<String>>,
    /// The name the call's process had when the call started (`process_name` metadata); `None` when the trace has
    /// none.
    pub process: Vec<Option<String>>,
    /// The call's time no other layer accounts for: `dur` minus every `excl::*` column.
    pub self_ns: Vec<u64>,
    pub features: Vec<FeatureColumn>,
}

/// Names of the base columns in every output format, in order.
pub const BASE_COLUMNS: [&str; 14] = [
    "op",
    "pid",
    "tid",
    "ts",
    "dur",
    "file",
    "size",
    "bandwidth",
    "direct",
    "sequential",
    "run",
    "thread",
    "process",
    "self_ns",
];

/// The base columns a matrix may lack, read as null on every row: both are nullable, and a matrix written before
/// they existed, or built in pandas, has neither.
pub const OPTIONAL_COLUMNS: [&str; 2] = ["thread", "process"];

/// The base columns that describe what a call asked for rather than how long it took: models take them as
/// context beside the layer features.
pub const CONTEXT_COLUMNS: [&str; 4] = ["op", "size", "direct", "sequential"];

/// O_DIRECT in open(2) flags on x86_64 (`0o40000`).
pub const O_DIRECT: i64 = 0o40000;
/// O_DSYNC in open(2) flags on x86_64 (`0o10000`); O_SYNC includes it.
pub const O_DSYNC: i64 = 0o10000;

/// Key of the layer metadata in Parquet key-value metadata.
pub const METADATA_KEY: &str = "datacrumbs.features";

/// The layer metadata: Parquet key-value metadata under [`METADATA_KEY`], or a `<file>.meta.json` sidecar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub version: u32,
    /// Units of the base columns, for readers that only see the file.
    pub units: Units,
    /// The base columns that are context ([`CONTEXT_COLUMNS`]).
    pub context: Vec<String>,
    pub features: Vec<FeatureMeta>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Units {
    pub ts: String,
    pub dur: String,
    pub size: String,
    pub bandwidth: String,
    pub self_ns: String,
    pub time_features: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeatureMeta {
    pub column: String,
    pub layer: String,
    pub name: String,
    pub kind: FeatureKind,
}

impl Metadata {
    pub fn of(matrix: &FeatureMatrix) -> Self {
        Metadata {
            version: 2,
            units: Units {
                ts: "ns".into(),
                dur: "ns".into(),
                size: "bytes".into(),
                bandwidth: "MiB/s".into(),
                self_ns: "ns".into(),
                time_features: "ns".into(),
            },
            context: CONTEXT_COLUMNS.map(String::from).to_vec(),
            features: matrix
                .features
                .iter()
                .map(|f| FeatureMeta {
                    column: f.column.clone(),
                    layer: f.layer.clone(),
                    name: f.name.clone(),
                    kind: f.kind,
                })
                .collect(),
        }
    }

    pub fn parse(text: &str, source: &Path) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| {
            InputError::new(
                source,
                Some(e.line() as u64),
                Some(METADATA_KEY),
                e.to_string(),
            )
            .into()
        })
    }
}

/// Bandwidth in MiB/s (`size / 2^20 / seconds`); `None` without a size, or for a zero duration.
pub fn bandwidth_mibs(size: Option<i64>, dur_ns: u64) -> Option<f64> {
    let size = size?;
    if dur_ns == 0 {
        return None;
    }
    Some(size as f64 / (1u64 << 20) as f64 / (dur_ns as f64 / 1e9))
}

impl FeatureMatrix {
    /// Distinct layers of the feature columns, in first-seen order.
    pub fn layers(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in &self.features {
            if !out.contains(&f.layer) {
                out.push(f.layer.clone());
            }
        }
        out
    }

    pub fn n_rows(&self) -> usize {
        self.op.len()
    }

    pub fn column(&self, name: &str) -> Option<&FeatureColumn> {
        self.features.iter().find(|f| f.column == name)
    }

    /// The rows `rows`, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> FeatureMatrix {
        fn pick<T: Clone>(v: &[T], rows: &[usize]) -> Vec<T> {
            rows.iter().map(|&r| v[r].clone()).collect()
        }
        FeatureMatrix {
            op: pick(&self.op, rows),
            pid: pick(&self.pid, rows),
            tid: pick(&self.tid, rows),
            ts_ns: pick(&self.ts_ns, rows),
            dur_ns: pick(&self.dur_ns, rows),
            file: pick(&self.file, rows),
            size: pick(&self.size, rows),
            bandwidth_mibs: pick(&self.bandwidth_mibs, rows),
            direct: pick(&self.direct, rows),
            sequential: pick(&self.sequential, rows),
            run: pick(&self.run, rows),
            thread: pick(&self.thread, rows),
            process: pick(&self.process, rows),
            self_ns: pick(&self.self_ns, rows),
            features: self
                .features
                .iter()
                .map(|f| FeatureColumn {
                    values: pick(&f.values, rows),
                    ..f.clone_empty()
                })
                .collect(),
        }
    }

    /// Appends `other`'s rows; its feature columns are this matrix's, in the same order (batches of
    /// one file), or this matrix has no rows yet and takes them.
    pub fn append(&mut self, other: FeatureMatrix) {
        if self.n_rows() == 0 && self.features.is_empty() {
            *self = other;
            return;
        }
        self.op.extend(other.op);
        self.pid.extend(other.pid);
        self.tid.extend(other.tid);
        self.ts_ns.extend(other.ts_ns);
        self.dur_ns.extend(other.dur_ns);
        self.file.extend(other.file);
        self.size.extend(other.size);
        self.bandwidth_mibs.extend(other.bandwidth_mibs);
        self.direct.extend(other.direct);
        self.sequential.extend(other.sequential);
        self.run.extend(other.run);
        self.thread.extend(other.thread);
        self.process.extend(other.process);
        self.self_ns.extend(other.self_ns);
        assert_eq!(
            self.features.len(),
            other.features.len(),
            "appended rows have the same feature columns"
        );
        for (f, o) in self.features.iter_mut().zip(other.features) {
            f.values.extend(o.values);
        }
    }

    /// The values of the column `name`, which must exist.
    #[cfg(test)]
    pub(crate) fn values(&self, name: &str) -> &[f64] {
        &self
            .column(name)
            .unwrap_or_else(|| panic!("no column {name}"))
            .values
    }

    /// Every column has a value per row, and no feature column takes a base column's name.
    pub(crate) fn check_shape(&self) -> Result<()> {
        let n = self.n_rows();
        let lens = [
            ("pid", self.pid.len()),
            ("tid", self.tid.len()),
            ("ts", self.ts_ns.len()),
            ("dur", self.dur_ns.len()),
            ("file", self.file.len()),
            ("size", self.size.len()),
            ("bandwidth", self.bandwidth_mibs.len()),
            ("direct", self.direct.len()),
            ("sequential", self.sequential.len()),
            ("run", self.run.len()),
            ("thread", self.thread.len()),
            ("process", self.process.len()),
            ("self_ns", self.self_ns.len()),
        ];
        for (name, len) in lens {
            if len != n {
                return Err(Error::Shape {
                    column: name.to_owned(),
                    rows: len,
                    op_rows: n,
                });
            }
        }
        for f in &self.features {
            if f.values.len() != n {
                return Err(Error::Shape {
                    column: f.column.clone(),
                    rows: f.values.len(),
                    op_rows: n,
                });
            }
            if BASE_COLUMNS.contains(&f.column.as_str()) {
                return Err(Error::Clash {
                    column: f.column.clone(),
                });
            }
        }
        Ok(())
    }
}
