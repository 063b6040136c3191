//! Bad input gets a clear error naming the row, the column or the layer, never a panic.
use crate::common::json;

use models::dataset::Column;
use models::split::Timeline;
use models::{Dataset, ModelError, RankOptions, rank_dataset};

fn build(
    target: &[Option<f64>],
    cols: &[(&str, Vec<f64>)],
    drop_constant: bool,
) -> Result<Dataset, ModelError> {
    let columns: Vec<Column<'_>> = cols
        .iter()
        .map(|(n, v)| Column {
            name: n,
            layer: "vfs",
            values: v,
        })
        .collect();
    let time = Timeline::sequential(target.len());
    Dataset::build("vfs", "bandwidth", target, &time, &columns, drop_constant)
}

fn ramp(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 37) % 101) as f64).collect()
}

fn target(n: usize) -> Vec<Option<f64>> {
    (0..n).map(|i| Some(((i * 53) % 97) as f64 + 1.0)).collect()
}

#[test]
fn nan_and_infinity_name_row_and_column() {
    let mut v = ramp(100);
    v[17] = f64::NAN;
    let err = build(&target(100), &[("vfs::vfs_read", v)], false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "row 17, column vfs::vfs_read: value NaN is not finite; features and target must be finite"
    );
    let mut t = target(100);
    t[3] = Some(f64::INFINITY);
    let err = build(&t, &[("vfs::vfs_read", ramp(100))], false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "row 3, column bandwidth: value inf is not finite; features and target must be finite"
    );
}

#[test]
fn a_nan_on_a_row_without_target_is_ignored() {
    let mut v = ramp(100);
    v[5] = f64::NAN;
    let mut t = target(100);
    t[5] = None;
    let ds = build(&t, &[("vfs::vfs_read", v)], false).unwrap();
    assert_eq!(ds.n_rows(), 99);
    assert!(!ds.rows.contains(&5));
}

#[test]
fn constant_column_is_an_error_unless_dropped() {
    let cols = [
        ("vfs::vfs_read", ramp(100)),
        ("vfs::vfs_fsync", vec![0.0; 100]),
    ];
    let err = build(&target(100), &cols, false).unwrap_err().to_string();
    assert!(
        err.contains("column vfs::vfs_fsync is constant (0)"),
        "{err}"
    );
    assert!(err.contains("drop_constant option"), "{err}");
    assert!(
        !err.contains("--"),
        "a library message names no flag: {err}"
    );
    let ds = build(&target(100), &cols, true).unwrap();
    assert_eq!(ds.feature_names, ["vfs::vfs_read"]);
    assert_eq!(ds.dropped_constant, ["vfs::vfs_fsync"]);
    let err = build(&target(100), &cols[1..], true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "layer vfs: all 1 feature columns are constant over the rows that have a target"
    );
}

#[test]
fn missing_or_constant_target() {
    let err = build(&vec![None; 100], &[("vfs::vfs_read", ramp(100))], false)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "target bandwidth: missing on all 100 rows");
    let err = build(
        &vec![Some(2.0); 100],
        &[("vfs::vfs_read", ramp(100))],
        false,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "target bandwidth: constant (2) over all 100 rows that have it"
    );
}

#[test]
fn layer_without_features() {
    let err = build(&target(100), &[], false).unwrap_err();
    assert!(matches!(err, ModelError::EmptyLayer { .. }), "{err}");
}

#[test]
fn too_few_rows() {
    let ds = build(&target(30), &[("vfs::vfs_read", ramp(30))], false).unwrap();
    let err = rank_dataset("vfs", &ds, &RankOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "layer vfs: 30 rows have a bandwidth; ranking needs at least 50 \
         (10 per fold of 5, 10 held out at test fraction 0.2 and 10 to fit on)"
    );
}

#[test]
fn bad_options() {
    let ds = build(&target(100), &[("vfs::vfs_read", ramp(100))], false).unwrap();
    let opts = RankOptions {
        cumulative: 1.5,
        ..RankOptions::default()
    };
    let err = rank_dataset("vfs", &ds, &opts).unwrap_err().to_string();
    assert_eq!(err, "option cumulative: 1.5 is not in (0, 1]");
}

#[test]
fn target_unrelated_to_features_still_reports_finite_numbers() {
    let t: Vec<Option<f64>> = (0..200).map(|i| Some(((i * 7919) % 211) as f64)).collect();
    let cols = [
        ("vfs::a", ramp(200)),
        ("vfs::b", (0..200).map(|i| (i % 3) as f64).collect()),
    ];
    let ds = build(&t, &cols, false).unwrap();
    let report = rank_dataset("vfs", &ds, &RankOptions::default()).unwrap();
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(json::nulls(&value), [".context_r2"]);
}
