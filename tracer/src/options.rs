//! What a collection traces and how: the public options the CLI and the pipelines build.

use std::path::PathBuf;
use std::time::Duration;

use datasets::output::Existing;
use serde::Serialize;

use crate::layers::Setup;
pub use crate::layers::kernel::KernelProbeMode;
use crate::layers::kernel_map::KernelLayerMap;
use crate::layers::stacks::WaitTable;
pub use crate::layers::uprobe::UprobeSpec;
pub use crate::layers::{Layer, LayerSelection};

/// Trace writes one event per call; profile aggregates in the kernel per interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Trace,
    Profile { interval: Duration },
}

/// What `--mode` and the pipeline's `mode` name: a [`Mode`] without profile mode's interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeKind {
    Trace,
    Profile,
}

impl Mode {
    /// `kind`, aggregating per `interval` in profile mode.
    pub fn new(kind: ModeKind, interval: Duration) -> Mode {
        match kind {
            ModeKind::Trace => Mode::Trace,
            ModeKind::Profile => Mode::Profile { interval },
        }
    }
}

/// Everything `collect` needs.
#[derive(Clone, Debug)]
pub struct CollectOptions {
    /// The trace file; `.gz` makes it gzip (BGZF).
    pub output: PathBuf,
    /// A command to run and trace with its descendants; empty when tracing `pids`, `cgroup` or `all`.
    pub command: Vec<String>,
    pub pids: Vec<u32>,
    pub cgroup: Option<PathBuf>,
    pub all: bool,
    pub mode: Mode,
    pub duration: Option<Duration>,
    pub layers: LayerSelection,
    pub uprobes: Vec<UprobeSpec>,
    pub kernel_probes: KernelProbeMode,
    /// Kernel functions by name or regex; empty means the default list.
    pub kernel_functions: Vec<String>,
    /// A TOML map from kernel function patterns to layers, instead of the shipped one.
    pub kernel_layers: Option<PathBuf>,
    /// A probe set (`probes --discover`'s TOML): the kernel functions, by layer.
    pub kernel_probe_set: Option<PathBuf>,
    /// Whether any unusable entry of the probe set fails the run.
    pub strict: bool,
    /// Whether a `--uprobe` target that cannot be read or has no matching function is reported
    /// refused instead of failing the run.
    pub skip_missing_uprobes: bool,
    /// Whether the sched layer takes the kernel stack of each wait (trace mode only).
    pub offcpu_stacks: bool,
    /// A TOML table of wait functions and their layers, instead of the shipped one.
    pub wait_table: Option<PathBuf>,
    /// On-CPU kernel stacks sampled a second of CPU time (trace mode only); 0 is off.
    pub sample_hz: u32,
    /// Bytes of records held in memory while the writer is behind; past them the backlog waits
    /// on disk, next to the output.
    pub queue_memory: usize,
    /// Whether an existing output file is replaced.
    pub existing: Existing,
    /// The longest the writer keeps formatted events before it writes them to the file as whole
    /// BGZF members: what a SIGKILL of dc-trace loses at most.
    pub flush_interval: Duration,
}

/// The default of [`CollectOptions::queue_memory`].
pub const QUEUE_MEMORY: usize = 64 << 20;
/// The default of [`CollectOptions::sample_hz`], chosen by measurement (README, "Where a call's CPU
/// time went").
pub const SAMPLE_HZ: u32 = 999;
/// The default of [`CollectOptions::flush_interval`].
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);

impl CollectOptions {
    /// What each layer's attach reads of these options; `configured` is what its configure returned.
    pub fn setup<'a>(&'a self, configured: &'a anyhow::Result<()>) -> Setup<'a> {
        Setup {
            layers: &self.layers,
            uprobes: &self.uprobes,
            kernel_probes: self.kernel_probes,
            kernel_functions: &self.kernel_functions,
            configured,
            offcpu_stacks: self.offcpu_stacks && self.mode == Mode::Trace,
            wait_table: self.wait_table.as_deref(),
            sample_hz: if self.mode == Mode::Trace {
                self.sample_hz
            } else {
                0
            },
        }
    }

