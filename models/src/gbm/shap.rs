//! Exact TreeSHAP (Lundberg, Erion & Lee 2018, Algorithm 2): per-row feature contributions that add
//! up to the prediction minus the expected value, in O(leaves · depth²) per tree.
//!
//! A row's values for one tree depend only on which way it goes at each of the tree's splits. So a
//! tree with few splits, explaining more rows than it has such patterns, is walked once per pattern
//! beforehand ([`Table`]), and each row then costs one comparison per split.
use super::boost::{Gbm, with_row};
use super::tree::{Split, Tree};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

#[derive(Clone, Copy, Default)]
struct PathElement {
    feature: Option<usize>,
    zero_fraction: f64,
    one_fraction: f64,
    pweight: f64,
}

fn extend(path: &mut [PathElement], depth: usize, zero: f64, one: f64, feature: Option<usize>) {
    path[depth] = PathElement {
        feature,
        zero_fraction: zero,
        one_fraction: one,
        pweight: if depth == 0 { 1.0 } else { 0.0 },
    };
    let d1 = (depth + 1) as f64;
    for i in (0..depth).rev() {
        path[i + 1].pweight += one * path[i].pweight * (i + 1) as f64 / d1;
        path[i].pweight = zero * path[i].pweight * (depth - i) as f64 / d1;
    }
}

fn unwind(path: &mut [PathElement], depth: usize, index: usize) {
    let one = path[index].one_fraction;
    let zero = path[index].zero_fraction;
    let d1 = (depth + 1) as f64;
    let mut next_one = path[depth].pweight;
    for i in (0..depth).rev() {
        if one != 0.0 {
            let tmp = path[i].pweight;
            path[i].pweight = next_one * d1 / ((i + 1) as f64 * one);
            next_one = tmp - path[i].pweight * zero * (depth - i) as f64 / d1;
        } else {
            path[i].pweight = path[i].pweight * d1 / (zero * (depth - i) as f64);
        }
    }
    for i in index..depth {
        path[i].feature = path[i + 1].feature;
        path[i].zero_fraction = path[i + 1].zero_fraction;
        path[i].one_fraction = path[i + 1].one_fraction;
    }
}

fn unwound_sum(path: &[PathElement], depth: usize, index: usize) -> f64 {
    let one = path[index].one_fraction;
    let zero = path[index].zero_fraction;
    let d1 = (depth + 1) as f64;
    let mut next_one = path[depth].pweight;
    let mut total = 0.0;
    for i in (0..depth).rev() {
        if one != 0.0 {
            let tmp = next_one * d1 / ((i + 1) as f64 * one);
            total += tmp;
            next_one = path[i].pweight - tmp * zero * (depth - i) as f64 / d1;
        } else if zero != 0.0 {
            total += path[i].pweight / zero / ((depth - i) as f64 / d1);
        }
    }
    total
}

struct Walk<'a, L> {
    tree: &'a Tree,
    /// Whether the row goes left at the split of a node.
    left: L,
    phi: &'a mut [f64],
}

impl<L: Fn(usize, &Split) -> bool> Walk<'_, L> {
    /// `buf[parent..]` holds the parent's path of `depth` elements; this node's path starts after it.
    /// `incoming` carries the fractions and feature of the split that led here.
    fn recurse(
        &mut self,
        buf: &mut [PathElement],
        parent: usize,
        node: usize,
        mut depth: usize,
        incoming: PathElement,
    ) {
        let start = parent + depth + 1;
        buf.copy_within(parent..parent + depth + 1, start);
        let path = &mut buf[start..];
        extend(
            path,
            depth,
            incoming.zero_fraction,
            incoming.one_fraction,
            incoming.feature,
        );
        let tree = self.tree;
        let n = &tree.nodes[node];
        let Some(s) = &n.split else {
            for i in 1..=depth {
                let w = unwound_sum(path, depth, i);
                let e = path[i];
                if let Some(f) = e.feature {
                    self.phi[f] += w * (e.one_fraction - e.zero_fraction) * n.value;
                }
            }
            return;
        };
        let (hot, cold) = if (self.left)(node, s) {
            (s.left, s.right)
        } else {
            (s.right, s.left)
        };
        let cover = n.cover;
        let hot_zero = tree.nodes[hot].cover / cover;
        let cold_zero = tree.nodes[cold].cover / cover;
        let (mut in_zero, mut in_one) = (1.0, 1.0);
        if let Some(k) = (1..=depth).find(|&k| path[k].feature == Some(s.feature)) {
            in_zero = path[k].zero_fraction;
            in_one = path[k].one_fraction;
            unwind(path, depth, k);
            depth -= 1;
        }
        let edge = |zero_fraction, one_fraction| PathElement {
            feature: Some(s.feature),
            zero_fraction,
            one_fraction,
            pweight: 0.0,
        };
        self.recurse(buf, start, hot, depth + 1, edge(hot_zero * in_zero, in_one));
        self.recurse(buf, start, cold, depth + 1, edge(cold_zero * in_zero, 0.0));
    }
}

