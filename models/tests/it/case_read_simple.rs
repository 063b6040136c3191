//! End to end on a real DataCrumbs trace: trace → features → rank, and the exported dataset.
use features::{BuildOptions, FeatureMatrix};
use models::{RankOptions, input};
use std::path::PathBuf;

fn matrix() -> FeatureMatrix {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
    );
    features::build(&[PathBuf::from(trace)], &BuildOptions::default()).expect("trace builds")
}

#[test]
fn every_layer_is_ranked_or_skipped_with_a_reason() {
    let m = matrix();
    let with_target = m.bandwidth_mibs.iter().filter(|b| b.is_some()).count();
    let opts = RankOptions {
        drop_constant: true,
        ..RankOptions::default()
    };
    let report = models::rank(&m, &opts).unwrap();
    let mut seen: Vec<&str> = report.layers.iter().map(|l| l.layer.as_str()).collect();
    seen.extend(report.skipped_layers.iter().map(|s| s.layer.as_str()));
    seen.sort();
    // The matrix has exclusive times, so the call's own time is ranked too, as the `self` layer.
    let mut layers = m.layers();
    layers.push(models::input::SELF.to_string());
    layers.sort();
    assert_eq!(seen, layers);
    for l in &report.layers {
        assert_eq!(l.rows, with_target);
        assert_eq!(l.train_rows + l.test_rows, with_target);
        assert_eq!(l.test_predictions.len(), l.test_rows);
        let share: f64 = l.importances.iter().map(|i| i.shap_share.unwrap()).sum();
        assert!(
            (share - 1.0).abs() < 1e-12,
            "{}: shares sum to {share}",
            l.layer
        );
        for p in &l.test_predictions {
            assert_eq!(m.bandwidth_mibs[p.row], Some(p.measured));
        }
    }
    let stack = report.stack.expect("--layer all fits the stack model");
    let shares = stack.context_share + stack.layers.iter().map(|l| l.share).sum::<f64>();
    assert!((shares - 1.0).abs() < 1e-9, "stack shares sum to {shares}");
    let ranked: Vec<&str> = report.layers.iter().map(|l| l.layer.as_str()).collect();
    let mut in_stack: Vec<&str> = stack.layers.iter().map(|l| l.layer.as_str()).collect();
    in_stack.sort();
    let mut ranked_sorted = ranked.clone();
    ranked_sorted.sort();
    assert_eq!(in_stack, ranked_sorted);
}

#[test]
fn constant_columns_skip_their_layer_without_drop_constant() {
    let keep = RankOptions {
        drop_constant: false,
        ..RankOptions::default()
    };
    let report = models::rank(&matrix(), &keep).unwrap();
    let constant: Vec<_> = report
        .skipped_layers
        .iter()
        .filter(|s| {
            s.layer != "stack"
                && s.reason.contains("is constant")
                && s.reason.contains("drop_constant option")
        })
        .collect();
    assert!(!constant.is_empty(), "{:?}", report.skipped_layers);
    for s in constant {
        let one = RankOptions {
            layers: vec![s.layer.clone()],
            ..keep.clone()
        };
        let err = models::rank(&matrix(), &one).unwrap_err().to_string();
        assert!(err.contains("is constant"), "{}: {err}", s.layer);
    }
}

#[test]
fn unknown_layer_and_target_are_named() {
    let m = matrix();
    let opts = RankOptions {
        layers: vec!["nfs".to_string()],
        ..RankOptions::default()
    };
    let err = models::rank(&m, &opts).unwrap_err().to_string();
    assert!(
        err.starts_with("layer nfs has no feature columns (layers present: "),
        "{err}"
    );
    let opts = RankOptions {
        target: "latency".to_string(),
        ..RankOptions::default()
    };
    let err = models::rank(&m, &opts).unwrap_err().to_string();
    assert_eq!(
        err,
        "target latency: is neither bandwidth, duration, size nor a feature column of the matrix"
    );
}

#[test]
fn exported_vfs_dataset_is_the_committed_fixture() {
    let opts = RankOptions {
        drop_constant: true,
        ..RankOptions::default()
    };
    let ds = input::layer_dataset(&matrix(), "vfs", &opts).unwrap();
    let mut out = Vec::new();
    models::export::write_csv(&ds, opts.split, opts.test_fraction, opts.seed, &mut out).unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/case-read-simple-vfs.csv"
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        std::fs::read_to_string(fixture).unwrap()
    );
}
