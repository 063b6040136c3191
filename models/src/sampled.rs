//! `rank` of a Parquet matrix too large to hold, on a stratified sample of it ([`crate::sample`]):
//! a first fit on a few rows says how many the ranking needs for the error asked of each layer's
//! importance share; the ranking runs on that many, judged on rows held out from the whole matrix;
//! refits on bootstrap resamples give an interval for every share. Before any of it, a fit that
//! would not fit in memory is refused with the numbers.
use std::path::Path;

use indicatif::ProgressBar;
use ndarray::ArrayView2;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::dataset::{CONTEXT, Dataset};
use crate::error::{ModelError, Result};
use crate::fit::{Parts, Split, TrainBins, validation_rows};
use crate::gbm::Gbm;
use crate::importance::mean_abs_shap;
use crate::input::{dataset_of, resolve_layers};
use crate::options::RankOptions;
use crate::progress;
use crate::rank::rank_held_out;
use crate::report::{RankReport, SampleReport, ShareInterval};
use crate::sample::{self, Sample, SampleOptions};

/// Memory the whole ranking takes per matrix cell (a row's value of one column), in bytes: measured on
/// `dc-model rank --layer all` at 1M rows × 100 feature columns (4.28 GB, 2026-11-27), where the
/// matrix itself is 8 bytes a cell. It is the dataset copies each layer's models make.
pub const BYTES_PER_CELL: f64 = 43.0;

/// The same for the ranking of a sample, per cell of the rows it holds (fitted and held out):
/// measured on `rank_sampled` of 250K rows × 114 columns (0.51 GB peak RSS, 2026-11-27, third
/// session), the sample itself 9 bytes a cell and one batch of the matrix being read.
pub const SAMPLE_BYTES_PER_CELL: f64 = 18.0;

/// The z of a two-sided 95% interval.
const Z95: f64 = 1.96;

/// Memory the system can give without swapping (`MemAvailable`), and no more than this process's
/// cgroup (v2) has left below its `memory.max`, in bytes; None where neither is known.
pub fn memory_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    let cgroup = cgroup_left();
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `memory.max` less `memory.current` of this process's cgroup (v2); None without a limit.
fn cgroup_left() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// Refuses to rank `rows` rows of `columns` columns when the fit would need more memory than
/// `available` (what [`memory_available`] says where None); `sampled` says whether those are the
/// sample's rows.
pub fn check_memory(
    rows: usize,
    columns: usize,
    sampled: bool,
    available: Option<u64>,
) -> Result<()> {
    let Some(available) = available.or_else(memory_available) else {
        return Ok(());
    };
    let per_cell = if sampled {
        SAMPLE_BYTES_PER_CELL
    } else {
        BYTES_PER_CELL
    };
    let need = (rows as f64 * columns as f64 * per_cell) as u64;
    if need <= available {
        return Ok(());
    }
    Err(ModelError::TooLarge {
        rows,
        columns,
        what: if sampled {
            "the sample's fit".to_string()
        } else {
            "the full fit".to_string()
        },
        sampled,
        need,
        available,
    })
}

/// The stack model's mean |SHAP| shares on the held-out rows, refitted on bootstrap resamples of
/// the fitted rows.
struct Replicates {
    /// Per feature: the share on the fit of every fitted row.
    point: Vec<f64>,
    /// Per replicate, per feature.
    shares: Vec<Vec<f64>>,
}

fn shap_shares(gbm: &Gbm, xh: ArrayView2<'_, f64>, opts: &RankOptions) -> Vec<f64> {
    let shap = mean_abs_shap(gbm, xh, opts.shap_rows, opts.seed);
    let total: f64 = shap.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return vec![0.0; shap.len()];
    }
    shap.iter().map(|v| v / total).collect()
}

/// Fits the stack model on `ds`'s fitted rows as `rank` does (holding some back to stop early), then
/// `b` times on resamples of the rows it fits on, stopping early on the same rows.
fn bootstrap(ds: &mut Dataset, opts: &RankOptions, b: usize) -> Result<Replicates> {
    let split = Split::new(&ds.time, opts);
    let parts = Parts::take(ds, &split);
    let bins = TrainBins::new(parts.xt());
    let n = split.train.len();
    let validation = validation_rows(&split.train_time, opts).unwrap_or_default();
    let mut is_validation = vec![false; n];
    for &i in &validation {
        is_validation[i] = true;
    }
    let fit: Vec<usize> = (0..n).filter(|&i| !is_validation[i]).collect();
    let fit_on = |rows: &[usize]| {
        Gbm::fit_binned(
            &bins.binner,
            &bins.binned,
            parts.yt.view(),
            rows,
            &validation,
            &opts.gbm,
        )
    };
    let point = shap_shares(&fit_on(&fit)?, parts.xh(), opts);
    let shares = (0..b)
        .into_par_iter()
        .map(|r| {
            let mut rng = StdRng::seed_from_u64(opts.seed ^ (0xb007 + r as u64));
            let rows: Vec<usize> = (0..fit.len())
                .map(|_| fit[rng.gen_range(0..fit.len())])
                .collect();
            Ok(shap_shares(&fit_on(&rows)?, parts.xh(), opts))
        })
        .collect::<Result<_>>()?;
    Ok(Replicates { point, shares })
}

