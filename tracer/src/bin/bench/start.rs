//! `dc-trace-bench start [RUNS]`: how long a tracer keeps a short command waiting, beside bpftrace
//! in the same run. The command is this benchmark itself as `stamp FILE`, which writes
//! CLOCK_MONOTONIC to FILE first thing and exits. Its start is the time from spawning the tracer
//! to that stamp (loading, attaching, then the exec); its finish, from the stamp to the tracer's
//! exit (the command's own run, well under a millisecond, is counted in it). The tracers:
//! `dc-trace collect` with the default layers, as a user runs it, and `bpftrace -c` with one
//! syscall tracepoint, the emptiest useful program. Each runs RUNS times (default 5), taking turns;
//! the fastest and the median run of each are printed, as wall time and as the CPU time the tracer
//! used (on a machine shared with other work, wall time also counts the waits for a CPU). Runs are
//! PAUSE apart: the kernel releases a run's tracepoints from its workqueue after the run, one
//! grace period each under the mutex a new tracepoint attach takes, so a run right after another
//! starts up to a second later (that is printed too, from one more dc-trace run at once after one).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::cpu::cpu_seconds;

/// How long the runs are apart, for the kernel to release the last run's tracepoints.
const PAUSE: Duration = Duration::from_secs(3);

/// bpftrace's program: one tracepoint that does nothing.
const BPFTRACE: &str = "tracepoint:syscalls:sys_enter_read {}";

/// CLOCK_MONOTONIC in nanoseconds.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The command traced: writes the monotonic clock to `file`.
pub fn stamp(file: &Path) -> Result<()> {
    let now = monotonic_ns();
    std::fs::write(file, now.to_string()).with_context(|| format!("writing {}", file.display()))
}

/// One run: start and finish in seconds, and the tracer's CPU seconds.
struct Run {
    start: f64,
    finish: f64,
    cpu: f64,
}

/// Runs `tracer` (a program and its arguments, the command last) and times it against the stamp.
fn once(tracer: &[String], stamp_file: &Path) -> Result<Run> {
    let _ = std::fs::remove_file(stamp_file);
    let cpu_before = cpu_seconds(libc::RUSAGE_CHILDREN);
    let spawned = monotonic_ns();
    let out = Command::new(&tracer[0])
        .args(&tracer[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running {}", tracer[0]))?;
    let ended = monotonic_ns();
    let cpu = cpu_seconds(libc::RUSAGE_CHILDREN) - cpu_before;
    ensure!(
        out.status.success(),
        "`{}` failed ({}): {}",
        tracer.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let text = std::fs::read_to_string(stamp_file)
        .with_context(|| format!("the command did not run: no {}", stamp_file.display()))?;
    let stamped: u64 = text
        .trim()
        .parse()
        .with_context(|| format!("{}: `{}` is not a clock", stamp_file.display(), text.trim()))?;
    Ok(Run {
        start: stamped.saturating_sub(spawned) as f64 / 1e9,
        finish: ended.saturating_sub(stamped) as f64 / 1e9,
        cpu,
    })
}

fn row(name: &str, runs: &mut [Run]) {
    let total = |r: &Run| r.start + r.finish;
    runs.sort_by(|a, b| total(a).total_cmp(&total(b)));
    let (best, median) = (&runs[0], &runs[runs.len() / 2]);
    println!(
        "{:<10} {:>9.3} {:>9.3} {:>9.3} {:>10.3} {:>9.3} {:>9.3} {:>9.3}",
        name,
        best.start,
        best.finish,
        total(best),
        median.start,
        median.finish,
        total(median),
        median.cpu
    );
}

pub fn run(runs: u64) -> Result<()> {
    ensure!(runs > 0, "RUNS must be at least 1");
    let exe = std::env::current_exe()?;
    let dc_trace = exe.with_file_name("dc-trace");
    ensure!(
        dc_trace.is_file(),
        "{} is missing; build the tracer crate's binaries",
        dc_trace.display()
    );
    let dir = tempfile::tempdir()?;
    let stamp_file: PathBuf = dir.path().join("stamp");
    let exe = exe.to_string_lossy().into_owned();
    let stamp_cmd = [
        exe.clone(),
        "stamp".into(),
        stamp_file.display().to_string(),
    ];
    let mut ours: Vec<String> = vec![
        dc_trace.display().to_string(),
        "collect".into(),
        "--force".into(),
        "-o".into(),
        dir.path().join("start.pfw.gz").display().to_string(),
        "--".into(),
    ];
    ours.extend(stamp_cmd.iter().cloned());
    let theirs: Vec<String> = vec![
        "bpftrace".into(),
        "-e".into(),
        BPFTRACE.into(),
        "-c".into(),
        stamp_cmd.join(" "),
    ];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        std::thread::sleep(PAUSE);
        a.push(once(&ours, &stamp_file)?);
        std::thread::sleep(PAUSE);
        b.push(once(&theirs, &stamp_file)?);
    }
    std::thread::sleep(PAUSE);
    once(&ours, &stamp_file)?;
    let mut again = vec![once(&ours, &stamp_file)?];
    println!("a traced command that only exits, {runs} runs each; seconds");
    println!(
        "{:<10} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9}",
        "tracer", "start", "finish", "total", "med start", "finish", "total", "cpu"
    );
    row("dc-trace", &mut a);
    row("bpftrace", &mut b);
    row("again", &mut again);
    println!(
        "dc-trace: `dc-trace collect` with the default layers, runs {} s apart; again: dc-trace, one run \
         at once after another; bpftrace: `{BPFTRACE}`",
        PAUSE.as_secs()
    );
    Ok(())
}
