//! dc-report's whole library path on a trace of a few million events (`trace_report::write`: one read of the trace,
//! the diagnosis, the page, its CSV and the JSON) against `dc-features build`'s (`features::build_with` and the
//! Parquet matrix) on the same file in the same run, with the ratio: issue 39 asks for at most 1.3.
//!
//! The input is made as `features/benches/build.rs` makes it: case-read-simple repeated back to back
//! (`datasets::synth::repeat_trace`), written as BGZF, which datacrumbs writes, and as one plain gzip member, which
//! DataCrumbs wrote. `DC_BENCH_COPIES` sets the copies (default 22, about 4.8 million events), `DC_BENCH_RUNS` the
//! runs of each, taken in turn (default 3; the best is compared), and `DC_BENCH_DIR` keeps the inputs in that
//! folder and reuses them (the same files as features' benchmark, for `dc-report` and `dc-features build` by hand).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datasets::output::Existing;
use datasets::read::{ReadOptions, read_all};
use datasets::synth::{regzip, repeat_trace};
use datasets::write::Header;
use features::{BuildOptions, build_with};
use report::trace_report::{self, TraceReportOptions};

/// Any failure of the benchmark: it only prints it.
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);

fn main() -> Result<()> {
    let number = |var: &str, default: usize| -> Result<usize> {
        match std::env::var(var) {
            Ok(v) => v.parse().map_err(|e| format!("{var}={v}: {e}").into()),
            Err(_) => Ok(default),
        }
    };
    let copies = number("DC_BENCH_COPIES", 22)?;
    let runs = number("DC_BENCH_RUNS", 3)?.max(1);
    let tmp = tempfile::tempdir()?;
    let dir = match std::env::var_os("DC_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => tmp.path().to_path_buf(),
    };
    std::fs::create_dir_all(&dir)?;
    let bgzf = dir.join(format!("repeated-{copies}.bgzf.pfw.gz"));
    let gzip = dir.join(format!("repeated-{copies}.gzip.pfw.gz"));
    if !(bgzf.exists() && gzip.exists()) {
        let source = read_all(&[PathBuf::from(SOURCE)], ReadOptions::default())?;
        repeat_trace(
            &source,
            copies,
            &bgzf,
            Header::new("report-bench", env!("CARGO_PKG_VERSION")),
        )?;
        regzip(&bgzf, &gzip)?;
    }
    println!(
        "input: case-read-simple x {copies}; BGZF {:.0} MiB, gzip -6 {:.0} MiB; best of {runs} runs each, in turn",
        mib(std::fs::metadata(&bgzf)?.len()),
        mib(std::fs::metadata(&gzip)?.len())
    );
    for (label, input) in [
        ("BGZF (datacrumbs)", &bgzf),
        ("one gzip member (DataCrumbs)", &gzip),
    ] {
        println!("{label} (load average {}):", load_average());
        let (mut build, mut report) = (Vec::new(), Vec::new());
        let mut events = 0;
        for _ in 0..runs {
            let (t, n) = timed(|| features_build(input, tmp.path()))?;
            build.push(t);
            events = n;
            report.push(timed(|| dc_report(input, tmp.path()))?.0);
        }
        let best = |v: &[Timed]| {
            *v.iter()
                .min_by(|a, b| a.wall.cmp(&b.wall))
                .expect("one run at least")
        };
        let (b, r) = (best(&build), best(&report));
        for (what, t, all) in [
            ("dc-features build -> Parquet", b, &build),
            ("dc-report (page, CSV, JSON)", r, &report),
        ] {
            let walls: Vec<String> = all
                .iter()
                .map(|t| format!("{:.2}", t.wall.as_secs_f64()))
                .collect();
            println!(
                "  {what:<30} {:>6.2} s  {:>5.2} s CPU  {:.2} M events/s  (runs: {} s)",
                t.wall.as_secs_f64(),
                t.cpu,
                events as f64 / t.wall.as_secs_f64() / 1e6,
                walls.join(", ")
            );
        }
        println!(
            "  ratio dc-report / build      {:>6.2}   (CPU {:.2}; issue 39: at most 1.3) over {events} events",
            r.wall.as_secs_f64() / b.wall.as_secs_f64(),
            r.cpu / b.cpu
        );
    }
    Ok(())
}

/// `dc-features build`'s path: the matrix of `input`, written as Parquet; returns the events read.
fn features_build(input: &Path, out: &Path) -> Result<u64> {
    let (matrix, stats) = build_with(
        std::slice::from_ref(&input.to_path_buf()),
        &BuildOptions::default(),
        |_| {},
    )?;
    matrix.write(&out.join("features.parquet"), Existing::Replace)?;
    Ok(stats.events)
}

/// `dc-report TRACE --json`'s path, the terminal's text aside.
fn dc_report(input: &Path, out: &Path) -> Result<()> {
    let written = trace_report::write(&TraceReportOptions {
        traces: vec![input.to_path_buf()],
        read: ReadOptions::default(),
        output: out.join("report.html"),
        existing: Existing::Replace,
        baseline: Vec::new(),
        json: Some(out.join("diagnosis.json")),
        summaries: Vec::new(),
        progress: false,
    })?;
    if !written.page.exists() {
        return Err("no page written".into());
    }
    Ok(())
}

/// Wall time, and CPU seconds (user and system) over every thread of the process.
#[derive(Clone, Copy)]
struct Timed {
    wall: Duration,
    cpu: f64,
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(Timed, T)> {
    let cpu = own_cpu();
    let start = Instant::now();
    let out = f()?;
    let t = Timed {
        wall: start.elapsed(),
        cpu: own_cpu() - cpu,
    };
    Ok((t, out))
}

fn own_cpu() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The 1-minute load average: other work on the machine's cores, beside each figure.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
