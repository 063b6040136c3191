//! dc-trace-bench: overhead and loss of tracing one syscall-heavy workload, in one run: untraced,
//! traced by dc-trace (sys layer, an event per call), and traced by an equivalent bpftrace script
//! (a line per call). Prints each time, the ratios to the untraced run, the added time per call,
//! events per second, drops and runs the kernel skipped. `dc-trace-bench [CALLS [THREADS [OP]]]`
//! (default 2000000 one-byte pwrite calls over 2 threads; OP `pread` reads a byte from a cached
//! page instead, a cheaper call, so more calls per second); needs root and bpftrace.
//! `dc-trace-bench dd [MIB [RUNS]]` prints what each layer adds to a cached 512-byte read (`dd`),
//! and what `sys` alone and the default layers add as a ratio to two floors on the same hooks: a
//! BPF program that only returns, and bpftrace's emptiest program.
//! `dc-trace-bench functions [CALLS [RUNS]]` prints what a traced kernel function adds to each of
//! its calls, against bpftrace's kprobe and fentry probes on the same functions.
//! `dc-trace-bench start [RUNS]` prints how long dc-trace with the default layers keeps a command
//! that only exits waiting, before its exec and after its exit, beside bpftrace with one
//! tracepoint.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result};
use tracer::{CollectOptions, Layer, LayerSelection, collect};

use crate::bpftrace::Bpftrace;
use crate::cpu::cpu_seconds;

const TESTLOAD: &str = "dc-trace-testload";

