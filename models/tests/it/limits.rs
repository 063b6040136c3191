//! Every numeric option is refused outside its limit, with the reason, whether it comes from code
//! (`validate`, as the CLI and Python build it) or from a file (the deserializer, as a pipeline's
//! `[model]` table).
use models::RankOptions;
use models::gbm::GbmParams;
use models::options::MIN_TEST_ROWS;
use models::split::{rows_for, test_rows};

fn refused(opts: RankOptions) -> String {
    opts.validate().unwrap_err().to_string()
}

fn gbm(gbm: GbmParams) -> RankOptions {
    RankOptions {
        gbm,
        ..RankOptions::default()
    }
}

#[test]
fn the_defaults_are_within_every_limit() {
    RankOptions::default().validate().unwrap();
}

#[test]
fn each_option_outside_its_limit_is_refused_with_the_reason() {
    let d = RankOptions::default;
    let g = GbmParams::default;
    let cases = [
        (
            gbm(GbmParams {
                n_estimators: 1_000_000_000,
                ..g()
            }),
            "option gbm.n_estimators: 1000000000 is not in [1, 100000]: every tree is kept in memory \
             and costs a pass over the rows (scikit-learn's default is 100)",
        ),
        (
            gbm(GbmParams {
                n_estimators: 0,
                ..g()
            }),
            "option gbm.n_estimators: 0 is not in [1, 100000]: every tree is kept in memory \
             and costs a pass over the rows (scikit-learn's default is 100)",
        ),
        (
            gbm(GbmParams {
                max_depth: 17,
                ..g()
            }),
            "option gbm.max_depth: 17 is not in [1, 16]: a tree of depth d has up to 2^d leaves, \
             each a pass over its rows",
        ),
        (
            gbm(GbmParams {
                learning_rate: f64::NAN,
                ..g()
            }),
            "option gbm.learning_rate: NaN is not in (0, 1]: the share of each tree's correction \
             that is kept: at 0 nothing is learnt, above 1 every step overshoots",
        ),
        (
            gbm(GbmParams {
                learning_rate: -1.0,
                ..g()
            }),
            "option gbm.learning_rate: -1 is not in (0, 1]: the share of each tree's correction \
             that is kept: at 0 nothing is learnt, above 1 every step overshoots",
        ),
        (
            gbm(GbmParams {
                min_samples_leaf: 0,
                ..g()
            }),
            "option gbm.min_samples_leaf: 0 is not in [1, inf): a leaf's value is the mean of its \
             rows, and an empty leaf has none",
        ),
        (
            gbm(GbmParams {
                validation_fraction: 0.9,
                ..g()
            }),
            "option gbm.validation_fraction: 0.9 is not in [0, 0.5]: the share of the fitting rows \
             held back to stop early (0 turns it off); above half, the trees fit on fewer rows than \
             judge them",
        ),
        (
            gbm(GbmParams {
                n_iter_no_change: 0,
                ..g()
            }),
            "option gbm.n_iter_no_change: 0 is not in [1, 100000]: rounds without a lower validation \
             loss before stopping; more than the tree limit never stops",
        ),
        (
            RankOptions {
                folds: 1_844_674_407_370_955_162,
                ..d()
            },
            "option folds: 1844674407370955162 is not in [2, 100]: cross-validation needs two \
             folds, and each fold refits every model (scikit-learn's default is 5)",
        ),
        (
            RankOptions {
                folds: usize::MAX,
                ..d()
            },
            "option folds: 18446744073709551615 is not in [2, 100]: cross-validation needs two \
             folds, and each fold refits every model (scikit-learn's default is 5)",
        ),
        (
            RankOptions { folds: 1, ..d() },
            "option folds: 1 is not in [2, 100]: cross-validation needs two folds, and each fold \
             refits every model (scikit-learn's default is 5)",
        ),
        (
            RankOptions {
                test_fraction: 0.0,
                ..d()
            },
            "option test_fraction: 0 is not in [0.01, 0.9]: the held-out share: below 1% a model \
             is judged on too few rows, above 90% fitted on too few",
        ),
        (
            RankOptions {
                cumulative: 0.0,
                ..d()
            },
            "option cumulative: 0 is not in (0, 1]",
        ),
        (
            RankOptions {
                duplicate_threshold: f64::INFINITY,
                ..d()
            },
            "option duplicate_threshold: inf is not in (0, 1]",
        ),
        (
            RankOptions {
                lasso_alphas: 1,
                ..d()
            },
            "option lasso_alphas: 1 is not in [2, 1000]: the Lasso is fitted once per alpha and \
             fold (scikit-learn's LassoCV tries 100)",
        ),
        (
            RankOptions {
                permutation_repeats: 1001,
                ..d()
            },
            "option permutation_repeats: 1001 is not in [1, 1000]: each repeat predicts every \
             held-out row once per feature",
        ),
        (
            RankOptions {
                shap_rows: 0,
                ..d()
            },
            "option shap_rows: 0 is not in [1, 1000000]: TreeSHAP's time grows with each row it \
             explains; the mean is taken over a seeded sample",
        ),
        (
            RankOptions {
                autoregression_lags: 0,
                ..d()
            },
            "option autoregression_lags: 0 is not in [1, 100]: each lag is one more column, and a \
             file needs 10 calls per lag to fit on",
        ),
    ];
    for (opts, want) in cases {
        assert_eq!(refused(opts), want);
    }
}

#[test]
fn the_limits_hold_at_their_ends() {
    let ends = RankOptions {
        folds: 100,
        test_fraction: 0.9,
        gbm: GbmParams {
            n_estimators: 100_000,
            max_depth: 16,
            learning_rate: 1.0,
            min_samples_leaf: usize::MAX,
            validation_fraction: 0.0,
            ..GbmParams::default()
        },
        ..RankOptions::default()
    };
    ends.validate().unwrap();
}

#[test]
fn a_file_is_refused_at_the_value_that_is_out_of_its_limit() {
    let parse = |text: &str| {
        serde_json::from_str::<RankOptions>(text)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        parse(r#"{"gbm": {"n_estimators": 1000000000}}"#),
        "1000000000 is not in [1, 100000]: every tree is kept in memory and costs a pass over the \
         rows (scikit-learn's default is 100) at line 1 column 36"
    );
    assert_eq!(
        parse(r#"{"folds": 1844674407370955162}"#),
        "1844674407370955162 is not in [2, 100]: cross-validation needs two folds, and each fold \
         refits every model (scikit-learn's default is 5) at line 1 column 30"
    );
    assert_eq!(
        parse(r#"{"gbm": {"min_samples_leaf": 0}}"#),
        "0 is not in [1, inf): a leaf's value is the mean of its rows, and an empty leaf has none \
         at line 1 column 31"
    );
}

#[test]
fn the_fewest_rows_hold_out_ten_and_fit_on_ten() {
    assert_eq!(MIN_TEST_ROWS, 10);
    for (fraction, rows) in [(0.2, 48), (0.5, 20), (0.01, 950), (0.9, 96)] {
        assert_eq!(
            rows_for(MIN_TEST_ROWS, fraction),
            rows,
            "test fraction {fraction}"
        );
        let n = rows;
        assert!(test_rows(n, fraction) >= 10 && n - test_rows(n, fraction) >= 10);
        assert!(test_rows(n - 1, fraction) < 10 || n - 1 - test_rows(n - 1, fraction) < 10);
    }
    let opts = RankOptions::default();
    assert_eq!((opts.min_judged_rows(), opts.min_rows()), (48, 50));
    assert_eq!(test_rows(1, 0.2), 0);
    assert_eq!(test_rows(0, 0.2), 0);
}
