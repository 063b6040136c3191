//! Importances that need only predictions: permutation on held-out rows, and mean |SHAP|.
use crate::gbm::{Gbm, MAX_BINS, Tree};
use crate::split::shuffled;
use crate::stats::r2;
use ndarray::{ArrayView1, ArrayView2, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// Mean drop of held-out R² when one feature's column is shuffled, over `repeats` shuffles.
/// A shuffle of feature j only changes the trees that split on j, and a row's output from such a tree
/// takes one value per interval between the tree's bins on j: each of those values is found once, and
/// every shuffle then looks its rows' up instead of walking the trees again.
pub fn permutation(
    gbm: &Gbm,
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    repeats: usize,
    seed: u64,
) -> Vec<f64> {
    let y = y.to_vec();
    let binned = gbm.binner.transform(x);
    let pred = gbm.predict_binned(&binned);
    let base = r2(&y, &pred);
    let n = binned.n_rows;
    (0..x.ncols())
        .into_par_iter()
        .map(|j| {
            let trees: Vec<&Tree> = gbm.trees.iter().filter(|t| t.splits_on(j)).collect();
            if trees.is_empty() {
                return 0.0;
            }
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(j as u64));
            let mut column = binned.codes[j].clone();
            let shuffles: Vec<Vec<u8>> = (0..repeats)
                .map(|_| {
                    column.shuffle(&mut rng);
                    column.clone()
                })
                .collect();
            // Each row's output from the trees that split on j, with its own code and with each
            // shuffle's, summed tree by tree in the trees' order.
            let mut own = vec![0.0; n];
            let mut changed = vec![vec![0.0; n]; repeats];
            let mut values = Vec::new();
            for tree in &trees {
                let cuts = Cuts::of(tree, j);
                let k = cuts.codes.len();
                values.resize(n * k, 0.0);
                for (row, out) in values.chunks_exact_mut(k).enumerate() {
                    let walk = Walk {
                        cuts: &cuts,
                        tree,
                        codes: &binned.codes,
                        row,
                        feature: j,
                    };
                    walk.outputs(0, 0, out);
                }
                let at = |r: usize, code: u8| values[r * k + cuts.interval[code as usize] as usize];
                for (r, o) in own.iter_mut().enumerate() {
                    *o += at(r, binned.codes[j][r]);
                }
                for (shuffled, sum) in shuffles.iter().zip(&mut changed) {
                    for (r, s) in sum.iter_mut().enumerate() {
                        *s += at(r, shuffled[r]);
                    }
                }
            }
            let drops: f64 = changed
                .iter()
                .map(|sum| {
                    let shuffled_pred: Vec<f64> =
                        (0..n).map(|r| pred[r] - own[r] + sum[r]).collect();
                    base - r2(&y, &shuffled_pred)
                })
                .sum();
            drops / repeats as f64
        })
        .collect()
}

/// The intervals into which one tree's splits on a feature cut its codes: codes in the same
/// interval take the same path through the tree.
struct Cuts {
    /// The interval of each code.
    interval: [u8; MAX_BINS],
    /// One code of each interval, in order.
    codes: Vec<u8>,
}

impl Cuts {
    fn of(tree: &Tree, feature: usize) -> Self {
        let mut bins: Vec<u8> = tree
            .nodes
            .iter()
            .filter_map(|n| n.split.as_ref())
            .filter(|s| s.feature == feature)
            .map(|s| s.bin)
            .collect();
        bins.sort_unstable();
        bins.dedup();
        // A code c goes left at a split on `bin` when c <= bin: the interval of c is the number of
        // bins below it, and the lowest code of interval i > 0 is one above the (i-1)th bin.
        let interval = std::array::from_fn(|c| bins.partition_point(|&b| usize::from(b) < c) as u8);
        let codes = std::iter::once(0)
            .chain(bins.iter().filter_map(|&b| b.checked_add(1)))
            .collect();
        Self { interval, codes }
    }
}

/// One row's walk down one tree for every interval of [`Cuts`] at once.
struct Walk<'a> {
    cuts: &'a Cuts,
    tree: &'a Tree,
    codes: &'a [Vec<u8>],
    row: usize,
    feature: usize,
}

