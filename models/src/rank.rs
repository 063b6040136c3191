//! Ranking: [`rank`] ranks each layer asked for and fits the stack model over them; [`rank_dataset`]
//! ranks one layer's features, every model fitted on the same split, importances normalized, features
//! kept to a cumulative share, and the ranking's stability checked across folds.
use crate::autoreg::{self, Series};
use crate::correlation::Correlations;
use crate::dataset::{CONTEXT, Dataset};
use crate::error::{ModelError, Result, model_err};
use crate::fit::{ContextR2, Parts, Split, TrainBins, fit_gbm, quality};
use crate::gbm::Gbm;
use crate::importance::{mean_abs_shap, permutation};
use crate::input::{calls_of, dataset_of, resolve_layers, target_of};
use crate::interrupt;
use crate::lasso::{Lasso, alpha_path, cross_validate};
use crate::options::RankOptions;
use crate::pca::Pca;
use crate::progress;
use crate::report::*;
use crate::stack;
use crate::stats::{Scaler, r2};
use features::FeatureMatrix;
use indicatif::ProgressBar;
use ndarray::{ArrayView1, ArrayView2, Axis, s};
use rayon::prelude::*;

/// Shares of the non-negative parts of `v`, summing to 1.
fn shares(layer: &str, what: &str, v: &[f64]) -> Result<Vec<f64>> {
    let total: f64 = v.iter().map(|x| x.max(0.0)).sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(model_err(
            layer,
            format!("no feature has a positive {what} importance"),
        ));
    }
    Ok(v.iter().map(|x| x.max(0.0) / total).collect())
}

/// Each of `order`'s features with the running sum of the shares up to it (at most 1).
pub(crate) fn with_cumulative(order: &[usize], share: &[f64]) -> Vec<(usize, f64)> {
    let mut acc = 0.0;
    order
        .iter()
        .map(|&j| {
            acc += share[j];
            (j, acc.min(1.0))
        })
        .collect()
}

/// Feature indices by decreasing share, and how many of them reach `cumulative`.
pub(crate) fn kept(share: &[f64], cumulative: f64) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..share.len()).collect();
    order.sort_by(|&a, &b| share[b].total_cmp(&share[a]).then(a.cmp(&b)));
    let mut acc = 0.0;
    let mut n = 0;
    for &j in &order {
        if acc >= cumulative - 1e-12 || share[j] <= 0.0 {
            break;
        }
        acc += share[j];
        n += 1;
    }
    (order, n)
}

fn importance_of(
    kind: ImportanceKind,
    gbm: &Gbm,
    x_held: ArrayView2<'_, f64>,
    y_held: ArrayView1<'_, f64>,
    opts: &RankOptions,
) -> Vec<f64> {
    match kind {
        ImportanceKind::Gain => gbm.gain_importance(),
        ImportanceKind::Shap => mean_abs_shap(gbm, x_held, opts.shap_rows, opts.seed),
        ImportanceKind::Permutation => {
            permutation(gbm, x_held, y_held, opts.permutation_repeats, opts.seed)
        }
    }
}

/// Fits every model on one dataset (one layer and the context, or several layers pooled) and ranks
/// its features. Everything chosen (duplicate groups, scaling, alpha, tree count) is chosen on the
/// training rows; the test rows only score.
pub fn rank_dataset(layer: &str, full: &Dataset, opts: &RankOptions) -> Result<LayerRanking> {
    rank_layer(
        layer,
        full.clone(),
        opts,
        &ContextR2::default(),
        &ProgressBar::hidden(),
    )
}

