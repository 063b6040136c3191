//! How `rank` scales with the matrix's rows: the full fit (the whole matrix read and every row
//! fitted on) against the ranking on a stratified sample read by row groups, each in a process of its
//! own so that its time and peak RSS are its own, on one generated matrix.
//!
//! `cargo bench -p models --bench rank_scale -- --rows 1000000 --dir /tmp/rank-scale` writes
//! `/tmp/rank-scale/m-1000000.parquet` (kept for the next run: it is not committed), then runs both;
//! `--no-full` leaves the full fit out where it would not fit in memory.
//!
//! The matrix has 100 feature columns in four layers of 25 (`vfs`, `ext4`, `block`, `sched`), and
//! reads and writes of three sizes, buffered or direct, from four processes on eight files. The
//! target depends on `vfs` (three columns, the most), `ext4` (one), `block` (one) and the size, so
//! `sched` must come out near zero and the shares in that order.
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use datasets::output::Existing;
use features::format::parquet::Writer;
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use indicatif::ProgressBar;
use models::{RankOptions, RankReport, SampleOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LAYERS: [&str; 4] = ["vfs", "ext4", "block", "sched"];
const PER_LAYER: usize = 25;
/// Rows generated at a time: the generator holds no more.
const PART: usize = 250_000;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    /// Where the generated matrix is kept between runs.
    #[arg(long, default_value = "/tmp/rank-scale")]
    dir: PathBuf,
    /// Leave out the full fit.
    #[arg(long)]
    no_full: bool,
    /// Run one fit in this process and print its figures as JSON (what the parent spawns).
    #[arg(long, hide = true)]
    child: Option<String>,
    /// The matrix the child fits.
    #[arg(long, hide = true)]
    matrix: Option<PathBuf>,
    #[arg(long, default_value_t = SampleOptions::default().max_rows)]
    max_rows: usize,
    /// cargo bench passes --bench to the harness.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Rows `start..start + n` of the generated matrix: every value a function of the seed and the row.
fn part(start: usize, n: usize) -> FeatureMatrix {
    let mut rng = StdRng::seed_from_u64(start as u64);
    // Four decimals: a dictionary of 10,001 values per column keeps the file small.
    let mut u = || (rng.gen_range(0.0..1.0f64) * 1e4).round() / 1e4;
    let mut columns: Vec<Vec<f64>> = vec![Vec::with_capacity(n); LAYERS.len() * PER_LAYER];
    let mut base = Vec::with_capacity(n);
    for _ in 0..n {
        for c in columns.iter_mut() {
            c.push(u());
        }
        base.push((u(), u(), u(), u()));
    }
    let sizes = [4096i64, 65536, 1 << 20];
    let size: Vec<i64> = base
        .iter()
        .map(|b| sizes[(b.0 * 3.0) as usize % 3])
        .collect();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            let c = |layer: usize, j: usize| columns[layer * PER_LAYER + j][i];
            let (a, b, d) = (c(0, 0), c(0, 1), c(0, 2));
            200.0
                + 100.0 * (std::f64::consts::PI * a * b).sin()
                + 80.0 * (d - 0.5).powi(2)
                + 60.0 * c(1, 3)
                + 40.0 * c(2, 4)
                + 20.0 * (size[i] as f64).log2() / 20.0
                + 20.0 * (base[i].3 - 0.5)
        })
        .collect();
    let features = columns
        .into_iter()
        .enumerate()
        .map(|(k, values)| {
            FeatureColumn::new(
                LAYERS[k / PER_LAYER],
                &format!("f{}", k % PER_LAYER),
                FeatureKind::TimeNs,
                values,
            )
        })
        .collect();
    let rows = start..start + n;
    FeatureMatrix {
        op: base
            .iter()
            .map(|b| if b.1 < 0.6 { "read" } else { "write" }.to_string())
            .collect(),
        pid: rows.clone().map(|r| 100 + (r % 4) as u64).collect(),
        tid: rows.clone().map(|r| 100 + (r % 4) as u64).collect(),
        ts_ns: rows.clone().map(|r| r as u64 * 1000).collect(),
        dur_ns: vec![1000; n],
        file: rows
            .clone()
            .map(|r| Some(format!("/data/f{}", r % 8)))
            .collect(),
        size: size.into_iter().map(Some).collect(),
        bandwidth_mibs: y.into_iter().map(Some).collect(),
        direct: base.iter().map(|b| Some(b.2 < 0.3)).collect(),
        sequential: vec![None; n],
        run: vec![None; n],
        thread: vec![None; n],
        process: vec![None; n],
        self_ns: vec![1000; n],
        features,
    }
}

fn generate(rows: usize, path: &Path) -> Result<()> {
    let start = Instant::now();
    let mut w = Writer::create(path, &part(0, 0), Existing::Refuse)?;
    let mut done = 0;
    while done < rows {
        let n = PART.min(rows - done);
        w.write(&part(done, n))?;
        done += n;
    }
    w.finish()?;
    println!(
        "generated {rows} rows × 100 feature columns in {:.1} s: {} ({:.2} GB)",
        start.elapsed().as_secs_f64(),
        path.display(),
        std::fs::metadata(path)?.len() as f64 / 1e9
    );
    Ok(())
}

