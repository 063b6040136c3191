//! `collect`: load, scope, attach every selected layer, run, stop cleanly, summarize.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Context, Error, Result, Target};
use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, HashMap, MapData, PerCpuArray, PerCpuValues, RingBuf},
};
use datasets::ArgValue;
use datasets::limits::{CallCost, Moment};
use datasets::summary::Summary;
use datasets::vocab::layer::SCOPE;
use datasets::vocab::{Mechanism, ModeKind, TraceScope};
use datasets::write::{Header, TraceWriter};
use tracer_ebpf::{Config, FdKey, TracedPid, USER_FILE_ID, mode, scope};

use crate::bpf::{Attacher, object, teardown, tracefs};
use crate::calibrate::Helper;
pub use crate::clock::monotonic_ns;
use crate::decode::Decoder;
use crate::drain::{Drain, create_writer};
use crate::layers::kernel::KernelLinks;
use crate::layers::kernel::map::KernelLayerMap;
use crate::layers::kernel::symbols::KernelSymbols;
use crate::layers::{Attached, Layer, LayerReport, Names};
use crate::layers::{block, oncpu, stacks, uprobe};
use crate::limits::LimitsReader;
use crate::options::{CollectOptions, Mode, TracerOptions, UprobeTarget};
use crate::pidfd::Pids;
use crate::procfs;
use crate::profile::{self, Counters};
use crate::scope::{HeldCommand, spawn_held};
use crate::signals;
use crate::skipped::Watch;

/// The longest the main thread sleeps between checks of a signal's grace period and the duration,
/// and between takes of finished profile intervals; the end of a process wakes it at once.
const TICK: Duration = Duration::from_millis(20);
/// How long a command may take to exit after dc-trace forwarded it a signal.
const GRACE: Duration = Duration::from_secs(2);

pub fn collect(opts: &CollectOptions) -> Result<Summary> {
    let started = Instant::now();
    let signal = signals::install()?;
    opts.validate()?;
    let pids = Pids::open(&opts.pids)?;
    let Prepared {
        klayers,
        kallsyms,
        profile_ns,
    } = prepare(opts)?;
    // Until tracing begins, a signal fails the run, and the error path removes the file.
    signals::check(&signal)?;
    let writer = create_writer(&opts.output, opts.existing, header(opts))?;

    let mut ebpf = load(opts)?;
    set_config(&mut ebpf, base_config(opts, profile_ns)?)?;
    signals::check(&signal)?;

    let mut held = None;
    let mut roots: Vec<u32> = Vec::new();
    let scope_name;
    if !opts.command.is_empty() {
        let h = spawn_held(&opts.command)?;
        for dir in &opts.start_in {
            let procs = dir.join("cgroup.procs");
            std::fs::write(&procs, h.pid().to_string())
                .with_context(|| format!("moving the command into {}", procs.display()))?;
        }
        roots.push(h.pid());
        held = Some(h);
        scope_name = TraceScope::Command;
    } else if !opts.pids.is_empty() {
        roots.extend(&opts.pids);
        scope_name = TraceScope::Pids;
    } else if let Some(dir) = &opts.cgroup {
        roots.extend(procfs::cgroup_pids(dir)?);
        scope_name = TraceScope::Cgroup;
    } else {
        roots.extend(
            procfs::all_pids()
                .into_iter()
                .filter(|&p| p != std::process::id()),
        );
        scope_name = TraceScope::All;
    }
    // Its untraced phase runs now, with no probe attached; dropped on an error, it is killed.
    let calibration = Helper::start();
    // On an error, dropping the held command kills it.
    let (attached, initial) = run(opts, &mut ebpf, &roots, klayers, kallsyms)?;
    let calibration = calibration.and_then(|h| h.enter_scope(&mut ebpf, opts).map(|()| h));
    signals::check(&signal)?;
    let (mut taps, kernel, links) = Taps::new(&mut ebpf, attached, profile_ns)?;
    let scope = Scope {
        name: scope_name,
        roots,
        held,
        initial,
        calibration: Some(calibration),
    };
    // Detach everything first, so that the last drain sees every record there will be.
    taps.trace(opts, scope, writer, &signal, &pids, started, move || {
        let kernel_detach = kernel.detach();
        teardown::detach_all(links, ebpf);
        Ok(Some(kernel_detach))
    })
}

