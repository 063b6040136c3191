//! dc-model-bench: `rank --layer all` on a synthetic matrix, against a LightGBM + scikit-learn pipeline
//! doing the same work in the same run.
//!
//! The matrix has `--layers` layers of equal width; y depends on five of its columns. The same numbers go
//! to `reference/reference.py bench` through a CSV, with a plan of the rows `rank` uses (test rows, folds,
//! the rows each GBM holds back to stop early, the rows SHAP explains) and its trees' parameters, so
//! LightGBM grows the same trees on the same rows. Its fitting time (not its loading) is compared with
//! the time `models::rank` takes from the in-memory matrix.
use anyhow::{Context, Result, bail};
use clap::Parser;
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use models::RankOptions;
use models::fit::{Split, validation_rows};
use models::importance::shap_sample;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    #[arg(long, default_value_t = 200)]
    features: usize,
    #[arg(long, default_value_t = 4)]
    layers: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Python with LightGBM, scikit-learn, numpy and scipy (scripts/setup.sh makes it).
    #[arg(long, default_value = "/opt/datacrumbs-venv/bin/python")]
    python: PathBuf,
    /// Also run the pipeline with LightGBM at its own defaults (31 leaves, no early stopping): not the
    /// same work, printed on a line of its own.
    #[arg(long)]
    lightgbm_defaults: bool,
}

fn matrix(args: &Args) -> FeatureMatrix {
    let mut rng = StdRng::seed_from_u64(args.seed);
    let per_layer = args.features / args.layers;
    // Four decimals keep the CSV short and exact, so both sides fit the same numbers.
    let u: Vec<Vec<f64>> = (0..args.layers * per_layer)
        .map(|_| {
            (0..args.rows)
                .map(|_| (rng.gen_range(0.0..1.0f64) * 1e4).round() / 1e4)
                .collect()
        })
        .collect();
    let col = |layer: usize, j: usize| &u[layer * per_layer + j];
    let y: Vec<f64> = (0..args.rows)
        .map(|i| {
            let (a, b, c) = (col(0, 0)[i], col(0, 1)[i], col(0, 2)[i]);
            let layer1 = col(1 % args.layers, 3)[i];
            let layer2 = col(2 % args.layers, 4)[i];
            let noise: f64 = rng.gen_range(-10.0..10.0);
            200.0
                + 100.0 * (std::f64::consts::PI * a * b).sin()
                + 80.0 * (c - 0.5).powi(2)
                + 60.0 * layer1
                + 40.0 * layer2
                + noise
        })
        .collect();
    let features = u
        .into_iter()
        .enumerate()
        .map(|(k, values)| {
            let layer = format!("layer{}", k / per_layer);
            FeatureColumn::new(
                &layer,
                &format!("f{}", k % per_layer),
                FeatureKind::TimeNs,
                values,
            )
        })
        .collect();
    FeatureMatrix {
        op: vec!["read".to_string(); args.rows],
        pid: vec![1; args.rows],
        tid: vec![1; args.rows],
        ts_ns: (0..args.rows as u64).map(|i| i * 1000).collect(),
        dur_ns: vec![1000; args.rows],
        file: (0..args.rows)
            .map(|i| Some(format!("/data/file{}", i % 16)))
            .collect(),
        size: vec![Some(4096); args.rows],
        bandwidth_mibs: y.into_iter().map(Some).collect(),
        direct: vec![None; args.rows],
        sequential: vec![None; args.rows],
        run: vec![None; args.rows],
        thread: vec![None; args.rows],
        process: vec![None; args.rows],
        self_ns: vec![1000; args.rows],
        features,
    }
}

/// Every feature and the target (every row has one, so the dataset's rows are the matrix's).
fn write_csv(m: &FeatureMatrix, path: &Path) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let names: Vec<&str> = m.features.iter().map(|f| f.column.as_str()).collect();
    writeln!(out, "{},y", names.join(","))?;
    for i in 0..m.n_rows() {
        for f in &m.features {
            write!(out, "{},", f.values[i])?;
        }
        writeln!(out, "{}", m.bandwidth_mibs[i].unwrap_or(0.0))?;
    }
    out.flush()?;
    Ok(())
}

/// The rows `rank` fits and explains, as `reference.py bench` reads them: `train` and `test` index the
/// matrix; each fit's `validation` indexes its fitting rows (null: no early stopping), `shap` its
/// held-out rows.
fn plan(m: &FeatureMatrix, opts: &RankOptions) -> Result<serde_json::Value> {
    let ds = models::input::layer_dataset(m, &m.features[0].layer, opts)?;
    let split = Split::new(&ds.time, opts);
    let shap =
        |n: usize| shap_sample(n, opts.shap_rows, opts.seed).unwrap_or_else(|| (0..n).collect());
    let folds: Vec<serde_json::Value> = split
        .folds
        .iter()
        .map(|(fit, held)| {
            serde_json::json!({
                "fit": fit,
                "held": held,
                "validation": validation_rows(&split.train_time.select(fit), opts),
                "shap": shap(held.len()),
            })
        })
        .collect();
    let g = &opts.gbm;
    Ok(serde_json::json!({
        "train": split.train.iter().map(|&r| ds.rows[r]).collect::<Vec<_>>(),
        "test": split.test.iter().map(|&r| ds.rows[r]).collect::<Vec<_>>(),
        "validation": validation_rows(&split.train_time, opts),
        "shap": shap(split.test.len()),
        "folds": folds,
        "lasso_alphas": opts.lasso_alphas,
        "gbm": {
            "n_estimators": g.n_estimators,
            "max_depth": g.max_depth,
            "learning_rate": g.learning_rate,
            "min_samples_leaf": g.min_samples_leaf,
            "n_iter_no_change": g.n_iter_no_change,
        },
    }))
}

