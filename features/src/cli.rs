//! The `dc-features` command line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use datasets::cli::{OutputArgs, ReadArgs};
use datasets::read::ReadStats;
use indicatif::{ProgressBar, ProgressStyle};
use regex::Regex;

use crate::build::{BuildOptions, Mode, build_with};
use crate::syscall::{DEFAULT_OPS, DEFAULT_SYSCALL_CATS};

/// Inputs at least this large (on disk) get a progress line on stderr.
const PROGRESS_BYTES: u64 = 32 << 20;

#[derive(Parser, Debug)]
#[command(
    name = "dc-features",
    version,
    about = "Per-syscall kernel-time feature matrix from datacrumbs traces"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Build(BuildArgs),
    Convert(ConvertArgs),
}

const BUILD_HELP: &str = "\
Rows: one per system call event: an event (ph X or i) whose cat is a syscall layer (--syscall-cat, default `sys`)
and whose operation is in --ops. The operation is the event name without a trailing ` [module]` tag and without one
kernel handler prefix (`__x64_sys_`, `__ia32_sys_`, `__arm64_sys_`, `__se_sys_`, `__do_sys_`, `ksys_`, `sys_`), so
`read`, `read [kernel]`, `__x64_sys_read` and `ksys_read` all count as `read`.

Features: one column `{cat}::{name}` per event name and layer, in nanoseconds. Exact mode (default): the sum of the
durations of the events on the row's pid and tid whose closed interval [ts, ts+dur] lies inside the row's closed
interval (the row itself excluded). --counts adds `count::{cat}::{name}`, the number of such events, so point events
(dur 0) count too. Only names that fall inside at least one row get columns.

Notebook mode (--mode notebook) reproduces the seed notebook's rule for comparison, not as correct attribution:
every event on any thread whose closed interval overlaps the row's (the row itself excluded).

Base columns: op, pid, tid, ts (ns), dur (ns), file (fhash resolved through FH metadata, or args.fname), size (bytes:
args.size, or args.size_sum in DataCrumbs traces), bandwidth (MiB/s = size / 2^20 / dur in seconds; null without a
size or with dur 0), direct (the O_DIRECT bit, 0o40000, of args.flags of the latest open/openat/open64 of the same
file on the same pid that started no later than the row; null without one), sequential (args.offset equals the
previous row's offset + size on the same file and pid; null when either offset is unknown), run (--run), self_ns.
op, size, direct and sequential are the context columns (listed as `context` in the layer metadata). Rows are sorted
by ts, pid, tid. Several input files are one dataset.

Memory and threads (exact mode): files are read in parallel, and each (pid, tid) is attributed while it is read, the
threads spread over all cores; the output does not depend on the number of cores. A thread holds its rows and the
events since its latest system call ended (a thread is in one system call at a time, so an event that starts before
then cannot lie inside a later call). Input where a row starts before events already let go (system calls that overlap on one thread, shuffled
lines, one pid and tid in two files at overlapping times) is read again with every event in memory, and the result is
the same. Notebook mode keeps every event.

Output by extension: .parquet (layer metadata in the key-value metadata `datacrumbs.features`), .csv or .jsonl
(layer metadata in a `<file>.meta.json` sidecar).

Example: dc-features build trace.pfw.gz --ops read,write,openat --counts -o features.parquet";

/// Build the feature matrix of one or more traces.
#[derive(clap::Args, Debug)]
#[command(after_long_help = BUILD_HELP)]
pub struct BuildArgs {
    /// Output matrix: .parquet, .csv or .jsonl.
    #[arg(short, long, default_value = "features.parquet")]
    pub output: PathBuf,
    /// System calls that become rows.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_OPS.map(String::from))]
    pub ops: Vec<String>,
    /// Keep only rows whose resolved file name matches this regular expression.
    #[arg(long = "file", value_name = "REGEX")]
    pub file_regex: Option<Regex>,
    /// Add a count column per feature.
    #[arg(long)]
    pub counts: bool,
    /// Attribution rule.
    #[arg(long, value_enum, default_value_t = ModeArg::Exact)]
    pub mode: ModeArg,
    /// Layers (cat) whose events are system calls.
    #[arg(long = "syscall-cat", value_delimiter = ',', default_values_t = DEFAULT_SYSCALL_CATS.map(String::from))]
    pub syscall_cats: Vec<String>,
    /// The `run` column: `LABEL` for every input, or `FILE=LABEL` for one input (repeatable).
    #[arg(long = "run", value_name = "[FILE=]LABEL")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub write: OutputArgs,
}

/// Convert traces to one Parquet file of events (the `datasets` event schema).
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// Output Parquet file.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub write: OutputArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Same pid and tid, interval inside the row's.
    Exact,
    /// The seed notebook's rule: any overlap in time, any thread.
    Notebook,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Exact => Mode::Exact,
            ModeArg::Notebook => Mode::Notebook,
        }
    }
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Build(args) => run_build(args),
        Command::Convert(args) => run_convert(args),
    }
}