/// What a run traces: its processes, and the files they had open when it began.
pub(crate) struct Scope {
    pub name: TraceScope,
    pub roots: Vec<u32>,
    /// The command, held before its exec until tracing begins.
    pub held: Option<HeldCommand>,
    /// The files open before tracing began (id, path).
    pub initial: Vec<(u64, String)>,
    /// The helper that measures the tracer's cost per call, in the scope, or why it is not; none when not asked.
    pub calibration: Option<Result<Helper>>,
}

/// The loaded object's maps a run reads, and what it needs to decode and to report; the links
/// stay apart, with whoever detaches them.
pub(crate) struct Taps {
    /// Between runs; during one, the drain's reader holds it.
    ring: Option<RingBuf<MapData>>,
    drops: PerCpuArray<MapData, u64>,
    stack_errors: PerCpuArray<MapData, u64>,
    counters: Counters,
    others: block::Others,
    watch: Watch,
    /// Between runs; during one, the decoder holds them.
    names: Option<Names>,
    reports: Vec<LayerReport>,
    profile_ns: Option<u64>,
}

impl Taps {
    /// Takes the maps a run reads out of `ebpf`; returns them with the kernel layer's links and
    /// the other links aya's object does not hold.
    pub(crate) fn new(
        ebpf: &mut Ebpf,
        attached: Attached,
        profile_ns: Option<u64>,
    ) -> Result<(Taps, KernelLinks, Vec<OwnedFd>)> {
        let Attached {
            reports,
            names,
            kernel,
            uprobes,
            tp_links,
            ..
        } = attached;
        let ring = RingBuf::try_from(ebpf.take_map("EVENTS").context("EVENTS map")?)?;
        let drops: PerCpuArray<MapData, u64> =
            PerCpuArray::try_from(ebpf.take_map("DROPS").context("DROPS map")?)?;
        let stack_errors = stacks::error_counter(ebpf)?;
        let counters: Counters =
            Counters::try_from(ebpf.take_map("PROFILE").context("PROFILE map")?)?;
        let others = block::Others::try_from(ebpf.take_map("OTHERS").context("OTHERS map")?)?;

        let mut watch = Watch::default();
        let mut uprobe_layers: Vec<&str> = Vec::new();
        for l in [Layer::Libc, Layer::App] {
            if names.uprobes.iter().any(|(_, ul)| *ul == l) {
                uprobe_layers.push(l.name());
            }
        }
        let uprobe_label = uprobe_layers.join("+");
        watch.add(ebpf, &uprobe_label)?;
        for (name, fd) in &uprobes.programs {
            watch.add_fd(name, &uprobe_label, fd.as_fd())?;
        }
        let mut links = uprobes.into_fds();
        links.extend(tp_links);
        let taps = Taps {
            ring: Some(ring),
            drops,
            stack_errors,
            counters,
            others,
            watch,
            names: Some(names),
            reports,
            profile_ns,
        };
        Ok((taps, kernel, links))
    }

    /// Zeroes the counters a run reports, so that they count from its start.
    fn reset(&mut self) -> Result<()> {
        let cpus = aya::util::nr_cpus()
            .map_err(|(_, e)| e)
            .context("counting the CPUs")?;
        for map in [&mut self.drops, &mut self.stack_errors] {
            for i in 0..map.len() {
                map.set(i, PerCpuValues::try_from(vec![0u64; cpus])?, 0)?;
            }
        }
        block::clear_others(&mut self.others)?;
        self.watch.mark()
    }

