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
            if let Some(path) = &args.summary_json {
                datasets::output::check_target(path, args.write.existing())?;
            }
            let summary = tracer::collect(&args.options())?;
            eprint!("{summary}");
            if let Some(path) = &args.summary_json {
                let json = serde_json::to_string_pretty(&summary)?;
                datasets::output::write(path, args.write.existing(), json)?;
            }
            Ok(ExitCode::from(
                summary.exit_status.unwrap_or(0).clamp(0, 255) as u8,
            ))
        }
        Command::Probes(args) => {
            print!("{}", tracer::probes::list(&args)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
