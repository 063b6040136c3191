//! The command line of `dc-trace`.

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::error::{Context, Result};
use clap::{Args, Parser, Subcommand};
use datasets::cli::OutputArgs;
use datasets::output::Output;

use crate::error::{Error, Remedy, Target};
use crate::options::{CollectOptions, TracerOptions};
use crate::probes::ProbeOptions;
use crate::signals::{self, Interrupted};

#[derive(Parser, Debug)]
#[command(name = "dc-trace", version, about = "Multi-layer eBPF I/O tracer")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Trace a command (after --), processes, a cgroup or everything, into a trace file.
    Collect(CollectArgs),
    /// List, for this kernel, which layers and probes attach and why the others do not.
    Probes(ProbeArgs),
}

#[derive(Args, Debug)]
pub struct CollectArgs {
    /// The trace file; `.gz` writes gzip.
    #[arg(short, long, default_value = "trace.pfw.gz")]
    pub output: PathBuf,
    /// Trace this process and its new children (repeatable).
    #[arg(long = "pid")]
    pub pids: Vec<u32>,
    /// Trace every process of this cgroup (v2 directory) and of its descendant cgroups.
    #[arg(long)]
    pub cgroup: Option<PathBuf>,
    /// Trace every process but dc-trace.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub tracer: TracerOptions,
    /// Also write the summary as JSON here.
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<PathBuf>,
    #[command(flatten)]
    pub write: OutputArgs,
    /// The command to run and trace, with its descendants.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `probes`: what `collect` with the same options would attach (the options that only shape a
/// run, such as `--duration` or `--queue-mib`, change nothing here).
#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub tracer: TracerOptions,
    /// List every probe, not only the count per layer.
    #[arg(short, long)]
    pub verbose: bool,
    /// Write a probe set of this kernel's functions matching any REGEX (none: those the layer map
    /// files under a layer) to stdout, each attachable one by layer, the rest excluded with why.
    #[arg(long, value_name = "REGEX", num_args = 0..)]
    pub discover: Option<Vec<String>>,
}

impl ProbeArgs {
    pub fn options(&self) -> ProbeOptions {
        ProbeOptions {
            tracer: self.tracer.clone(),
            verbose: self.verbose,
            discover: self.discover.clone(),
        }
    }
}

impl CollectArgs {
    pub fn options(&self) -> CollectOptions {
        CollectOptions {
            pids: self.pids.clone(),
            cgroup: self.cgroup.clone(),
            all: self.all,
            existing: self.write.existing(),
            ..self
                .tracer
                .collect(self.output.clone(), self.command.clone())
        }
    }

    /// Traces, prints the summary and writes it as JSON; returns the command's exit status.
    pub fn run(&self) -> Result<ExitCode> {
        // Before the first file is created, so that no signal leaves an empty one behind.
        signals::install()?;
        // Created now, so that an unwritable path fails before the workload runs; an error or an
        // early signal removes it.
        let json = match &self.summary_json {
            Some(path) => Some(Output::create(path, self.write.existing())?),
            None => None,
        };
        let summary = crate::collect(&self.options())?;
        stderr(format_args!("{summary}"));
        if let Some(mut out) = json {
            let text = serde_json::to_string_pretty(&summary)?;
            out.write_all(text.as_bytes())
                .with_context(|| out.path().display().to_string())?;
            out.commit()?;
        }
        Ok(ExitCode::from(
            summary.exit_status.unwrap_or(0).clamp(0, 255) as u8,
        ))
    }
}

/// Runs `dc-trace`. An error is printed and exits 2; a signal before tracing began exits as the
/// signal would have (128 + its number).
pub fn run(cli: Cli) -> ExitCode {
    let done = match cli.command {
        Command::Collect(args) => args.run(),
        Command::Probes(args) => crate::probes::list(&args.options())
            .and_then(|text| stdout(&text))
            .map(|()| ExitCode::SUCCESS),
    };
    done.unwrap_or_else(|e| {
        stderr(format_args!("dc-trace: {}\n", message(&e)));
        ExitCode::from(e.interrupted().map_or(2, Interrupted::exit_code))
    })
}