    /// Traces `scope` into `writer` until the command (or every `--pid`) exits, a signal or the
    /// duration: drains the ring buffer, then `end` (which must leave no program writing to it,
    /// and may return how long the kernel layer took to detach), then writes the closing record.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn trace(
        &mut self,
        opts: &CollectOptions,
        scope: Scope,
        mut writer: TraceWriter,
        signal: &AtomicUsize,
        pids: &Pids,
        started: Instant,
        end: impl FnOnce() -> Result<Option<Duration>>,
    ) -> Result<Summary> {
        self.reset()?;
        // The kernel's BPF run-time statistics, on while this is held; they cost each program's run two clock
        // reads, so only a run that asks for its own cost pays them.
        let stats = opts
            .own_cost
            .then(|| aya::sys::enable_stats(aya::sys::Stats::RunTime).map_err(|e| e.to_string()));
        let profile_ns = self.profile_ns;
        let Scope {
            name: scope_name,
            roots,
            mut held,
            initial,
            calibration,
        } = scope;
        // A run that failed kept them: its session traces no more.
        let (Some(names), Some(ring)) = (self.names.take(), self.ring.take()) else {
            return Err(Error::SessionFailed);
        };
        let mut decoder = Decoder::new(names, profile_ns);
        if let Some(Ok(h)) = &calibration {
            decoder.ignore(h.pid(), h.reaped_at());
        }
        for (id, path) in &initial {
            decoder.add_file(&mut writer, *id, path)?;
        }
        let named_at = monotonic_ns();
        for &pid in &roots {
            for (tid, name) in procfs::thread_names(pid) {
                decoder
                    .threads
                    .name(&mut writer, pid, tid, &name, named_at)?;
            }
        }
        let limit_reader = match scope_name {
            TraceScope::Command | TraceScope::Pids => {
                LimitsReader::for_pids(Path::new("/"), &roots)
            }
            TraceScope::Cgroup => match &opts.cgroup {
                Some(dir) => LimitsReader::for_cgroup(Path::new("/"), dir),
                None => LimitsReader::machine(Path::new("/")),
            },
            TraceScope::All => LimitsReader::machine(Path::new("/")),
        };
        let limits_pid = roots.first().copied().unwrap_or(0);
        let start_limits = limit_reader.read(Moment::Start, monotonic_ns());
        writer.write(&start_limits.to_event(limits_pid))?;
        let drain = Drain::start(
            ring,
            decoder,
            writer,
            opts.queue_memory,
            opts.flush_interval,
        );
        // Drained, and before the command runs: the helper's calls meet every probe and none of the command's.
        let per_call = calibration.map(|c| c.and_then(Helper::traced));

        if let Some(h) = held.as_mut() {
            h.release()?;
        }
        let exit_status = wait(
            opts,
            held.as_mut(),
            pids,
            signal,
            &drain,
            &mut self.counters,
            profile_ns,
        )?;

        let ended = Instant::now();
        let mut end_limits = limit_reader.read(Moment::End, monotonic_ns());
        match &stats {
            Some(Ok(_)) => end_limits.tracer = Some(self.watch.cost()?),
            Some(Err(e)) => end_limits
                .errors
                .push(format!("the tracer's own cost: BPF_ENABLE_STATS: {e}")),
            None => {}
        }
        // Others are processes outside the scope: a trace of every process has none to count.
        let block_queued = self.reports.iter().any(|r| {
            r.layer == Layer::Block.name()
                && r.attached.iter().any(|a| a == "block/block_bio_queue")
        });
        if block_queued && scope_name != TraceScope::All {
            block::add_others(&self.others, &mut end_limits)?;
        }
        let kernel_detach = end()?;
        let mut reports = self.reports.clone();
        if let Some(t) = reports.iter_mut().find_map(|r| r.timing.as_mut()) {
            t.detach_us = kernel_detach.map(|d| d.as_micros() as u64);
        }
        let rest = if profile_ns.is_some() {
            profile::take(&mut self.counters, None)?
        } else {
            Vec::new()
        };
        let (drained, decoder, mut writer, ring) = drain.finish(rest)?;
        self.ring = Some(ring);
        match per_call {
            Some(Ok(cost)) => {
                end_limits.per_call = Some(CallCost {
                    events: decoder.ignored_events,
                    ..cost
                })
            }
            Some(Err(e)) => end_limits.errors.push(format!(
                "the tracer's cost per call: {}",
                datasets::error::chain(&e)
            )),
            None => {}
        }
        writer.write(&end_limits.to_event(limits_pid))?;
        let (skipped_per_layer, skipped_per_program) = self.watch.read()?;
        let skipped: u64 = skipped_per_layer.values().sum();
        let mut drops_per_layer = BTreeMap::new();
        let mut drops = 0;
        let counters = Layer::ALL
            .iter()
            .map(|l| (l.id(), l.name()))
            .chain([(tracer_ebpf::layer::SCOPE, SCOPE)]);
        for (id, name) in counters {
            let n: u64 = self
                .drops
                .get(&(id as u32), 0)
                .map(|v| v.iter().sum())
                .unwrap_or(0);
            drops += n;
            if n > 0 {
                drops_per_layer.insert(name.to_owned(), n);
            }
        }
        let mut closing: Vec<(String, ArgValue)> =
            vec![("drops".to_owned(), ArgValue::Int(drops as i64))];
        for (l, n) in &drops_per_layer {
            closing.push((format!("drops_{l}"), ArgValue::Int(*n as i64)));
        }
        let stack_errors = stacks::errors(&self.stack_errors);
        closing.push((
            "stack_errors".to_owned(),
            ArgValue::Int(stack_errors as i64),
        ));
        let sample_stack_errors = oncpu::errors(&self.stack_errors);
        closing.push((
            "sample_stack_errors".to_owned(),
            ArgValue::Int(sample_stack_errors as i64),
        ));
        closing.push(("kernel_skipped".to_owned(), ArgValue::Int(skipped as i64)));
        for (l, n) in &skipped_per_layer {
            closing.push((format!("kernel_skipped_{l}"), ArgValue::Int(*n as i64)));
        }
        closing.push(("records".to_owned(), ArgValue::Int(drained.records as i64)));
        closing.push((
            "spooled_bytes".to_owned(),
            ArgValue::Int(drained.spool.spilled_bytes as i64),
        ));
        if let Some(e) = &drained.spool_error {
            closing.push(("spool_error".to_owned(), ArgValue::Str(e.clone())));
        }
        closing.push((
            "malformed".to_owned(),
            ArgValue::Int(decoder.malformed as i64),
        ));
        let stats = writer.finish(closing).context("closing the trace")?;
        let summary = Summary {
            output: opts.output.clone(),
            mode: if profile_ns.is_some() {
                ModeKind::Profile
            } else {
                ModeKind::Trace
            },
            scope: scope_name,
            clock: "CLOCK_MONOTONIC".to_owned(),
            events: stats.events,
            events_per_layer: decoder
                .per_layer
                .iter()
                .map(|(l, n)| (l.name().to_owned(), *n))
                .collect(),
            drops,
            drops_per_layer,
            stack_errors,
            sample_stack_errors,
            kernel_skipped: skipped,
            kernel_skipped_per_layer: skipped_per_layer,
            kernel_skipped_per_program: skipped_per_program,
            records: drained.records,
            malformed: decoder.malformed,
            spooled_bytes: drained.spool.spilled_bytes,
            peak_backlog_bytes: drained.spool.peak_backlog,
            spool_error: drained.spool_error,
            layers: reports,
            output_bytes: stats.file_bytes,
            wall_time_s: started.elapsed().as_secs_f64(),
            finish_time_s: ended.elapsed().as_secs_f64(),
            exit_status,
        };
        self.names = Some(decoder.into_names());
        Ok(summary)
    }
}