/// [`rank_dataset`], advancing `pb` by [`crate::progress::steps`] as its fits end. It takes the
/// dataset so that its values are held once while the models fit; `context_r2` holds the context
/// model the ranking's other datasets fitted.
pub(crate) fn rank_layer(
    layer: &str,
    full: Dataset,
    opts: &RankOptions,
    context_r2: &ContextR2,
    pb: &ProgressBar,
) -> Result<LayerRanking> {
    opts.validate()?;
    opts.enough_rows(layer, "ranking", full.n_rows(), true)?;
    let split = Split::new(&full.time, opts);
    let names = full.feature_names.clone();
    let dropped_constant = full.dropped_constant.clone();
    // The training rows' copy serves the correlations only, and is gone before the fits; the PCA
    // decomposes the features' block of their Pearson matrix.
    let corr = {
        let full_train = full.x.select(Axis(0), &split.train);
        Correlations::compute(
            full_train.view(),
            full.y.select(Axis(0), &split.train).view(),
        )
    };
    let p = corr.n_features();
    let pca = Pca::of_correlation(layer, corr.pearson.slice(s![..p, ..p]).to_owned())?;
    let groups = corr.near_duplicate_groups(opts.duplicate_threshold);
    let mut leads: Vec<usize> = groups.iter().map(|g| g[0]).collect();
    leads.sort_unstable();
    let mut ds = if leads.len() == full.n_features() {
        full
    } else {
        let ds = full.select_features(&leads);
        drop(full);
        ds
    };
    let duplicates_of = |lead: usize| -> Vec<String> {
        groups
            .iter()
            .find(|g| g[0] == lead)
            .map(|g| g[1..].iter().map(|&j| names[j].clone()).collect())
            .unwrap_or_default()
    };

    let parts = Parts::take(&mut ds, &split);
    let (xt, yt, xh) = (parts.xt(), parts.yt.view(), parts.xh());
    let yh = ArrayView1::from(&parts.yh);
    let lasso_cv = {
        let zt = Scaler::fit(xt).transform(xt);
        let alphas = alpha_path(zt.view(), yt, opts.lasso_alphas);
        cross_validate(layer, zt.view(), yt, &alphas, &split.folds)?
    };
    let lasso = Lasso::fit(xt, yt, lasso_cv.best_alpha);
    let lasso_pred = lasso.predict(xh).to_vec();

    let bins = TrainBins::new(xt);
    let all: Vec<usize> = (0..split.train.len()).collect();
    let gbm = fit_gbm(&bins, yt, &all, &split.train_time, opts)?;
    let gbm_pred = gbm.predict(xh);

    // An importance not asked for is not computed: None, written as null.
    let wanted = |kind| opts.computed_importances().contains(&kind);
    let gain = gbm.gain_importance();
    let perm = wanted(ImportanceKind::Permutation)
        .then(|| permutation(&gbm, xh, yh, opts.permutation_repeats, opts.seed));
    let shap =
        wanted(ImportanceKind::Shap).then(|| mean_abs_shap(&gbm, xh, opts.shap_rows, opts.seed));
    let chosen = match opts.importance {
        ImportanceKind::Gain => &gain,
        ImportanceKind::Permutation => perm.as_ref().expect("the ranking's importance is computed"),
        ImportanceKind::Shap => shap.as_ref().expect("the ranking's importance is computed"),
    };
    let share = shares(
        layer,
        &format!("{:?}", opts.importance).to_lowercase(),
        chosen,
    )?;
    let (order, n_kept) = kept(&share, opts.cumulative);
    pb.inc(1);

    // The folds run side by side: a layer that needs many trees then keeps every core busy after
    // the others are done.
    let per_fold: Vec<(f64, f64, bool, Vec<usize>)> = split
        .folds
        .par_iter()
        .map(|(fit, held)| {
            let (xf, yf) = (xt.select(Axis(0), fit), yt.select(Axis(0), fit));
            let (xv, yv) = (xt.select(Axis(0), held), yt.select(Axis(0), held));
            let model = fit_gbm(&bins, yt, fit, &split.train_time.select(fit), opts)?;
            let gbm_r2 = r2(&yv.to_vec(), &model.predict(xv.view()));
            let lm = Lasso::fit(xf.view(), yf.view(), lasso_cv.best_alpha);
            let lasso_r2 = r2(&yv.to_vec(), &lm.predict(xv.view()).to_vec());
            let imp = importance_of(opts.importance, &model, xv.view(), yv.view(), opts);
            let kept_here = shares(layer, "fold", &imp)
                .map(|s| {
                    let (o, n) = kept(&s, opts.cumulative);
                    o[..n].to_vec()
                })
                .unwrap_or_default();
            pb.inc(1);
            Ok((gbm_r2, lasso_r2, lm.converged, kept_here))
        })
        .collect::<Result<_>>()?;
    let gbm_cv: Vec<f64> = per_fold.iter().map(|f| f.0).collect();
    let lasso_cv_r2: Vec<f64> = per_fold.iter().map(|f| f.1).collect();
    let mut kept_count = vec![0usize; ds.n_features()];
    for &j in per_fold.iter().flat_map(|f| &f.3) {
        kept_count[j] += 1;
    }
    let context: Vec<usize> = (0..ds.n_features())
        .filter(|&j| ds.layers[j] == CONTEXT)
        .collect();
    let context_r2 = context_r2.of(&ds, &parts, &bins, &split, &context, opts)?;
    pb.inc(1);
    let yh_vec = &parts.yh;
    let test = &split.test;
    let train = &split.train;

    let ranking = with_cumulative(&order[..n_kept], &share)
        .into_iter()
        .enumerate()
        .map(|(i, (j, cumulative_share))| RankedFeature {
            rank: i + 1,
            feature: ds.feature_names[j].clone(),
            context: ds.layers[j] == CONTEXT,
            importance: chosen[j],
            share: share[j],
            cumulative_share,
            lasso_sign: lasso.coef[j].partial_cmp(&0.0).map_or(0, |o| o as i8),
            fold_stability: kept_count[j] as f64 / split.folds.len() as f64,
            duplicates: duplicates_of(leads[j]),
        })
        .collect();
    let share_of =
        |what: &str, v: &[f64]| shares(layer, what, v).unwrap_or_else(|_| vec![0.0; v.len()]);
    let gain_share = share_of("gain", &gain);
    let perm_share = perm.as_ref().map(|v| share_of("permutation", v));
    let shap_share = shap.as_ref().map(|v| share_of("shap", v));
    let at = |v: &Option<Vec<f64>>, j: usize| v.as_ref().map(|v| v[j]);
    let importances = order
        .iter()
        .map(|&j| FeatureImportance {
            feature: ds.feature_names[j].clone(),
            gain: gain[j],
            gain_share: gain_share[j],
            permutation: at(&perm, j),
            permutation_share: at(&perm_share, j),
            shap: at(&shap, j),
            shap_share: at(&shap_share, j),
        })
        .collect();

    let mut all_names = names.clone();
    all_names.push(opts.target.clone());
    let mut to_target: Vec<TargetCorrelation> = (0..names.len())
        .map(|j| TargetCorrelation {
            feature: names[j].clone(),
            pearson: corr.pearson_to_target(j),
            spearman: corr.spearman_to_target(j),
        })
        .collect();
    to_target.sort_by(|a, b| b.pearson.abs().total_cmp(&a.pearson.abs()));
    let rows_of = |m: &ndarray::Array2<f64>| m.rows().into_iter().map(|r| r.to_vec()).collect();
    let correlation = CorrelationReport {
        names: all_names,
        pearson: rows_of(&corr.pearson),
        spearman: rows_of(&corr.spearman),
        to_target,
        duplicate_threshold: opts.duplicate_threshold,
        near_duplicate_groups: groups
            .iter()
            .filter(|g| g.len() > 1)
            .map(|g| g.iter().map(|&j| names[j].clone()).collect())
            .collect(),
    };

    let k95 = pca.components_reaching(0.95);
    let pca_report = PcaReport {
        explained_variance_ratio: pca.explained_variance_ratio.to_vec(),
        components_95: k95,
        loadings: (0..names.len())
            .map(|j| Loading {
                feature: names[j].clone(),
                loadings: (0..k95).map(|k| pca.loading(k, j)).collect(),
            })
            .collect(),
    };

    let mut nonzero: Vec<Coefficient> = lasso
        .coef
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 0.0)
        .map(|(j, &c)| Coefficient {
            feature: ds.feature_names[j].clone(),
            coef: c,
        })
        .collect();
    nonzero.sort_by(|a, b| b.coef.abs().total_cmp(&a.coef.abs()));

    let gbm_quality = quality(yh_vec, &gbm_pred, &gbm_cv);
    let test_predictions = test
        .iter()
        .enumerate()
        .map(|(i, &t)| Prediction {
            row: ds.rows[t],
            measured: yh_vec[i],
            gbm: gbm_pred[i],
            lasso: lasso_pred[i],
        })
        .collect();

    Ok(LayerRanking {
        layer: layer.to_string(),
        rows: ds.n_rows(),
        train_rows: train.len(),
        test_rows: test.len(),
        model_features: ds.feature_names.clone(),
        dropped_constant,
        delta_r2: gbm_quality.test_r2 - context_r2.unwrap_or(0.0),
        context_r2,
        ranking,
        importances,
        correlation,
        pca: pca_report,
        lasso: LassoReport {
            alpha: lasso_cv.best_alpha,
            alphas: lasso_cv.alphas,
            cv_mse: lasso_cv.cv_mse,
            nonzero,
            intercept: lasso.intercept,
            quality: quality(yh_vec, &lasso_pred, &lasso_cv_r2),
            converged: lasso.converged,
            unconverged: lasso_cv.unconverged + per_fold.iter().filter(|f| !f.2).count(),
        },
        gbm: GbmReport {
            n_trees: gbm.trees.len(),
            max_trees: opts.gbm.n_estimators,
            max_depth: opts.gbm.max_depth,
            learning_rate: opts.gbm.learning_rate,
            quality: gbm_quality,
        },
        test_predictions,
    })
}

