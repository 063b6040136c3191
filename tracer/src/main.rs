use std::process::ExitCode;

use clap::Parser;
use tracer::cli::{Cli, Command};

fn main() -> ExitCode {
    env_logger::init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dc-trace: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Collect(args) => {
            let summary = tracer::collect(&args.options())?;
            eprint!("{summary}");
            if let Some(path) = &args.summary_json {
                std::fs::write(path, serde_json::to_string_pretty(&summary)?)?;
            }
            Ok(ExitCode::from(
                summary.exit_status.unwrap_or(0).clamp(0, 255) as u8,
            ))
        }
        Command::Probes(args) => {
            print!("{}", tracer::probes::list(&args.selection, args.verbose)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
