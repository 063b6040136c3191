//! dc-model-bench: `rank --layer all` on a synthetic matrix, against a LightGBM + scikit-learn pipeline
//! fitting the same models in the same run.
//!
//! The matrix has `--layers` layers of equal width; y depends on five of its columns. The same numbers
//! and the same held-out rows go to `reference/reference.py bench` through a CSV, and its fitting time
//! (not its loading) is compared with the time `models::rank` takes from the in-memory matrix.
use anyhow::{Context, Result, bail};
use clap::Parser;
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use models::RankOptions;
use models::split::train_test;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
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
        self_ns: vec![1000; args.rows],
        features,
    }
}

/// Every feature, the target and the split `rank` makes (every row has a target, so the rows align).
fn write_csv(m: &FeatureMatrix, opts: &RankOptions, path: &PathBuf) -> Result<()> {
    let layer = &m.features[0].layer;
    let ds = models::input::layer_dataset(m, layer, opts)?;
    let (_, test) = train_test(opts.split, &ds.time, opts.test_fraction, opts.seed);
    let mut is_test = vec![false; m.n_rows()];
    for t in test {
        is_test[ds.rows[t]] = true;
    }
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let names: Vec<&str> = m.features.iter().map(|f| f.column.as_str()).collect();
    writeln!(out, "{},y,split", names.join(","))?;
    for (i, test) in is_test.into_iter().enumerate() {
        for f in &m.features {
            write!(out, "{},", f.values[i])?;
        }
        let split = if test { "test" } else { "train" };
        writeln!(out, "{},{split}", m.bandwidth_mibs[i].unwrap_or(0.0))?;
    }
    out.flush()?;
    Ok(())
}

fn pipeline(args: &Args, csv: &PathBuf) -> Result<serde_json::Value> {
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
    let out = Command::new(&args.python)
        .arg(&script)
        .arg("bench")
        .arg(csv)
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
    let start = Instant::now();
    let report = models::rank(&m, &opts)?;
    let rust_s = start.elapsed().as_secs_f64();
    println!("dc-model rank --layer all: {rust_s:.2} s");

    let csv = std::env::temp_dir().join(format!("dc-model-bench-{}.csv", std::process::id()));
    write_csv(&m, &opts, &csv)?;
    let py = pipeline(&args, &csv);
    std::fs::remove_file(&csv).ok();
    let py = py?;
    let py_s = py["seconds"]
        .as_f64()
        .context("the pipeline reports its seconds")?;
    println!(
        "LightGBM {} + scikit-learn {} pipeline (same models, SHAP by pred_contrib): {py_s:.2} s",
        py["lightgbm"].as_str().unwrap_or("?"),
        py["sklearn"].as_str().unwrap_or("?")
    );
    println!("dc-model / pipeline: {:.3}×", rust_s / py_s);
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
