//! Agreement with scikit-learn and LightGBM (reference/reference.py) on the committed fixtures.
use crate::common;

use models::correlation::Correlations;
use models::fit::Split;
use models::gbm::{Gbm, GbmParams};
use models::lasso::{Lasso, alpha_path, cross_validate};
use models::pca::Pca;
use models::split::train_test;
use models::stats::{Scaler, r2};
use models::{ImportanceKind, RankOptions, SplitKind, rank_dataset};
use ndarray::Axis;

fn assert_close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, scikit-learn {want} (tolerance {tol})"
    );
}

fn check_reference(stem: &str) {
    let f = common::load(stem);
    let e = &f.expected;
    assert_eq!(f.data.feature_names, e.features);
    let c = Correlations::compute(f.data.x.view(), f.data.y.view());
    for (i, row) in e.pearson.iter().enumerate() {
        for (j, &want) in row.iter().enumerate() {
            assert_close(
                &format!("{stem} pearson[{i}][{j}]"),
                c.pearson[[i, j]],
                want,
                1e-6,
            );
            assert_close(
                &format!("{stem} spearman[{i}][{j}]"),
                c.spearman[[i, j]],
                e.spearman[i][j],
                1e-6,
            );
        }
    }
    let pca = Pca::fit("fixture", f.data.x.view()).unwrap();
    for (k, &want) in e.pca_explained_variance_ratio.iter().enumerate() {
        assert_close(
            &format!("{stem} PCA ratio {k}"),
            pca.explained_variance_ratio[k],
            want,
            1e-6,
        );
    }
    let lasso = Lasso::fit(f.data.x.view(), f.data.y.view(), e.lasso_alpha);
    for (j, &want) in e.lasso_coef.iter().enumerate() {
        assert_close(&format!("{stem} Lasso coef {j}"), lasso.coef[j], want, 1e-3);
    }
    assert_close(
        &format!("{stem} Lasso intercept"),
        lasso.intercept,
        e.lasso_intercept,
        1e-3,
    );

    let x = &f.data.x;
    let y = &f.data.y;
    let gbm = Gbm::fit(
        x.select(Axis(0), &f.train).view(),
        y.select(Axis(0), &f.train).view(),
        &GbmParams::default(),
    )
    .unwrap();
    let got = r2(
        &y.select(Axis(0), &f.test).to_vec(),
        &gbm.predict(x.select(Axis(0), &f.test).view()),
    );
    eprintln!(
        "{stem}: GBM held-out R² {got:.4}, scikit-learn {:.4}, LightGBM {:.4}",
        e.gbm_test_r2, e.lightgbm_test_r2
    );
    for (who, theirs) in [
        ("scikit-learn", e.gbm_test_r2),
        ("LightGBM", e.lightgbm_test_r2),
    ] {
        assert!(
            got >= theirs - 0.02,
            "{stem}: GBM held-out R² {got} is below {who}'s {theirs} - 0.02"
        );
    }
}

#[test]
fn synthetic_matches_scikit_learn() {
    check_reference("synthetic");
}

/// The vfs layer of datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz, as written by
/// `dc-model dataset FEATURES --layer vfs --drop-constant`.
#[test]
fn case_read_simple_vfs_matches_scikit_learn() {
    check_reference("case-read-simple-vfs");
}

#[test]
fn synthetic_informative_features_rank_first() {
    let f = common::load("synthetic");
    for importance in [
        ImportanceKind::Shap,
        ImportanceKind::Gain,
        ImportanceKind::Permutation,
    ] {
        let opts = RankOptions {
            importance,
            ..RankOptions::default()
        };
        let report = rank_dataset("fixture", &f.data, &opts).unwrap();
        let mut top: Vec<String> = report.importances[..5]
            .iter()
            .map(|i| i.feature.clone())
            .collect();
        top.sort();
        assert_eq!(top, f.expected.informative, "{importance:?}");
        let ranked: Vec<&str> = report.ranking.iter().map(|r| r.feature.as_str()).collect();
        assert!(ranked.len() >= 4, "{importance:?}: {ranked:?}");
        assert!(
            ranked[..4]
                .iter()
                .all(|r| f.expected.informative.iter().any(|i| i == r))
        );
        let total: f64 = report
            .importances
            .iter()
            .map(|i| i.shap_share.unwrap())
            .sum();
        assert_close("SHAP shares", total, 1.0, 1e-12);
        let cum = report.ranking.last().unwrap().cumulative_share;
        assert!(cum >= opts.cumulative - 1e-12, "kept features reach {cum}");
        assert!(
            report.gbm.quality.test_r2 > 0.8,
            "GBM test R² {}",
            report.gbm.quality.test_r2
        );
        // Without context columns, context_r2 is the one field left null.
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(common::json::nulls(&json), [".context_r2"]);
    }
}

#[test]
fn time_split_holds_out_what_the_reference_held_out() {
    let f = common::load("synthetic");
    let (train, test) = train_test(SplitKind::Time, &f.data.time, 0.2, 0);
    assert_eq!(test, f.test);
    assert_eq!(train, f.train);
}

/// Alpha chosen by CV on the training rows, standardized once, folds contiguous in time: the same
/// as scikit-learn's LassoCV on the same folds.
fn check_lasso_cv(stem: &str) {
    let f = common::load(stem);
    let e = &f.expected.lasso_cv;
    let split = Split::new(&f.data.time, &RankOptions::default());
    assert_eq!(split.test, f.test);
    let xt = f.data.x.select(Axis(0), &split.train);
    let yt = f.data.y.select(Axis(0), &split.train);
    let zt = Scaler::fit(xt.view()).transform(xt.view());
    let alphas = alpha_path(zt.view(), yt.view(), e.alphas.len());
    for (k, (&got, &want)) in alphas.iter().zip(&e.alphas).enumerate() {
        assert_close(&format!("{stem} alpha {k}"), got, want, 1e-9 * want);
    }
    let cv = cross_validate("fixture", zt.view(), yt.view(), &alphas, &split.folds).unwrap();
    for (k, (&got, &want)) in cv.cv_mse.iter().zip(&e.cv_mse).enumerate() {
        assert_close(
            &format!("{stem} CV MSE at alpha {k}"),
            got,
            want,
            1e-3 * want,
        );
    }
    assert_close(
        &format!("{stem} chosen alpha"),
        cv.best_alpha,
        e.alpha,
        1e-9 * e.alpha,
    );
}

#[test]
fn lasso_cv_matches_scikit_learn_lasso_cv_on_the_same_folds() {
    check_lasso_cv("synthetic");
    check_lasso_cv("case-read-simple-vfs");
}
