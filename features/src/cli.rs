//! The `dc-features` command line, and the hints it adds to the library's errors. Behind the `cli` feature.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};
use datasets::cli::{OutputArgs, ReadArgs};
use datasets::read::ReadStats;
use datasets::vocab::{layer, op};
use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};
use regex::Regex;

use crate::Error;
use crate::build::build_tables;
use crate::nocall::{self, Tables};
use crate::options::{BuildOptions, Mode};

#[derive(Parser, Debug)]
#[command(
    name = "dc-features",
    version,
    about = "Per-call time matrix (inclusive, exclusive and context columns) from datacrumbs, DataCrumbs and DFTracer traces"
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
Rows: one per call of a row layer: an event (ph X or i) whose cat is the layer given by --rows LAYER[:OPS] and whose
operation is in OPS (every operation of the layer when OPS is not given; --ops gives OPS too). Without --rows the
row layers are `sys` (datacrumbs and DataCrumbs traces) and `POSIX` (DFTracer traces), and OPS are read, write,
pread64, pwrite64, readv, writev, openat, pread, pwrite, open, open64. Any layer can give rows: `--rows STDIO`, or a
DFTracer application layer such as `--rows reader`. The operation is the event name without a trailing ` [module]`
tag and without one kernel handler prefix (`__x64_sys_`, `__ia32_sys_`, `__arm64_sys_`, `__se_sys_`, `__do_sys_`,
`ksys_`, `sys_`), so `read`, `read [kernel]`, `__x64_sys_read` and `ksys_read` all count as `read`.

Inside a row (exact mode, default): the events on the row's pid and tid whose closed interval [ts, ts+dur] lies
inside the row's closed interval, the row itself excluded.

Features:
  {cat}::{name}          nanoseconds: the summed durations of the events of that name inside the row; only for
                         names whose time is nonzero in some row.
  count::{cat}::{name}   the number of events of that name inside the row; for names whose time is zero in every
                         row (point events, dur 0: a page added to the cache is a count, not 0 ns), and for every
                         name with --counts.
  excl::{layer}          nanoseconds of the row that layer, and no other, accounts for. At each instant, the events
                         inside the row that are active (ts <= t < ts+dur), take time and belong to another layer
                         than the row's are looked at; the innermost ones (holding no other active interval) win,
                         and when they are of several layers (intervals that overlap without nesting, or equal
                         intervals) the layer order decides, first wins:
                           {layer_order}
                         Deeper in the stack comes first: an interrupt takes the CPU from whatever runs; the block
                         device is why a thread sleeps in D while its request is served, so block time overlapping an
                         off-CPU interval is block time; sched (off-CPU) says the thread was not running, the other
                         layers say why.
  {layer}::oncpu@{fn}    nanoseconds estimated from dc-trace's on-CPU samples (--sample-hz): the samples inside the
                         row whose kernel stack holds that function, times the sample period; its count:: column
                         is the number of samples behind it. Each sample's period also moves from self_ns to
                         excl::{layer} of its innermost frame of a mapped layer (never more than self_ns), and
                         count::{layer}::oncpu counts those samples.
  {layer}::offcpu@{fn}   nanoseconds the row waited off the CPU with that function on its kernel stack (dc-trace's
                         sched layer with stacks): exact, inclusive, each function once per wait. The wait itself is
                         filed as {wait_layer}::offcpu_{state}@{wait_fn} and its excl:: time; these columns take no
                         part in excl::.
  self_ns                (a base column) the row's time no layer accounts for, its own work:
                         self_ns + the sum of every excl:: column == dur, exactly, on every row.
Only names and layers that fall inside at least one row get columns. A STDIO row holding POSIX calls gets
POSIX::{name}, count::POSIX::{name} and excl::POSIX: its containment features.

No-call table (exact mode; --no-call false turns it off): NAME.no-call.EXT beside the output, one row per thread
(pid, tid, thread, process, run) with op `(no call)`, holding the events of the kernel layers (the layer order above
but sys, libc and the application; sched included) that lie inside no row: a page fault of an mmap'd read, a wait
between calls. With the default --ops, that includes the events inside calls that are not rows (close, mmap, fsync).
Its columns are a row's: {cat}::{name} time, count::{cat}::{name} for every name (their sum is the bucket's event
count), excl::{layer} by the rule above over the bucket's events; ts is its first event's start, dur the sum of its
excl:: columns, self_ns 0, no file, size or bandwidth. Each event of those layers is in a row or in its thread's
bucket; the summary says how many are in buckets. The models read the matrix only.

Notebook mode (--mode notebook) reproduces the seed notebook's rule for comparison, not as correct attribution:
every event on any thread whose closed interval overlaps the row's (the row itself excluded); no excl:: columns
(self_ns = dur).

