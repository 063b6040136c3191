//! Agreement with scikit-learn (reference/sklearn_reference.py) on the committed fixtures.
mod common;

use models::correlation::Correlations;
use models::gbm::{Gbm, GbmParams};
use models::lasso::Lasso;
use models::pca::Pca;
use models::stats::r2;
use models::{ImportanceKind, RankOptions, rank_dataset};
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
    let lasso = Lasso::fit("fixture", f.data.x.view(), f.data.y.view(), e.lasso_alpha).unwrap();
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
    );
    let got = r2(
        &y.select(Axis(0), &f.test).to_vec(),
        &gbm.predict(x.select(Axis(0), &f.test).view()),
    );
    eprintln!(
        "{stem}: GBM held-out R² {got:.4}, scikit-learn {:.4}",
        e.gbm_test_r2
    );
    assert!(
        got >= e.gbm_test_r2 - 0.02,
        "{stem}: GBM held-out R² {got} is below scikit-learn's {} - 0.02",
        e.gbm_test_r2
    );
}

#[test]
fn synthetic_matches_scikit_learn() {
    check_reference("synthetic");
}

/// The vfs layer of ../shared/traces/datacrumbs/case-read-simple.trace.pfw.gz, as written by
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
        let total: f64 = report.importances.iter().map(|i| i.shap_share).sum();
        assert_close("SHAP shares", total, 1.0, 1e-12);
        let cum = report.ranking.last().unwrap().cumulative_share;
        assert!(cum >= opts.cumulative - 1e-12, "kept features reach {cum}");
        assert!(
            report.gbm.quality.test_r2 > 0.8,
            "GBM test R² {}",
            report.gbm.quality.test_r2
        );
        let json = serde_json::to_string(&report).unwrap();
        assert!(
            !json.contains("null") && !json.contains("NaN"),
            "report has a missing or NaN value"
        );
    }
}
