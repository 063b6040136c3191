//! Gradient boosting of least-squares trees with early stopping on a validation split.
use super::bins::{Binned, Binner};
use super::tree::{Tree, TreeParams};
use crate::stats::mse;
use ndarray::{ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GbmParams {
    pub n_estimators: usize,
    pub max_depth: usize,
    pub learning_rate: f64,
    pub min_samples_leaf: usize,
    /// Share of the fitting rows `rank` holds back (the latest ones, under a time split) to decide
    /// when to stop; 0 turns early stopping off.
    pub validation_fraction: f64,
    /// `rank` stops early only above this many fitting rows: below it the validation rows are too
    /// few to pick a tree count reliably (scikit-learn's HistGradientBoosting uses 10,000).
    pub early_stopping_min_rows: usize,
    /// Stop after this many rounds without a lower validation loss.
    pub n_iter_no_change: usize,
}

impl Default for GbmParams {
    /// scikit-learn's GradientBoostingRegressor(n_estimators=200, max_depth=3, learning_rate=0.1),
    /// plus early stopping on 10% of the fitting rows when there are more than 10,000.
    fn default() -> Self {
        Self {
            n_estimators: 200,
            max_depth: 3,
            learning_rate: 0.1,
            min_samples_leaf: 1,
            validation_fraction: 0.1,
            early_stopping_min_rows: 10_000,
            n_iter_no_change: 20,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Gbm {
    pub binner: Binner,
    pub base: f64,
    pub trees: Vec<Tree>,
    pub n_features: usize,
}

impl Gbm {
    /// Fits on every row: all `n_estimators` trees.
    pub fn fit(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, params: &GbmParams) -> Self {
        Self::fit_stopping_on(x, y, &[], params)
    }

    /// Holds the rows at positions `validation` back, and keeps the number of trees with the lowest
    /// loss on them, stopping after `n_iter_no_change` rounds without a lower one.
    pub fn fit_stopping_on(
        x: ArrayView2<'_, f64>,
        y: ArrayView1<'_, f64>,
        validation: &[usize],
        params: &GbmParams,
    ) -> Self {
        let mut held = vec![false; x.nrows()];
        for &r in validation {
            held[r] = true;
        }
        let fit_rows: Vec<usize> = (0..x.nrows()).filter(|&r| !held[r]).collect();
        let val_rows = validation;
        let xf = x.select(Axis(0), &fit_rows);
        let yf: Vec<f64> = fit_rows.iter().map(|&r| y[r]).collect();
        let binner = Binner::fit(xf.view());
        let binned = binner.transform(xf.view());
        let val = binner.transform(x.select(Axis(0), val_rows).view());
        let yv: Vec<f64> = val_rows.iter().map(|&r| y[r]).collect();

        let base = yf.iter().sum::<f64>() / yf.len() as f64;
        let mut pred = vec![base; yf.len()];
        let mut pred_val = vec![base; yv.len()];
        let tree_params = TreeParams {
            max_depth: params.max_depth,
            min_samples_leaf: params.min_samples_leaf,
            learning_rate: params.learning_rate,
        };
        let mut trees = Vec::with_capacity(params.n_estimators);
        let (mut best_loss, mut best_len) = (f64::INFINITY, 0);
        for _ in 0..params.n_estimators {
            let residual: Vec<f64> = yf.iter().zip(&pred).map(|(a, b)| a - b).collect();
            trees.push(Tree::fit(
                &binned,
                &binner,
                &residual,
                &tree_params,
                &mut pred,
            ));
            if yv.is_empty() {
                continue;
            }
            let tree = &trees[trees.len() - 1];
            pred_val
                .par_iter_mut()
                .enumerate()
                .for_each(|(r, p)| *p += tree.predict_binned(&val.codes, r));
            let loss = mse(&yv, &pred_val);
            if loss < best_loss {
                (best_loss, best_len) = (loss, trees.len());
            } else if trees.len() - best_len >= params.n_iter_no_change {
                break;
            }
        }
        if !yv.is_empty() {
            trees.truncate(best_len.max(1));
        }
        Self {
            binner,
            base,
            trees,
            n_features: x.ncols(),
        }
    }

    pub fn predict_row(&self, x: &[f64]) -> f64 {
        self.base + self.trees.iter().map(|t| t.predict_row(x)).sum::<f64>()
    }

    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Vec<f64> {
        (0..x.nrows())
            .into_par_iter()
            .map(|i| with_row(x, i, |r| self.predict_row(r)))
            .collect()
    }

    pub fn predict_binned(&self, binned: &Binned) -> Vec<f64> {
        (0..binned.n_rows)
            .into_par_iter()
            .map(|r| {
                self.base
                    + self
                        .trees
                        .iter()
                        .map(|t| t.predict_binned(&binned.codes, r))
                        .sum::<f64>()
            })
            .collect()
    }

    /// Total squared-error reduction of the splits on each feature.
    pub fn gain_importance(&self) -> Vec<f64> {
        let mut g = vec![0.0; self.n_features];
        for t in &self.trees {
            for s in t.nodes.iter().filter_map(|n| n.split.as_ref()) {
                g[s.feature] += s.gain;
            }
        }
        g
    }

    /// The model's mean output over its training rows: what SHAP values are measured from.
    pub fn expected_value(&self) -> f64 {
        self.base + self.trees.iter().map(Tree::expected_value).sum::<f64>()
    }

    pub fn max_depth(&self) -> usize {
        self.trees.iter().map(Tree::depth).max().unwrap_or(0)
    }
}

/// Calls `f` on row `i` of `x` as a slice, copying only when the row is not contiguous.
pub(crate) fn with_row<T>(x: ArrayView2<'_, f64>, i: usize, f: impl FnOnce(&[f64]) -> T) -> T {
    let row = x.row(i);
    match row.as_slice() {
        Some(s) => f(s),
        None => f(&row.to_vec()),
    }
}