impl Walk<'_> {
    /// Writes into `out[i]`, for each interval `from + i` of those that reach `node`, the tree's
    /// output for the row with its code of the feature in that interval: one walk for them all,
    /// which parts where a split on the feature sends some intervals left and the others right.
    fn outputs(&self, node: usize, from: usize, out: &mut [f64]) {
        let n = &self.tree.nodes[node];
        match &n.split {
            None => out.fill(n.value),
            Some(s) if s.feature == self.feature => {
                // The intervals up to the split's bin's go left.
                let left = usize::from(self.cuts.interval[s.bin as usize]) + 1;
                let left = left.clamp(from, from + out.len());
                let (l, r) = out.split_at_mut(left - from);
                if !l.is_empty() {
                    self.outputs(s.left, from, l);
                }
                if !r.is_empty() {
                    self.outputs(s.right, left, r);
                }
            }
            Some(s) => {
                let next = if self.codes[s.feature][self.row] <= s.bin {
                    s.left
                } else {
                    s.right
                };
                self.outputs(next, from, out);
            }
        }
    }
}

/// Mean absolute SHAP value of each feature over the rows of `x`, or over a seeded sample of
/// `max_rows` of them when there are more.
pub fn mean_abs_shap(model: &Gbm, x: ArrayView2<'_, f64>, max_rows: usize, seed: u64) -> Vec<f64> {
    let phi = match shap_sample(x.nrows(), max_rows, seed) {
        Some(rows) => model.shap(x.select(Axis(0), &rows).view()),
        None => model.shap(x),
    };
    phi.mapv(f64::abs)
        .mean_axis(Axis(0))
        .map(|m| m.to_vec())
        .unwrap_or_else(|| vec![0.0; x.ncols()])
}

/// The rows (ascending positions) [`mean_abs_shap`] explains out of `n` when there are more than
/// `max_rows`; None when it explains them all.
pub fn shap_sample(n: usize, max_rows: usize, seed: u64) -> Option<Vec<usize>> {
    (n > max_rows).then(|| {
        let mut rows = shuffled(n, seed);
        rows.truncate(max_rows);
        rows.sort_unstable();
        rows
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gbm::GbmParams;
    use ndarray::Array2;
    use rand::Rng;

    /// The definition: each shuffle of a raw column, predicted from the raw values by every tree.
    fn permutation_by_prediction(
        gbm: &Gbm,
        x: ArrayView2<'_, f64>,
        y: &[f64],
        repeats: usize,
        seed: u64,
    ) -> Vec<f64> {
        let base = r2(y, &gbm.predict(x));
        (0..x.ncols())
            .map(|j| {
                let mut rng = StdRng::seed_from_u64(seed.wrapping_add(j as u64));
                let mut column = x.column(j).to_vec();
                let mut shuffled = x.to_owned();
                (0..repeats)
                    .map(|_| {
                        column.shuffle(&mut rng);
                        shuffled
                            .column_mut(j)
                            .assign(&ndarray::ArrayView1::from(&column));
                        base - r2(y, &gbm.predict(shuffled.view()))
                    })
                    .sum::<f64>()
                    / repeats as f64
            })
            .collect()
    }

    #[test]
    fn permutation_by_intervals_equals_shuffled_columns_predicted_by_every_tree() {
        let mut rng = StdRng::seed_from_u64(7);
        // Continuous, few-valued and binary columns, and one the target ignores.
        let x = Array2::from_shape_fn((1500, 5), |(_, j)| match j {
            0 | 1 => rng.gen_range(0.0..1.0),
            2 => f64::from(rng.gen_range(0..6u8)),
            3 => f64::from(u8::from(rng.gen_bool(0.3))),
            _ => rng.gen_range(-1.0..1.0),
        });
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| (5.0 * r[0]).sin() * r[2] + 3.0 * r[1] * r[3] + 0.5 * r[2])
            .collect();
        let params = GbmParams {
            n_estimators: 40,
            max_depth: 5,
            validation_fraction: 0.0,
            ..GbmParams::default()
        };
        let gbm = Gbm::fit(x.view(), ndarray::ArrayView1::from(&y), &params).unwrap();
        let twice = gbm.trees.iter().any(|t| {
            let mut on: Vec<usize> = t
                .nodes
                .iter()
                .filter_map(|n| n.split.as_ref().map(|s| s.feature))
                .collect();
            on.sort_unstable();
            on.windows(2).any(|w| w[0] == w[1])
        });
        assert!(twice, "some tree splits on one feature at several bins");
        let fast = permutation(&gbm, x.view(), ndarray::ArrayView1::from(&y), 3, 11);
        let slow = permutation_by_prediction(&gbm, x.view(), &y, 3, 11);
        assert!(fast[0] > 0.01 && fast[1] > 0.01, "{fast:?}");
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-12, "{fast:?} against {slow:?}");
        }
    }
}
