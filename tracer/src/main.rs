use std::process::ExitCode;

use clap::Parser;
use tracer::cli::Cli;

fn main() -> ExitCode {
    env_logger::init();
    tracer::cli::run(Cli::parse())
}
