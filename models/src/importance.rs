//! Importances that need only predictions: permutation on held-out rows, and mean |SHAP|.
use crate::gbm::Gbm;
use crate::model::Regressor;
use crate::split::shuffled;
use crate::stats::r2;
use ndarray::{ArrayView1, ArrayView2, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// Mean drop of held-out R² when one feature's column is shuffled, over `repeats` shuffles.
pub fn permutation(
    model: &dyn Regressor,
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    repeats: usize,
    seed: u64,
) -> Vec<f64> {
    let y = y.to_vec();
    let base = r2(&y, &model.predict(x));
    (0..x.ncols())
        .into_par_iter()
        .map(|j| {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(j as u64));
            let mut xp = x.to_owned();
            let mut col: Vec<f64> = x.column(j).to_vec();
            let drops: f64 = (0..repeats)
                .map(|_| {
                    col.shuffle(&mut rng);
                    xp.column_mut(j).assign(&ArrayView1::from(&col));
                    base - r2(&y, &model.predict(xp.view()))
                })
                .sum();
            drops / repeats as f64
        })
        .collect()
}

/// Mean absolute SHAP value of each feature over the rows of `x`, or over a seeded sample of
/// `max_rows` of them when there are more.
pub fn mean_abs_shap(model: &Gbm, x: ArrayView2<'_, f64>, max_rows: usize, seed: u64) -> Vec<f64> {
    let phi = if x.nrows() > max_rows {
        let mut rows = shuffled(x.nrows(), seed);
        rows.truncate(max_rows);
        rows.sort_unstable();
        model.shap(x.select(Axis(0), &rows).view())
    } else {
        model.shap(x)
    };
    phi.mapv(f64::abs)
        .mean_axis(Axis(0))
        .map(|m| m.to_vec())
        .unwrap_or_else(|| vec![0.0; x.ncols()])
}