/// This process's peak resident set, in bytes.
/// Counts the heap's live bytes and their peak, so that the bench can say how many bytes the sample's
/// rows hold and how many the ranking of them takes at most.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(live, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        q
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn peak_rss() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("VmHWM in /proc/self/status")?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .context("VmHWM's value")?
        .parse()?;
    Ok(kib * 1024)
}

/// Each layer's share of the stack model: `layer` → share.
fn shares(r: &RankReport) -> serde_json::Value {
    let stack = r.stack.as_ref();
    let mut out = serde_json::Map::new();
    if let Some(s) = stack {
        out.insert("context".into(), s.context_share.into());
        for l in &s.layers {
            out.insert(l.layer.clone(), l.share.into());
        }
    }
    out.into()
}

fn child(which: &str, path: &Path, max_rows: usize) -> Result<()> {
    let opts = RankOptions {
        all_importances: false,
        ..RankOptions::default()
    };
    let start = Instant::now();
    let mut held = serde_json::Value::Null;
    let report = match which {
        "full" => models::rank(&FeatureMatrix::read(path)?, &opts)?,
        "sample" => {
            let sopts = SampleOptions {
                max_rows,
                ..SampleOptions::default()
            };
            let pb = ProgressBar::hidden();
            let sample = models::sample::read(path, &opts.target, &sopts, opts.seed, &pb)?;
            let (bytes, read_peak) = (LIVE.load(Relaxed), PEAK.load(Relaxed));
            held = serde_json::json!({
                "rows": sample.matrix.n_rows(),
                "bytes": bytes,
                "read_peak_heap": read_peak,
                "read_peak_rss": peak_rss()?,
            });
            PEAK.store(bytes, Relaxed);
            models::sampled::rank_sample(sample, &opts, &sopts, &pb)?
        }
        other => bail!("no fit {other}"),
    };
    let seconds = start.elapsed().as_secs_f64();
    let sample = report.sample.as_ref().map(|s| {
        serde_json::json!({
            "fitted_rows": s.fitted_rows,
            "held_out_rows": s.held_out_rows,
            "half_width": s.half_width,
            "intervals": s.layers.iter().map(|l| (l.name.clone(), serde_json::json!([l.low, l.high]))).collect::<serde_json::Map<_, _>>(),
        })
    });
    let out = serde_json::json!({
        "seconds": seconds,
        "peak_rss": peak_rss()?,
        "peak_heap": PEAK.load(Relaxed),
        "held": held,
        "shares": shares(&report),
        "stack_test_r2": report.stack.as_ref().map(|s| s.quality.test_r2),
        "sample": sample,
    });
    println!("{out}");
    Ok(())
}

fn spawn(which: &str, path: &Path, max_rows: usize) -> Result<serde_json::Value> {
    let out = Command::new(std::env::current_exe()?)
        .args([
            "--child",
            which,
            "--max-rows",
            &max_rows.to_string(),
            "--matrix",
        ])
        .arg(path)
        .output()?;
    if !out.status.success() {
        bail!(
            "the {which} fit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(serde_json::from_str(
        text.lines().last().context("the child's figures")?,
    )?)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let (Some(which), Some(matrix)) = (&args.child, &args.matrix) {
        return child(which, matrix, args.max_rows);
    }
    std::fs::create_dir_all(&args.dir)?;
    let path = args.dir.join(format!("m-{}.parquet", args.rows));
    if !path.exists() {
        generate(args.rows, &path)?;
    }
    let mut runs = Vec::new();
    if !args.no_full {
        runs.push("full");
    }
    runs.push("sample");
    for which in runs {
        let before = load();
        let r = spawn(which, &path, args.max_rows)?;
        let rss = r["peak_rss"].as_f64().unwrap_or(f64::NAN) / 1e9;
        let secs = r["seconds"].as_f64().unwrap_or(f64::NAN);
        println!(
            "{which:<6} {} rows: {secs:.1} s ({:.1} µs a row), peak RSS {rss:.2} GB, load {before} before, {} after",
            args.rows,
            1e6 * secs / args.rows as f64,
            load()
        );
        println!("       shares {}", r["shares"]);
        if let Some(bytes) = r["held"]["bytes"].as_f64() {
            println!(
                "       rows held {} ({:.3} GB on the heap; read's peak heap {:.3} GB, RSS {:.3} GB); \
                 ranking's peak heap {:.3} GB; peak RSS / held {:.2}, peak heap / held {:.2}",
                r["held"]["rows"],
                bytes / 1e9,
                r["held"]["read_peak_heap"].as_f64().unwrap_or(f64::NAN) / 1e9,
                r["held"]["read_peak_rss"].as_f64().unwrap_or(f64::NAN) / 1e9,
                r["peak_heap"].as_f64().unwrap_or(f64::NAN) / 1e9,
                rss * 1e9 / bytes,
                r["peak_heap"].as_f64().unwrap_or(f64::NAN) / bytes,
            );
        }
        if !r["sample"].is_null() {
            println!("       sample {}", r["sample"]);
        }
        println!("       stack held-out R² {}", r["stack_test_r2"]);
        std::io::stdout().flush()?;
    }
    Ok(())
}
