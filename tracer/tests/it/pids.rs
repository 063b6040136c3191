//! `--pid` (needs root and BPF): a collection of running processes ends by itself once every one of
//! them has exited, with what they did until then.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use test_support::workload::{Killed, opens_where, wait_for};

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");

/// `openat` events in `trace` (partial or whole) on files named `name`.
fn opens(trace: &Path, name: &str) -> usize {
    opens_where(trace, |f| {
        Path::new(f).file_name().is_some_and(|n| n == name)
    })
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_pid_collection_ends_when_every_process_has_exited() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // Two processes: this one opens `ready` until the test says go, then writes `after` and exits.
    let script =
        format!("while [ ! -e {d}/go ]; do : < {d}/ready; sleep 0.05; done; echo y > {d}/after");
    std::fs::write(dir.path().join("ready"), "").unwrap();
    let mut workload = Killed(Command::new("sh").args(["-c", &script]).spawn().unwrap());
    let mut other = Killed(Command::new("sleep").arg("600").spawn().unwrap());
    let output = dir.path().join("t.pfw.gz");
    let mut tracer = Killed(
        Command::new(DC_TRACE)
            .args([
                "collect",
                "--layers",
                "sys",
                "--flush-interval",
                "200ms",
                "-o",
            ])
            .arg(&output)
            .args(["--pid", &workload.0.id().to_string()])
            .args(["--pid", &other.0.id().to_string()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let partial = dir
        .path()
        .join(format!("t.pfw.gz.{}.partial", tracer.0.id()));
    wait_for("the workload's opens in the partial trace", || {
        partial.exists() && opens(&partial, "ready") > 0
    });
    std::fs::write(dir.path().join("go"), "").unwrap();
    // Not reaped: an exited process that its parent has not waited for yet counts as exited.
    wait_for("the workload's last open in the partial trace", || {
        opens(&partial, "after") == 1
    });
    assert!(
        tracer.0.try_wait().unwrap().is_none(),
        "dc-trace ended while a --pid process ran"
    );
    other.0.kill().unwrap();
    wait_for("dc-trace to end", || tracer.0.try_wait().unwrap().is_some());
    let status = tracer.0.wait().unwrap();
    let mut stderr = String::new();
    tracer
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("(trace mode, scope pids)"), "{stderr}");
    assert_eq!(opens(&output, "after"), 1);
    workload.0.wait().unwrap();
    other.0.wait().unwrap();
}