/// What the attach reads, being read on threads of their own, and the profile interval.
pub(crate) struct Prepared {
    pub klayers: KernelLayerMap,
    /// /proc/kallsyms, when a selected layer names kernel functions by it.
    pub kallsyms: Option<JoinHandle<Result<KernelSymbols>>>,
    pub profile_ns: Option<u64>,
}

/// Checks what tracing with `opts` needs (capabilities, uprobe targets, tracefs), and starts
/// reading what the attach will.
pub(crate) fn prepare(opts: &CollectOptions) -> Result<Prepared> {
    crate::caps::check_self(opts)?;
    if !opts.skip_missing_uprobes {
        check_uprobes(&opts.uprobes)?;
    }
    let klayers = opts.kernel_layer_map()?;
    tracefs::ensure_mounted()?;

    let layers = selected(opts);
    if layers.iter().any(|l| reads_btf(*l)) {
        // aya's parse of the kernel's BTF, which the sys layer's BTF tracepoint and fentry bind
        // by, runs while aya loads the object and the layers that do not read it attach.
        let _ = std::thread::Builder::new()
            .name("btf".to_owned())
            .spawn(|| crate::bpf::attach::kernel_btf().map(drop));
    }
    // The stack symbolizers and the kernel layer name functions by /proc/kallsyms.
    let kallsyms = layers
        .iter()
        .any(|l| matches!(l, Layer::Sched | Layer::Oncpu | Layer::Kernel))
        .then(KernelSymbols::load_ahead)
        .flatten();

    let profile_ns = match opts.mode {
        Mode::Trace => None,
        Mode::Profile { interval } => Some((interval.as_nanos() as u64).max(1)),
    };
    Ok(Prepared {
        klayers,
        kallsyms,
        profile_ns,
    })
}

