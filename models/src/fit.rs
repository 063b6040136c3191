//! The split every model of one dataset shares, and the GBM fits and scores made on it.
use crate::dataset::Dataset;
use crate::error::Result;
use crate::gbm::{Binned, Binner, Gbm};
use crate::options::RankOptions;
use crate::report::Quality;
use crate::split::{Timeline, folds, train_test};
use crate::stats::{mape, mean_sd, r2};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, s};
use std::sync::Mutex;

/// Train and test rows, and the CV folds, which lie within the training rows.
pub struct Split {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
    /// (fit, held-out) positions into `train`.
    pub folds: Vec<(Vec<usize>, Vec<usize>)>,
    /// The timeline of the training rows, in `train` order.
    pub train_time: Timeline,
}

impl Split {
    pub fn new(time: &Timeline, opts: &RankOptions) -> Self {
        let (train, test) = train_test(opts.split, time, opts.test_fraction, opts.seed);
        let train_time = time.select(&train);
        let folds = folds(
            opts.split,
            &train_time,
            opts.folds,
            opts.seed.wrapping_add(1),
        );
        Self {
            train,
            test,
            folds,
            train_time,
        }
    }
}

/// A dataset's training and test rows, column subsets of it taken as needed. The rows are held in
/// one matrix, the training rows first.
pub struct Parts {
    x: Array2<f64>,
    n_train: usize,
    pub yt: Array1<f64>,
    pub yh: Vec<f64>,
}

impl Parts {
    /// A copy of `ds`'s rows, which `ds` keeps.
    pub fn new(ds: &Dataset, split: &Split) -> Self {
        Self::of(ds.x.select(Axis(0), &order_of(split)), ds, split)
    }

    /// `ds`'s rows without a copy: its matrix is moved here and its rows put in order in place, so
    /// that one dataset's fit holds its values once; `ds` keeps everything but `x`.
    pub fn take(ds: &mut Dataset, split: &Split) -> Self {
        let order = order_of(split);
        let columns = ds.x.ncols();
        let mut x = std::mem::replace(&mut ds.x, Array2::zeros((0, columns)));
        if !permute_rows(&mut x, &order) {
            x = x.select(Axis(0), &order);
        }
        Self::of(x, ds, split)
    }

    fn of(x: Array2<f64>, ds: &Dataset, split: &Split) -> Self {
        Self {
            x,
            n_train: split.train.len(),
            yt: ds.y.select(Axis(0), &split.train),
            yh: ds.y.select(Axis(0), &split.test).to_vec(),
        }
    }

    pub fn xt(&self) -> ArrayView2<'_, f64> {
        self.x.slice(s![..self.n_train, ..])
    }

    pub fn xh(&self) -> ArrayView2<'_, f64> {
        self.x.slice(s![self.n_train.., ..])
    }
}

/// The training rows, then the test rows.
fn order_of(split: &Split) -> Vec<usize> {
    split.train.iter().chain(&split.test).copied().collect()
}

/// Puts row `order[i]` of `x` at row `i`, in place, one row of scratch; false (and `x` unchanged)
/// where `order` is not a permutation of `x`'s rows.
fn permute_rows(x: &mut Array2<f64>, order: &[usize]) -> bool {
    let n = x.nrows();
    let mut seen = vec![false; n];
    if order.len() != n
        || order
            .iter()
            .any(|&r| r >= n || std::mem::replace(&mut seen[r], true))
    {
        return false;
    }
    let mut done = vec![false; n];
    let mut row = Array1::zeros(x.ncols());
    for start in 0..n {
        if done[start] || order[start] == start {
            continue;
        }
        row.assign(&x.row(start));
        let mut at = start;
        loop {
            done[at] = true;
            let from = order[at];
            if from == start {
                x.row_mut(at).assign(&row);
                break;
            }
            let (mut dst, src) = x.multi_slice_mut((s![at, ..], s![from, ..]));
            dst.assign(&src);
            at = from;
        }
    }
    true
}

/// A dataset's training rows binned once: every GBM of the dataset (on the training rows, on each
/// fold's, on some columns) takes its codes from here, as LightGBM's `cv` shares one binned Dataset
/// between its folds. The bins come from the values of the training rows, never from their targets.
pub struct TrainBins {
    pub binner: Binner,
    pub binned: Binned,
}

impl TrainBins {
    pub fn new(xt: ArrayView2<'_, f64>) -> Self {
        let binner = Binner::fit(xt);
        let binned = binner.transform(xt);
        Self { binner, binned }
    }

    /// The bins of the columns `cols` only.
    pub fn columns(&self, cols: &[usize]) -> Self {
        Self {
            binner: self.binner.features(cols),
            binned: self.binned.features(cols),
        }
    }
}

