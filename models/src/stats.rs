//! Small statistics shared by the models: scaling, ranks, correlation and held-out scores.
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;

/// Column means and population standard deviations (ddof 0, as scikit-learn's StandardScaler).
pub struct Scaler {
    pub mean: Array1<f64>,
    pub std: Array1<f64>,
}

impl Scaler {
    pub fn fit(x: ArrayView2<'_, f64>) -> Self {
        let n = x.nrows() as f64;
        let mean = x
            .mean_axis(Axis(0))
            .unwrap_or_else(|| Array1::zeros(x.ncols()));
        let std = Array1::from_iter(x.axis_iter(Axis(1)).zip(mean.iter()).map(|(c, &m)| {
            let s = (c.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt();
            if s > 0.0 { s } else { 1.0 }
        }));
        Self { mean, std }
    }

    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        (&x - &self.mean) / &self.std
    }
}

pub fn standardize(x: ArrayView2<'_, f64>) -> Array2<f64> {
    Scaler::fit(x).transform(x)
}

/// Pearson correlation matrix of the columns.
pub fn correlation_matrix(x: ArrayView2<'_, f64>) -> Array2<f64> {
    let z = standardize(x);
    let mut c = z.t().dot(&z) / x.nrows() as f64;
    for i in 0..c.nrows() {
        c[[i, i]] = 1.0;
    }
    c.mapv_inplace(|v| v.clamp(-1.0, 1.0));
    c
}

/// Ranks starting at 1, ties get the mean of their ranks (as scipy's rankdata "average").
pub fn average_ranks(v: ArrayView1<'_, f64>) -> Array1<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut ranks = Array1::zeros(v.len());
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &o in &order[i..=j] {
            ranks[o] = r;
        }
        i = j + 1;
    }
    ranks
}

pub fn rank_columns(x: ArrayView2<'_, f64>) -> Array2<f64> {
    let ranks: Vec<Array1<f64>> = (0..x.ncols())
        .into_par_iter()
        .map(|j| average_ranks(x.column(j)))
        .collect();
    let mut r = Array2::zeros(x.raw_dim());
    for (j, c) in ranks.iter().enumerate() {
        r.column_mut(j).assign(c);
    }
    r
}

pub fn r2(y: &[f64], pred: &[f64]) -> f64 {
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let ss_tot: f64 = y.iter().map(|v| (v - mean) * (v - mean)).sum();
    let ss_res: f64 = y.iter().zip(pred).map(|(a, b)| (a - b) * (a - b)).sum();
    if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        0.0
    }
}

/// Mean absolute percentage error over the rows whose measured value is not zero.
pub fn mape(y: &[f64], pred: &[f64]) -> Option<f64> {
    let (sum, n) = y
        .iter()
        .zip(pred)
        .filter(|(a, _)| **a != 0.0)
        .fold((0.0, 0usize), |(s, n), (a, b)| {
            (s + ((a - b) / a).abs(), n + 1)
        });
    (n > 0).then(|| sum / n as f64)
}

pub fn mse(y: &[f64], pred: &[f64]) -> f64 {
    y.iter()
        .zip(pred)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        / y.len() as f64
}

/// Mean and sample standard deviation (ddof 1; 0 for a single value).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}