/// Adds the SHAP values of one tree into `phi`, for a row going left where `left` says.
fn tree_shap(
    tree: &Tree,
    left: impl Fn(usize, &Split) -> bool,
    phi: &mut [f64],
    buf: &mut [PathElement],
) {
    let mut walk = Walk { tree, left, phi };
    let root = PathElement {
        feature: None,
        zero_fraction: 1.0,
        one_fraction: 1.0,
        pweight: 0.0,
    };
    walk.recurse(buf, 0, 0, 0, root);
}

fn row_shap(tree: &Tree, x: &[f64], phi: &mut [f64], buf: &mut [PathElement]) {
    tree_shap(tree, |_, s| x[s.feature] <= s.threshold, phi, buf);
}

/// Tables are made for trees of at most this many splits (1024 patterns).
const MAX_TABLE_SPLITS: usize = 10;

/// One tree's SHAP values for every pattern of directions a row can take at its splits.
struct Table {
    /// (feature, threshold) of each split; bit i of a pattern is set when a row goes left at split i.
    splits: Vec<(usize, f64)>,
    /// The features the tree splits on.
    features: Vec<usize>,
    /// `values[p * features.len() + k]`: the SHAP value of `features[k]` under pattern p.
    values: Vec<f64>,
}

impl Table {
    /// None when the tree has more splits than [`MAX_TABLE_SPLITS`] or more patterns than `rows`.
    fn new(tree: &Tree, n_features: usize, rows: usize, buf: &mut [PathElement]) -> Option<Self> {
        let mut bit = vec![usize::MAX; tree.nodes.len()];
        let mut splits = Vec::new();
        for (node, n) in tree.nodes.iter().enumerate() {
            if let Some(s) = &n.split {
                bit[node] = splits.len();
                splits.push((s.feature, s.threshold));
            }
        }
        let patterns = 1usize << splits.len().min(usize::BITS as usize - 1);
        if splits.len() > MAX_TABLE_SPLITS || patterns > rows {
            return None;
        }
        let mut features: Vec<usize> = splits.iter().map(|&(f, _)| f).collect();
        features.sort_unstable();
        features.dedup();
        let mut phi = vec![0.0; n_features];
        let mut values = Vec::with_capacity(patterns * features.len());
        for p in 0..patterns {
            tree_shap(tree, |node, _| p >> bit[node] & 1 == 1, &mut phi, buf);
            for &f in &features {
                values.push(phi[f]);
                phi[f] = 0.0;
            }
        }
        Some(Self {
            splits,
            features,
            values,
        })
    }

    fn add(&self, x: &[f64], phi: &mut [f64]) {
        let p = self
            .splits
            .iter()
            .enumerate()
            .fold(0, |p, (i, &(f, t))| p | usize::from(x[f] <= t) << i);
        let u = self.features.len();
        for (&f, v) in self.features.iter().zip(&self.values[p * u..(p + 1) * u]) {
            phi[f] += v;
        }
    }
}

fn buffer_len(max_depth: usize) -> usize {
    (max_depth + 3) * (max_depth + 4) / 2 + 2
}

impl Gbm {
    /// SHAP values of one row; they sum to `predict_row(x) - expected_value()`.
    pub fn shap_row(&self, x: &[f64]) -> Vec<f64> {
        self.shap_row_with(
            x,
            &mut vec![PathElement::default(); buffer_len(self.max_depth())],
        )
    }

    fn shap_row_with(&self, x: &[f64], buf: &mut [PathElement]) -> Vec<f64> {
        let mut phi = vec![0.0; self.n_features];
        for t in &self.trees {
            row_shap(t, x, &mut phi, buf);
        }
        phi
    }

