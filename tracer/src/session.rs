//! A session: one load and attach for several commands traced one after another, each into a trace
//! of its own.
//!
//! A pipeline traces dozens of short commands with the same options. Traced one `collect` each,
//! every run loaded and attached the object again (0.3–0.5 s), and a run started right after
//! another also waited, up to 2 s, for the kernel to release the previous run's tracepoints (the
//! kworker that does it holds the `event_mutex` that reading a tracepoint's format and opening its
//! perf event take; see [`crate::bpf::teardown`]). A session attaches once; a run changes only the
//! scope (the command's pid in `TRACED`, its open files in `FDS`) and the output, and after it the
//! scope and every table of calls in progress are emptied, so that the next run starts from the
//! same state as a fresh load and no event of one run reaches another's trace.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use aya::Ebpf;
use datasets::summary::Summary;
use datasets::vocab::TraceScope;

use crate::bpf::rawbpf::clear_hash_maps;
use crate::bpf::teardown;
use crate::collect::{
    Prepared, Scope, Taps, admit, base_config, header, load, prepare, run, set_config,
};
use crate::drain::create_writer;
use crate::error::{Context, Error, Result};
use crate::layers::kernel::KernelLinks;
use crate::options::CollectOptions;
use crate::pidfd::Pids;
use crate::scope::spawn_held;
use crate::signals;

/// The maps that hold which processes are traced; emptied first at the end of a run.
const SCOPE_MAPS: [&str; 1] = ["TRACED"];
/// The hash maps the attach fills, which stay from one run to the next.
const ATTACH_MAPS: [&str; 1] = ["UPROBES"];

/// The object, loaded and attached with one set of options, tracing one command at a time.
/// Dropping it detaches everything.
pub struct Session {
    opts: CollectOptions,
    signal: Arc<AtomicUsize>,
    /// None only once dropped.
    ebpf: Option<Ebpf>,
    kernel: Option<KernelLinks>,
    links: Vec<OwnedFd>,
    taps: Taps,
}

impl Session {
    /// Loads the object and attaches every layer `opts` selects, tracing nothing yet. Only the
    /// scope of `opts` (which must be a command) and its output are per run: each run's
    /// [`Session::collect`] names its own.
    pub fn start(opts: &CollectOptions) -> Result<Session> {
        let signal = signals::install()?;
        opts.validate()?;
        if opts.command.is_empty() {
            return Err(Error::SessionScope);
        }
        let Prepared {
            klayers,
            kallsyms,
            profile_ns,
        } = prepare(opts)?;
        let mut ebpf = load(opts)?;
        set_config(&mut ebpf, base_config(opts, profile_ns)?)?;
        signals::check(&signal)?;
        let (attached, _) = run(opts, &mut ebpf, &[], klayers, kallsyms)?;
        let (taps, kernel, links) = Taps::new(&mut ebpf, attached, profile_ns)?;
        Ok(Session {
            opts: opts.clone(),
            signal,
            ebpf: Some(ebpf),
            kernel: Some(kernel),
            links,
            taps,
        })
    }

    /// Traces `run.command` into `run.output` (replaced or refused as `run.existing` says),
    /// moved into `run.start_in` first and stopped after `run.duration`, as `collect` would with
    /// the session's layers and probes; the summary is that run's alone. After a run that
    /// failed once tracing began, the session traces no more ([`Error::SessionFailed`]).
    pub fn collect(&mut self, run: &CollectOptions) -> Result<Summary> {
        let started = Instant::now();
        run.validate()?;
        if run.command.is_empty() {
            return Err(Error::SessionScope);
        }
        signals::check(&self.signal)?;
        let writer = create_writer(&run.output, run.existing, header(&self.opts))?;
        // On an error, dropping the held command kills it.
        let held = spawn_held(&run.command)?;
        held.wait_until_held()?;
        for dir in &run.start_in {
            let procs = dir.join("cgroup.procs");
            std::fs::write(&procs, held.pid().to_string())
                .with_context(|| format!("moving the command into {}", procs.display()))?;
        }
        let ebpf = self
            .ebpf
            .as_mut()
            .expect("a session's object lives until it drops");
        let roots = vec![held.pid()];
        let initial = admit(ebpf, run, &roots);
        let ebpf = &*ebpf;
        let initial = match initial {
            Ok(initial) => initial,
            Err(e) => {
                // Part of the scope may be in place.
                end_run(ebpf)?;
                return Err(e);
            }
        };
        let scope = Scope {
            name: TraceScope::Command,
            roots,
            held: Some(held),
            initial,
            calibration: None,
        };
        let summary = self.taps.trace(
            run,
            scope,
            writer,
            &self.signal,
            &Pids::open(&[])?,
            started,
            || {
                end_run(ebpf)?;
                Ok(None)
            },
        );
        if summary.is_err() {
            // A run that failed before its end leaves its scope behind.
            end_run(ebpf)?;
        }
        summary
    }
}

/// Leaves no program writing for the run that ended: out of the scope first, so that no call
/// starts being followed, then every table of calls in progress and of open files emptied, so that
/// none ends in the next run; then a grace period, after which no program that saw either runs.
fn end_run(ebpf: &Ebpf) -> Result<()> {
    clear_hash_maps(ebpf, |m| SCOPE_MAPS.contains(&m))?;
    clear_hash_maps(ebpf, |m| {
        !SCOPE_MAPS.contains(&m) && !ATTACH_MAPS.contains(&m)
    })?;
    teardown::grace_period();
    Ok(())
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(kernel) = self.kernel.take() {
            kernel.detach();
        }
        if let Some(ebpf) = self.ebpf.take() {
            teardown::detach_all(std::mem::take(&mut self.links), ebpf);
        }
    }
}
