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

/// `n` calls of one layer with two features; `read[3]` is `bad_value`.
fn small_matrix_of(n: usize, bad_value: f64) -> FeatureMatrix {
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
        thread: vec![None; n],
        process: vec![None; n],
        self_ns: vec![1000; n],
        features: vec![
            FeatureColumn::new("vfs", "vfs_read", FeatureKind::TimeNs, read),
            FeatureColumn::new("vfs", "vfs_open", FeatureKind::TimeNs, open),
        ],
    }
}

fn small_matrix(bad_value: f64) -> FeatureMatrix {
    small_matrix_of(120, bad_value)
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

/// The feature matrix of datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz, as `crs.parquet` in `dir`.
fn case_read_simple(dir: &Path) -> PathBuf {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
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

#[test]
fn an_option_beyond_its_limit_is_refused_before_the_matrix_is_read() {
    let out = dc_model(&[
        "rank",
        "no-such-matrix.parquet",
        "--layer",
        "vfs",
        "--folds",
        "1844674407370955162",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "dc-model: option folds: 1844674407370955162 is not in [2, 100]: cross-validation needs \
         two folds, and each fold refits every model (scikit-learn's default is 5)\n"
    );
}

#[test]
fn every_command_refuses_a_test_fraction_beyond_its_limit() {
    for cmd in ["rank", "forest", "rules"] {
        let out = dc_model(&[
            cmd,
            "no-such-matrix.parquet",
            "--layer",
            "vfs",
            "--test-fraction",
            "0.95",
        ]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "dc-model: option test_fraction: 0.95 is not in [0.01, 0.9]: the held-out share: \
             below 1% a model is judged on too few rows, above 90% fitted on too few\n",
            "{cmd}"
        );
    }
}

#[test]
fn a_one_layer_command_refuses_the_rankings_own_options() {
    for (cmd, flag) in [("forest", "--folds=3"), ("rules", "--all-importances")] {
        let out = dc_model(&[cmd, "m.parquet", "--layer", "vfs", flag]);
        assert_eq!(out.status.code(), Some(2), "{cmd} {flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        let name = flag.trim_end_matches("=3");
        assert!(
            err.starts_with(&format!(
                "error: the argument '--layer <LAYER>' cannot be used with '{name}"
            )),
            "{err}"
        );
    }
}

#[test]
fn a_model_on_too_few_rows_to_judge_exits_non_zero_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&small_matrix_of(6, 1.0), dir.path(), "m.parquet");
    let p = path.to_str().unwrap();
    for (cmd, model, min, why) in [
        ("forest", "the random forest", 48, ""),
        ("rules", "the rules", 48, ""),
        ("rank", "ranking", 50, "10 per fold of 5, "),
    ] {
        let out = dc_model(&[cmd, p, "--layer", "vfs"]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert_eq!(out.stdout, b"", "{cmd}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "dc-model: {p}: layer vfs: 6 rows have a bandwidth; {model} needs at least {min} \
                 ({why}10 held out at test fraction 0.2 and 10 to fit on)\n"
            ),
            "{cmd}"
        );
    }
}

#[test]
fn a_json_path_that_cannot_be_written_is_refused_before_the_models_run() {
    let dir = tempfile::tempdir().unwrap();
    // The ranking itself would fail on the infinite value: the error must be the output's.
    let path = write(&small_matrix(f64::INFINITY), dir.path(), "m.parquet");
    let json = dir.path().join("missing").join("rank.json");
    for cmd in ["rank", "forest", "rules"] {
        let out = dc_model(&[
            cmd,
            path.to_str().unwrap(),
            "--layer",
            "vfs",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert_eq!(out.stdout, b"", "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("dc-model: ") && err.contains(json.to_str().unwrap()),
            "{cmd}: {err}"
        );
        assert!(!err.contains("not finite"), "{cmd}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// Whether process `pid` handles SIGINT (bit 2 of SigCgt in /proc/PID/status).
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

#[test]
fn ctrl_c_stops_a_ranking_with_130_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&small_matrix_of(200_000, 1.0), dir.path(), "m.parquet");
    let json = dir.path().join("rank.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dc-model"))
        .args(["rank", path.to_str().unwrap(), "--layer", "vfs", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while !catches_sigint(child.id()) {
        assert!(child.try_wait().unwrap().is_none(), "dc-model ended early");
        std::thread::yield_now();
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(out.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "dc-model: interrupted; nothing was written\n"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["m.parquet"]);
}

/// `dc-model rank --layer vfs`, as a user first types it, on a matrix where a function only the rows without a
/// bandwidth would have (an open) is zero on every row that has one: the column is left out and named, and
/// `--drop-constant false` fails on it instead.
#[test]
fn a_column_constant_over_the_rows_with_a_target_is_left_out_and_named_unless_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = small_matrix(1.0);
    let n = m.n_rows();
    m.features.push(FeatureColumn::new(
        "vfs",
        "do_filp_open",
        FeatureKind::TimeNs,
        vec![0.0; n],
    ));
    let path = write(&m, dir.path(), "m.parquet");
    let json = dir.path().join("rank.json");
    let out = dc_model(&[
        "rank",
        path.to_str().unwrap(),
        "--layer",
        "vfs",
        "--json",
        json.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("left out 1 column(s) constant over these rows: vfs::do_filp_open"),
        "{table}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        report["layers"][0]["dropped_constant"],
        serde_json::json!(["vfs::do_filp_open"])
    );

    let out = dc_model(&[
        "rank",
        path.to_str().unwrap(),
        "--layer",
        "vfs",
        "--drop-constant",
        "false",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "column vfs::do_filp_open is constant (0) over all 120 rows that have a target"
        ),
        "{err}"
    );
    assert!(
        err.ends_with("; give --drop-constant (its default) to leave them out\n"),
        "{err}"
    );
}