/// Fits a GBM on the training rows at positions `rows`, whose timeline is `time`; above
/// `early_stopping_min_rows` it stops early on the latest `validation_fraction` of them (a random share
/// under `--split random`).
pub fn fit_gbm(
    bins: &TrainBins,
    yt: ArrayView1<'_, f64>,
    rows: &[usize],
    time: &Timeline,
    opts: &RankOptions,
) -> Result<Gbm> {
    let (fit, validation) = match validation_rows(time, opts) {
        Some(held) => {
            let mut is_held = vec![false; rows.len()];
            for &i in &held {
                is_held[i] = true;
            }
            let fit = (0..rows.len())
                .filter(|&i| !is_held[i])
                .map(|i| rows[i])
                .collect();
            (fit, held.iter().map(|&i| rows[i]).collect())
        }
        None => (rows.to_vec(), Vec::new()),
    };
    Gbm::fit_binned(&bins.binner, &bins.binned, yt, &fit, &validation, &opts.gbm)
}

/// The rows (positions into `time`) [`fit_gbm`] holds back to stop early, None when it fits on all.
pub fn validation_rows(time: &Timeline, opts: &RankOptions) -> Option<Vec<usize>> {
    let p = &opts.gbm;
    (p.validation_fraction > 0.0 && time.len() > p.early_stopping_min_rows.max(20))
        .then(|| train_test(opts.split, time, p.validation_fraction, opts.seed ^ 0x9e37).1)
}

pub fn quality(y: &[f64], pred: &[f64], cv: &[f64]) -> Quality {
    let (cv_r2_mean, cv_r2_sd) = mean_sd(cv);
    Quality {
        test_r2: r2(y, pred),
        test_mape: mape(y, pred),
        cv_r2_mean,
        cv_r2_sd,
    }
}

/// The held-out R² of the context columns alone, fitted once for all the datasets of one ranking.
/// Every layer's dataset has the same rows, split and context columns (unless one of a layer's own
/// features stood in for a near-duplicate context column), and a column's bins come from its own
/// training values: so their context models are one model. A dataset whose context columns or rows
/// differ gets its own fit. Two datasets that ask at once may both fit it; neither waits.
#[derive(Default)]
pub struct ContextR2 {
    fitted: Mutex<Vec<ContextKey>>,
}

/// The context columns' names and the dataset's rows, and the R² fitted on them.
struct ContextKey {
    names: Vec<String>,
    rows: Vec<usize>,
    r2: Option<f64>,
}

impl ContextR2 {
    /// [`r2_on_columns`] of the columns `cols` of `ds` (its context columns), fitted on this
    /// ranking's first dataset that has them.
    pub fn of(
        &self,
        ds: &Dataset,
        parts: &Parts,
        bins: &TrainBins,
        split: &Split,
        cols: &[usize],
        opts: &RankOptions,
    ) -> Result<Option<f64>> {
        let names: Vec<String> = cols.iter().map(|&j| ds.feature_names[j].clone()).collect();
        let same = |k: &ContextKey| k.names == names && k.rows == ds.rows;
        if let Some(k) = self.lock().iter().find(|k| same(k)) {
            return Ok(k.r2);
        }
        let r2 = r2_on_columns(parts, bins, split, cols, opts)?;
        let mut fitted = self.lock();
        if !fitted.iter().any(same) {
            fitted.push(ContextKey {
                names,
                rows: ds.rows.clone(),
                r2,
            });
        }
        Ok(r2)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ContextKey>> {
        self.fitted.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Held-out R² of a GBM on the columns `cols` alone; None when there are none.
pub fn r2_on_columns(
    parts: &Parts,
    bins: &TrainBins,
    split: &Split,
    cols: &[usize],
    opts: &RankOptions,
) -> Result<Option<f64>> {
    if cols.is_empty() {
        return Ok(None);
    }
    let all: Vec<usize> = (0..split.train.len()).collect();
    let model = fit_gbm(
        &bins.columns(cols),
        parts.yt.view(),
        &all,
        &split.train_time,
        opts,
    )?;
    Ok(Some(r2(
        &parts.yh,
        &model.predict(parts.xh().select(Axis(1), cols).view()),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_put_in_order_in_place_are_the_rows_selected_in_that_order() {
        let x = Array2::from_shape_fn((7, 3), |(i, j)| (10 * i + j) as f64);
        let order = [5, 0, 3, 6, 1, 4, 2];
        let mut y = x.clone();
        assert!(permute_rows(&mut y, &order));
        assert_eq!(y, x.select(Axis(0), &order));
        // Not a permutation: a row twice, or one missing.
        for order in [&[0, 0, 1, 2, 3, 4, 5][..], &[0, 1, 2, 3, 4, 5]] {
            let mut y = x.clone();
            assert!(!permute_rows(&mut y, order));
            assert_eq!(y, x);
        }
    }
}
