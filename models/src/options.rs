//! What a ranking is asked to do: the one option set of `dc-model rank`, the pipeline's `[model]`
//! table (deserialized as it is) and Python.
use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::error::{ModelError, Result};
use crate::gbm::GbmParams;
use crate::report::ImportanceKind;
use crate::split::SplitKind;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankOptions {
    /// Layers to rank, each on its own; `all` or an empty list means every layer.
    pub layers: Vec<String>,
    /// `bandwidth`, `duration`, `size`, or the name of a feature column.
    pub target: String,
    #[serde(deserialize_with = "fraction")]
    pub cumulative: f64,
    pub importance: ImportanceKind,
    pub folds: usize,
    pub seed: u64,
    pub split: SplitKind,
    #[serde(deserialize_with = "fraction")]
    pub test_fraction: f64,
    /// Features with |Pearson r| above this are grouped and only the group's first one is modelled.
    pub duplicate_threshold: f64,
    /// Leave out feature columns that are constant over the rows (features a layer never saw there)
    /// instead of failing on them. `dc-model rank` and Python fail unless asked (`--drop-constant`).
    pub drop_constant: bool,
    pub lasso_alphas: usize,
    pub permutation_repeats: usize,
    /// Mean |SHAP| is taken over at most this many held-out rows (a seeded sample).
    pub shap_rows: usize,
    pub autoregression_lags: usize,
    /// Compute every importance, not only the one the ranking uses. `dc-model rank` leaves it off
    /// (`--all-importances`); the library keeps it on for the pipeline report, which shows them all.
    pub all_importances: bool,
    pub gbm: GbmParams,
}

impl Default for RankOptions {
    fn default() -> Self {
        Self {
            layers: vec!["all".to_string()],
            target: "bandwidth".to_string(),
            cumulative: 0.95,
            importance: ImportanceKind::Shap,
            folds: 5,
            seed: 0,
            split: SplitKind::Time,
            test_fraction: 0.2,
            duplicate_threshold: 0.95,
            drop_constant: true,
            lasso_alphas: 30,
            permutation_repeats: 5,
            shap_rows: 5000,
            autoregression_lags: 3,
            all_importances: true,
            gbm: GbmParams::default(),
        }
    }
}

impl RankOptions {
    pub fn validate(&self) -> Result<()> {
        let bad = |option: &str, reason: String| {
            Err(ModelError::Option {
                option: option.to_string(),
                reason,
            })
        };
        if !(self.cumulative > 0.0 && self.cumulative <= 1.0) {
            return bad(
                "--cumulative",
                format!("{} is not in (0, 1]", self.cumulative),
            );
        }
        if self.folds < 2 {
            return bad("--folds", format!("{} folds; need at least 2", self.folds));
        }
        if !(self.test_fraction > 0.0 && self.test_fraction < 1.0) {
            return bad(
                "test fraction",
                format!("{} is not in (0, 1)", self.test_fraction),
            );
        }
        if !(self.duplicate_threshold > 0.0 && self.duplicate_threshold <= 1.0) {
            return bad(
                "--duplicate-threshold",
                format!("{} is not in (0, 1]", self.duplicate_threshold),
            );
        }
        if self.gbm.max_depth == 0 || self.gbm.max_depth > 16 || self.gbm.n_estimators == 0 {
            return bad(
                "gbm",
                "needs 1..=16 depth and at least one tree".to_string(),
            );
        }
        if self.lasso_alphas < 2 || self.permutation_repeats == 0 || self.shap_rows == 0 {
            return bad(
                "lasso/permutation",
                "need 2+ alphas, 1+ repeat and 1+ SHAP row".to_string(),
            );
        }
        Ok(())
    }

    /// Gain (always: it is a by-product of the fit) and the ranking's importance, or all three.
    pub fn computed_importances(&self) -> Vec<ImportanceKind> {
        [
            ImportanceKind::Shap,
            ImportanceKind::Gain,
            ImportanceKind::Permutation,
        ]
        .into_iter()
        .filter(|&k| self.all_importances || k == self.importance || k == ImportanceKind::Gain)
        .collect()
    }

    pub fn min_rows(&self) -> usize {
        10 * self.folds
    }
}

/// A share in (0, 1], refused with the value where the file gives it.
fn fraction<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(de::Error::custom(format!("{v} is not in (0, 1]")))
    }
}
