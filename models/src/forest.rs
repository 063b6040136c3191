//! `dc-model forest`: the DataCrumbs analysis' model, a random forest (smartcore's
//! RandomForestRegressor) whose impurity importances rank a layer's features to a 99% cumulative cut,
//! fitted on the GBM's training rows so that its held-out R² stands beside the training R² the
//! analysis reported. DataCrumbs' notebooks that we could read do not give the forest's settings;
//! these are scikit-learn's RandomForestRegressor defaults, which the reference script fits too.

use ndarray::{Array2, Axis};
use serde::Serialize;
use smartcore::ensemble::random_forest_regressor::{
    RandomForestRegressor, RandomForestRegressorParameters,
};
use smartcore::linalg::basic::matrix::DenseMatrix;

use crate::dataset::{CONTEXT, Dataset};
use crate::error::{Result, model_err};
use crate::fit::Split;
use crate::interrupt;
use crate::options::RankOptions;
use crate::rank::{kept, with_cumulative};
use crate::stats::r2;

/// Trees in the forest: scikit-learn's default.
pub const TREES: usize = 100;
/// The DataCrumbs analysis keeps features until their importances reach 99%.
pub const CUMULATIVE: f64 = 0.99;

#[derive(Debug, Clone, Serialize)]
pub struct ForestReport {
    pub layer: String,
    pub n_train: usize,
    pub n_test: usize,
    pub trees: usize,
    /// R² on the rows the forest was fitted on: the figure the DataCrumbs analysis reported.
    pub train_r2: f64,
    /// R² on the held-out rows (the latest calls of each run, under the time split).
    pub test_r2: f64,
    pub cumulative: f64,
    /// Features by decreasing impurity importance (shares of 1), until they reach `cumulative`.
    pub ranking: Vec<ForestFeature>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ForestFeature {
    pub rank: usize,
    pub feature: String,
    /// A context column (op, size, ...) rather than one of the layer's functions.
    pub context: bool,
    pub importance: f64,
    pub cumulative_share: f64,
}

fn dense(x: &Array2<f64>) -> std::result::Result<DenseMatrix<f64>, smartcore::error::Failed> {
    let (rows, cols) = x.dim();
    DenseMatrix::new(rows, cols, x.iter().copied().collect(), false)
}

/// Fits the forest on the training rows of `ds` (the rank split of `opts`) and ranks the features
/// of `layer`.
pub fn fit(layer: &str, ds: &Dataset, opts: &RankOptions) -> Result<ForestReport> {
    opts.validate()?;
    opts.enough_rows(layer, "the random forest", ds.n_rows(), false)?;
    let split = &Split::new(&ds.time, opts);
    let failed = |e: smartcore::error::Failed| model_err(layer, format!("random forest: {e}"));
    let xt = dense(&ds.x.select(Axis(0), &split.train)).map_err(failed)?;
    let xh = dense(&ds.x.select(Axis(0), &split.test)).map_err(failed)?;
    let yt: Vec<f64> = split.train.iter().map(|&r| ds.y[r]).collect();
    let yh: Vec<f64> = split.test.iter().map(|&r| ds.y[r]).collect();
    let params = RandomForestRegressorParameters::default()
        .with_n_trees(TREES)
        .with_m(ds.n_features())
        .with_min_samples_leaf(1)
        .with_min_samples_split(2)
        .with_seed(opts.seed);
    let forest = RandomForestRegressor::fit(&xt, &yt, params).map_err(failed)?;
    interrupt::check()?;
    let train_r2 = r2(&yt, &forest.predict(&xt).map_err(failed)?);
    let test_r2 = r2(&yh, &forest.predict(&xh).map_err(failed)?);
    let importance = forest.compute_feature_importances().map_err(failed)?;
    let (order, n) = kept(&importance, CUMULATIVE);
    let ranking = with_cumulative(&order[..n], &importance)
        .into_iter()
        .enumerate()
        .map(|(i, (j, cumulative_share))| ForestFeature {
            rank: i + 1,
            feature: ds.feature_names[j].clone(),
            context: ds.layers[j] == CONTEXT,
            importance: importance[j],
            cumulative_share,
        })
        .collect();
    Ok(ForestReport {
        layer: layer.to_string(),
        n_train: split.train.len(),
        n_test: split.test.len(),
        trees: TREES,
        train_r2,
        test_r2,
        cumulative: CUMULATIVE,
        ranking,
    })
}
