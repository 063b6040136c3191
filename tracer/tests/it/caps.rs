//! dc-trace without root (needs root to set up, and BPF): a copy of the binary given CAP_BPF,
//! CAP_PERFMON and CAP_DAC_READ_SEARCH with setcap, run as `nobody`, traces nobody's own test
//! workload exactly; it refuses `--all` and another user's pid; and a copy without CAP_PERFMON
//! refuses, naming it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use datasets::read::{ReadOptions, read_all};

use crate::TESTLOAD;

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");
const NOBODY: u32 = 65534;
const BLOCKS: usize = 20;
const BLOCK: usize = 4096;

struct Setup {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    work: PathBuf,
}

/// `bin/` (root's, with the binaries) and `work/` (nobody's) in a directory nobody can reach.
fn setup() -> Setup {
    tracer::bpf::tracefs::ensure_mounted().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("bin");
    let work = dir.path().join("work");
    std::fs::create_dir(&bin).unwrap();
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::chown(&work, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::copy(TESTLOAD, bin.join("dc-trace-testload")).unwrap();
    Setup {
        _dir: dir,
        bin,
        work,
    }
}

/// A copy of dc-trace holding `caps` (setcap syntax).
fn dc_trace_with(s: &Setup, name: &str, caps: &str) -> PathBuf {
    let copy = s.bin.join(name);
    std::fs::copy(DC_TRACE, &copy).unwrap();
    let out = Command::new("setcap")
        .arg(caps)
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    copy
}

fn as_nobody(program: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program)
        .args(args)
        .env_remove("SUDO_UID")
        .env_remove("SUDO_GID")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn an_ordinary_user_with_capabilities_traces_its_own_workload() {
    let _machine = test_support::machine();
    let s = setup();
    let dc_trace = dc_trace_with(&s, "dc-trace", "cap_bpf,cap_perfmon,cap_dac_read_search+ep");
    let trace = s.work.join("t.pfw.gz");
    let work = s.work.to_str().unwrap();
    let testload = s.bin.join("dc-trace-testload");
    let out = as_nobody(
        &dc_trace,
        &[
            "collect",
            "-o",
            trace.to_str().unwrap(),
            "--layers",
            "sys",
            "--",
            testload.to_str().unwrap(),
            work,
            &BLOCKS.to_string(),
            &BLOCK.to_string(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let meta = std::fs::metadata(&trace).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), NOBODY);

    let t = read_all(&[trace], ReadOptions::default()).unwrap();
    let raw = format!("{work}/raw.dat");
    let writes: Vec<Option<i64>> = t
        .events
        .iter()
        .filter(|e| e.cat == "sys" && e.name == "write")
        .filter(|e| t.strings.file_of(e) == Some(raw.as_str()))
        .map(|e| e.args.size)
        .collect();
    assert_eq!(writes, vec![Some(BLOCK as i64); BLOCKS]);
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn without_sys_admin_it_traces_only_your_own_processes() {
    let _machine = test_support::machine();
    let s = setup();
    let dc_trace = dc_trace_with(&s, "dc-trace", "cap_bpf,cap_perfmon,cap_dac_read_search+ep");
    let trace = s.work.join("t.pfw.gz");
    let trace = trace.to_str().unwrap();
    let out = as_nobody(&dc_trace, &["collect", "-o", trace, "--all"]);
    assert_eq!(
        stderr(&out),
        "dc-trace: --all: without CAP_SYS_ADMIN, dc-trace traces only your own processes; \
         trace a COMMAND, your --pid or your --cgroup\n"
    );
    let out = as_nobody(&dc_trace, &["collect", "-o", trace, "--pid", "1"]);
    assert_eq!(
        stderr(&out),
        "dc-trace: --pid 1: it belongs to uid 0, not to you (uid 65534); without CAP_SYS_ADMIN, \
         dc-trace traces only your own processes\n"
    );
    assert_eq!(std::fs::read_dir(&s.work).unwrap().count(), 0);
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_missing_capability_is_named() {
    let _machine = test_support::machine();
    let s = setup();
    let dc_trace = dc_trace_with(&s, "dc-trace-bpf-only", "cap_bpf,cap_dac_read_search+ep");
    let trace = s.work.join("t.pfw.gz");
    let out = as_nobody(
        &dc_trace,
        &["collect", "-o", trace.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(
        stderr(&out),
        format!(
            "dc-trace: dc-trace needs CAP_BPF, CAP_PERFMON, CAP_DAC_READ_SEARCH to trace (missing: \
             CAP_PERFMON); run it as root, or grant them to the binary once: {}\n",
            tracer::caps::SETCAP
        )
    );
}