fn pipeline(args: &Args, csv: &Path, plan: &Path, own_defaults: bool) -> Result<serde_json::Value> {
    let script = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/reference/reference.py"
    ));
    if !args.python.exists() {
        bail!(
            "{} not found: scripts/setup.sh makes the venv with LightGBM and scikit-learn",
            args.python.display()
        );
    }
    let mut cmd = Command::new(&args.python);
    cmd.arg(&script).arg("bench").arg(csv).arg(plan);
    if own_defaults {
        cmd.arg("--lightgbm-defaults");
    }
    let out = cmd
        .output()
        .with_context(|| format!("running {}", args.python.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The 1-minute load average, to print beside each timing: on a busy machine they are not comparable.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

fn seconds(py: &serde_json::Value) -> Result<f64> {
    py["seconds"]
        .as_f64()
        .context("the pipeline reports its seconds")
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.layers == 0 || args.features < args.layers || args.rows < 100 {
        bail!("need at least one layer, one feature per layer and 100 rows");
    }
    let m = matrix(&args);
    println!(
        "matrix: {} rows × {} features in {} layers, {} rayon threads",
        m.n_rows(),
        m.features.len(),
        args.layers,
        rayon::current_num_threads()
    );
    // What `dc-model rank --layer all` does: only the ranking's importance (SHAP).
    let opts = RankOptions {
        seed: args.seed,
        all_importances: false,
        ..RankOptions::default()
    };
    let load_before = load();
    let start = Instant::now();
    let report = models::rank(&m, &opts)?;
    let rust_s = start.elapsed().as_secs_f64();
    println!(
        "dc-model rank --layer all: {rust_s:.2} s (load average {load_before} before, {} after)",
        load()
    );

    let dir = std::env::temp_dir();
    let csv = dir.join(format!("dc-model-bench-{}.csv", std::process::id()));
    let plan_path = dir.join(format!("dc-model-bench-{}.json", std::process::id()));
    let run = |own_defaults| -> Result<(serde_json::Value, String)> {
        let before = load();
        let py = pipeline(&args, &csv, &plan_path, own_defaults)?;
        Ok((
            py,
            format!("load average {before} before, {} after", load()),
        ))
    };
    let ran = write_csv(&m, &csv)
        .and_then(|()| Ok(std::fs::write(&plan_path, plan(&m, &opts)?.to_string())?))
        .and_then(|()| {
            let same = run(false)?;
            let defaults = args.lightgbm_defaults.then(|| run(true)).transpose()?;
            Ok((same, defaults))
        });
    std::fs::remove_file(&csv).ok();
    std::fs::remove_file(&plan_path).ok();
    let ((py, py_load), defaults) = ran?;
    let py_s = seconds(&py)?;
    let g = &opts.gbm;
    println!(
        "LightGBM {} + scikit-learn {}, same work (max_depth {}, num_leaves {}, min_child_samples {}, \
         early stopping on the same rows, SHAP by pred_contrib on the same rows): {py_s:.2} s ({py_load})",
        py["lightgbm"].as_str().unwrap_or("?"),
        py["sklearn"].as_str().unwrap_or("?"),
        g.max_depth,
        1usize << g.max_depth,
        g.min_samples_leaf,
    );
    let stack_r2 = |v: &serde_json::Value| v["layers"]["stack"]["gbm_test_r2"].as_f64();
    let ours = report.stack.as_ref().map(|s| s.quality.test_r2);
    let fmt = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.4}"));
    println!(
        "equal-work ratio dc-model / pipeline: {:.3}×, stack held-out R² {} against LightGBM's {}",
        rust_s / py_s,
        fmt(ours),
        fmt(stack_r2(&py))
    );
    if let Some((d, d_load)) = &defaults {
        let d_s = seconds(d)?;
        println!(
            "not the same work: LightGBM at its own defaults (31 leaves, no early stopping), same steps: \
             {d_s:.2} s ({d_load}), dc-model / it {:.3}×, its stack held-out R² {}",
            rust_s / d_s,
            fmt(stack_r2(d))
        );
    }
    println!(
        "{:<8} {:>10} {:>12} {:>10} {:>12} {:>6}",
        "model", "GBM R²", "LightGBM R²", "Lasso R²", "sk Lasso R²", "trees"
    );
    let row = |name: &str, gbm: f64, lasso: Option<f64>, trees: Option<usize>| {
        let theirs = &py["layers"][name];
        let get = |k: &str| {
            theirs[k]
                .as_f64()
                .map_or("-".to_string(), |x| format!("{x:.4}"))
        };
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.4}"));
        println!(
            "{:<8} {:>10.4} {:>12} {:>10} {:>12} {:>6}",
            name,
            gbm,
            get("gbm_test_r2"),
            opt(lasso),
            get("lasso_test_r2"),
            trees.map_or("-".to_string(), |t| t.to_string())
        );
    };
    for l in &report.layers {
        row(
            &l.layer,
            l.gbm.quality.test_r2,
            Some(l.lasso.quality.test_r2),
            Some(l.gbm.n_trees),
        );
    }
    if let Some(stack) = &report.stack {
        row("stack", stack.quality.test_r2, None, None);
    }
    Ok(())
}
