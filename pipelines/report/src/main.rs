//! dc-report: one self-contained HTML page summarizing traces (ours, DataCrumbs, DFTracer), and the verdict and
//! findings on the terminal.
use std::error::Error;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use datasets::Remedy;
use datasets::cli::{OutputArgs, ReadArgs, hint_suffix};
use report::answer::terminal;
use report::trace_report::{self, TraceReportOptions};

/// The lines dc-report prints by default, the page's path included.
const MAX_LINES: usize = 25;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Color {
    /// On a terminal only: plain text on a pipe or into a file.
    Auto,
    /// Even on a pipe (for `less -R`).
    Always,
    /// Plain text.
    Never,
}

impl From<Color> for anstream::ColorChoice {
    fn from(c: Color) -> Self {
        match c {
            Color::Auto => anstream::ColorChoice::Auto,
            Color::Always => anstream::ColorChoice::Always,
            Color::Never => anstream::ColorChoice::Never,
        }
    }
}

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
    /// Also write the diagnosis as JSON: the findings, what can be fixed first and each group by cost, and with --baseline the comparison.
    #[arg(long)]
    json: Option<PathBuf>,
    /// dc-trace's `--summary-json` file of a trace (repeatable), to list the probes that attached.
    #[arg(long)]
    summary: Vec<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Print every finding; by default the summary fits in 25 lines.
    #[arg(long)]
    all: bool,
    /// Colour in the summary: on a terminal only (auto), always, or never.
    #[arg(long, value_enum, default_value = "auto")]
    color: Color,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let traces = match cli.read.paths() {
        Ok(traces) => traces,
        Err(e) => return fail(&e, e.remedy()),
    };
    let result = trace_report::write(&TraceReportOptions {
        traces,
        read: cli.read.options(),
        output: cli.output.clone(),
        existing: cli.write.existing(),
        baseline: cli.baseline.clone(),
        json: cli.json.clone(),
        summaries: cli.summary.clone(),
        progress: !cli.quiet && std::io::stderr().is_terminal(),
    });
    match result {
        Ok(written) => {
            let text = terminal::render(
                &written.answer,
                &terminal::Options {
                    // The page's path takes the first line.
                    max_lines: (!cli.all).then_some(MAX_LINES - 1),
                    more_hint: "dc-report --all lists them, the page and --json hold the evidence."
                        .into(),
                },
            );
            let mut out = anstream::AutoStream::new(std::io::stdout().lock(), cli.color.into());
            // A closed stdout loses the summary, not the page.
            let _ = writeln!(out, "{}", written.page.display()).and_then(|_| write!(out, "{text}"));
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e, e.remedy()),
    }
}

/// Prints `e` and each of its causes, with the flag that gets past it, if one does.
fn fail(e: &(dyn Error + 'static), remedy: Option<Remedy>) -> ExitCode {
    eprintln!(
        "dc-report: {}{}",
        datasets::error::chain(e),
        hint_suffix(remedy)
    );
    ExitCode::FAILURE
}
