//! What the features tests compare: a matrix's rows as (row id, {(layer, name): (ns, count)}), and as (row id,
//! {layer: exclusive ns}, self ns).

use std::collections::BTreeMap;

use features::{FeatureKind, FeatureMatrix};

pub type Cells = BTreeMap<(String, String), (u64, u64)>;
/// (op, pid, tid, ts, dur).
pub type RowId = (String, u64, u64, u64, u64);

/// The matrix's rows with the time and count of every name counted at least once (count columns of every name:
/// build with `counts`). A name without a time column took no time in any row.
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
                    .map_or(0.0, |c| c.values[i]);
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

/// {layer: exclusive ns} of one row.
pub type Exclusive = BTreeMap<String, u64>;

/// The matrix's rows with their nonzero `excl::` columns and `self_ns`; asserts `self_ns + Σ excl::* == dur` on
/// every row.
pub fn exclusive_of(m: &FeatureMatrix) -> Vec<(RowId, Exclusive, u64)> {
    (0..m.n_rows())
        .map(|i| {
            let excl: Exclusive = m
                .features
                .iter()
                .filter(|f| f.kind == FeatureKind::ExclusiveNs && f.values[i] > 0.0)
                .map(|f| (f.layer.clone(), f.values[i] as u64))
                .collect();
            assert_eq!(
                m.self_ns[i] + excl.values().sum::<u64>(),
                m.dur_ns[i],
                "row {i}: self_ns + excl != dur"
            );
            let id = (m.op[i].clone(), m.pid[i], m.tid[i], m.ts_ns[i], m.dur_ns[i]);
            (id, excl, m.self_ns[i])
        })
        .collect()
}