    /// SHAP values of every row of `x`, one row of contributions per input row.
    pub fn shap(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let len = buffer_len(self.max_depth());
        let tables: Vec<Option<Table>> = self
            .trees
            .par_iter()
            .map_init(
                || vec![PathElement::default(); len],
                |buf, t| Table::new(t, self.n_features, x.nrows(), buf),
            )
            .collect();
        let rows: Vec<Vec<f64>> = (0..x.nrows())
            .into_par_iter()
            .map_init(
                || vec![PathElement::default(); len],
                |buf, i| {
                    with_row(x, i, |r| {
                        let mut phi = vec![0.0; self.n_features];
                        for (t, table) in self.trees.iter().zip(&tables) {
                            match table {
                                Some(table) => table.add(r, &mut phi),
                                None => row_shap(t, r, &mut phi, buf),
                            }
                        }
                        phi
                    })
                },
            )
            .collect();
        let mut out = Array2::zeros((x.nrows(), self.n_features));
        for (i, r) in rows.into_iter().enumerate() {
            out.row_mut(i).assign(&ndarray::Array1::from(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gbm::GbmParams;
    use ndarray::Array2;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// E[f(x) | features in `known` fixed to x], the others averaged by training cover.
    fn conditional(tree: &Tree, node: usize, x: &[f64], known: u32) -> f64 {
        let n = &tree.nodes[node];
        match &n.split {
            None => n.value,
            Some(s) if known & (1 << s.feature) != 0 => conditional(
                tree,
                if x[s.feature] <= s.threshold {
                    s.left
                } else {
                    s.right
                },
                x,
                known,
            ),
            Some(s) => {
                let (l, r) = (&tree.nodes[s.left], &tree.nodes[s.right]);
                (l.cover * conditional(tree, s.left, x, known)
                    + r.cover * conditional(tree, s.right, x, known))
                    / n.cover
            }
        }
    }

    fn factorial(n: u32) -> f64 {
        (1..=n).map(f64::from).product()
    }

    /// Shapley values by enumerating every coalition: the definition TreeSHAP must reproduce.
    fn brute_force(gbm: &Gbm, x: &[f64]) -> Vec<f64> {
        let m = gbm.n_features as u32;
        let v = |s: u32| {
            gbm.trees
                .iter()
                .map(|t| conditional(t, 0, x, s))
                .sum::<f64>()
        };
        (0..m)
            .map(|i| {
                (0..1u32 << m)
                    .filter(|s| s & (1 << i) == 0)
                    .map(|s| {
                        let k = s.count_ones();
                        factorial(k) * factorial(m - k - 1) / factorial(m) * (v(s | 1 << i) - v(s))
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn tree_shap_equals_brute_force_shapley_values() {
        let mut rng = StdRng::seed_from_u64(3);
        let x: Array2<f64> = Array2::from_shape_fn((300, 4), |_| rng.gen_range(0.0..1.0));
        let y = x.map_axis(ndarray::Axis(1), |r| -> f64 {
            (6.0 * r[0] * r[1]).sin() + 2.0 * r[2] * r[2] + (r[3] > 0.5) as u8 as f64
        });
        let params = GbmParams {
            n_estimators: 15,
            max_depth: 5,
            validation_fraction: 0.0,
            ..GbmParams::default()
        };
        let gbm = Gbm::fit(x.view(), y.view(), &params).unwrap();
        assert!(gbm.max_depth() == 5);
        let repeats = gbm
            .trees
            .iter()
            .flat_map(|t| {
                t.nodes
                    .iter()
                    .filter_map(|n| n.split.as_ref().map(|s| s.feature))
            })
            .count();
        assert!(
            repeats > 4 * 15,
            "the trees split on the same features several times"
        );
        for r in 0..40 {
            let row = x.row(r).to_vec();
            let fast = gbm.shap_row(&row);
            let slow = brute_force(&gbm, &row);
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a - b).abs() < 1e-9,
                    "row {r}: TreeSHAP {fast:?}, brute force {slow:?}"
                );
            }
            let total = gbm.expected_value() + fast.iter().sum::<f64>();
            assert!((total - gbm.predict_row(&row)).abs() < 1e-9);
        }
    }

    #[test]
    fn shap_of_many_rows_by_pattern_tables_equals_tree_shap_of_each_row() {
        let mut rng = StdRng::seed_from_u64(5);
        let x: Array2<f64> = Array2::from_shape_fn((2000, 6), |_| rng.gen_range(0.0..1.0));
        let y = x.map_axis(ndarray::Axis(1), |r| -> f64 {
            (6.0 * r[0] * r[1]).sin() + 2.0 * r[2] * r[2] + r[3]
        });
        let params = GbmParams {
            n_estimators: 30,
            validation_fraction: 0.0,
            ..GbmParams::default()
        };
        let gbm = Gbm::fit(x.view(), y.view(), &params).unwrap();
        let mut buf = vec![PathElement::default(); buffer_len(gbm.max_depth())];
        let tabled = gbm
            .trees
            .iter()
            .filter(|t| Table::new(t, 6, x.nrows(), &mut buf).is_some())
            .count();
        assert_eq!(tabled, 30, "every depth-3 tree has a table over 2000 rows");
        let all = gbm.shap(x.view());
        for r in 0..x.nrows() {
            let one = gbm.shap_row(&x.row(r).to_vec());
            for (a, b) in all.row(r).iter().zip(&one) {
                assert!(
                    (a - b).abs() < 1e-12,
                    "row {r}: {:?} against {one:?}",
                    all.row(r)
                );
            }
        }
    }
}
