//! The report's data files read back: the parts of `data/*.json` that the charts and `report.md` show.
//!
//! Reading the files rather than the in-memory results keeps the report re-drawable from a finished
//! (or resumed) report directory, and makes the charts show exactly what the data files hold.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::run::{BenchRow, RunRecord, Skipped};

#[derive(Clone, Debug, Deserialize)]
pub struct Rank {
    pub target: String,
    pub importance: String,
    pub cumulative: f64,
    pub rows_total: usize,
    /// One model over the context and every layer together, where the ranking made one.
    #[serde(default)]
    pub stack: Option<Stack>,
    pub layers: Vec<Layer>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Stack {
    pub quality: Quality,
    /// Held-out R² of the context columns alone.
    pub context_r2: Option<f64>,
    pub context_share: f64,
    /// By decreasing share.
    pub layers: Vec<StackLayer>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct StackLayer {
    pub layer: String,
    /// Share of the stack model's mean |SHAP| on this layer's features.
    pub share: f64,
    /// The layer's own held-out R² minus the context model's.
    pub delta_r2: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Layer {
    pub layer: String,
    pub rows: usize,
    pub train_rows: usize,
    pub test_rows: usize,
    pub ranking: Vec<Ranked>,
    pub importances: Vec<Importance>,
    pub correlation: Correlation,
    pub pca: Pca,
    pub lasso: Model,
    pub gbm: Model,
    pub test_predictions: Vec<Prediction>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Ranked {
    pub rank: usize,
    pub feature: String,
    pub share: f64,
    pub cumulative_share: f64,
    pub fold_stability: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Importance {
    pub feature: String,
    pub gain_share: f64,
    pub permutation_share: f64,
    pub shap_share: f64,
}

impl Importance {
    /// The share of the importance kind the ranking used.
    pub fn share(&self, kind: &str) -> Option<f64> {
        match kind {
            "shap" => Some(self.shap_share),
            "gain" => Some(self.gain_share),
            "permutation" => Some(self.permutation_share),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct Correlation {
    pub names: Vec<String>,
    pub pearson: Vec<Vec<f64>>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Pca {
    pub explained_variance_ratio: Vec<f64>,
    pub components_95: usize,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Model {
    pub quality: Quality,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Quality {
    pub test_r2: f64,
    pub test_mape: Option<f64>,
    pub cv_r2_mean: f64,
    pub cv_r2_sd: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Prediction {
    pub measured: f64,
    pub gbm: f64,
}

/// Everything under `data/`.
pub struct Data {
    pub runs: Vec<RunRecord>,
    pub bench: Vec<BenchRow>,
    pub rank: Rank,
    pub skipped: Vec<Skipped>,
}

fn read<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

impl Data {
    pub fn read(out: &Path) -> Result<Data> {
        let d = out.join("data");
        Ok(Data {
            runs: read(&d.join("runs.json"))?,
            bench: read(&d.join("bench-samples.json"))?,
            rank: read(&d.join("rank.json"))?,
            skipped: read(&d.join("rank-skipped.json"))?,
        })
    }
}

/// Median and quartiles by linear interpolation between order statistics (NumPy's default).
pub fn quartiles(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let x = p * (v.len() - 1) as f64;
        let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
    };
    (q(0.25), q(0.5), q(0.75))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_match_numpy() {
        // numpy.percentile([1, 2, 3, 4, 10], [25, 50, 75]) == [2, 3, 4]
        assert_eq!(quartiles(&[10.0, 2.0, 3.0, 1.0, 4.0]), (2.0, 3.0, 4.0));
        // numpy.percentile([1, 2, 3, 4], [25, 50, 75]) == [1.75, 2.5, 3.25]
        assert_eq!(quartiles(&[4.0, 3.0, 2.0, 1.0]), (1.75, 2.5, 3.25));
        assert_eq!(quartiles(&[7.0]), (7.0, 7.0, 7.0));
    }
}
