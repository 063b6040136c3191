//! The whole `dc-features build`, gzip trace → Parquet matrix, against `zcat` and `igzip -d` (ISA-L, the fastest
//! inflate here) of the same file to /dev/null in the same run, with wall and CPU seconds and the load average.
//!
//! Three inputs, each a real trace repeated back to back, every copy shifted in time and given its own pids:
//! - case-read-simple in datacrumbs' own format (`datasets::synth::repeat_trace`), as BGZF, which datacrumbs writes;
//! - case-read-simple and case-write-simple in DataCrumbs' own text (`datasets::synth::repeat_text`), as one plain
//!   gzip member (level 6), as DataCrumbs wrote them: the foreign dialect, read through its own fast path.
//!
//! `DC_BENCH_COPIES` sets the number of copies of each (default 22 of the read trace, about 4.8 million events, and
//! 20 of the write trace, about 4.3 million, the sizes issue 36 measured). `DC_BENCH_DIR` keeps the inputs in that
//! folder and reuses them on the next run (for `/usr/bin/time -v dc-features build` on the same files).
//! `DC_BENCH_RUNS` (default 3) is how many times each tool and the build run on each input, one after another; the
//! fastest run of each is printed, as the figure least disturbed by the machine's other work.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use datasets::output::Existing;
use datasets::read::{ReadOptions, ReadStats, TraceReader, read_all};
use datasets::synth::{repeat_text, repeat_trace};
use datasets::write::Header;
use features::{BuildOptions, build_with, from_events};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/fixtures/datacrumbs/"
);

fn main() -> Result<()> {
    let copies = |default: usize| -> Result<usize> {
        match std::env::var("DC_BENCH_COPIES") {
            Ok(v) => v.parse().context("DC_BENCH_COPIES"),
            Err(_) => Ok(default),
        }
    };
    let (read_copies, write_copies) = (copies(22)?, copies(20)?);
    let tmp = tempfile::tempdir()?;
    let dir = match std::env::var_os("DC_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => tmp.path().to_path_buf(),
    };
    std::fs::create_dir_all(&dir)?;
    let read_trace = PathBuf::from(format!("{FIXTURES}case-read-simple.trace.pfw.gz"));
    let write_trace = PathBuf::from(format!("{FIXTURES}case-write-simple.trace.pfw.gz"));
    let inputs = [
        (
            format!("case-read-simple x {read_copies}, BGZF in datacrumbs' format"),
            dir.join(format!("read-{read_copies}.bgzf.pfw.gz")),
        ),
        (
            format!("case-read-simple x {read_copies}, DataCrumbs' text, one gzip member"),
            dir.join(format!("read-{read_copies}.datacrumbs.pfw.gz")),
        ),
        (
            format!("case-write-simple x {write_copies}, DataCrumbs' text, one gzip member"),
            dir.join(format!("write-{write_copies}.datacrumbs.pfw.gz")),
        ),
    ];
    let source = read_all(std::slice::from_ref(&read_trace), ReadOptions::default())?;
    if !inputs[0].1.exists() {
        repeat_trace(
            &source,
            read_copies,
            &inputs[0].1,
            Header::new("features-bench", env!("CARGO_PKG_VERSION")),
        )?;
    }
    let mut sweep = Duration::MAX;
    let mut rows = 0;
    for _ in 0..5 {
        let start = Instant::now();
        rows = from_events(&source.events, &BuildOptions::default())?.n_rows();
        sweep = sweep.min(start.elapsed());
    }
    println!(
        "features' own work on case-read-simple in memory (names, threads, attribution, columns; best of 5): \
         {:.0} ns/event, {rows} rows",
        sweep.as_nanos() as f64 / source.events.len() as f64,
    );
    drop(source);
    for (trace, n, (_, out)) in [
        (&read_trace, read_copies, &inputs[1]),
        (&write_trace, write_copies, &inputs[2]),
    ] {
        if !out.exists() {
            repeat_text(trace, n, out)?;
        }
    }
    let runs: usize = match std::env::var("DC_BENCH_RUNS") {
        Ok(v) => v.parse().context("DC_BENCH_RUNS")?,
        Err(_) => 3,
    };
    println!(
        "load average before the runs: {}; each figure is the fastest of {runs} runs (DC_BENCH_RUNS), in turn",
        load_average()
    );
    for (label, input) in &inputs {
        let out = tmp.path().join("features.parquet");
        let (mut zcat, mut igzip, mut read, mut build) =
            (Timed::NONE, Timed::NONE, Timed::NONE, Timed::NONE);
        let mut last = None;
        for _ in 0..runs {
            zcat = zcat.best(time_tool("zcat", &[], input)?);
            igzip = igzip.best(time_tool("igzip", &["-d", "-c"], input)?);
            let (r, written) = time_read(input)?;
            read = read.best(r);
            reset_peak_rss();
            let cpu = own_cpu();
            let start = Instant::now();
            let (matrix, stats) = build_with(
                std::slice::from_ref(input),
                &BuildOptions::default(),
                |_| {},
            )?;
            matrix.write(&out, Existing::Replace)?;
            build = build.best(Timed {
                wall: start.elapsed(),
                cpu: own_cpu() - cpu,
            });
            last = Some((matrix, stats, written));
        }
        let (matrix, stats, written) = last.context("DC_BENCH_RUNS is 0")?;
        ensure!(
            stats.events == written.events && written.skipped == 0,
            "the build read {} events, the reader {} ({} skipped)",
            stats.events,
            written.events,
            written.skipped
        );
        println!(
            "{label}: {} events, {:.0} MiB of text, {:.0} MiB on disk (load average {}):",
            written.events,
            mib(written.text_bytes),
            mib(std::fs::metadata(input)?.len()),
            load_average()
        );
        for (what, t) in [("zcat > /dev/null", zcat), ("igzip -d > /dev/null", igzip)] {
            println!(
                "  {what:<22} {:>7.2} s  {:>5.2} s CPU  {:>6.0} MiB/s of text",
                secs(t.wall),
                t.cpu,
                rate(written.text_bytes, t.wall)
            );
        }
        println!(
            "  read events only       {:>7.2} s  {:>5.2} s CPU  {:>6.0} MiB/s of text",
            secs(read.wall),
            read.cpu,
            rate(written.text_bytes, read.wall)
        );
        println!(
            "  build -> Parquet       {:>7.2} s  {:>5.2} s CPU  {:>6.0} MiB/s of text  {:.2} M events/s (target >= 7)  \
             peak RSS {} MiB",
            secs(build.wall),
            build.cpu,
            rate(written.text_bytes, build.wall),
            written.events as f64 / secs(build.wall) / 1e6,
            peak_rss_mib().map_or("?".into(), |m| m.to_string())
        );
        println!(
            "  matrix: {} rows x {} feature columns, {:.1} MiB Parquet",
            matrix.n_rows(),
            matrix.features.len(),
            mib(std::fs::metadata(&out)?.len())
        );
        println!(
            "  ratio build / zcat     {:>7.2}   build / igzip {:.2}   build / read {:.2}",
            secs(build.wall) / secs(zcat.wall),
            secs(build.wall) / secs(igzip.wall),
            secs(build.wall) / secs(read.wall)
        );
    }
    Ok(())
}

