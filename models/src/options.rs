//! What a ranking is asked to do: the one option set of `dc-model` (its flags are derived here, behind the
//! `cli` feature, and flattened by the binary), the pipeline's `[model]` table (deserialized as it is) and
//! Python.
use std::ops::Bound::{Excluded, Included};

use serde::Deserialize;

use crate::error::{ModelError, Result};
use crate::gbm::GbmParams;
use crate::limit::{Limit, limited_fields};
use crate::report::ImportanceKind;
use crate::split::{SplitKind, rows_for};

/// The heading of the options only `dc-model rank` uses; the one-layer commands (`forest`,
/// `rules`, `dataset`) take the options above it.
pub const RANKING: &str = "Ranking";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct RankOptions {
    /// Layers to rank, each on its own; `all` or an empty list means every layer. Each command
    /// names its own `--layer`: `rank` takes several, the others one.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub layers: Vec<String>,
    /// bandwidth, duration, size, or a feature column name.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().target))]
    pub target: String,
    /// Held-out rows: the latest calls of each run or file (time), or a seeded shuffle (random).
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = RankOptions::default().split))]
    pub split: SplitKind,
    /// The share of each run's (or file's) calls held out to judge the models on.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().test_fraction))]
    #[serde(deserialize_with = "test_fraction")]
    pub test_fraction: f64,
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().seed))]
    pub seed: u64,
    /// Leave out columns constant over the rows that have a target (the summary lists them);
    /// `--drop-constant false` fails on them instead.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().drop_constant, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true"))]
    pub drop_constant: bool,
    /// Keep features until their cumulative importance share reaches this.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().cumulative, help_heading = RANKING))]
    #[serde(deserialize_with = "cumulative")]
    pub cumulative: f64,
    /// The importance the features are ranked by.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = RankOptions::default().importance, help_heading = RANKING))]
    pub importance: ImportanceKind,
    /// Also compute the importances the ranking does not use (gain is always computed).
    ///
    /// Off in `dc-model rank`; the library's default keeps it on for the pipeline report, which
    /// shows them all.
    #[cfg_attr(feature = "cli", arg(long, help_heading = RANKING))]
    pub all_importances: bool,
    /// Cross-validation folds.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().folds, help_heading = RANKING))]
    #[serde(deserialize_with = "folds")]
    pub folds: usize,
    /// Features with |Pearson r| above this are grouped; one per group is modelled.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().duplicate_threshold, help_heading = RANKING))]
    #[serde(deserialize_with = "duplicate_threshold")]
    pub duplicate_threshold: f64,
    /// Alphas on the Lasso's path, log-spaced over three decades (scikit-learn's grid).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().lasso_alphas, help_heading = RANKING))]
    #[serde(deserialize_with = "lasso_alphas")]
    pub lasso_alphas: usize,
    /// Shuffles of each feature's held-out column for the permutation importance.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().permutation_repeats, help_heading = RANKING))]
    #[serde(deserialize_with = "permutation_repeats")]
    pub permutation_repeats: usize,
    /// Mean |SHAP| is taken over at most this many held-out rows (a seeded sample).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().shap_rows, help_heading = RANKING))]
    #[serde(deserialize_with = "shap_rows")]
    pub shap_rows: usize,
    /// Earlier calls on the same file that the autoregression baseline predicts each call from.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = RankOptions::default().autoregression_lags, help_heading = RANKING))]
    #[serde(deserialize_with = "autoregression_lags")]
    pub autoregression_lags: usize,
    /// The gradient boosting's parameters: the pipeline's `[model.gbm]` table.
    #[cfg_attr(feature = "cli", arg(skip))]
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
        self.check_limits()?;
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
    RankOptions {
        cumulative: f64 = CUMULATIVE;
        folds: usize = FOLDS;
        test_fraction: f64 = TEST_FRACTION;
        duplicate_threshold: f64 = DUPLICATE_THRESHOLD;
        lasso_alphas: usize = LASSO_ALPHAS;
        permutation_repeats: usize = PERMUTATION_REPEATS;
        shap_rows: usize = SHAP_ROWS;
        autoregression_lags: usize = AUTOREGRESSION_LAGS;
    }
}
