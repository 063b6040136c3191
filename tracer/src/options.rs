//! What a collection traces and how: the public options the CLI and the pipelines build.

use std::path::PathBuf;
use std::time::Duration;

use datasets::output::Existing;
pub use datasets::vocab::ModeKind;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::layers::Setup;
pub use crate::layers::kernel::KernelProbeMode;
use crate::layers::kernel::map::KernelLayerMap;
use crate::layers::stacks::WaitTable;
pub use crate::layers::uprobe::UprobeTarget;
pub use crate::layers::{Layer, LayerSelection};

/// Trace writes one event per call; profile aggregates in the kernel per interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Trace,
    Profile { interval: Duration },
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
    /// Cgroup directories the command is moved into before it runs, so that the limits recorded at the start are
    /// those it runs under.
    pub start_in: Vec<PathBuf>,
    pub all: bool,
    pub mode: Mode,
    pub duration: Option<Duration>,
    pub layers: LayerSelection,
    pub uprobes: Vec<UprobeTarget>,
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
    /// Whether the end's limits reading records the tracer's own eBPF time (the kernel's BPF statistics, on for
    /// the run: about 70 ns more a program run).
    pub own_cost: bool,
}

/// The default of [`CollectOptions::queue_memory`].
pub const QUEUE_MEMORY: usize = 64 << 20;
/// The default of [`CollectOptions::sample_hz`], chosen by measurement (README, "Where a call's CPU
/// time went").
pub const SAMPLE_HZ: u32 = 999;
/// The default of [`CollectOptions::flush_interval`].
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// The default of profile mode's interval.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// What to trace and how, apart from whom and where to: `dc-trace collect`'s options and the
/// pipeline's `[tracer]` table, one type so that both take the same values with the same defaults.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct TracerOptions {
    /// `trace` writes an event per call; `profile` writes counters per interval.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value = "trace"))]
    pub mode: ModeKind,
    /// Profile mode's interval.
    #[cfg_attr(feature = "cli", arg(long, default_value = "10ms", value_parser = parse_duration))]
    #[serde(deserialize_with = "duration")]
    pub interval: Duration,
    /// Stop after this long (the command, if any, is killed).
    #[cfg_attr(feature = "cli", arg(long, value_parser = parse_duration))]
    #[serde(deserialize_with = "some_duration")]
    pub duration: Option<Duration>,
    /// Layers: `all` or a comma-separated list of sys, libc, app, block, page_cache, fs,
    /// writeback, sched, irq, lock, mm, iomap, jbd2, kernel, oncpu (sampled at --sample-hz).
    #[cfg_attr(feature = "cli", arg(long, default_value = "all", value_parser = LayerSelection::parse))]
    #[serde(deserialize_with = "layers")]
    pub layers: LayerSelection,
    /// An ELF binary or library and a regex over its functions, e.g. `/usr/lib/libhdf5.so:^H5.*`
    /// (repeatable; their events are the `app` layer).
    #[cfg_attr(feature = "cli", arg(long = "uprobe", value_name = "PATH:REGEX", value_parser = UprobeTarget::parse))]
    #[serde(deserialize_with = "uprobes")]
    pub uprobes: Vec<UprobeTarget>,
    /// How kernel functions are probed.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = KernelProbeMode::Auto))]
    pub kernel_probes: KernelProbeMode,
    /// A kernel function name or regex (repeatable); default: VFS, ext4, page cache and bio.
    #[cfg_attr(
        feature = "cli",
        arg(long = "kernel-function", value_name = "NAME|REGEX")
    )]
    pub kernel_functions: Vec<String>,
    /// A TOML map from kernel function patterns to the layers their events are filed under,
    /// instead of the shipped one (`[[layer]]` tables of `name` and `functions`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub kernel_layers: Option<PathBuf>,
    /// A probe set (TOML, as `probes --discover` writes): the kernel functions to trace, by layer.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub probes: Option<PathBuf>,
    /// Fail when any entry of the probe set cannot be used, instead of reporting it.
    #[cfg_attr(feature = "cli", arg(long))]
    pub strict: bool,
    /// Trace without a --uprobe target that cannot be read or has no matching function, reporting
    /// it refused; without this flag such a target fails the run before anything is loaded.
    #[cfg_attr(feature = "cli", arg(long))]
    pub skip_missing_uprobes: bool,
    /// MiB of records held in memory while the writer is behind the ring buffer; past them the
    /// backlog waits on disk next to the output, so no event is dropped for it.
    #[cfg_attr(feature = "cli", arg(long, value_name = "MIB", default_value_t = QUEUE_MEMORY >> 20))]
    pub queue_mib: usize,
    /// Write formatted events to the file at least this often, so that killing dc-trace loses at
    /// most this much (the file is `OUTPUT.PID.partial` until the trace is complete).
    #[cfg_attr(feature = "cli", arg(long, default_value = "1s", value_parser = parse_duration))]
    #[serde(deserialize_with = "duration")]
    pub flush_interval: Duration,
    /// Do not take the kernel stack of each wait (which names the function and layer a thread
    /// waited in); a pipeline's `[tracer]` says `offcpu_stacks = false`.
    #[cfg_attr(feature = "cli", arg(long = "no-offcpu-stacks", action = clap::ArgAction::SetFalse))]
    pub offcpu_stacks: bool,
    /// A TOML table of wait functions and their layers, instead of the shipped one (`skip`, the
    /// scheduler's frames, and `[[wait]]` tables of `layer` and `functions`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub wait_table: Option<PathBuf>,
    /// Sample the kernel stack of each traced thread inside a traced call this many times a
    /// second of CPU time (the oncpu layer); 0 turns sampling off.
    #[cfg_attr(feature = "cli", arg(long, value_name = "HZ", default_value_t = SAMPLE_HZ))]
    pub sample_hz: u32,
    /// Record the tracer's own eBPF time with the trace (the kernel's BPF statistics, on for the run), so that a
    /// report can take it out of what a CPU quota rationed; each program run costs about 70 ns more.
    #[cfg_attr(feature = "cli", arg(long))]
    pub own_cost: bool,
}

