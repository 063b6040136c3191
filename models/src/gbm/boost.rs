//! Gradient boosting of least-squares trees with early stopping on a validation split.
use super::bins::{Binned, Binner};
use super::grow::Scratch;
use super::tree::{Tree, TreeParams};
use crate::error::Result;
use crate::interrupt;
use crate::limit::{Limit, limited_fields};
use crate::stats::mse;
use ndarray::{ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;
use std::ops::Bound::{Excluded, Included, Unbounded};

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GbmParams {
    #[serde(deserialize_with = "n_estimators")]
    pub n_estimators: usize,
    #[serde(deserialize_with = "max_depth")]
    pub max_depth: usize,
    #[serde(deserialize_with = "learning_rate")]
    pub learning_rate: f64,
    #[serde(deserialize_with = "min_samples_leaf")]
    pub min_samples_leaf: usize,
    /// Share of the fitting rows `rank` holds back (the latest ones, under a time split) to decide
    /// when to stop; 0 turns early stopping off.
    #[serde(deserialize_with = "validation_fraction")]
    pub validation_fraction: f64,
    /// `rank` stops early only above this many fitting rows: below it the validation rows are too
    /// few to pick a tree count reliably (scikit-learn's HistGradientBoosting uses 10,000).
    pub early_stopping_min_rows: usize,
    /// Stop after this many rounds without a lower validation loss.
    #[serde(deserialize_with = "n_iter_no_change")]
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

impl GbmParams {
    /// Refuses a value outside its [`Limit`], naming the option and why the limit is there.
    pub fn validate(&self) -> Result<()> {
        self.check_limits()
    }
}

pub const N_ESTIMATORS: Limit<usize> = Limit {
    name: "gbm.n_estimators",
    low: Included(1),
    high: Included(100_000),
    why: "every tree is kept in memory and costs a pass over the rows (scikit-learn's default is 100)",
};
pub const MAX_DEPTH: Limit<usize> = Limit {
    name: "gbm.max_depth",
    low: Included(1),
    high: Included(16),
    why: "a tree of depth d has up to 2^d leaves, each a pass over its rows",
};
pub const LEARNING_RATE: Limit<f64> = Limit {
    name: "gbm.learning_rate",
    low: Excluded(0.0),
    high: Included(1.0),
    why: "the share of each tree's correction that is kept: at 0 nothing is learnt, above 1 every step overshoots",
};
/// No upper limit: a leaf larger than the rows only keeps trees from splitting, which the ranking reports.
pub const MIN_SAMPLES_LEAF: Limit<usize> = Limit {
    name: "gbm.min_samples_leaf",
    low: Included(1),
    high: Unbounded,
    why: "a leaf's value is the mean of its rows, and an empty leaf has none",
};
pub const VALIDATION_FRACTION: Limit<f64> = Limit {
    name: "gbm.validation_fraction",
    low: Included(0.0),
    high: Included(0.5),
    why: "the share of the fitting rows held back to stop early (0 turns it off); above half, the trees fit on fewer rows than judge them",
};
pub const N_ITER_NO_CHANGE: Limit<usize> = Limit {
    name: "gbm.n_iter_no_change",
    low: Included(1),
    high: Included(100_000),
    why: "rounds without a lower validation loss before stopping; more than the tree limit never stops",
};

limited_fields! {
    GbmParams {
        n_estimators: usize = N_ESTIMATORS;
        max_depth: usize = MAX_DEPTH;
        learning_rate: f64 = LEARNING_RATE;
        min_samples_leaf: usize = MIN_SAMPLES_LEAF;
        validation_fraction: f64 = VALIDATION_FRACTION;
        n_iter_no_change: usize = N_ITER_NO_CHANGE;
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
    pub fn fit(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, params: &GbmParams) -> Result<Self> {
        Self::fit_stopping_on(x, y, &[], params)
    }

    /// Holds the rows at positions `validation` back, and keeps the number of trees with the lowest
    /// loss on them, stopping after `n_iter_no_change` rounds without a lower one. A Ctrl-C
    /// ([`interrupt`]) stops it between rounds with an error.
    pub fn fit_stopping_on(
        x: ArrayView2<'_, f64>,
        y: ArrayView1<'_, f64>,
        validation: &[usize],
        params: &GbmParams,
    ) -> Result<Self> {
        let mut held = vec![false; x.nrows()];
        for &r in validation {
            held[r] = true;
        }
        let fit_rows: Vec<usize> = (0..x.nrows()).filter(|&r| !held[r]).collect();
        let binner = Binner::fit(x.select(Axis(0), &fit_rows).view());
        let binned = binner.transform(x);
        Self::fit_binned(&binner, &binned, y, &fit_rows, validation, params)
    }

    /// [`fit_stopping_on`](Self::fit_stopping_on) on rows binned already: the trees fit on the rows
    /// at positions `fit` of `binned` (whose targets `y` holds) and stop early on those at
    /// `validation`. So the bins are made once for many fits, as LightGBM's `cv` shares one
    /// binned Dataset between its folds.
    pub fn fit_binned(
        binner: &Binner,
        binned: &Binned,
        y: ArrayView1<'_, f64>,
        fit: &[usize],
        validation: &[usize],
        params: &GbmParams,
    ) -> Result<Self> {
        let fitted = binned.select(fit);
        let val = binned.select(validation);
        let yf: Vec<f64> = fit.iter().map(|&r| y[r]).collect();
        let yv: Vec<f64> = validation.iter().map(|&r| y[r]).collect();

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
        let mut packed = None;
        let mut scratch = Scratch::new(&fitted);
        let mut residual = vec![0.0; yf.len()];
        for _ in 0..params.n_estimators {
            interrupt::check()?;
            for ((r, a), b) in residual.iter_mut().zip(&yf).zip(&pred) {
                *r = a - b;
            }
            trees.push(Tree::fit(
                &fitted,
                binner,
                &residual,
                &tree_params,
                &mut pred,
                &mut packed,
                &mut scratch,
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
        Ok(Self {
            binner: binner.clone(),
            base,
            trees,
            n_features: binned.codes.len(),
        })
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