/// The trace's header.
pub(crate) fn header(opts: &CollectOptions) -> Header {
    let mut header = Header::new("dc-trace", env!("CARGO_PKG_VERSION"));
    header.clock = "CLOCK_MONOTONIC".to_owned();
    header.layers = opts
        .layers
        .0
        .iter()
        .map(|l| l.name())
        .collect::<Vec<_>>()
        .join(",");
    header
}

/// Fails on the first `--uprobe` target that cannot be read or has no function the regex matches:
/// the user named it on this machine, so it is a mistake, not a probe this kernel lacks.
fn check_uprobes(targets: &[UprobeTarget]) -> Result<()> {
    for t in targets {
        let (_, errors) = uprobe::plan(false, std::slice::from_ref(t));
        if let Some((_, _, why)) = errors.first() {
            return Err(
                Error::UprobeMissing { why: why.clone() }.about(Target::Uprobe(format!(
                    "{}:{}",
                    t.binary.display(),
                    t.pattern
                ))),
            );
        }
    }
    Ok(())
}

/// Loads the object.
pub(crate) fn load(opts: &CollectOptions) -> Result<Ebpf> {
    let mut loader = EbpfLoader::new();
    if !matches!(opts.mode, Mode::Profile { .. }) {
        // Only profile mode counts into it; preallocating its 65536 per-CPU entries takes 80 ms.
        loader.map_max_entries("PROFILE", 1);
    }
    loader
        .load(object::OBJECT)
        .context("loading the tracer-ebpf object into the kernel")
}

/// What the object's programs are told.
fn config(ebpf: &mut Ebpf) -> Result<Config> {
    let map: Array<_, Config> = Array::try_from(ebpf.map_mut("CONFIG").context("CONFIG map")?)?;
    Ok(map.get(&0, 0)?)
}

/// Tells the object's programs `cfg`.
pub(crate) fn set_config(ebpf: &mut Ebpf, cfg: Config) -> Result<()> {
    Array::<_, Config>::try_from(ebpf.map_mut("CONFIG").context("CONFIG map")?)?.set(0, cfg, 0)?;
    Ok(())
}

/// What `collect` would attach with these options, attached with an empty scope and detached
/// again.
pub fn probe_reports(tracer: &TracerOptions) -> Result<Vec<LayerReport>> {
    tracefs::ensure_mounted()?;
    let opts = tracer.collect("/dev/null", Vec::new());
    let klayers = opts.kernel_layer_map()?;
    let mut ebpf = load(&opts)?;
    set_config(&mut ebpf, base_config(&opts, None)?)?;
    let (mut attached, _) = run(&opts, &mut ebpf, &[], klayers, None)?;
    let links = attached.take_links();
    attached.kernel.detach();
    teardown::detach_all(links, ebpf);
    Ok(attached.reports)
}