/// Ranks the features of each layer asked for by how much they explain the target. With several
/// layers, one that cannot be ranked goes to `skipped_layers` and the others go on; with `all`,
/// one more GBM over every ranked layer says which layer explains the target (`stack`).
pub fn rank(matrix: &FeatureMatrix, opts: &RankOptions) -> Result<RankReport> {
    rank_with_progress(matrix, opts, &ProgressBar::hidden())
}

/// [`rank`], counting its model fits on `pb` (see [`progress`]). A Ctrl-C
/// ([`crate::interrupt`]) stops it with [`ModelError::Interrupted`], not a skipped layer.
pub fn rank_with_progress(
    matrix: &FeatureMatrix,
    opts: &RankOptions,
    pb: &ProgressBar,
) -> Result<RankReport> {
    rank_held_out(matrix, &[], opts, pb)
}

/// [`rank_with_progress`] with the rows flagged in `held_out` (one flag per row) as every model's
/// held-out rows, whatever the split asked for; empty lets the split choose them.
pub fn rank_held_out(
    matrix: &FeatureMatrix,
    held_out: &[bool],
    opts: &RankOptions,
    pb: &ProgressBar,
) -> Result<RankReport> {
    opts.validate()?;
    let layers = resolve_layers(matrix, &opts.layers)?;
    let (target, _) = target_of(matrix, &opts.target)?;
    let every = opts.layers.is_empty() || opts.layers.iter().any(|l| l == "all");
    let datasets = layers.len() + usize::from(every);
    progress::count_fits(
        pb,
        datasets as u64 * progress::steps(opts),
        format!("ranking {}", layers.join(", ")),
    );
    let context_r2 = ContextR2::default();
    let outcomes: Vec<Result<LayerRanking>> = layers
        .par_iter()
        .map(|l| {
            dataset_of(matrix, held_out, l, &[l.as_str()], opts.drop_constant, opts)
                .and_then(|ds| rank_layer(l, ds, opts, &context_r2, pb))
        })
        .collect();
    interrupt::check()?;
    let mut reports = Vec::new();
    let mut skipped_layers = Vec::new();
    for (layer, outcome) in layers.iter().zip(outcomes) {
        match outcome {
            Ok(r) => reports.push(r),
            Err(e) if layers.len() == 1 => return Err(e),
            Err(e) => skipped_layers.push(SkippedLayer {
                layer: layer.clone(),
                reason: e.to_string(),
            }),
        }
    }
    if reports.is_empty() {
        return Err(ModelError::NoLayer {
            reasons: skipped_layers
                .iter()
                .map(|s| format!("{}: {}", s.layer, s.reason))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    let stack = if every {
        let ranked: Vec<&str> = reports.iter().map(|r| r.layer.as_str()).collect();
        match dataset_of(matrix, held_out, "stack", &ranked, true, opts).and_then(|mut ds| {
            let calls = calls_of(matrix, &ds.rows);
            stack::fit(&mut ds, &reports, &calls, opts, &context_r2, pb)
        }) {
            Ok(s) => Some(s),
            Err(e) => {
                skipped_layers.push(SkippedLayer {
                    layer: "stack".to_string(),
                    reason: e.to_string(),
                });
                None
            }
        }
    } else {
        None
    };
    interrupt::check()?;
    let series = Series {
        target: &target,
        file: &matrix.file,
        ts_ns: &matrix.ts_ns,
    };
    Ok(RankReport {
        target: opts.target.clone(),
        importance: opts.importance,
        computed_importances: opts.computed_importances(),
        cumulative: opts.cumulative,
        folds: opts.folds,
        seed: opts.seed,
        split: opts.split,
        test_fraction: opts.test_fraction,
        rows_total: matrix.n_rows(),
        autoregression: autoreg::fit(&series, opts.autoregression_lags, opts.test_fraction),
        stack,
        layers: reports,
        skipped_layers,
        sample: None,
    })
}
