//! Where a call's time goes: per group of rows (an operation, a workload point), the mean call time split by layer,
//! from the feature matrix's exclusive columns (`excl::{layer}`, and `self_ns` for the time no layer covers).

use features::FeatureMatrix;

/// Prefix of the exclusive-time columns.
pub const EXCL_PREFIX: &str = "excl::";
/// The column of a call's own time, covered by no layer.
pub const SELF_COLUMN: &str = "self_ns";
/// How [`SELF_COLUMN`] is shown among the layers.
pub const SELF_LABEL: &str = "self (on CPU, no layer)";

/// Mean nanoseconds per call of each group, split by layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// The layers that hold any time, then [`SELF_LABEL`].
    pub layers: Vec<String>,
    pub groups: Vec<Group>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub label: String,
    pub calls: u64,
    pub mean_dur_ns: f64,
    /// Mean exclusive nanoseconds per call, one per [`Breakdown::layers`].
    pub mean_ns: Vec<f64>,
}

impl Breakdown {
    /// Groups the rows by `label` (rows without one are left out), in the order groups first appear. `None` when
    /// the matrix has rows but no exclusive columns.
    pub fn of(
        matrix: &FeatureMatrix,
        label: impl Fn(usize) -> Option<String>,
    ) -> Option<Breakdown> {
        if matrix.n_rows() == 0 {
            return Some(Breakdown {
                layers: vec![SELF_LABEL.to_owned()],
                groups: Vec::new(),
            });
        }
        let self_col = matrix.features.iter().find(|c| c.column == SELF_COLUMN)?;
        let excl: Vec<(&str, &[f64])> = matrix
            .features
            .iter()
            .filter_map(|c| {
                c.column
                    .strip_prefix(EXCL_PREFIX)
                    .map(|l| (l, c.values.as_slice()))
            })
            .filter(|(_, v)| v.iter().any(|x| *x != 0.0))
            .collect();
        let mut layers: Vec<String> = excl.iter().map(|(l, _)| l.to_string()).collect();
        layers.push(SELF_LABEL.to_owned());
        let mut groups: Vec<Group> = Vec::new();
        let mut sums: Vec<(u128, Vec<f64>)> = Vec::new();
        for row in 0..matrix.n_rows() {
            let Some(l) = label(row) else { continue };
            let i = match groups.iter().position(|g| g.label == l) {
                Some(i) => i,
                None => {
                    groups.push(Group {
                        label: l,
                        calls: 0,
                        mean_dur_ns: 0.0,
                        mean_ns: Vec::new(),
                    });
                    sums.push((0, vec![0.0; layers.len()]));
                    groups.len() - 1
                }
            };
            groups[i].calls += 1;
            let (dur, per_layer) = &mut sums[i];
            *dur += u128::from(matrix.dur_ns[row]);
            for (k, (_, v)) in excl.iter().enumerate() {
                per_layer[k] += v[row];
            }
            per_layer[excl.len()] += self_col.values[row];
        }
        for (g, (dur, per_layer)) in groups.iter_mut().zip(sums) {
            let n = g.calls as f64;
            g.mean_dur_ns = dur as f64 / n;
            g.mean_ns = per_layer.into_iter().map(|s| s / n).collect();
        }
        Some(Breakdown { layers, groups })
    }

    /// Grouped by operation, most total time first.
    pub fn by_op(matrix: &FeatureMatrix) -> Option<Breakdown> {
        let mut b = Breakdown::of(matrix, |row| Some(matrix.op[row].clone()))?;
        b.groups.sort_by(|x, y| {
            (y.mean_dur_ns * y.calls as f64)
                .total_cmp(&(x.mean_dur_ns * x.calls as f64))
                .then(x.label.cmp(&y.label))
        });
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use features::{FeatureColumn, FeatureKind};

    fn matrix() -> FeatureMatrix {
        let col = |column: &str, values: Vec<f64>| FeatureColumn {
            column: column.to_owned(),
            layer: String::new(),
            name: column.to_owned(),
            kind: FeatureKind::TimeNs,
            values,
        };
        FeatureMatrix {
            op: ["read", "write", "read", "read"].map(String::from).to_vec(),
            pid: vec![1; 4],
            tid: vec![1; 4],
            ts_ns: vec![0, 10, 20, 30],
            dur_ns: vec![100, 50, 300, 7],
            file: vec![None; 4],
            size: vec![None; 4],
            bandwidth_mibs: vec![None; 4],
            features: vec![
                col("excl::block", vec![60.0, 0.0, 200.0, 0.0]),
                col("excl::page_cache", vec![10.0, 20.0, 40.0, 0.0]),
                col("excl::irq", vec![0.0; 4]),
                col("block::block_rq", vec![60.0, 0.0, 200.0, 0.0]),
                col(SELF_COLUMN, vec![30.0, 30.0, 60.0, 7.0]),
            ],
        }
    }

    #[test]
    fn means_split_by_layer_and_add_up_to_the_mean_call_time() {
        let m = matrix();
        let labels = ["a", "b", "a", "c"];
        let b = Breakdown::of(&m, |row| (row < 3).then(|| labels[row].to_owned())).unwrap();
        // excl::irq holds no time; block::block_rq is not an exclusive column.
        assert_eq!(b.layers, ["block", "page_cache", SELF_LABEL]);
        assert_eq!(b.groups.len(), 2);
        let a = &b.groups[0];
        assert_eq!((a.label.as_str(), a.calls, a.mean_dur_ns), ("a", 2, 200.0));
        assert_eq!(a.mean_ns, [130.0, 25.0, 45.0]);
        assert_eq!(a.mean_ns.iter().sum::<f64>(), a.mean_dur_ns);
        let w = &b.groups[1];
        assert_eq!((w.label.as_str(), w.calls, w.mean_dur_ns), ("b", 1, 50.0));
        assert_eq!(w.mean_ns, [0.0, 20.0, 30.0]);
    }

    #[test]
    fn by_op_puts_the_most_total_time_first() {
        let b = Breakdown::by_op(&matrix()).unwrap();
        let order: Vec<(&str, u64)> = b
            .groups
            .iter()
            .map(|g| (g.label.as_str(), g.calls))
            .collect();
        assert_eq!(order, [("read", 3), ("write", 1)]);
        assert_eq!(b.groups[0].mean_dur_ns, 407.0 / 3.0);
    }

    #[test]
    fn a_matrix_without_exclusive_columns_has_no_breakdown() {
        let mut m = matrix();
        m.features.retain(|c| c.column != SELF_COLUMN);
        assert_eq!(Breakdown::by_op(&m), None);
        let empty = Breakdown::by_op(&FeatureMatrix::default()).unwrap();
        assert!(empty.groups.is_empty());
    }
}