/// Puts `roots` in the scope (unless `opts` traces a cgroup or every process) and the files they
/// have open in the fd table; returns those files (id, path).
pub(crate) fn admit(
    ebpf: &mut Ebpf,
    opts: &CollectOptions,
    roots: &[u32],
) -> Result<Vec<(u64, String)>> {
    let mut initial = Vec::new();
    {
        let mut traced: HashMap<_, TracedPid, u32> =
            HashMap::try_from(ebpf.map_mut("TRACED").context("TRACED map")?)?;
        if !opts.all && opts.cgroup.is_none() {
            for &pid in roots {
                traced
                    .insert(TracedPid { tgid: pid }, 0, 0)
                    .context("adding a pid to the scope")?;
            }
        }
    }
    {
        let mut fds: HashMap<_, FdKey, u64> =
            HashMap::try_from(ebpf.map_mut("FDS").context("FDS map")?)?;
        for &pid in roots {
            for (fd, path) in procfs::open_files(pid, !opts.command.is_empty()) {
                let id = USER_FILE_ID | initial.len() as u64;
                if fds.insert(FdKey { tgid: pid, fd }, id, 0).is_ok() {
                    initial.push((id, path));
                }
            }
        }
    }
    Ok(initial)
}

/// The layers `opts` attaches, in attach order: the selected ones, and `app` for `--uprobe`.
fn selected(opts: &CollectOptions) -> Vec<Layer> {
    Layer::ALL
        .iter()
        .copied()
        .filter(|&l| opts.layers.has(l) || (l == Layer::App && !opts.uprobes.is_empty()))
        .collect()
}

/// The selected layers in the order they attach. The layers that read the kernel's BTF come after
/// those that do not, so that its parse, started first, runs while they attach. Uprobes on libc
/// fire in this process too, and each hit traps: they attach last, so that what the other layers
/// read (BTF, /proc/kallsyms, tracefs) does not pay for them.
fn attach_order(opts: &CollectOptions) -> Vec<Layer> {
    let mut layers = selected(opts);
    layers.sort_by_key(|l| match l {
        Layer::Libc | Layer::App => 2,
        l if reads_btf(*l) => 1,
        _ => 0,
    });
    layers
}

/// Whether the layer's configuration or attach reads the kernel's BTF.
fn reads_btf(layer: Layer) -> bool {
    matches!(layer, Layer::Sys | Layer::Block | Layer::Kernel)
}

pub(crate) fn base_config(opts: &CollectOptions, profile_ns: Option<u64>) -> Result<Config> {
    let fork = tracefs::format("sched", "sched_process_fork")?;
    let rename = tracefs::format("task", "task_rename")?;
    let mut cfg = Config {
        scope: if opts.all {
            scope::ALL
        } else if opts.cgroup.is_some() {
            scope::CGROUP
        } else {
            scope::PIDS
        },
        mode: if profile_ns.is_some() {
            mode::PROFILE
        } else {
            mode::TRACE
        },
        self_tgid: std::process::id(),
        interval_ns: profile_ns.unwrap_or(0),
        fork_child_pid: fork.offset("sched/sched_process_fork", "child_pid")?,
        rename_pid: rename.offset("task/task_rename", "pid")?,
        rename_newcomm: rename.offset("task/task_rename", "newcomm")?,
        ..Config::default()
    };
    if let Some(dir) = &opts.cgroup {
        cfg.cgroup_id = procfs::cgroup_id(dir)?;
        cfg.cgroup_level = procfs::cgroup_level(dir)?;
    }
    Ok(cfg)
}