/// One event per syscall of the workload, like dc-trace's sys layer.
const BPFTRACE: &str = r#"
BEGIN { printf("ready\n"); }
tracepoint:raw_syscalls:sys_enter /comm == "dc-trace-testlo"/ { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ {
    printf("%d %d %d %d %d\n", pid, tid, args->id, @start[tid], nsecs - @start[tid]);
    delete(@start[tid]);
}
"#;

#[path = "bench/bpftrace.rs"]
mod bpftrace;
#[path = "bench/cpu.rs"]
mod cpu;
#[path = "bench/dd.rs"]
mod dd;
#[path = "bench/floor.rs"]
mod floor;
#[path = "bench/functions.rs"]
mod functions;
#[path = "bench/start.rs"]
mod start;

fn main() -> ExitCode {
    let n = |i: usize, default: u64| -> Result<u64> {
        std::env::args().nth(i).map_or(Ok(default), |a| {
            a.parse()
                .with_context(|| format!("argument {i}: `{a}` is not a number"))
        })
    };
    let result = match std::env::args().nth(1).as_deref() {
        Some("dd") => n(2, 256).and_then(|mib| dd::run(mib, n(3, 3)?)),
        Some("start") => n(2, 5).and_then(start::run),
        Some("stamp") => match std::env::args().nth(2) {
            Some(file) => start::stamp(Path::new(&file)),
            None => Err(anyhow::anyhow!("stamp: which file?")),
        },
        Some("functions") => {
            testload().and_then(|load| functions::run(load, n(2, 20_000)?, n(3, 3)?))
        }
        _ => run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dc-trace-bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn testload() -> Result<String> {
    let exe = std::env::current_exe()?;
    let p = exe.with_file_name(TESTLOAD);
    anyhow::ensure!(
        p.is_file(),
        "{} is missing; build the tracer crate's binaries",
        p.display()
    );
    Ok(p.to_string_lossy().into_owned())
}

fn elapsed(dir: &Path) -> Result<f64> {
    let p = dir.join("elapsed_ns");
    let s = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    Ok(s.trim()
        .parse::<f64>()
        .with_context(|| format!("{}: not a number", p.display()))?
        / 1e9)
}

fn run() -> Result<()> {
    let arg = |i: usize, what: &str, default: u64| -> Result<u64> {
        match std::env::args().nth(i) {
            Some(a) => a
                .parse()
                .with_context(|| format!("argument {i} ({what}): `{a}` is not a number")),
            None => Ok(default),
        }
    };
    let calls = arg(1, "CALLS", 2_000_000)?;
    let threads = arg(2, "THREADS", 2)?;
    let op = std::env::args()
        .nth(3)
        .unwrap_or_else(|| "pwrite".to_owned());
    anyhow::ensure!(
        op == "pwrite" || op == "pread",
        "argument 3 (OP): `{op}` is neither pwrite nor pread"
    );
    let load = testload()?;
    let dir = tempfile::tempdir()?;
    let d = dir.path().to_str().context("temp dir path")?.to_owned();
    let workload = vec![
        load.clone(),
        d.clone(),
        "--syscalls".into(),
        calls.to_string(),
        "--threads".into(),
        threads.to_string(),
        "--op".into(),
        op.clone(),
    ];

    let status = Command::new(&load).args(&workload[1..]).status()?;
    anyhow::ensure!(status.success(), "untraced workload failed");
    let base = elapsed(dir.path())?;

    let bt = Bpftrace::start(BPFTRACE, &[], dir.path())?;
    let status = Command::new(&load).args(&workload[1..]).status()?;
    anyhow::ensure!(status.success(), "workload under bpftrace failed");
    let theirs = elapsed(dir.path())?;
    let (bt_events, lost) = bt.interrupt()?;

    let mut opts = CollectOptions::command(dir.path().join("bench.pfw.gz"), workload.clone());
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    let started = Instant::now();
    let cpu_before = cpu_seconds(libc::RUSAGE_SELF);
    let summary = collect(&opts)?;
    let drain_cpu = cpu_seconds(libc::RUSAGE_SELF) - cpu_before;
    let total = started.elapsed().as_secs_f64();
    let ours = elapsed(dir.path())?;

    let sys_events = summary.events_per_layer.get("sys").copied().unwrap_or(0);
    println!("workload: {calls} one-byte {op}64 calls in {threads} threads");
    println!(
        "{:<10} {:>10} {:>8} {:>14} {:>12} {:>10} {:>10}",
        "run", "time s", "ratio", "added ns/call", "events/s", "events", "drops"
    );
    println!(
        "{:<10} {:>10.3} {:>8.2} {:>14} {:>12} {:>10} {:>10}",
        "untraced", base, 1.0, "-", "-", "-", "-"
    );
    let row = |name: &str, t: f64, events: u64, drops: u64| {
        println!(
            "{:<10} {:>10.3} {:>8.2} {:>14.0} {:>12.0} {:>10} {:>10}",
            name,
            t,
            t / base,
            (t - base) / calls as f64 * 1e9,
            events as f64 / t,
            events,
            drops
        );
    };
    row(
        "dc-trace",
        ours,
        sys_events,
        summary.drops + summary.kernel_skipped,
    );
    row("bpftrace", theirs, bt_events, lost);
    println!(
        "dc-trace's own threads (reading the ring buffer, writing the trace): {:.3} s of CPU, {:.0} ns per event",
        drain_cpu,
        drain_cpu / sys_events.max(1) as f64 * 1e9
    );
    println!(
        "dc-trace vs bpftrace: {:.2}x the added time per call; dc-trace drops {} and kernel-skipped {}; wall time with attach and drain {:.3} s, output {} bytes ({:.1} bytes per event)",
        (ours - base) / (theirs - base),
        summary.drops,
        summary.kernel_skipped,
        total,
        summary.output_bytes,
        summary.output_bytes as f64 / summary.events.max(1) as f64
    );
    println!(
        "dc-trace's writer behind the ring buffer: {} bytes of records waited on disk (at most {} bytes queued at once); the trace was closed {:.3} s after the workload ended (detaching included)",
        summary.spooled_bytes, summary.peak_backlog_bytes, summary.finish_time_s
    );
    Ok(())
}
