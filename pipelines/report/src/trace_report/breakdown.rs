//! Where a call's time goes: per group of rows (an operation, a workload point), the mean call time split by layer,
//! from the feature matrix's exclusive columns (`excl::{layer}`) and `self_ns`, the time no layer covers.

use features::{FeatureKind, FeatureMatrix};

/// How `self_ns` is shown among the layers.
pub const SELF_LABEL: &str = "self (no layer)";

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
    /// Groups the rows by `label` (rows without one are left out), in the order groups first appear.
    pub fn of(matrix: &FeatureMatrix, label: impl Fn(usize) -> Option<String>) -> Breakdown {
        let excl: Vec<(&str, &[f64])> = matrix
            .features
            .iter()
            .filter(|c| c.kind == FeatureKind::ExclusiveNs)
            .filter(|c| c.values.iter().any(|x| *x != 0.0))
            .map(|c| (c.layer.as_str(), c.values.as_slice()))
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
            per_layer[excl.len()] += matrix.self_ns[row] as f64;
        }
        for (g, (dur, per_layer)) in groups.iter_mut().zip(sums) {
            let n = g.calls as f64;
            g.mean_dur_ns = dur as f64 / n;
            g.mean_ns = per_layer.into_iter().map(|s| s / n).collect();
        }
        Breakdown { layers, groups }
    }

    /// Grouped by operation, most total time first.
    pub fn by_op(matrix: &FeatureMatrix) -> Breakdown {
        let mut b = Breakdown::of(matrix, |row| Some(matrix.op[row].clone()));
        b.groups.sort_by(|x, y| {
            (y.mean_dur_ns * y.calls as f64)
                .total_cmp(&(x.mean_dur_ns * x.calls as f64))
                .then(x.label.cmp(&y.label))
        });
        b
    }

    /// Grouped by the matrix's `run` column (the workload point), in the order runs first appear.
    pub fn by_run(matrix: &FeatureMatrix) -> Breakdown {
        Breakdown::of(matrix, |row| matrix.run[row].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use features::FeatureColumn;

    fn matrix() -> FeatureMatrix {
        let col = |layer: &str, name: &str, kind: FeatureKind, values: Vec<f64>| {
            FeatureColumn::new(layer, name, kind, values)
        };
        let run = |r: &str| Some(r.to_owned());
        FeatureMatrix {
            op: ["read", "write", "read", "read"].map(String::from).to_vec(),
            pid: vec![1; 4],
            tid: vec![1; 4],
            ts_ns: vec![0, 10, 20, 30],
            dur_ns: vec![100, 50, 300, 7],
            file: vec![None; 4],
            size: vec![None; 4],
            bandwidth_mibs: vec![None; 4],
            direct: vec![None; 4],
            sequential: vec![None; 4],
            run: vec![run("a"), run("b"), run("a"), None],
            thread: vec![None; 4],
            process: vec![None; 4],
            self_ns: vec![30, 30, 60, 7],
            features: vec![
                col(
                    "block",
                    "",
                    FeatureKind::ExclusiveNs,
                    vec![60.0, 0.0, 200.0, 0.0],
                ),
                col(
                    "page_cache",
                    "",
                    FeatureKind::ExclusiveNs,
                    vec![10.0, 20.0, 40.0, 0.0],
                ),
                col("irq", "", FeatureKind::ExclusiveNs, vec![0.0; 4]),
                col(
                    "block",
                    "block_rq",
                    FeatureKind::TimeNs,
                    vec![60.0, 0.0, 200.0, 0.0],
                ),
            ],
        }
    }

    #[test]
    fn means_split_by_layer_and_add_up_to_the_mean_call_time() {
        let b = Breakdown::by_run(&matrix());
        // excl::irq holds no time; block::block_rq is inclusive, not exclusive.
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
        let b = Breakdown::by_op(&matrix());
        let order: Vec<(&str, u64)> = b
            .groups
            .iter()
            .map(|g| (g.label.as_str(), g.calls))
            .collect();
        assert_eq!(order, [("read", 3), ("write", 1)]);
        assert_eq!(b.groups[0].mean_dur_ns, 407.0 / 3.0);
        assert_eq!(b.groups[0].mean_ns, [260.0 / 3.0, 50.0 / 3.0, 97.0 / 3.0]);
    }

    #[test]
    fn no_rows_no_groups() {
        let b = Breakdown::by_op(&FeatureMatrix::default());
        assert_eq!(
            (b.layers.as_slice(), b.groups.len()),
            ([SELF_LABEL.to_owned()].as_slice(), 0)
        );
    }
}
