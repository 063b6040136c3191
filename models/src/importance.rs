//! Importances that need only predictions: permutation on held-out rows, and mean |SHAP|.
use crate::gbm::{Gbm, Tree};
use crate::split::shuffled;
use crate::stats::r2;
use ndarray::{ArrayView1, ArrayView2, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// Mean drop of held-out R² when one feature's column is shuffled, over `repeats` shuffles.
/// A shuffle of feature j only changes the trees that split on j, so only those are walked again,
/// on the rows' bin codes, with one shuffled column per thread.
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
    (0..x.ncols())
        .into_par_iter()
        .map(|j| {
            let trees: Vec<&Tree> = gbm.trees.iter().filter(|t| t.splits_on(j)).collect();
            if trees.is_empty() {
                return 0.0;
            }
            let own: Vec<f64> = (0..binned.n_rows)
                .map(|r| {
                    trees
                        .iter()
                        .map(|t| t.predict_binned(&binned.codes, r))
                        .sum()
                })
                .collect();
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(j as u64));
            let mut column = binned.codes[j].clone();
            let mut shuffled_pred = vec![0.0; binned.n_rows];
            let drops: f64 = (0..repeats)
                .map(|_| {
                    column.shuffle(&mut rng);
                    for (r, p) in shuffled_pred.iter_mut().enumerate() {
                        let changed: f64 = trees
                            .iter()
                            .map(|t| t.predict_binned_with(&binned.codes, r, j, column[r]))
                            .sum();
                        *p = pred[r] - own[r] + changed;
                    }
                    base - r2(&y, &shuffled_pred)
                })
                .sum();
            drops / repeats as f64
        })
        .collect()
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