/// The error's chain, each thing the user named given as the flag that named it, and the hint of its remedy.
pub fn message(e: &Error) -> String {
    let mut parts = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(link) = next {
        let ours = link
            .downcast_ref::<Error>()
            .or_else(|| link.downcast_ref::<Box<Error>>().map(|b| &**b));
        parts.push(match ours {
            Some(Error::Target { target, .. }) => flag(target),
            _ => link.to_string(),
        });
        next = link.source();
    }
    let hint = match e.remedy() {
        Some(r) => format!("; {}", hint(r)),
        None => datasets::cli::hint_suffix(e.output().and_then(datasets::Error::remedy)),
    };
    parts.join(": ") + &hint
}

/// The flag that names `target` on dc-trace's command line.
fn flag(target: &Target) -> String {
    match target {
        Target::Pid(pid) => format!("--pid {pid}"),
        Target::Cgroup(dir) => format!("--cgroup {}", dir.display()),
        Target::All => "--all".to_owned(),
        Target::Uprobe(t) => format!("--uprobe {t}"),
        Target::Discover(p) => format!("--discover `{p}`"),
    }
}

/// What to give dc-trace to get past an error with this remedy.
fn hint(remedy: Remedy) -> String {
    match remedy {
        Remedy::SkipMissingUprobes => "give --skip-missing-uprobes to trace without it".to_owned(),
        Remedy::TraceProcess(tgid) => format!("give --pid {tgid}"),
        Remedy::TraceOwn => "trace a COMMAND, your --pid or your --cgroup".to_owned(),
        Remedy::OneScope => {
            "give a COMMAND after --, or one of --pid, --cgroup and --all".to_owned()
        }
    }
}

/// A closed or broken stderr loses the text, not the run: the trace and its JSON summary are
/// written all the same.
fn stderr(text: fmt::Arguments) {
    let _ = io::stderr().write_fmt(text);
}

/// A reader that stopped reading (`| head`) is not an error; a full disk is.
fn stdout(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;
    use crate::options::{KernelProbeMode, LayerSelection, Mode};

    #[test]
    fn collect_arguments_become_options() {
        let cli = Cli::try_parse_from([
            "dc-trace",
            "collect",
            "-o",
            "t.pfw",
            "--layers",
            "sys,block",
            "--mode",
            "profile",
            "--interval",
            "5ms",
            "--uprobe",
            "/bin/ls:^main$",
            "--",
            "ls",
            "-l",
        ])
        .unwrap();
        let Command::Collect(args) = cli.command else {
            panic!("not collect")
        };
        let o = args.options();
        assert_eq!(o.command, ["ls", "-l"]);
        assert_eq!(
            o.mode,
            Mode::Profile {
                interval: std::time::Duration::from_millis(5)
            }
        );
        assert_eq!(o.layers, LayerSelection::only(&[Layer::Sys, Layer::Block]));
        assert_eq!(o.uprobes[0].binary, PathBuf::from("/bin/ls"));
        assert_eq!(o.kernel_probes, KernelProbeMode::Auto);
    }

    /// `probes` takes `collect`'s own options, with the same flags and defaults.
    #[test]
    fn probes_arguments_are_collects_options() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            let Command::Probes(args) = cli.command else {
                panic!("not probes")
            };
            args.options()
        };
        let o = parse(&[
            "dc-trace",
            "probes",
            "--layers",
            "sys,kernel",
            "--kernel-probes",
            "off",
            "--probes",
            "set.toml",
            "--strict",
            "--sample-hz",
            "0",
            "-v",
        ]);
        assert_eq!(
            o.tracer.layers,
            LayerSelection::only(&[Layer::Sys, Layer::Kernel])
        );
        assert_eq!(o.tracer.kernel_probes, KernelProbeMode::Off);
        assert_eq!(o.tracer.probes, Some(PathBuf::from("set.toml")));
        assert!(o.tracer.strict && o.verbose && o.discover.is_none());
        assert_eq!(o.tracer.sample_hz, 0);
        let d = parse(&["dc-trace", "probes", "--discover", "^vfs_"]).tracer;
        let want = TracerOptions::default();
        assert_eq!(d.layers, want.layers);
        assert_eq!(d.kernel_probes, want.kernel_probes);
        assert_eq!(d.sample_hz, want.sample_hz);
        assert_eq!(d.offcpu_stacks, want.offcpu_stacks);
    }

    #[test]
    fn bad_values_are_named() {
        let err = Cli::try_parse_from(["dc-trace", "collect", "--layers", "sys,nope", "--all"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown layer `nope`"), "{err}");
    }
}