fn run_build(args: BuildArgs) -> Result<()> {
    let paths = args.read.paths()?;
    datasets::output::check_target(&args.output, args.write.existing())?;
    let opts = BuildOptions {
        ops: args.ops,
        file_regex: args.file_regex,
        counts: args.counts,
        mode: args.mode.into(),
        read: args.read.options(),
        syscall_cats: args.syscall_cats,
        runs: run_labels(&args.runs, &paths)?,
    };
    let bar = progress(&paths);
    let (matrix, stats) = build_with(&paths, &opts, |s| {
        if let Some(bar) = &bar {
            bar.set_message(format!(
                "{} events, {} MiB of text",
                s.events,
                s.text_bytes >> 20
            ));
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    report_skipped(&stats);
    matrix.write(&args.output, args.write.existing())?;
    eprintln!(
        "dc-features: {} events from {} file(s) -> {} rows x {} feature columns in {}",
        stats.events,
        paths.len(),
        matrix.n_rows(),
        matrix.features.len(),
        args.output.display()
    );
    Ok(())
}

/// `--run` values as a label per input file.
fn run_labels(values: &[String], paths: &[PathBuf]) -> Result<HashMap<PathBuf, String>> {
    let mut runs = HashMap::new();
    for v in values {
        let (files, label): (Vec<&PathBuf>, &str) = match v.split_once('=') {
            None => (paths.iter().collect(), v),
            Some((file, label)) => {
                let file = Path::new(file);
                let Some(p) = paths.iter().find(|p| p.as_path() == file) else {
                    bail!(
                        "--run {v}: {} is not one of the input files",
                        file.display()
                    );
                };
                (vec![p], label)
            }
        };
        if label.is_empty() {
            bail!("--run {v}: the label is empty");
        }
        for p in files {
            runs.insert(p.clone(), label.to_owned());
        }
    }
    Ok(runs)
}

fn run_convert(args: ConvertArgs) -> Result<()> {
    let paths = args.read.paths()?;
    let stats = datasets::parquet::write_events(
        &paths,
        args.read.options(),
        &args.output,
        args.write.existing(),
    )?;
    report_skipped(&stats.read);
    eprintln!(
        "dc-features: {} events from {} file(s) -> {}",
        stats.rows,
        paths.len(),
        args.output.display()
    );
    Ok(())
}

fn report_skipped(stats: &ReadStats) {
    for d in &stats.damage {
        eprintln!("dc-features: salvaged around damage: {d}");
    }
    if stats.skipped > 0 {
        eprintln!(
            "dc-features: skipped {} invalid line(s), for example:",
            stats.skipped
        );
        for e in &stats.skipped_examples {
            eprintln!("  {e}");
        }
    }
}

fn progress(paths: &[PathBuf]) -> Option<ProgressBar> {
    let bytes: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    (bytes >= PROGRESS_BYTES).then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("static template"),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    })
}