/// Wall time, and CPU seconds (user and system) over every thread.
#[derive(Clone, Copy)]
struct Timed {
    wall: Duration,
    cpu: f64,
}

impl Timed {
    const NONE: Timed = Timed {
        wall: Duration::MAX,
        cpu: 0.0,
    };

    /// The faster run by wall time, with its own CPU time.
    fn best(self, other: Timed) -> Timed {
        if other.wall < self.wall { other } else { self }
    }
}

/// A decompressor writing `path`'s text to /dev/null; its CPU time is what the children used meanwhile.
fn time_tool(tool: &str, args: &[&str], path: &Path) -> Result<Timed> {
    let cpu = children_cpu();
    let start = Instant::now();
    let status = Command::new(tool)
        .args(args)
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("running {tool} (scripts/setup.sh --test installs it)"))?;
    ensure!(status.success(), "{tool} failed: {status}");
    Ok(Timed {
        wall: start.elapsed(),
        cpu: children_cpu() - cpu,
    })
}

/// The `datasets` reader alone, events dropped: the floor under the build.
fn time_read(path: &Path) -> Result<(Timed, ReadStats)> {
    let cpu = own_cpu();
    let start = Instant::now();
    let mut reader = TraceReader::open(&[path.to_path_buf()], ReadOptions::default())?;
    while let Some(batch) = reader.next() {
        reader.recycle(batch?.events);
    }
    let t = Timed {
        wall: start.elapsed(),
        cpu: own_cpu() - cpu,
    };
    Ok((t, reader.stats().clone()))
}

/// /proc's clock tick (USER_HZ), fixed by the kernel's ABI.
const USER_HZ: f64 = 100.0;

/// Fields of /proc/self/stat after the command name: (utime, stime, cutime, cstime) in seconds.
fn stat_times() -> [f64; 4] {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|v| v.parse::<f64>().unwrap_or(0.0) / USER_HZ)
        .collect();
    [0, 1, 2, 3].map(|i| f.get(i).copied().unwrap_or(0.0))
}

fn own_cpu() -> f64 {
    let t = stat_times();
    t[0] + t[1]
}

fn children_cpu() -> f64 {
    let t = stat_times();
    t[2] + t[3]
}

/// The 1-minute load average: other work on the machine's cores, beside each figure.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Resets VmHWM so the peak that follows is the build's alone.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn rate(bytes: u64, d: Duration) -> f64 {
    mib(bytes) / secs(d)
}
