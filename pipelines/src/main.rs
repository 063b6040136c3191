//! dc-pipeline: workload, trace, features, ranking and report in one command.
use clap::{Parser, Subcommand};
use pipelines::iobench::{self, IoBenchOptions};

#[derive(Parser)]
#[command(name = "dc-pipeline", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The built-in I/O benchmark (the workload a pipeline traces).
    Iobench(IoBenchOptions),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Iobench(o) => iobench::run_and_write(&o).map(|_| ()),
    }
}