Base columns: op, pid, tid, ts (ns), dur (ns), file (args.fname, or fhash resolved through the FH metadata of the
row's own file and pid, as DFTracer's small FH values name different files in different processes), size (bytes:
args.size, or args.size_sum in DataCrumbs traces, or for read/write-like calls a non-negative args.ret, as DFTracer
writes it), bandwidth (MiB/s = size / 2^20 / dur in seconds; null without a size or with dur 0), direct (the
O_DIRECT bit, 0o40000, of args.flags of the latest open/openat/open64 of the same file on the same pid that started
no later than the row; null without one), sequential (args.offset equals the previous row's offset + size on the
same file and pid; null when either offset is unknown), run (--run), thread and process (the names thread_name and
process_name metadata of the row's own file and pid gave them last at or before the row's ts, else their first
name; null without one), self_ns. op, size, direct and sequential are
the context columns (listed as `context` in the layer metadata). Rows are sorted by ts, pid, tid. Several input
files are one dataset. An event with an id that repeats an earlier event of its file in every field (a process
that wrote its buffer twice) is dropped, and the summary says how many. --rows and --ops that no event of the input
has are refused, with what the input has.

Memory and threads (exact mode): files are read in parallel, and each (pid, tid) is attributed while it is read, the
threads spread over all cores; the output does not depend on the number of cores. A thread holds its rows, the
events since its latest call of a row layer ended (a thread is in one such call at a time, so an event that starts
before then cannot lie inside a later call), and the intervals inside its latest rows until a later call starts.
Input where a row starts before events already let go, or an interval arrives inside a row already settled
(calls that overlap on one thread, shuffled lines, one pid and tid in two files at overlapping times) is read again
with every event in memory, and the result is the same. Notebook mode keeps every event.

Output by extension: .parquet (layer metadata in the key-value metadata `datacrumbs.features`), .csv or .jsonl
(layer metadata in a `<file>.meta.json` sidecar).

