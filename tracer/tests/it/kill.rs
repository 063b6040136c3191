//! dc-trace killed with SIGKILL mid-run (needs root and BPF): the events it had before the kill
//! are in its partial file, flushed within `--flush-interval`, and read back; every BPF program,
//! link and map it held is gone from the kernel (so no perf event holds a program either); and
//! the traced command runs on to its end.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use test_support::workload::{opens_where, wait_for};

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");
/// Files the workload writes before it waits for the test, and after.
const BEFORE: usize = 40;
const AFTER: usize = 15;

/// The ids of the BPF programs, links and maps `pid` holds, from its fds' fdinfo.
fn bpf_ids(pid: u32) -> BTreeSet<(&'static str, u32)> {
    let mut ids = BTreeSet::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).unwrap() {
        let Ok(info) = std::fs::read_to_string(entry.unwrap().path()) else {
            continue;
        };
        for line in info.lines() {
            for key in ["prog_id", "link_id", "map_id"] {
                if let Some(v) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
                    ids.insert((key, v.trim().parse().unwrap()));
                }
            }
        }
    }
    ids
}

/// Which of `ids` the kernel still has.
fn remaining(ids: &BTreeSet<(&'static str, u32)>) -> BTreeSet<(&'static str, u32)> {
    let mut live = BTreeSet::new();
    live.extend(
        aya::programs::loaded_programs()
            .filter_map(Result::ok)
            .map(|p| ("prog_id", p.id())),
    );
    live.extend(
        aya::programs::loaded_links()
            .filter_map(Result::ok)
            .map(|l| ("link_id", l.id())),
    );
    live.extend(
        aya::maps::loaded_maps()
            .filter_map(Result::ok)
            .map(|m| ("map_id", m.id())),
    );
    ids.intersection(&live).copied().collect()
}

/// `openat` events on the workload's files named `prefix.N`.
fn opens(trace: &Path, prefix: &str) -> usize {
    opens_where(trace, |f| {
        Path::new(f)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
    })
}

fn start(dir: &Path, output: &Path) -> Child {
    let d = dir.display();
    let script = format!(
        "for i in $(seq 1 {BEFORE}); do echo x > {d}/a.$i; done; \
         while [ ! -e {d}/go ]; do sleep 0.05; done; \
         for i in $(seq 1 {AFTER}); do echo y > {d}/b.$i; done; touch {d}/done"
    );
    Command::new(DC_TRACE)
        .args(["collect", "-o"])
        .arg(output)
        .args(["--layers", "sys,libc,block", "--flush-interval", "200ms"])
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_killed_trace_reads_back_and_leaves_nothing_in_the_kernel() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("t.pfw.gz");
    let mut child = start(dir.path(), &output);
    let partial = dir.path().join(format!("t.pfw.gz.{}.partial", child.id()));

    wait_for("the workload's first files in the partial trace", || {
        partial.exists() && opens(&partial, "a.") == BEFORE
    });
    let held = bpf_ids(child.id());
    assert!(held.iter().any(|(k, _)| *k == "link_id"), "{held:?}");
    assert!(held.iter().any(|(k, _)| *k == "prog_id"), "{held:?}");

    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(dir.path().join("go"), "").unwrap();

    wait_for("the traced command to finish", || {
        dir.path().join("done").exists()
    });
    wait_for("the kernel to free what dc-trace held", || {
        remaining(&held).is_empty()
    });
    assert_eq!(opens(&partial, "a."), BEFORE);
    assert_eq!(opens(&partial, "b."), 0);
    for i in 1..=AFTER {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(format!("b.{i}"))).unwrap(),
            "y\n"
        );
    }
    assert!(
        !output.exists(),
        "a killed trace is never under the final name"
    );
}

/// dc-trace with every layer (the kernel layer included, whose fentry programs share the main
/// object's maps), killed once it traces: it pinned nothing in bpffs, so every program, link and
/// map it held goes with it.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_killed_trace_with_every_layer_leaves_no_pin_and_nothing_in_the_kernel() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("all.pfw.gz");
    let mut child = Command::new(DC_TRACE)
        .args(["collect", "-o"])
        .arg(&output)
        .args(["--layers", "all", "--flush-interval", "200ms", "--"])
        .args(["sh", "-c", "echo x > /dev/null; sleep 60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let partial = dir
        .path()
        .join(format!("all.pfw.gz.{}.partial", child.id()));
    // The command runs once every layer is attached; its openat of /dev/null is in the trace.
    wait_for("the command's first call in the partial trace", || {
        partial.exists() && opens_where(&partial, |f| f == "/dev/null") > 0
    });
    let held = bpf_ids(child.id());
    assert!(held.iter().any(|(k, _)| *k == "map_id"), "{held:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    let pins: Vec<_> = std::fs::read_dir("/sys/fs/bpf")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let mine = format!("dc-trace-{}", child.id());
    assert!(!pins.iter().any(|p| *p == *mine), "{mine} left in bpffs");
    wait_for("the kernel to free what dc-trace held", || {
        remaining(&held).is_empty()
    });
}