    /// The kernel layer map of the run: the user's or the shipped one, with the probe set's layers.
    pub fn kernel_layer_map(&self) -> anyhow::Result<KernelLayerMap> {
        KernelLayerMap::for_run(
            self.kernel_layers.as_deref(),
            self.kernel_probe_set.as_deref(),
            self.strict,
        )
    }

    /// Tracing `command` with every layer, in trace mode.
    pub fn command(output: impl Into<PathBuf>, command: Vec<String>) -> CollectOptions {
        CollectOptions {
            output: output.into(),
            command,
            pids: Vec::new(),
            cgroup: None,
            all: false,
            mode: Mode::Trace,
            duration: None,
            layers: LayerSelection::all(),
            uprobes: Vec::new(),
            kernel_probes: KernelProbeMode::Auto,
            kernel_functions: Vec::new(),
            kernel_layers: None,
            kernel_probe_set: None,
            strict: false,
            skip_missing_uprobes: false,
            offcpu_stacks: true,
            wait_table: None,
            sample_hz: SAMPLE_HZ,
            queue_memory: QUEUE_MEMORY,
            existing: Existing::Refuse,
            flush_interval: FLUSH_INTERVAL,
        }
    }

    /// Checks that exactly one scope is given, and the user's wait table.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(path) = self.wait_table.as_deref() {
            WaitTable::for_run(Some(path)).map_err(|e| format!("{e:#}"))?;
        }
        let scopes = [
            !self.command.is_empty(),
            !self.pids.is_empty(),
            self.cgroup.is_some(),
            self.all,
        ];
        match scopes.iter().filter(|&&s| s).count() {
            1 => Ok(()),
            0 => Err(
                "nothing to trace: give a COMMAND after --, or --pid, --cgroup or --all".to_owned(),
            ),
            _ => Err("give only one of COMMAND, --pid, --cgroup and --all".to_owned()),
        }
    }
}

/// `10ms`, `2s`, `1.5s`, `500us`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("duration `{s}`: `{num}` is not a number"))?;
    let secs = match unit {
        "ns" => v / 1e9,
        "us" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "" => v,
        "m" => v * 60.0,
        _ => {
            return Err(format!(
                "duration `{s}`: unknown unit `{unit}` (ns, us, ms, s, m)"
            ));
        }
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("duration `{s}` must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_layers_durations_and_uprobe_targets() {
        let l = LayerSelection::parse("sys,block").unwrap();
        assert_eq!(l, LayerSelection::only(&[Layer::Sys, Layer::Block]));
        assert_eq!(LayerSelection::parse("all").unwrap(), LayerSelection::all());
        assert_eq!(
            LayerSelection::parse("sys,disk").unwrap_err(),
            "unknown layer `disk` (layers: sys, libc, app, block, page_cache, fs, writeback, sched, irq, lock, mm, iomap, jbd2, kernel, oncpu)"
        );
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            parse_duration("2x").unwrap_err(),
            "duration `2x`: unknown unit `x` (ns, us, ms, s, m)"
        );
        let t = UprobeSpec::parse("/usr/lib/libhdf5.so:^H5.*").unwrap();
        assert_eq!(t.binary, PathBuf::from("/usr/lib/libhdf5.so"));
        assert!(t.pattern.is_match("H5Fopen"));
        assert_eq!(
            UprobeSpec::parse("nocolon").unwrap_err(),
            "--uprobe `nocolon`: expected PATH:REGEX"
        );
    }

    #[test]
    fn exactly_one_scope() {
        let mut o = CollectOptions::command("t.pfw", vec!["true".into()]);
        assert!(o.validate().is_ok());
        o.all = true;
        assert_eq!(
            o.validate().unwrap_err(),
            "give only one of COMMAND, --pid, --cgroup and --all"
        );
        o.command.clear();
        o.all = false;
        assert!(o.validate().unwrap_err().starts_with("nothing to trace"));
    }
}