Examples:
  dc-features build trace.pfw.gz --ops read,write,openat --counts -o features.parquet
  dc-features build dftracer/*.pfw.gz --rows POSIX:read,write --run cm1 -o posix.parquet";

/// The `build` help, with the layer order written out.
fn build_help() -> String {
    let order: Vec<String> = layer::exclusive_tiers()
        .iter()
        .map(|names| names.join("|"))
        .collect();
    let order = format!(
        "{} > (layers not listed, by name) > {}",
        order.join(" > "),
        layer::last_layer()
    );
    BUILD_HELP.replace("{layer_order}", &order)
}

/// Build the feature matrix of one or more traces.
#[derive(clap::Args, Debug)]
#[command(after_long_help = build_help())]
pub struct BuildArgs {
    /// Output matrix: .parquet, .csv or .jsonl.
    #[arg(short, long, default_value = "features.parquet")]
    pub output: PathBuf,
    /// The layer whose calls become rows, and which of its operations (default: sys and POSIX).
    #[arg(long, value_name = "LAYER[:OPS]")]
    pub rows: Option<String>,
    /// Operations that become rows (default: the data and open calls, see below).
    #[arg(long, value_delimiter = ',')]
    pub ops: Option<Vec<String>>,
    /// Keep only rows whose resolved file name matches this regular expression.
    #[arg(long = "file", value_name = "REGEX")]
    pub file_regex: Option<Regex>,
    /// Add a count column for every name (names that never take time always get one).
    #[arg(long)]
    pub counts: bool,
    /// Attribution rule.
    #[arg(long, value_enum, default_value_t = Mode::Exact)]
    pub mode: Mode,
    /// The `run` column: `LABEL` for every input, or `FILE=LABEL` for one input file (repeatable).
    #[arg(long = "run", value_name = "[FILE=]LABEL")]
    pub runs: Vec<String>,
    /// Write the no-call table beside the output (NAME.no-call.EXT): per thread, the events no row holds.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub no_call: bool,
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

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Build(args) => run_build(args),
        Command::Convert(args) => run_convert(args),
    }
}

fn run_build(args: BuildArgs) -> Result<()> {
    let paths = args.read.paths()?;
    let (row_layers, ops) = rows(args.rows.as_deref(), args.ops)?;
    datasets::output::check_target(&args.output, args.write.existing())?;
    let opts = BuildOptions {
        ops,
        file_regex: args.file_regex,
        counts: args.counts,
        mode: args.mode,
        read: args.read.options(),
        row_layers,
        runs: run_labels(&args.runs, &paths)?,
        no_call: args.no_call,
    };
    let no_call_path = nocall::path(&args.output);
    let write_no_call = opts.writes_no_call();
    if write_no_call {
        datasets::output::check_target(&no_call_path, args.write.existing())?;
    }
    let bar = progress("reading");
    let (Tables { matrix, no_call }, stats) = build_tables(&paths, &opts, |s| {
        bar.set_message(format!(
            "reading: {} events, {} MiB of text",
            s.events,
            s.text_bytes >> 20
        ));
    })?;
    bar.set_message(format!("writing {}", args.output.display()));
    matrix.write(&args.output, args.write.existing())?;
    if write_no_call {
        no_call.write(&no_call_path, args.write.existing())?;
    }
    drop(bar);
    report_skipped(&stats);
    eprintln!(
        "dc-features: {} events from {} file(s){} -> {} rows x {} feature columns in {}",
        stats.events,
        paths.len(),
        duplicates(&stats),
        matrix.n_rows(),
        matrix.features.len(),
        args.output.display()
    );
    if write_no_call {
        eprintln!(
            "dc-features: {} event(s) outside every row, in {} no-call row(s) (one per thread) -> {}",
            nocall::events(&no_call),
            no_call.n_rows(),
            no_call_path.display()
        );
    }
    Ok(())
}

/// What the summary says of exact duplicate events, which the reader dropped.
fn duplicates(stats: &ReadStats) -> String {
    match stats.duplicates {
        0 => String::new(),
        n => format!(" ({n} exact duplicate event(s) dropped)"),
    }
}

/// The row layers and operations of `--rows LAYER[:OPS]` and `--ops`.
fn rows(rows: Option<&str>, ops: Option<Vec<String>>) -> Result<(Vec<String>, Vec<String>)> {
    let list = |s: &str| -> Vec<String> { s.split(',').map(str::to_owned).collect() };
    let Some(spec) = rows else {
        let ops = ops.unwrap_or_else(|| op::default_rows().map(str::to_owned).collect());
        return Ok((layer::SYSCALL_LAYERS.map(str::to_owned).to_vec(), ops));
    };
    let (layer, row_ops) = match spec.split_once(':') {
        Some((layer, o)) => (layer, Some(list(o))),
        None => (spec, None),
    };
    if layer.is_empty() {
        bail!("--rows {spec}: the layer is empty");
    }
    let ops = match (row_ops, ops) {
        (Some(_), Some(_)) => {
            bail!("--rows {spec} gives the operations, and so does --ops: give one")
        }
        (Some(o), None) | (None, Some(o)) => o,
        (None, None) => Vec::new(),
    };
    if ops.iter().any(String::is_empty) {
        bail!("--rows {spec}: an operation is empty");
    }
    Ok((vec![layer.to_owned()], ops))
}

/// `--run` values as a label per input file: `FILE=LABEL` when FILE is an input, else the whole value (labels such
/// as `bs=4k` have `=` in them) for every input. A FILE that exists but is not an input is an error.
fn run_labels(values: &[String], paths: &[PathBuf]) -> Result<HashMap<PathBuf, String>> {
    let mut runs = HashMap::new();
    for v in values {
        let one = v.split_once('=').and_then(|(file, label)| {
            let file = Path::new(file);
            Some((paths.iter().find(|p| p.as_path() == file), file, label))
                .filter(|_| file.exists())
        });
        let (files, label): (Vec<&PathBuf>, &str) = match one {
            Some((Some(p), _, label)) => (vec![p], label),
            Some((None, file, _)) => {
                bail!(
                    "--run {v}: {} is not one of the input files",
                    file.display()
                )
            }
            None => (paths.iter().collect(), v),
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
    let bar = progress(&format!("converting to {}", args.output.display()));
    let stats = datasets::parquet::write_events(
        &paths,
        args.read.options(),
        &args.output,
        args.write.existing(),
    )?;
    drop(bar);
    report_skipped(&stats.read);
    eprintln!(
        "dc-features: {} events from {} file(s){} -> {}",
        stats.rows,
        paths.len(),
        duplicates(&stats.read),
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

/// A spinner on stderr from the start, whatever the input's size, so that no step runs in silence; indicatif draws
/// nothing when stderr is not a terminal.
fn progress(msg: &str) -> ProgressBar {
    // Cleared when dropped, so that an error is printed on a clean line.
    let bar = ProgressBar::new_spinner().with_finish(ProgressFinish::AndClear);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("static template"),
    );
    bar.set_message(msg.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// What the binary adds to an error's message: the flag that gets past it, or `""`.
pub fn hint(e: &anyhow::Error) -> String {
    let features = e.chain().find_map(|c| c.downcast_ref::<Error>());
    if let Some(Error::Periods { .. }) = features {
        return "; build traces taken at one --sample-hz together".to_owned();
    }
    let remedy = features
        .and_then(Error::remedy)
        .or_else(|| datasets::cli::remedy_in(e.as_ref()));
    datasets::cli::hint_suffix(remedy)
}
