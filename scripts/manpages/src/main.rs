//! Writes every dc-* binary's man pages (section 1: one page per binary and one per subcommand, such as
//! `dc-trace-collect.1`) into a directory, from the same clap definitions the binaries parse their flags with.
//! `scripts/package-deb.sh` installs them under /usr/share/man/man1.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;

/// A binary whose command-line type is private to its main.rs: the file, compiled here as a module (see build.rs),
/// and a function beside it that returns its `clap::Command`.
macro_rules! private_cli {
    ($module:ident, $file:literal) => {
        mod $module {
            #![allow(dead_code, unused_imports)]
            include!(concat!(env!("OUT_DIR"), "/", $file));

            pub fn command() -> clap::Command {
                <Cli as clap::CommandFactory>::command()
            }
        }
    };
}

private_cli!(dc_model, "dc-model.rs");
private_cli!(dc_pipeline, "dc-pipeline.rs");
private_cli!(dc_report, "dc-report.rs");

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: manpages DIR (writes every dc-* man page into DIR)");
        return ExitCode::from(2);
    };
    let commands = [
        tracer::cli::Cli::command(),
        features::cli::Cli::command(),
        dc_model::command(),
        dc_pipeline::command(),
        dc_report::command(),
    ];
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("manpages: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for command in commands {
        let name = command.get_name().to_string();
        if let Err(e) = clap_mangen::generate_to(command, &dir) {
            eprintln!("manpages: {name}: {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
