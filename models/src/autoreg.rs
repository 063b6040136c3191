//! Auto-regression: the target of call i from the targets of calls i-1..i-k on the same file,
//! fitted on the earlier 80% of calls in time and scored on the later 20%.
use crate::report::AutoRegression;
use crate::stats::{Scaler, mape, r2};
use linfa_linalg::cholesky::SolveC;
use ndarray::{Array1, Array2, Axis};
use std::collections::HashMap;

pub struct Series<'a> {
    pub target: &'a [Option<f64>],
    pub file: &'a [Option<String>],
    pub ts_ns: &'a [u64],
}

pub fn fit(series: &Series<'_>, lags: usize, test_fraction: f64) -> AutoRegression {
    let mut by_file: HashMap<&str, Vec<usize>> = HashMap::new();
    for (row, (t, f)) in series.target.iter().zip(series.file).enumerate() {
        if let (Some(v), Some(f)) = (t, f)
            && v.is_finite()
        {
            by_file.entry(f.as_str()).or_default().push(row);
        }
    }
    let mut samples: Vec<(u64, usize, Vec<f64>, f64)> = Vec::new();
    for rows in by_file.values_mut() {
        rows.sort_by_key(|&r| (series.ts_ns[r], r));
        for i in lags..rows.len() {
            let value = |r: usize| series.target[r].unwrap_or(0.0);
            let hist = (1..=lags).map(|k| value(rows[i - k])).collect();
            samples.push((series.ts_ns[rows[i]], rows[i], hist, value(rows[i])));
        }
    }
    samples.sort_by_key(|s| (s.0, s.1));
    let n = samples.len();
    let n_test = (n as f64 * test_fraction).round() as usize;
    let mut out = AutoRegression {
        lags,
        rows: n,
        train_rows: n - n_test,
        test_rows: n_test,
        test_r2: None,
        test_mape: None,
        coefficients: Vec::new(),
        skipped: None,
    };
    let min = 10 * (lags + 1);
    if n - n_test < min || n_test < 2 {
        out.skipped = Some(format!(
            "{n} calls have {lags} earlier calls on the same file; need {min} to fit and 2 to test"
        ));
        return out;
    }
    let x = Array2::from_shape_fn((n, lags), |(i, k)| samples[i].2[k]);
    let y = Array1::from_iter(samples.iter().map(|s| s.3));
    let (train, test) = (0..n - n_test, n - n_test..n);
    let scaler = Scaler::fit(x.slice(ndarray::s![train.clone(), ..]));
    let z = scaler.transform(x.view());
    let zt = z.slice(ndarray::s![train.clone(), ..]);
    let yt = y.slice(ndarray::s![train]);
    let y_mean = yt.mean().unwrap_or(0.0);
    let m = zt.nrows() as f64;
    // A tiny ridge keeps the normal equations solvable when lags repeat exactly.
    let mut a = zt.t().dot(&zt) / m + Array2::<f64>::eye(lags) * 1e-9;
    let b = (zt.t().dot(&(&yt - y_mean)) / m).insert_axis(Axis(1));
    let Ok(w) = a.solvec(&b) else {
        out.skipped = Some("the lagged values are linearly dependent".to_string());
        return out;
    };
    let w = w.column(0).to_owned();
    let pred: Vec<f64> = z
        .slice(ndarray::s![test.clone(), ..])
        .dot(&w)
        .iter()
        .map(|p| p + y_mean)
        .collect();
    let yv = y.slice(ndarray::s![test]).to_vec();
    out.test_r2 = Some(r2(&yv, &pred));
    out.test_mape = mape(&yv, &pred);
    out.coefficients = w.to_vec();
    out
}
