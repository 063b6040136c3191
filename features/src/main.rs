//! dc-features: the per-call time matrix.
use clap::Parser;

fn main() {
    if let Err(e) = features::cli::run(features::cli::Cli::parse()) {
        eprintln!("dc-features: {e:#}{}", features::cli::hint(&e));
        std::process::exit(1);
    }
}
