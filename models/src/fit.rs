//! The split every model of one dataset shares, and the GBM fits and scores made on it.
use crate::dataset::Dataset;
use crate::gbm::Gbm;
use crate::options::RankOptions;
use crate::report::Quality;
use crate::split::{Timeline, folds, train_test};
use crate::stats::{mape, mean_sd, r2};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

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

/// A dataset's training and test rows, column subsets of it taken as needed.
pub struct Parts {
    pub xt: Array2<f64>,
    pub yt: Array1<f64>,
    pub xh: Array2<f64>,
    pub yh: Vec<f64>,
}

impl Parts {
    pub fn new(ds: &Dataset, split: &Split) -> Self {
        Self {
            xt: ds.x.select(Axis(0), &split.train),
            yt: ds.y.select(Axis(0), &split.train),
            xh: ds.x.select(Axis(0), &split.test),
            yh: ds.y.select(Axis(0), &split.test).to_vec(),
        }
    }
}

/// Fits a GBM on the rows of `x`; above `early_stopping_min_rows` it stops early on the latest
/// `validation_fraction` of them (a random share under `--split random`).
pub fn fit_gbm(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    time: &Timeline,
    opts: &RankOptions,
) -> Gbm {
    let p = &opts.gbm;
    if p.validation_fraction > 0.0 && x.nrows() > p.early_stopping_min_rows.max(20) {
        let (_, validation) =
            train_test(opts.split, time, p.validation_fraction, opts.seed ^ 0x9e37);
        Gbm::fit_stopping_on(x, y, &validation, p)
    } else {
        Gbm::fit(x, y, p)
    }
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

/// Held-out R² of a GBM on the columns `cols` alone; None when there are none.
pub fn r2_on_columns(
    parts: &Parts,
    split: &Split,
    cols: &[usize],
    opts: &RankOptions,
) -> Option<f64> {
    if cols.is_empty() {
        return None;
    }
    let xt = parts.xt.select(Axis(1), cols);
    let model = fit_gbm(xt.view(), parts.yt.view(), &split.train_time, opts);
    Some(r2(
        &parts.yh,
        &model.predict(parts.xh.select(Axis(1), cols).view()),
    ))
}