/// Fills the scope and fd tables, then attaches every selected layer (`kallsyms` is /proc/kallsyms
/// being read on a thread, when it was started early). Returns what attached, and
/// the files open before tracing began (id, path).
pub(crate) fn run(
    opts: &CollectOptions,
    ebpf: &mut Ebpf,
    roots: &[u32],
    klayers: KernelLayerMap,
    kallsyms: Option<JoinHandle<Result<KernelSymbols>>>,
) -> Result<(Attached, Vec<(u64, String)>)> {
    let initial = admit(ebpf, opts, roots)?;
    let mut out = Attached::default();
    out.names.klayers = klayers;
    out.names.kallsyms_reading = kallsyms;
    let mut at = Attacher::new(ebpf);
    let mut scope_report = LayerReport {
        layer: SCOPE.to_owned(),
        mechanism: Mechanism::Tracepoint.into(),
        ..LayerReport::default()
    };
    for (prog, group, tp) in [
        ("scope_fork", "sched", "sched_process_fork"),
        ("scope_exit", "sched", "sched_process_exit"),
        ("scope_exec", "sched", "sched_process_exec"),
        ("scope_rename", "task", "task_rename"),
    ] {
        at.tracepoint(prog, group, tp)?;
        scope_report.attached.push(format!("{group}/{tp}"));
    }
    out.reports.push(scope_report);
    for layer in attach_order(opts) {
        // A layer's configuration goes to the programs before it attaches, over what the layers
        // before it configured and set at their attach; a layer whose kernel lacks what it reads
        // is refused at attach.
        let mut cfg = config(at.ebpf)?;
        let configured = layer.probes().configure(&mut cfg);
        set_config(at.ebpf, cfg)?;
        let mut setup = opts.setup(&configured);
        layer.probes().attach(&mut at, &mut setup, &mut out);
    }
    // The reports in the layers' order, the scope's first.
    let position = |name: &str| Layer::ALL.iter().position(|l| l.name() == name);
    out.reports.sort_by_key(|r| position(&r.layer));
    Ok((out, initial))
}

/// Waits for the command's exit, the exit of every `--pid` process, a signal or the duration; in
/// profile mode, meanwhile hands finished intervals to the writer. Returns the command's exit
/// status.
fn wait(
    opts: &CollectOptions,
    mut held: Option<&mut HeldCommand>,
    pids: &Pids,
    signal: &AtomicUsize,
    drain: &Drain,
    counters: &mut Counters,
    profile_ns: Option<u64>,
) -> Result<Option<i32>> {
    let start = Instant::now();
    let mut forwarded: Option<Instant> = None;
    let child = match held.as_deref() {
        Some(h) => Some(crate::pidfd::open_child(h.pid())?),
        None => None,
    };
    loop {
        if let Some(h) = held.as_deref_mut()
            && let Some(status) = h.try_wait()?
        {
            return Ok(Some(status));
        }
        if !opts.pids.is_empty() && pids.all_exited()? {
            return Ok(None);
        }
        let sig = signal.load(Ordering::SeqCst);
        if sig != 0 {
            match held.as_deref_mut() {
                Some(h) if forwarded.is_none() => {
                    h.signal(sig as i32);
                    forwarded = Some(Instant::now());
                }
                Some(h) if forwarded.is_some_and(|t| t.elapsed() > GRACE) => {
                    h.signal(libc::SIGKILL);
                    return Ok(Some(h.wait()?));
                }
                Some(_) => {}
                None => return Ok(None),
            }
        }
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            if let Some(h) = held.as_deref_mut() {
                h.signal(libc::SIGKILL);
                return Ok(Some(h.wait()?));
            }
            return Ok(None);
        }
        if let Some(ns) = profile_ns {
            let now = monotonic_ns();
            // The current and the previous interval may still be counting.
            let done = profile::take(counters, Some((now / ns).saturating_sub(1)))?;
            if !done.is_empty() {
                drain.send(done)?;
            }
        }
        let tick = match opts.duration {
            Some(d) => TICK.min(d.saturating_sub(start.elapsed())),
            None => TICK,
        };
        crate::pidfd::wait_for_exit(child.iter().map(AsFd::as_fd).chain(pids.fds()), tick)?;
    }
}
