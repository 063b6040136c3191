//! dc-pipeline: workload, trace, features, ranking and report in one command.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pipelines::l41::{self, IoBenchArgs};
use pipelines::run::{self, RunOptions};

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
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Iobench(a) => match l41::run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dc-pipeline iobench: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Report { dir } => match pipelines::report::redraw(&dir) {
            Ok(report) => {
                println!("{}", report.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("dc-pipeline report: {e:#}");
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
                Ok(report) => {
                    println!("{}", report.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("dc-pipeline: {e}");
                    if e.resumable() {
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