impl Default for TracerOptions {
    fn default() -> Self {
        TracerOptions {
            mode: ModeKind::Trace,
            interval: INTERVAL,
            duration: None,
            layers: LayerSelection::all(),
            uprobes: Vec::new(),
            kernel_probes: KernelProbeMode::Auto,
            kernel_functions: Vec::new(),
            kernel_layers: None,
            probes: None,
            strict: false,
            skip_missing_uprobes: false,
            queue_mib: QUEUE_MEMORY >> 20,
            flush_interval: FLUSH_INTERVAL,
            offcpu_stacks: true,
            wait_table: None,
            sample_hz: SAMPLE_HZ,
            own_cost: false,
        }
    }
}

impl TracerOptions {
    /// Tracing `command` with these options into `output`, refusing to replace it.
    pub fn collect(&self, output: impl Into<PathBuf>, command: Vec<String>) -> CollectOptions {
        CollectOptions {
            output: output.into(),
            command,
            pids: Vec::new(),
            cgroup: None,
            start_in: Vec::new(),
            all: false,
            mode: Mode::new(self.mode, self.interval),
            duration: self.duration,
            layers: self.layers.clone(),
            uprobes: self.uprobes.clone(),
            kernel_probes: self.kernel_probes,
            kernel_functions: self.kernel_functions.clone(),
            kernel_layers: self.kernel_layers.clone(),
            kernel_probe_set: self.probes.clone(),
            strict: self.strict,
            skip_missing_uprobes: self.skip_missing_uprobes,
            offcpu_stacks: self.offcpu_stacks,
            wait_table: self.wait_table.clone(),
            sample_hz: self.sample_hz,
            queue_memory: self.queue_mib << 20,
            existing: Existing::Refuse,
            flush_interval: self.flush_interval,
            own_cost: self.own_cost,
        }
    }

    /// The files these options name, relative to `dir` (a pipeline file's directory).
    pub fn relative_to(&mut self, dir: &std::path::Path) {
        for path in [
            &mut self.kernel_layers,
            &mut self.probes,
            &mut self.wait_table,
        ]
        .into_iter()
        .flatten()
        {
            *path = dir.join(&*path);
        }
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    parse_duration(&String::deserialize(d)?).map_err(de::Error::custom)
}

fn some_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// A list of layer names, or the flag's comma-separated string; an empty list means every layer.
fn layers<'de, D: Deserializer<'de>>(d: D) -> Result<LayerSelection, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Names {
        List(Vec<String>),
        Flag(String),
    }
    match Names::deserialize(d)? {
        Names::Flag(s) => LayerSelection::parse(&s),
        Names::List(v) if v.is_empty() => Ok(LayerSelection::all()),
        Names::List(v) => v
            .iter()
            .map(|l| l.parse::<Layer>())
            .collect::<Result<_, _>>()
            .map(LayerSelection),
    }
    .map_err(de::Error::custom)
}

fn uprobes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<UprobeTarget>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|u| UprobeTarget::parse(u))
        .collect::<Result<_, _>>()
        .map_err(de::Error::custom)
}

impl CollectOptions {
    /// What each layer's attach reads of these options; `configured` is what its configure returned.
    pub fn setup<'a>(&'a self, configured: &'a crate::error::Result<()>) -> Setup<'a> {
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
    pub fn kernel_layer_map(&self) -> crate::error::Result<KernelLayerMap> {
        KernelLayerMap::for_run(
            self.kernel_layers.as_deref(),
            self.kernel_probe_set.as_deref(),
            self.strict,
        )
    }

    /// Tracing `command` with every layer, in trace mode.
    pub fn command(output: impl Into<PathBuf>, command: Vec<String>) -> CollectOptions {
        TracerOptions::default().collect(output, command)
    }

    /// Checks that exactly one scope is given, and the user's wait table.
    pub fn validate(&self) -> crate::error::Result<()> {
        if let Some(path) = self.wait_table.as_deref() {
            WaitTable::for_run(Some(path))?;
        }
        let scopes = [
            !self.command.is_empty(),
            !self.pids.is_empty(),
            self.cgroup.is_some(),
            self.all,
        ];
        match scopes.iter().filter(|&&s| s).count() {
            1 => Ok(()),
            0 => Err(crate::error::Error::NoScope),
            _ => Err(crate::error::Error::ManyScopes),
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
        let t = UprobeTarget::parse("/usr/lib/libhdf5.so:^H5.*").unwrap();
        assert_eq!(t.binary, PathBuf::from("/usr/lib/libhdf5.so"));
        assert!(t.pattern.is_match("H5Fopen"));
        assert_eq!(
            UprobeTarget::parse("nocolon").unwrap_err(),
            "`nocolon`: expected PATH:REGEX"
        );
    }

    #[test]
    fn exactly_one_scope() {
        let mut o = CollectOptions::command("t.pfw", vec!["true".into()]);
        assert!(o.validate().is_ok());
        o.all = true;
        let many = o.validate().unwrap_err();
        assert!(matches!(many, crate::error::Error::ManyScopes), "{many:?}");
        assert_eq!(many.remedy(), Some(crate::error::Remedy::OneScope));
        o.command.clear();
        o.all = false;
        let none = o.validate().unwrap_err();
        assert!(matches!(none, crate::error::Error::NoScope), "{none:?}");
        assert_eq!(none.to_string(), "nothing to trace");
    }
}