/// The layers of `ds`'s columns, context first, then in order of first column.
fn layers_of(ds: &Dataset) -> Vec<String> {
    let mut out = vec![CONTEXT.to_string()];
    for l in &ds.layers {
        if !out.contains(l) {
            out.push(l.clone());
        }
    }
    out
}

fn layer_share(ds: &Dataset, per_feature: &[f64], layer: &str) -> f64 {
    (0..per_feature.len())
        .filter(|&j| ds.layers[j] == layer)
        .map(|j| per_feature[j])
        .sum()
}

fn sd(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// The share ± 1.96 bootstrap standard deviations, within [0, 1]. A share's percentile interval
/// can miss the share itself: resampled rows repeat, and trees fitted on repeats lean one way.
fn interval(name: &str, layer: &str, point: f64, reps: &[f64]) -> ShareInterval {
    let half = Z95 * sd(reps);
    ShareInterval {
        name: name.to_string(),
        layer: layer.to_string(),
        share: point,
        low: (point - half).max(0.0),
        high: (point + half).min(1.0),
    }
}

/// Each layer's share per replicate.
fn layer_replicates(ds: &Dataset, r: &Replicates) -> Vec<(String, Vec<f64>)> {
    layers_of(ds)
        .into_iter()
        .map(|l| {
            let reps = r.shares.iter().map(|s| layer_share(ds, s, &l)).collect();
            (l, reps)
        })
        .collect()
}

/// The fitted rows that bring the widest layer share's interval to `error`, from its spread `sd` on
/// `n0` rows (an interval narrows as 1/√rows).
pub fn rows_needed(n0: usize, widest_sd: f64, error: f64) -> usize {
    let n = n0 as f64 * (Z95 * widest_sd / error).powi(2);
    (n.ceil() as usize).max(n0)
}

/// Ranks the Parquet matrix at `path` on a sample (see the module doc).
pub fn rank_sampled(
    path: &Path,
    opts: &RankOptions,
    sopts: &SampleOptions,
    pb: &ProgressBar,
) -> Result<RankReport> {
    opts.validate()?;
    sample::validate(sopts)?;
    let (rows, columns) = features::format::parquet::shape(path).map_err(ModelError::matrix)?;
    check_memory(
        (sopts.max_rows + sopts.held_out_rows).min(rows),
        columns,
        true,
        sopts.memory,
    )?;
    progress::count_rows(
        pb,
        3 * rows as u64,
        format!("reading a sample of {}", path.display()),
    );
    let sample = sample::read(path, &opts.target, sopts, opts.seed, pb)?;
    rank_sample(sample, opts, sopts, pb)
}

/// Ranks a [`Sample`] already read (see the module doc).
pub fn rank_sample(
    sample: Sample,
    opts: &RankOptions,
    sopts: &SampleOptions,
    pb: &ProgressBar,
) -> Result<RankReport> {
    let layers = resolve_layers(&sample.matrix, &opts.layers)?;
    let layer_refs: Vec<&str> = layers.iter().map(String::as_str).collect();
    let take = |n: usize| {
        let rows = sample.subsample(n);
        let held: Vec<bool> = rows.iter().map(|&i| sample.held_out[i]).collect();
        (sample.matrix.select_rows(&rows), held)
    };

    let fitted = sample.fitted_rows();
    let n0 = sopts.pilot_rows.min(fitted);
    pb.set_message(format!("sizing the sample on {n0} rows"));
    let (pilot_sd, n) = {
        let mut ds0 = {
            let (m0, held0) = take(n0);
            dataset_of(&m0, &held0, "stack", &layer_refs, true, opts)?
        };
        let reps = bootstrap(&mut ds0, opts, sopts.bootstrap)?;
        let sds: Vec<(String, f64)> = layer_replicates(&ds0, &reps)
            .into_iter()
            .map(|(l, v)| (l, sd(&v)))
            .collect();
        let widest = sds.iter().map(|s| s.1).fold(0.0, f64::max);
        let n = rows_needed(n0, widest, sopts.share_error).min(fitted);
        (sds, n)
    };
    // The ranking's rows are the sample's, those not taken dropped in place: they are held once.
    let mut keep = vec![false; sample.matrix.n_rows()];
    for i in sample.subsample(n) {
        keep[i] = true;
    }
    let held: Vec<bool> = (0..keep.len())
        .filter(|&i| keep[i])
        .map(|i| sample.held_out[i])
        .collect();
    let Sample {
        matrix: mut m,
        strata,
        rows_total,
        rows_with_target,
        ..
    } = sample;
    if held.len() < keep.len() {
        sample::keep_rows(&mut m, &keep);
    }
    drop(keep);
    let mut report = rank_held_out(&m, &held, opts, pb)?;
    pb.set_message(format!("bootstrap intervals on {n} rows"));
    let mut ds = dataset_of(&m, &held, "stack", &layer_refs, true, opts)?;
    drop(m);
    let reps = bootstrap(&mut ds, opts, sopts.bootstrap)?;
    let mut layer_iv: Vec<ShareInterval> = layer_replicates(&ds, &reps)
        .into_iter()
        .map(|(l, v)| interval(&l, &l, layer_share(&ds, &reps.point, &l), &v))
        .collect();
    layer_iv.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.name.cmp(&b.name)));
    let mut feature_iv: Vec<ShareInterval> = (0..ds.n_features())
        .map(|j| {
            let v: Vec<f64> = reps.shares.iter().map(|s| s[j]).collect();
            interval(&ds.feature_names[j], &ds.layers[j], reps.point[j], &v)
        })
        .collect();
    feature_iv.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.name.cmp(&b.name)));
    let half_width = layer_replicates(&ds, &reps)
        .iter()
        .map(|(_, v)| Z95 * sd(v))
        .fold(0.0, f64::max);
    report.rows_total = rows_total;
    report.sample = Some(SampleReport {
        rows_total,
        rows_with_target,
        held_out_rows: held.iter().filter(|&&h| h).count(),
        fitted_rows: n,
        max_rows: sopts.max_rows,
        share_error: sopts.share_error,
        pilot_rows: n0,
        pilot_share_sd: pilot_sd,
        bootstrap: sopts.bootstrap,
        layers: layer_iv,
        features: feature_iv,
        half_width,
        error_reached: half_width <= sopts.share_error,
        strata,
    });
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::tests::{matrix, written};

    #[test]
    fn the_sampled_ranking_gives_the_full_fits_layer_shares_within_its_interval() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix(30_000);
        let path = written(&m, dir.path());
        let opts = RankOptions {
            all_importances: false,
            ..RankOptions::default()
        };
        let sopts = SampleOptions {
            max_rows: 8000,
            held_out_rows: 4000,
            pilot_rows: 2000,
            share_error: 0.02,
            bootstrap: 8,
            memory: None,
        };
        let sampled = rank_sampled(&path, &opts, &sopts, &ProgressBar::hidden()).unwrap();
        let full = crate::rank(&m, &opts).unwrap();
        let s = sampled.sample.as_ref().unwrap();
        assert_eq!((s.rows_total, s.rows_with_target), (30_000, 27_000));
        assert_eq!(sampled.rows_total, 30_000);
        assert!(
            s.fitted_rows >= 2000 && s.fitted_rows <= 8000,
            "{}",
            s.fitted_rows
        );
        // Rows held out are about 4,000 (each drawn alone): within 5 sd of a binomial.
        assert!((s.held_out_rows as f64 - 4000.0).abs() < 5.0 * 4000f64.sqrt());
        let stack = sampled.stack.as_ref().unwrap();
        assert!(stack.quality.test_r2.is_finite());
        for l in &full.stack.as_ref().unwrap().layers {
            let ours = s.layers.iter().find(|i| i.name == l.layer).unwrap();
            assert!(ours.high > ours.low || ours.share == 0.0, "{ours:?}");
            assert!(
                (ours.share - l.share).abs() < 0.03,
                "{ours:?} against {}",
                l.share
            );
        }
        let order: Vec<&str> = s.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(order[..2], ["vfs", "ext4"]);
        assert!(s.layers.iter().find(|l| l.name == "sched").unwrap().share < 0.02);
        // The sampled layers were judged on the held-out rows alone.
        for l in &sampled.layers {
            assert_eq!(l.test_rows, s.held_out_rows);
            assert_eq!(l.train_rows, s.fitted_rows);
        }
    }

    #[test]
    fn a_fit_larger_than_memory_is_refused_with_the_numbers() {
        let available = 10_000_000;
        // Twice the rows whose full fit would take all of it.
        let rows = (available as f64 / BYTES_PER_CELL / 10.0) as usize * 2;
        let e = check_memory(rows, 10, false, Some(available)).unwrap_err();
        let need = rows as f64 * 10.0 * BYTES_PER_CELL / 1e6;
        assert_eq!(
            e.to_string(),
            format!(
                "{rows} rows × 10 columns: the full fit needs about {need:.1} MB of memory, and \
                 10.0 MB is available"
            )
        );
        assert!(matches!(e, ModelError::TooLarge { sampled: false, .. }));
        // A sample's rows take fewer bytes a cell.
        assert!(check_memory(rows, 10, true, Some(available)).is_ok());
        assert!(check_memory(rows / 2, 10, false, Some(available)).is_ok());
    }

    #[test]
    fn rows_needed_scale_as_the_square_of_the_error_ratio() {
        // sd 0.01 on 20,000 rows gives a half-width of 0.0196; 0.0098 needs four times the rows.
        assert!(rows_needed(20_000, 0.01, 0.0098).abs_diff(80_000) <= 1);
        assert_eq!(rows_needed(20_000, 0.001, 0.01), 20_000);
    }
}
