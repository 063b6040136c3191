//! `--cgroup`: a cgroup and its descendants are traced, a sibling cgroup is not. Needs root, BPF
//! and a cgroup v2 hierarchy; it fails (never skips) where they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use datasets::read::{ReadOptions, read_all};
use datasets::vocab::TraceScope;
use test_support::oracle::bpf_fds;
use tracer::{CollectOptions, Layer, LayerSelection, collect};

const TESTLOAD: &str = env!("CARGO_BIN_EXE_dc-trace-testload");
const BLOCKS: i64 = 4;
const BLOCK: i64 = 8192;
/// Links dc-trace makes for the scope (fork, exit, exec, rename) and sys (enter, exit, io_uring's submit, file
/// and completion; Linux AIO rides on enter and exit) layers: the workload starts once all are attached.
const LINKS: usize = 9;
/// How long attaching may take before the test fails.
const ATTACH: Duration = Duration::from_secs(60);

/// Where the cgroup v2 hierarchy is mounted, from /proc/self/mountinfo.
fn cgroup2_root() -> PathBuf {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            right
                .starts_with("cgroup2 ")
                .then(|| PathBuf::from(left.split(' ').nth(4).unwrap()))
        })
        .expect("a cgroup v2 hierarchy is mounted")
}

/// Cgroups made for the test, removed (deepest first) when it ends.
struct Cgroups(Vec<PathBuf>);

impl Cgroups {
    fn make(&mut self, path: PathBuf) -> PathBuf {
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        self.0.push(path.clone());
        path
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            let _ = std::fs::remove_dir(p);
        }
    }
}

fn bpf_links() -> usize {
    bpf_fds()
        .iter()
        .filter(|(k, _)| k.starts_with("anon_inode:bpf_link"))
        .map(|(_, n)| n)
        .sum()
}

/// Whether this process has a SIGINT handler (dc-trace installs one once it runs).
fn catches_sigint() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .unwrap();
    mask & (1 << (libc::SIGINT - 1)) != 0
}

/// The test workload, moved into `cgroup` before it execs; returns its pid once it is done.
fn workload_in(cgroup: &Path, dir: &Path) -> u32 {
    let mut child = Command::new("sh")
        .args([
            "-c",
            r#"echo $$ > "$0/cgroup.procs" && exec "$@""#,
            cgroup.to_str().unwrap(),
            TESTLOAD,
            dir.to_str().unwrap(),
            &BLOCKS.to_string(),
            &BLOCK.to_string(),
        ])
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(child.wait().unwrap().success());
    pid
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn traces_a_cgroup_and_its_descendants_only() {
    let _machine = test_support::machine();
    let root = cgroup2_root();
    let tag = std::process::id();
    let mut cgroups = Cgroups(Vec::new());
    let traced = cgroups.make(root.join(format!("dc-trace-test-{tag}")));
    let sub = cgroups.make(traced.join("sub"));
    let sibling = cgroups.make(root.join(format!("dc-trace-other-{tag}")));

    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner");
    let outer = dir.path().join("outer");
    std::fs::create_dir(&inner).unwrap();
    std::fs::create_dir(&outer).unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let mut opts = CollectOptions::command(&output, Vec::new());
    opts.cgroup = Some(traced.clone());
    opts.layers = LayerSelection::only(&[Layer::Sys]);

    assert_eq!(bpf_links(), 0);
    let collector = std::thread::spawn(move || collect(&opts));
    // Attached once its links exist; it stops on SIGINT, as on Ctrl-C.
    let start = Instant::now();
    while bpf_links() < LINKS {
        assert!(
            start.elapsed() < ATTACH,
            "dc-trace did not attach within {ATTACH:?}"
        );
        assert!(
            !collector.is_finished(),
            "dc-trace stopped before it attached"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let inside = workload_in(&sub, &inner);
    let outside = workload_in(&sibling, &outer);
    while !catches_sigint() {
        assert!(
            start.elapsed() < ATTACH,
            "dc-trace did not handle SIGINT within {ATTACH:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    unsafe { libc::kill(std::process::id() as i32, libc::SIGINT) };
    let summary = collector
        .join()
        .unwrap()
        .expect("BPF must work on this machine");
    assert_eq!(summary.scope, TraceScope::Cgroup);
    assert_eq!(summary.drops, 0);
    assert_eq!(bpf_links(), 0);

    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    let ev = &trace.events;
    let pids: std::collections::BTreeSet<u64> = ev
        .iter()
        .filter(|e| e.cat == "sys")
        .map(|e| e.pid)
        .collect();
    assert_eq!(pids, [inside as u64].into());
    let raw = inner.join("raw.dat");
    let file = ev
        .iter()
        .find(|e| e.name == "FH" && e.args.name.as_deref() == Some(raw.to_str().unwrap()))
        .and_then(|e| e.args.value)
        .expect("FH of the inner raw.dat");
    let writes: Vec<i64> = ev
        .iter()
        .filter(|e| e.name == "write" && e.args.fhash == Some(file))
        .map(|e| e.args.size.unwrap())
        .collect();
    assert_eq!(writes, vec![BLOCK; BLOCKS as usize]);
    let preads = ev
        .iter()
        .filter(|e| e.name == "pread64" && e.args.fhash == Some(file))
        .count();
    assert_eq!(preads, 2 * BLOCKS as usize);
    assert!(!ev.iter().any(|e| e.pid == outside as u64));
    // The tracer's helper timed its calls in the cgroup, and none of its events is in the trace (above).
    let end = ev
        .iter()
        .filter_map(datasets::limits::Limits::from_event)
        .map(Result::unwrap)
        .next_back()
        .unwrap();
    let cost = end
        .per_call
        .expect("the cost per call, measured in the cgroup");
    assert!(
        cost.events >= cost.batches * cost.calls_per_batch,
        "{cost:?}"
    );
}
