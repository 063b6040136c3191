//! Lasso on standardized features, alpha chosen by k-fold CV over a warm-started path.
//!
//! Features are standardized once, with the training rows' statistics, as scikit-learn's
//! StandardScaler followed by LassoCV does; each fold is only centered (the intercept). With many
//! more rows than features, coordinate descent runs on the Gram matrix (scikit-learn's
//! `precompute`), so a sweep costs O(p²) whatever the row count; each alpha starts from the previous
//! one's solution, and the sequential strong rule leaves out the features that will stay at zero.
//! linfa-elasticnet has neither a path nor a Gram mode: its cold fits at every alpha were most of
//! `rank`'s Lasso time.
use crate::error::{Result, model_err};
use crate::interrupt;
use crate::stats::{Scaler, mse};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

/// The most coordinate descent sweeps one fit makes.
pub const MAX_SWEEPS: usize = 100_000;
use rayon::prelude::*;

/// A Lasso fit on standardized X (scikit-learn's objective: 1/(2n)·|y − Xw − b|² + α·|w|₁).
pub struct Lasso {
    pub alpha: f64,
    /// Whether coordinate descent reached the duality gap asked for within [`MAX_SWEEPS`]; when it did not (nearly
    /// collinear features converge slowly), the fit is its last iterate, as scikit-learn's is with its
    /// ConvergenceWarning.
    pub converged: bool,
    pub scaler: Scaler,
    pub coef: Array1<f64>,
    pub intercept: f64,
}

impl Lasso {
    /// Standardizes `x` with its own statistics, then fits at `alpha` (duality gap below 1e-10 of |y|²).
    pub fn fit(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, alpha: f64) -> Self {
        let scaler = Scaler::fit(x);
        let z = scaler.transform(x);
        let problem = Gram::new(z.view(), y);
        let mut w = Array1::zeros(z.ncols());
        let converged = problem.solve(alpha, None, &mut w, 1e-10);
        Self {
            alpha,
            converged,
            scaler,
            intercept: problem.intercept(&w),
            coef: w,
        }
    }

    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Array1<f64> {
        self.scaler.transform(x).dot(&self.coef) + self.intercept
    }
}

/// A least-squares problem reduced to its Gram form: G = ZcᵀZc/n and q = Zcᵀyc/n on centered data.
struct Gram {
    g: Array2<f64>,
    q: Array1<f64>,
    /// |yc|²/n.
    yy: f64,
    z_mean: Array1<f64>,
    y_mean: f64,
}

