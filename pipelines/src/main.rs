//! dc-pipeline: workload, trace, features, ranking and report in one command.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use datasets::error::chain;
use pipelines::bench::l41::{self, IoBenchArgs};
use pipelines::pipeline::error::Error as PipelineError;
use pipelines::pipeline::run::{self, RunOptions};

#[derive(Parser)]
#[command(
    name = "dc-pipeline",
    version,
    about = "A workload traced, turned into features, ranked per layer and reported, in one command"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline file: trace every workload, build the features, rank every layer, write the report.
    Run {
        /// The pipeline file (see pipelines/examples/).
        pipeline: PathBuf,
        /// The report directory; a run without --resume replaces the pipeline's outputs in it.
        #[arg(long, default_value = "out/pipeline")]
        out: PathBuf,
        /// Keep the finished runs, features and ranking in --out and continue from them.
        #[arg(long)]
        resume: bool,
        /// No progress bars.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Draw the charts, report.md and report.html of a report directory again from its data files.
    Report {
        /// A report directory written by `dc-pipeline run`.
        dir: PathBuf,
    },
    /// The built-in I/O benchmark (the workload a pipeline traces), with the L41 io-benchmark's
    /// flags: `iobench -c FILE`, then `iobench -r -b 64KiB -n 4 -g -j -v FILE`.
    Iobench(IoBenchArgs),
    /// What tracing costs each real application of a pipeline by its own figures (`metrics`): untraced, traced
    /// and under the application's own tracer (`app_tracer`) in turn, each on a fresh setup; prints the table.
    Overhead {
        pipeline: PathBuf,
        /// Where each attempt's output and trace, and the table, go.
        #[arg(long, default_value = "out/overhead")]
        out: PathBuf,
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// Also trace with the sys layer alone and with it plus each other layer of the pipeline, one at a time.
        #[arg(long)]
        per_layer: bool,
    },
    /// What a pipeline traces for a real application: joins its cgroup, starts its service, then runs its
    /// command (SPEC is the JSON `dc-pipeline run` writes).
    #[command(hide = true)]
    Serve { spec: String },
    /// Run a scenario file (pipelines/scenarios/): its workload plain and with one bottleneck injected, both
    /// traced and compared; says whether the diagnosis named the injected cause (exit 1 if not).
    Scenario {
        scenario: PathBuf,
        /// The report directory.
        #[arg(long, default_value = "out/scenario")]
        out: PathBuf,
        #[arg(long, short)]
        quiet: bool,
        /// How many times each run's workload runs again untraced; the change untraced is between their medians.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        untraced_runs: u32,
    },
    /// The scenario's guardian: waits for its parent's pipe on stdin to close, then undoes the journal.
    #[command(hide = true)]
    Restore { journal: PathBuf },
}

/// The lines `run` and `report` print, the path of report.md included.
const MAX_LINES: usize = 25;

/// Prints report.md's path, then the verdict and top findings it opens with (in colour on a terminal).
fn print_report(report: &Path) -> ExitCode {
    let mut out = anstream::stdout().lock();
    let _ = writeln!(out, "{}", report.display());
    let dir = report.parent().unwrap_or(Path::new("."));
    match pipelines::pipeline::report::answer(dir) {
        Ok(answer) => {
            let text = report::answer::terminal::render(
                &answer,
                &report::answer::terminal::Options {
                    max_lines: Some(MAX_LINES - 1),
                    more_hint: format!("{} lists every one.", report.display()),
                },
            );
            let _ = write!(out, "{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dc-pipeline: {}", chain(&e));
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Overhead {
            pipeline,
            out,
            rounds,
            per_layer,
        } => {
            let run = || -> anyhow::Result<String> {
                let opts = pipelines::overhead::OverheadOptions {
                    pipeline,
                    out,
                    rounds,
                    per_layer,
                    exe: std::env::current_exe()?,
                };
                Ok(pipelines::overhead::overhead(&opts)?)
            };
            match run() {
                Ok(table) => {
                    print!("{table}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("dc-pipeline overhead: {}", chain(&*e));
                    ExitCode::FAILURE
                }
            }
        }
        Command::Serve { spec } => match pipelines::apps::serve::serve(&spec) {
            Ok(never) => match never {},
            Err(e) => {
                eprintln!("dc-pipeline serve: {}", chain(&e));
                ExitCode::FAILURE
            }
        },
        Command::Scenario {
            scenario,
            out,
            quiet,
            untraced_runs,
        } => pipelines::scenario::main(scenario, out, !quiet, untraced_runs as usize),
        Command::Restore { journal } => match pipelines::scenario::restore::guard(&journal) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dc-pipeline restore: {}", chain(&e));
                ExitCode::FAILURE
            }
        },
        Command::Iobench(a) => match l41::run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dc-pipeline iobench: {}", chain(&e));
                ExitCode::FAILURE
            }
        },
        Command::Report { dir } => match pipelines::pipeline::report::redraw(&dir) {
            Ok(report) => print_report(&report),
            Err(e) => {
                eprintln!("dc-pipeline report: {}", chain(&e));
                ExitCode::FAILURE
            }
        },
        Command::Run {
            pipeline,
            out,
            resume,
            quiet,
        } => {
            let exe = match std::env::current_exe() {
                Ok(exe) => exe,
                Err(e) => {
                    eprintln!("dc-pipeline: cannot find its own executable: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let opts = RunOptions {
                pipeline,
                out: out.clone(),
                resume,
                exe,
                progress: !quiet,
            };
            match run::run(&opts) {
                Ok(report) => print_report(&report),
                Err(e) => {
                    eprintln!("dc-pipeline: {}", chain(&e));
                    if matches!(*e.cause, PipelineError::Changed { .. }) {
                        eprintln!("dc-pipeline: run without --resume to start over");
                    } else if e.resumable() {
                        eprintln!(
                            "dc-pipeline: the outputs of the earlier steps are in {}; add --resume to continue from them",
                            out.display()
                        );
                    }
                    ExitCode::FAILURE
                }
            }
        }
    }
}
