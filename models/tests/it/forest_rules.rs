//! `dc-model forest` and `dc-model rules` on the vfs layer of a real DataCrumbs trace, against
//! scikit-learn's RandomForestRegressor and DecisionTreeClassifier on the same rows and split
//! (fixtures/case-read-simple-vfs.forest.json, written by `reference.py forest` from the
//! `dc-model dataset` export of the same layer).
use std::collections::BTreeSet;
use std::path::PathBuf;

use features::BuildOptions;
use models::fit::Split;
use models::{Dataset, RankOptions};
use serde::Deserialize;

#[derive(Deserialize)]
struct Expected {
    features: Vec<String>,
    forest_train_r2: f64,
    forest_test_r2: f64,
    forest_importances: Vec<f64>,
    slow_train_rows: Vec<usize>,
    slow_test_rows: Vec<usize>,
    unjudged_rows: Vec<usize>,
    tree_test_precision: f64,
    tree_test_recall: f64,
}

fn vfs() -> (Dataset, Split, Expected) {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
    );
    let m = features::build(&[PathBuf::from(trace)], &BuildOptions::default()).unwrap();
    let opts = RankOptions::default();
    let ds = models::input::layer_dataset(&m, "vfs", &opts).unwrap();
    let split = Split::new(&ds.time, &opts);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/case-read-simple-vfs.forest.json"
    ))
    .unwrap();
    let expected: Expected = serde_json::from_str(&text).unwrap();
    assert_eq!(ds.feature_names, expected.features);
    (ds, split, expected)
}

fn close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got} against {want} ± {tol}"
    );
}

/// Two forests of 100 bootstrapped trees differ by their random draws, not by their settings: on
/// 154 training rows the R² agree within 0.02 and the leading feature is the same.
#[test]
fn the_forest_agrees_with_scikit_learns() {
    let (ds, _, e) = vfs();
    let r = models::forest::fit("vfs", &ds, &RankOptions::default()).unwrap();
    close("training R²", r.train_r2, e.forest_train_r2, 0.02);
    close("held-out R²", r.test_r2, e.forest_test_r2, 0.02);
    let top = (0..e.features.len())
        .max_by(|&a, &b| e.forest_importances[a].total_cmp(&e.forest_importances[b]))
        .unwrap();
    assert_eq!(r.ranking[0].feature, e.features[top]);
    let last = r.ranking.last().unwrap();
    assert!(
        last.cumulative_share >= 0.99 - 1e-12,
        "{}",
        last.cumulative_share
    );
    let before = r
        .ranking
        .len()
        .checked_sub(2)
        .map(|i| r.ranking[i].cumulative_share);
    assert!(
        before.is_none_or(|c| c < 0.99),
        "the cut holds one feature too many"
    );
}

#[test]
fn slow_calls_and_the_trees_judgement_match_scikit_learns() {
    let (ds, split, e) = vfs();
    let labels = models::rules::slow_labels(&ds, &split.train);
    let rows_where = |rows: &[usize], keep: &dyn Fn(Option<bool>) -> bool| -> Vec<usize> {
        let set: BTreeSet<usize> = rows
            .iter()
            .filter(|&&r| keep(labels[r]))
            .map(|&r| ds.rows[r])
            .collect();
        set.into_iter().collect()
    };
    let slow = |l: Option<bool>| l == Some(true);
    assert_eq!(rows_where(&split.train, &slow), e.slow_train_rows);
    assert_eq!(rows_where(&split.test, &slow), e.slow_test_rows);
    let all: Vec<usize> = (0..ds.n_rows()).collect();
    assert_eq!(rows_where(&all, &|l| l.is_none()), e.unjudged_rows);
    let r = models::rules::learn("vfs", &ds, &RankOptions::default()).unwrap();
    assert_eq!(r.slow_train, e.slow_train_rows.len());
    assert_eq!(r.slow_test, e.slow_test_rows.len());
    close(
        "precision",
        r.precision.unwrap(),
        e.tree_test_precision,
        1e-12,
    );
    close("recall", r.recall.unwrap(), e.tree_test_recall, 1e-12);
    let matched: usize = r.rules.iter().map(|rule| rule.matched).sum();
    assert!(matched > 0 && !r.rules.is_empty());
    assert!(r.rules.iter().all(|rule| rule.conditions.len() <= 3));
}