impl Gram {
    fn new(z: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> Self {
        let n = z.nrows() as f64;
        let z_mean = z.mean_axis(Axis(0)).expect("rows");
        let y_mean = y.mean().expect("rows");
        let zc = &z - &z_mean;
        let yc = &y - y_mean;
        Self {
            g: zc.t().dot(&zc) / n,
            q: zc.t().dot(&yc) / n,
            yy: yc.dot(&yc) / n,
            z_mean,
            y_mean,
        }
    }

    fn intercept(&self, w: &Array1<f64>) -> f64 {
        self.y_mean - self.z_mean.dot(w)
    }

    /// Duality gap of `w` at `alpha`, given h = G·w (scikit-learn's, divided by n).
    fn gap(&self, alpha: f64, w: &Array1<f64>, h: &Array1<f64>) -> f64 {
        let qw = self.q.dot(w);
        let r2 = self.yy - 2.0 * qw + w.dot(h);
        let dual_norm = (&self.q - h).iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let c = if dual_norm > alpha {
            alpha / dual_norm
        } else {
            1.0
        };
        0.5 * r2 * (1.0 + c * c) + alpha * w.iter().map(|v| v.abs()).sum::<f64>()
            - c * (self.yy - qw)
    }

    /// Coordinate descent from `w` until the duality gap is below `tol`·|yc|²/n, or [`MAX_SWEEPS`] sweeps: true
    /// when the gap was reached. With `previous` (the alpha solved before, whose solution `w` holds), only the
    /// features the strong rule keeps are swept, then every feature is checked against the optimality conditions.
    fn solve(&self, alpha: f64, previous: Option<f64>, w: &mut Array1<f64>, tol: f64) -> bool {
        let p = w.len();
        let mut h = self.g.dot(&*w);
        let mut active: Vec<bool> = match previous {
            Some(prev) => (0..p)
                .map(|j| w[j] != 0.0 || (self.q[j] - h[j]).abs() >= 2.0 * alpha - prev)
                .collect(),
            None => vec![true; p],
        };
        for _ in 0..MAX_SWEEPS {
            for j in (0..p).filter(|&j| active[j]) {
                let gjj = self.g[[j, j]];
                if gjj <= 0.0 {
                    continue;
                }
                let rho = self.q[j] - h[j] + gjj * w[j];
                let new = rho.signum() * (rho.abs() - alpha).max(0.0) / gjj;
                let delta = new - w[j];
                if delta != 0.0 {
                    w[j] = new;
                    h.scaled_add(delta, &self.g.column(j));
                }
            }
            let violators: Vec<usize> = (0..p)
                .filter(|&j| !active[j] && (self.q[j] - h[j]).abs() > alpha)
                .collect();
            if violators.is_empty()
                && self.gap(alpha, w, &h) <= tol * self.yy.max(f64::MIN_POSITIVE)
            {
                return true;
            }
            for j in violators {
                active[j] = true;
            }
        }
        false
    }
}

/// `n` alphas log-spaced from the smallest alpha that zeroes every coefficient of a Lasso on
/// standardized `z` down to 1e-3 of it (scikit-learn's grid, eps 1e-3).
pub fn alpha_path(z: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, n: usize) -> Vec<f64> {
    let yc = &y - y.mean().unwrap_or(0.0);
    let alpha_max = z
        .axis_iter(Axis(1))
        .map(|c| c.dot(&yc).abs())
        .fold(0.0f64, f64::max)
        / z.nrows() as f64;
    let alpha_max = if alpha_max > 0.0 { alpha_max } else { 1.0 };
    (0..n)
        .map(|i| alpha_max * 10f64.powf(-3.0 * i as f64 / (n - 1).max(1) as f64))
        .collect()
}

pub struct LassoCv {
    pub alphas: Vec<f64>,
    pub cv_mse: Vec<f64>,
    pub best_alpha: f64,
    /// The (fold, alpha) fits that stopped at [`MAX_SWEEPS`] before their duality gap.
    pub unconverged: usize,
}

/// Mean held-out MSE of each alpha (given largest first) over the folds (positions into the rows of
/// standardized `z`); the best alpha has the lowest.
pub fn cross_validate(
    layer: &str,
    z: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    alphas: &[f64],
    folds: &[(Vec<usize>, Vec<usize>)],
) -> Result<LassoCv> {
    let per_fold: Vec<Vec<(f64, bool)>> = folds
        .par_iter()
        .map(|(fit, held)| {
            let problem = Gram::new(z.select(Axis(0), fit).view(), y.select(Axis(0), fit).view());
            let zh = z.select(Axis(0), held);
            let yh = y.select(Axis(0), held).to_vec();
            let mut w = Array1::zeros(z.ncols());
            let mut previous = None;
            alphas
                .iter()
                .map(|&alpha| {
                    interrupt::check()?;
                    let converged = problem.solve(alpha, previous, &mut w, 1e-8);
                    previous = Some(alpha);
                    let pred = zh.dot(&w) + problem.intercept(&w);
                    Ok((mse(&yh, &pred.to_vec()), converged))
                })
                .collect()
        })
        .collect::<Result<_>>()?;
    let cv_mse: Vec<f64> = (0..alphas.len())
        .map(|a| per_fold.iter().map(|f| f[a].0).sum::<f64>() / folds.len() as f64)
        .collect();
    let unconverged = per_fold.iter().flatten().filter(|f| !f.1).count();
    let best = (0..alphas.len())
        .min_by(|&a, &b| cv_mse[a].total_cmp(&cv_mse[b]))
        .ok_or_else(|| model_err(layer, "empty alpha path"))?;
    Ok(LassoCv {
        alphas: alphas.to_vec(),
        cv_mse,
        best_alpha: alphas[best],
        unconverged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearly_collinear_features_stop_at_the_sweep_limit_with_their_last_iterate() {
        // The target is the small difference of two features that are otherwise equal (correlation 1 − 10⁻⁸):
        // each sweep of coordinate descent closes about 10⁻⁸ of the way, far too little for MAX_SWEEPS.
        let n = 200;
        let a = |i: usize| ((i * 37) % 101) as f64;
        let b = |i: usize| ((i * 11) % 7) as f64 - 3.0;
        let x = Array2::from_shape_fn((n, 2), |(i, j)| {
            let sign = if j == 0 { 1.0 } else { -1.0 };
            a(i) + sign * 1e-4 * b(i)
        });
        let y = Array1::from_iter((0..n).map(b));
        let fit = Lasso::fit(x.view(), y.view(), 1e-9);
        assert!(!fit.converged);
        assert!(fit.coef.iter().all(|c| c.is_finite()) && fit.intercept.is_finite());

        let apart = Array2::from_shape_fn((n, 2), |(i, j)| if j == 0 { a(i) } else { b(i) });
        let fit = Lasso::fit(apart.view(), y.view(), 1e-9);
        assert!(fit.converged);
    }
}
