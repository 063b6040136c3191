//! What a ranking is asked to do: the one option set of `dc-model rank`, the pipeline's `[model]`
//! table (deserialized as it is) and Python.
use std::ops::Bound::{Excluded, Included};

use serde::Deserialize;

use crate::error::{ModelError, Result};
use crate::gbm::GbmParams;
use crate::limit::{Limit, limited_fields};
use crate::report::ImportanceKind;
use crate::split::{SplitKind, rows_for};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankOptions {
    /// Layers to rank, each on its own; `all` or an empty list means every layer.
    pub layers: Vec<String>,
    /// `bandwidth`, `duration`, `size`, or the name of a feature column.
    pub target: String,
    #[serde(deserialize_with = "cumulative")]
    pub cumulative: f64,
    pub importance: ImportanceKind,
    #[serde(deserialize_with = "folds")]
    pub folds: usize,
    pub seed: u64,
    pub split: SplitKind,
    #[serde(deserialize_with = "test_fraction")]
    pub test_fraction: f64,
    /// Features with |Pearson r| above this are grouped and only the group's first one is modelled.
    #[serde(deserialize_with = "duplicate_threshold")]
    pub duplicate_threshold: f64,
    /// Leave out feature columns that are constant over the rows (features a layer never saw there)
    /// instead of failing on them: the report lists them. On by default everywhere; `dc-model
    /// --drop-constant false`, `drop_constant = false` or Python's `drop_constant=False` fail instead.
    pub drop_constant: bool,
    #[serde(deserialize_with = "lasso_alphas")]
    pub lasso_alphas: usize,
    #[serde(deserialize_with = "permutation_repeats")]
    pub permutation_repeats: usize,
    /// Mean |SHAP| is taken over at most this many held-out rows (a seeded sample).
    #[serde(deserialize_with = "shap_rows")]
    pub shap_rows: usize,
    #[serde(deserialize_with = "autoregression_lags")]
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

/// Held-out rows a model is judged on at the least: an R², a MAPE or a rule's precision over fewer
/// says little, and the slowest 10% of fewer calls is not one call.
pub const MIN_TEST_ROWS: usize = 10;

impl RankOptions {
    /// Refuses a value outside its [`Limit`], naming the option and why the limit is there. The seed
    /// has none: every u64 seeds the shuffles.
    pub fn validate(&self) -> Result<()> {
        CUMULATIVE.validate(self.cumulative)?;
        FOLDS.validate(self.folds)?;
        TEST_FRACTION.validate(self.test_fraction)?;
        DUPLICATE_THRESHOLD.validate(self.duplicate_threshold)?;
        LASSO_ALPHAS.validate(self.lasso_alphas)?;
        PERMUTATION_REPEATS.validate(self.permutation_repeats)?;
        SHAP_ROWS.validate(self.shap_rows)?;
        AUTOREGRESSION_LAGS.validate(self.autoregression_lags)?;
        self.gbm.validate()
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

    /// The fewest rows on which a model is fitted and judged: [`MIN_TEST_ROWS`] held out, and as
    /// many to fit on.
    pub fn min_judged_rows(&self) -> usize {
        rows_for(MIN_TEST_ROWS, self.test_fraction)
    }

    /// The fewest rows `rank` needs: those to judge on, and 10 per cross-validation fold.
    pub fn min_rows(&self) -> usize {
        self.min_judged_rows().max(10 * self.folds)
    }

    /// Refuses `rows` below what `model` needs: [`min_rows`](Self::min_rows) when it is
    /// cross-validated, [`min_judged_rows`](Self::min_judged_rows) otherwise.
    pub(crate) fn enough_rows(
        &self,
        layer: &str,
        model: &str,
        rows: usize,
        cross_validated: bool,
    ) -> Result<()> {
        let (min, folds) = if cross_validated {
            (self.min_rows(), format!("10 per fold of {}, ", self.folds))
        } else {
            (self.min_judged_rows(), String::new())
        };
        if rows >= min {
            return Ok(());
        }
        Err(ModelError::TooFewRows {
            layer: layer.to_string(),
            target: self.target.clone(),
            rows,
            model: model.to_string(),
            min,
            why: format!(
                "{folds}{MIN_TEST_ROWS} held out at test fraction {} and {MIN_TEST_ROWS} to fit on",
                self.test_fraction
            ),
        })
    }
}

pub const CUMULATIVE: Limit<f64> = Limit {
    name: "cumulative",
    low: Excluded(0.0),
    high: Included(1.0),
    why: "",
};
pub const FOLDS: Limit<usize> = Limit {
    name: "folds",
    low: Included(2),
    high: Included(100),
    why: "cross-validation needs two folds, and each fold refits every model (scikit-learn's default is 5)",
};
pub const TEST_FRACTION: Limit<f64> = Limit {
    name: "test_fraction",
    low: Included(0.01),
    high: Included(0.9),
    why: "the held-out share: below 1% a model is judged on too few rows, above 90% fitted on too few",
};
pub const DUPLICATE_THRESHOLD: Limit<f64> = Limit {
    name: "duplicate_threshold",
    low: Excluded(0.0),
    high: Included(1.0),
    why: "",
};
pub const LASSO_ALPHAS: Limit<usize> = Limit {
    name: "lasso_alphas",
    low: Included(2),
    high: Included(1000),
    why: "the Lasso is fitted once per alpha and fold (scikit-learn's LassoCV tries 100)",
};
pub const PERMUTATION_REPEATS: Limit<usize> = Limit {
    name: "permutation_repeats",
    low: Included(1),
    high: Included(1000),
    why: "each repeat predicts every held-out row once per feature",
};
pub const SHAP_ROWS: Limit<usize> = Limit {
    name: "shap_rows",
    low: Included(1),
    high: Included(1_000_000),
    why: "TreeSHAP's time grows with each row it explains; the mean is taken over a seeded sample",
};
pub const AUTOREGRESSION_LAGS: Limit<usize> = Limit {
    name: "autoregression_lags",
    low: Included(1),
    high: Included(100),
    why: "each lag is one more column, and a file needs 10 calls per lag to fit on",
};

limited_fields! {
    cumulative: f64 = CUMULATIVE;
    folds: usize = FOLDS;
    test_fraction: f64 = TEST_FRACTION;
    duplicate_threshold: f64 = DUPLICATE_THRESHOLD;
    lasso_alphas: usize = LASSO_ALPHAS;
    permutation_repeats: usize = PERMUTATION_REPEATS;
    shap_rows: usize = SHAP_ROWS;
    autoregression_lags: usize = AUTOREGRESSION_LAGS;
}
