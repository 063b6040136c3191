//! Lasso (linfa-elasticnet, l1_ratio 1) on standardized features, alpha chosen by k-fold CV.
use crate::error::{Result, model_err};
use crate::split::kfold;
use crate::stats::{Scaler, mse};
use linfa::prelude::*;
use linfa_elasticnet::ElasticNet;
use ndarray::{Array1, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;

/// A Lasso fit on standardized X (scikit-learn's objective: 1/(2n)·|y − Xw − b|² + α·|w|₁).
pub struct Lasso {
    pub alpha: f64,
    pub scaler: Scaler,
    pub coef: Array1<f64>,
    pub intercept: f64,
}

impl Lasso {
    /// Standardizes `x` with its own statistics, then fits at `alpha`.
    pub fn fit(
        layer: &str,
        x: ArrayView2<'_, f64>,
        y: ArrayView1<'_, f64>,
        alpha: f64,
    ) -> Result<Self> {
        Self::fit_with_tolerance(layer, x, y, alpha, 1e-8)
    }

    /// `tolerance` bounds the duality gap relative to |y|²; 1e-4 is scikit-learn's default.
    pub fn fit_with_tolerance(
        layer: &str,
        x: ArrayView2<'_, f64>,
        y: ArrayView1<'_, f64>,
        alpha: f64,
        tolerance: f64,
    ) -> Result<Self> {
        let scaler = Scaler::fit(x);
        let z = scaler.transform(x);
        let (coef, intercept) = fit_standardized(layer, z.view(), y, alpha, tolerance)?;
        Ok(Self {
            alpha,
            scaler,
            coef,
            intercept,
        })
    }

    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Array1<f64> {
        self.scaler.transform(x).dot(&self.coef) + self.intercept
    }
}

/// Coefficients and intercept of a Lasso on already standardized `z`.
fn fit_standardized(
    layer: &str,
    z: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    alpha: f64,
    tolerance: f64,
) -> Result<(Array1<f64>, f64)> {
    let model = ElasticNet::<f64>::lasso()
        .penalty(alpha)
        .tolerance(tolerance)
        .max_iterations(100_000)
        .fit(&DatasetBase::new(z, y))
        .map_err(|e| model_err(layer, format!("Lasso at alpha {alpha}: {e}")))?;
    Ok((model.hyperplane().clone(), model.intercept()))
}

/// `n` alphas log-spaced from the smallest alpha that zeroes every coefficient down to 1e-3 of it.
pub fn alpha_path(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, n: usize) -> Vec<f64> {
    let z = Scaler::fit(x).transform(x);
    let yc = &y - y.mean().unwrap_or(0.0);
    let alpha_max = z
        .axis_iter(Axis(1))
        .map(|c| c.dot(&yc).abs())
        .fold(0.0f64, f64::max)
        / x.nrows() as f64;
    let alpha_max = if alpha_max > 0.0 { alpha_max } else { 1.0 };
    (0..n)
        .map(|i| alpha_max * 10f64.powf(-3.0 * i as f64 / (n - 1).max(1) as f64))
        .collect()
}

pub struct LassoCv {
    pub alphas: Vec<f64>,
    pub cv_mse: Vec<f64>,
    pub best_alpha: f64,
}

/// Mean held-out MSE of each alpha over k folds; the best alpha has the lowest.
pub fn cross_validate(
    layer: &str,
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    alphas: &[f64],
    folds: usize,
    seed: u64,
) -> Result<LassoCv> {
    // Each fold is standardized once with its own statistics and reused along the alpha path.
    let folds: Vec<_> = kfold(x.nrows(), folds, seed)
        .into_iter()
        .map(|(fit, held)| {
            let xf = x.select(Axis(0), &fit);
            let scaler = Scaler::fit(xf.view());
            let zf = scaler.transform(xf.view());
            let zh = scaler.transform(x.select(Axis(0), &held).view());
            (
                zf,
                y.select(Axis(0), &fit),
                zh,
                y.select(Axis(0), &held).to_vec(),
            )
        })
        .collect();
    let errors: Vec<f64> = (0..alphas.len() * folds.len())
        .into_par_iter()
        .map(|k| {
            let (zf, yf, zh, yh) = &folds[k % folds.len()];
            let (coef, intercept) =
                fit_standardized(layer, zf.view(), yf.view(), alphas[k / folds.len()], 1e-4)?;
            Ok(mse(yh, &(zh.dot(&coef) + intercept).to_vec()))
        })
        .collect::<Result<_>>()?;
    let per_alpha: Vec<f64> = errors
        .chunks(folds.len())
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let best = (0..alphas.len())
        .min_by(|&a, &b| per_alpha[a].total_cmp(&per_alpha[b]))
        .ok_or_else(|| model_err(layer, "empty alpha path"))?;
    Ok(LassoCv {
        alphas: alphas.to_vec(),
        cv_mse: per_alpha,
        best_alpha: alphas[best],
    })
}
