//! What `rank` returns: everything the table shows and `--json` writes, for `pipelines`.
use crate::sample::Stratum;
use crate::split::SplitKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ImportanceKind {
    /// Mean |SHAP| of the GBM on the test rows (exact TreeSHAP).
    Shap,
    /// Total squared-error reduction of the GBM's splits.
    Gain,
    /// Drop of the GBM's test R² when the feature is shuffled.
    Permutation,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankReport {
    pub target: String,
    pub importance: ImportanceKind,
    /// The importances computed: the ranking's and gain, or all three with `--all-importances`.
    #[serde(default)]
    pub computed_importances: Vec<ImportanceKind>,
    pub cumulative: f64,
    pub folds: usize,
    pub seed: u64,
    /// How the held-out rows and the CV folds were chosen.
    pub split: SplitKind,
    pub test_fraction: f64,
    pub rows_total: usize,
    /// Bandwidth at call i against calls i-1..i-k on the same file: what history alone explains.
    pub autoregression: AutoRegression,
    /// One GBM over the context and every ranked layer's features (`--layer all`), and each layer's share of it.
    pub stack: Option<StackReport>,
    pub layers: Vec<LayerRanking>,
    /// Layers that could not be ranked (or the stack model, as `stack`), with the reason.
    pub skipped_layers: Vec<SkippedLayer>,
    /// The sample the models were fitted on, when the matrix was ranked on one; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackReport {
    pub quality: Quality,
    /// Held-out R² of a GBM on the context columns alone; null when no context column varies.
    pub context_r2: Option<f64>,
    /// Share of the stack model's mean |SHAP| that falls on the context columns.
    pub context_share: f64,
    /// The ranked layers by decreasing share; shares and `context_share` sum to 1.
    pub layers: Vec<StackLayer>,
    /// The same shares within each kind of call (operation and buffered or direct), beside the share
    /// of those calls' time that each layer carries.
    pub groups: Vec<StackGroup>,
}

/// One kind of call in the stack model: which layers explain its target, and which carry its time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackGroup {
    /// The operation and `buffered`, `direct` or `unknown`, e.g. `read direct`.
    pub group: String,
    /// The group's rows, and how many of them are test rows (the SHAP shares are over those).
    pub rows: usize,
    pub test_rows: usize,
    pub context_share: f64,
    /// By decreasing share.
    pub layers: Vec<StackGroupLayer>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackGroupLayer {
    pub layer: String,
    /// Share of the group's mean |SHAP| on its test rows that falls on this layer's features.
    pub share: f64,
    /// Share of the group's summed call time (`dur`) that is this layer's exclusive time (`self_ns`
    /// for `self`); null for a layer without exclusive time.
    pub time_share: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackLayer {
    pub layer: String,
    /// Share of the stack model's mean |SHAP| on the test rows that falls on this layer's features.
    pub share: f64,
    /// The layer's own model's held-out R² minus the context model's.
    pub delta_r2: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkippedLayer {
    pub layer: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayerRanking {
    pub layer: String,
    pub rows: usize,
    pub train_rows: usize,
    pub test_rows: usize,
    /// Columns that entered the models: one per near-duplicate group.
    pub model_features: Vec<String>,
    pub dropped_constant: Vec<String>,
    /// Held-out R² of a GBM on the context columns alone (same split); null when no context column varies.
    pub context_r2: Option<f64>,
    /// The GBM's held-out R² minus `context_r2` (minus 0 without context): what the layer adds.
    pub delta_r2: f64,
    /// Kept features, by decreasing importance, until the cumulative share reaches `cumulative`.
    pub ranking: Vec<RankedFeature>,
    /// Every model feature's importances, each way, with shares normalized over the layer.
    pub importances: Vec<FeatureImportance>,
    pub correlation: CorrelationReport,
    pub pca: PcaReport,
    pub lasso: LassoReport,
    pub gbm: GbmReport,
    /// The held-out rows: measured target against each model's prediction.
    pub test_predictions: Vec<Prediction>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankedFeature {
    pub rank: usize,
    pub feature: String,
    /// A context column (op, size, ...) rather than one of the layer's functions.
    pub context: bool,
    pub importance: f64,
    /// Share of the layer's total importance; shares of all model features sum to 1.
    pub share: f64,
    pub cumulative_share: f64,
    /// Sign of the Lasso coefficient at the CV-chosen alpha: -1, 0 or 1.
    pub lasso_sign: i8,
    /// Fraction of the CV folds whose own ranking also kept this feature.
    pub fold_stability: f64,
    /// Near-duplicates (|r| above the threshold) this feature stands for.
    pub duplicates: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FeatureImportance {
    pub feature: String,
    pub gain: f64,
    pub gain_share: f64,
    /// Null unless `computed_importances` of the report lists permutation.
    pub permutation: Option<f64>,
    pub permutation_share: Option<f64>,
    /// Null unless `computed_importances` of the report lists SHAP.
    pub shap: Option<f64>,
    pub shap_share: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CorrelationReport {
    /// Row and column names of the matrices: every feature, then the target.
    pub names: Vec<String>,
    pub pearson: Vec<Vec<f64>>,
    pub spearman: Vec<Vec<f64>>,
    /// Features by decreasing |Pearson r| with the target.
    pub to_target: Vec<TargetCorrelation>,
    pub duplicate_threshold: f64,
    /// Groups of two or more features with |r| above the threshold; the first one is kept.
    pub near_duplicate_groups: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetCorrelation {
    pub feature: String,
    pub pearson: f64,
    pub spearman: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PcaReport {
    pub explained_variance_ratio: Vec<f64>,
    /// Components whose cumulative explained variance reaches 95%.
    pub components_95: usize,
    /// Each feature's loadings (correlation with the component) on those components.
    pub loadings: Vec<Loading>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Loading {
    pub feature: String,
    pub loadings: Vec<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Quality {
    pub test_r2: f64,
    /// Over the test rows whose measured value is not zero; null when there are none.
    pub test_mape: Option<f64>,
    pub cv_r2_mean: f64,
    pub cv_r2_sd: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LassoReport {
    pub alpha: f64,
    pub alphas: Vec<f64>,
    pub cv_mse: Vec<f64>,
    /// Coefficients on standardized features, non-zero ones only, by decreasing magnitude.
    pub nonzero: Vec<Coefficient>,
    pub intercept: f64,
    pub quality: Quality,
    /// Whether the fit reported reached its duality gap ([`crate::lasso::MAX_SWEEPS`]); if not, it is the last
    /// iterate.
    #[serde(default = "yes")]
    pub converged: bool,
    /// The cross-validation path's and the folds' fits that stopped at the sweep limit.
    #[serde(default)]
    pub unconverged: usize,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Coefficient {
    pub feature: String,
    pub coef: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GbmReport {
    pub n_trees: usize,
    pub max_trees: usize,
    pub max_depth: usize,
    pub learning_rate: f64,
    pub quality: Quality,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prediction {
    /// Row of the input matrix.
    pub row: usize,
    pub measured: f64,
    pub gbm: f64,
    pub lasso: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AutoRegression {
    pub lags: usize,
    pub rows: usize,
    pub train_rows: usize,
    pub test_rows: usize,
    pub test_r2: Option<f64>,
    pub test_mape: Option<f64>,
    /// Coefficient of each lag (1 = previous call) on standardized lags.
    pub coefficients: Vec<f64>,
    /// Why nothing was fitted, when too few calls have enough history.
    pub skipped: Option<String>,
}

/// A share and its bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareInterval {
    /// A layer (`context` for the call's context columns), or a feature column.
    pub name: String,
    /// The feature's layer; for a layer, itself.
    pub layer: String,
    /// On the ranked sample's stack model (a GBM over the context and every ranked layer).
    pub share: f64,
    /// The share ± 1.96 standard deviations of it over the bootstrap refits, within [0, 1].
    pub low: f64,
    pub high: f64,
}

/// What the sample is, and how sure its shares are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleReport {
    pub rows_total: usize,
    pub rows_with_target: usize,
    /// Rows the models were judged on, drawn from the whole matrix; no fit saw them.
    pub held_out_rows: usize,
    /// Rows the models were fitted on: each kind of call's share of them.
    pub fitted_rows: usize,
    pub max_rows: usize,
    /// The half-width asked of each layer's share's 95% interval.
    pub share_error: f64,
    /// Rows of the first fit, and each layer's share's standard deviation over its bootstrap refits:
    /// the fitted rows are those that bring the widest to `share_error` (as 1/√rows), up to `max_rows`.
    pub pilot_rows: usize,
    pub pilot_share_sd: Vec<(String, f64)>,
    pub bootstrap: usize,
    /// Every layer's share, by decreasing share, and every feature's.
    pub layers: Vec<ShareInterval>,
    pub features: Vec<ShareInterval>,
    /// The widest layer interval's half-width, and whether it is within `share_error`.
    pub half_width: f64,
    pub error_reached: bool,
    /// Each kind of call: its rows (out of the held-out ones) and those fitted on at most.
    pub strata: Vec<Stratum>,
}
