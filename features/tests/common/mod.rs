//! What the features tests compare: a matrix's rows as (row id, {(layer, name): (ns, count)}).

use std::collections::BTreeMap;

use features::{FeatureKind, FeatureMatrix};

pub type Cells = BTreeMap<(String, String), (u64, u64)>;
/// (op, pid, tid, ts, dur).
pub type RowId = (String, u64, u64, u64, u64);

/// The matrix's rows with the time and count of every name counted at least once.
pub fn cells_of(m: &FeatureMatrix) -> Vec<(RowId, Cells)> {
    (0..m.n_rows())
        .map(|i| {
            let mut cells = Cells::new();
            for f in m
                .features
                .iter()
                .filter(|f| f.kind == FeatureKind::Count && f.values[i] > 0.0)
            {
                let time = m
                    .column(&format!("{}::{}", f.layer, f.name))
                    .unwrap()
                    .values[i];
                cells.insert(
                    (f.layer.clone(), f.name.clone()),
                    (time as u64, f.values[i] as u64),
                );
            }
            let id = (m.op[i].clone(), m.pid[i], m.tid[i], m.ts_ns[i], m.dur_ns[i]);
            (id, cells)
        })
        .collect()
}
