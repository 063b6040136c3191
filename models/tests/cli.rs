//! dc-model as a user runs it: exit codes, messages naming the file, the table and the JSON.
use datasets::output::Existing;
use features::{BuildOptions, FeatureColumn, FeatureKind, FeatureMatrix};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dc_model(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dc-model"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("dc-model runs")
}

fn small_matrix(bad_value: f64) -> FeatureMatrix {
    let n = 120;
    let mut read: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64).collect();
    read[3] = bad_value;
    let open: Vec<f64> = (0..n).map(|i| ((i * 11) % 13) as f64).collect();
    FeatureMatrix {
        op: vec!["read".to_string(); n],
        pid: vec![1; n],
        tid: vec![1; n],
        ts_ns: (0..n as u64).collect(),
        dur_ns: vec![1000; n],
        file: vec![Some("/f".to_string()); n],
        size: vec![Some(4096); n],
        bandwidth_mibs: (0..n)
            .map(|i| Some(10.0 + ((i * 53) % 97) as f64))
            .collect(),
        direct: vec![None; n],
        sequential: vec![None; n],
        run: vec![None; n],
        self_ns: vec![1000; n],
        features: vec![
            FeatureColumn::new("vfs", "vfs_read", FeatureKind::TimeNs, read),
            FeatureColumn::new("vfs", "vfs_open", FeatureKind::TimeNs, open),
        ],
    }
}

fn write(m: &FeatureMatrix, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    m.write(&path, Existing::Refuse).expect("matrix writes");
    path
}

#[test]
fn non_finite_feature_exits_non_zero_naming_file_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&small_matrix(f64::INFINITY), dir.path(), "m.parquet");
    let out = dc_model(&["rank", path.to_str().unwrap(), "--layer", "vfs"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "dc-model: {}: row 3, column vfs::vfs_read: value inf is not finite; features and target must be finite",
            path.display()
        )
    );
}

#[test]
fn unknown_layer_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&small_matrix(1.0), dir.path(), "m.parquet");
    let out = dc_model(&["rank", path.to_str().unwrap(), "--layer", "bio"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("layer bio has no feature columns (layers present: vfs)"),
        "{err}"
    );
}

/// The feature matrix of ../shared/traces/datacrumbs/case-read-simple.trace.pfw.gz, as `crs.parquet` in `dir`.
fn case_read_simple(dir: &Path) -> PathBuf {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/traces/datacrumbs/case-read-simple.trace.pfw.gz"
    );
    let m = features::build(&[PathBuf::from(trace)], &BuildOptions::default()).unwrap();
    write(&m, dir, "crs.parquet")
}

#[test]
fn rank_prints_the_table_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = case_read_simple(dir.path());
    let json = dir.path().join("rank.json");
    let out = dc_model(&[
        "rank",
        path.to_str().unwrap(),
        "--layer",
        "vfs",
        "--drop-constant",
        "--importance",
        "gain",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("layer vfs: "), "{table}");
    assert!(table.contains("rank  feature"), "{table}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(report["importance"], "gain");
    // Only the importance asked for (and gain) is computed: SHAP and permutation are null.
    assert_eq!(report["computed_importances"], serde_json::json!(["gain"]));
    for i in report["layers"][0]["importances"].as_array().unwrap() {
        assert!(i["gain"].as_f64().is_some(), "{i}");
        for absent in ["shap", "shap_share", "permutation", "permutation_share"] {
            assert!(i[absent].is_null(), "{absent}: {i}");
        }
    }
    assert_eq!(report["layers"][0]["layer"], "vfs");
    assert_eq!(report["layers"][0]["ranking"][0]["rank"], 1);
}

#[test]
fn forest_and_rules_print_their_tables_and_write_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = case_read_simple(dir.path());
    let json = dir.path().join("forest.json");
    let args = |cmd: &'static str, layer: &'static str| {
        let mut a = vec![
            cmd,
            path.to_str().unwrap(),
            "--layer",
            layer,
            "--drop-constant",
        ];
        a.extend(["--json", json.to_str().unwrap(), "--force"]);
        a
    };
    // The table it printed and the JSON it wrote.
    let ran = |cmd: &'static str| {
        let out = dc_model(&args(cmd, "vfs"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (String::from_utf8(out.stdout).unwrap(), report)
    };
    let (table, report) = ran("forest");
    assert!(
        table.starts_with("[vfs] random forest (100 trees), 154 training / 38 held-out rows"),
        "{table}"
    );
    assert_eq!(
        (report["n_train"].as_u64(), report["n_test"].as_u64()),
        (Some(154), Some(38))
    );
    assert_eq!(report["ranking"][0]["feature"], "size");
    assert_eq!(report["ranking"][0]["context"], true);

    let (table, report) = ran("rules");
    let rules = report["rules"].as_array().unwrap();
    assert_eq!(
        table.matches("  slow when `").count(),
        rules.len(),
        "{table}"
    );
    assert_eq!(report["slow_test"], 13);

    let out = dc_model(&args("rules", "bio"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "crs.parquet: layer bio has no feature columns (layers present: ext4, vfs, os_cache, self)"
        ),
        "{err}"
    );
}
