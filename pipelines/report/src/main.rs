//! dc-report: one self-contained HTML page summarizing traces (ours, DataCrumbs, DFTracer).
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use datasets::cli::{OutputArgs, ReadArgs};
use report::trace_report::{self, TraceReportOptions};

#[derive(Parser)]
#[command(
    name = "dc-report",
    version,
    about = "One self-contained HTML page summarizing traces (datacrumbs, DataCrumbs, DFTracer), and its per-file table as CSV"
)]
struct Cli {
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    write: OutputArgs,
    /// The page to write; the per-file table goes beside it as `<name>.files.csv`.
    #[arg(short, long, default_value = "report.html")]
    output: PathBuf,
    /// Traces (or one feature matrix, or a dc-pipeline output directory) of a run to compare with: the page and
    /// the JSON then say what changed and which layer carries the added time (repeatable).
    #[arg(long)]
    baseline: Vec<PathBuf>,
    /// Also write the diagnosis as JSON: the findings, sorted by cost, and with --baseline the comparison.
    #[arg(long)]
    json: Option<PathBuf>,
    /// dc-trace's `--summary-json` file of a trace (repeatable), to list the probes that attached.
    #[arg(long)]
    summary: Vec<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = cli
        .read
        .paths()
        .map_err(anyhow::Error::from)
        .and_then(|traces| {
            trace_report::write(&TraceReportOptions {
                traces,
                read: cli.read.options(),
                output: cli.output.clone(),
                existing: cli.write.existing(),
                baseline: cli.baseline.clone(),
                json: cli.json.clone(),
                summaries: cli.summary.clone(),
                progress: !cli.quiet && std::io::stderr().is_terminal(),
            })
        });
    match result {
        Ok(page) => {
            println!("{}", page.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dc-report: {e:#}");
            ExitCode::FAILURE
        }
    }
}
