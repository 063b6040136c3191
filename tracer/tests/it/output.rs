//! The trace file (needs root and BPF for the failed start): an existing file or a symbolic link
//! at `-o` is refused before anything is loaded, a start that fails leaves no file, and a closed
//! stderr or stdout costs the text, not the trace.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use datasets::Phase;
use datasets::read::{ReadOptions, read_all};

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");

fn collect(output: &Path, extra: &[&str], command: &[&str]) -> Output {
    Command::new(DC_TRACE)
        .args(["collect", "--layers", "sys", "-o"])
        .arg(output)
        .args(extra)
        .arg("--")
        .args(command)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_failed_start_leaves_no_file() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let out = collect(&dir.path().join("x.pfw.gz"), &[], &["/no/such/cmd"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "dc-trace: starting `/no/such/cmd`: `/no/such/cmd` is not an executable file or in PATH\n"
    );
    assert_eq!(entries(dir.path()), 0);
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn an_existing_file_or_a_symlink_is_never_overwritten() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.path().join("link.pfw.gz");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let out = collect(&link, extra, &["true"]);
        assert_eq!(
            stderr(&out),
            format!(
                "dc-trace: {}: is a symbolic link; an output is never written through or over one\n",
                link.display()
            )
        );
    }
    let out = collect(&victim, &[], &["true"]);
    assert_eq!(
        stderr(&out),
        format!(
            "dc-trace: {}: already exists; give --force to replace it\n",
            victim.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(entries(dir.path()), 2);
}

/// A closed stderr (`dc-trace ... 2>&1 | true`) and a closed stdout (`dc-trace probes | head`)
/// lose what would have been printed, not the trace, its JSON summary or the exit status.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn closed_stderr_and_stdout_lose_the_text_not_the_run() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("t.pfw.gz");
    let json = dir.path().join("s.json");
    let mut child = Command::new(DC_TRACE)
        .args(["collect", "--layers", "sys", "-o"])
        .arg(&output)
        .arg("--summary-json")
        .arg(&json)
        .args(["--", "sh", "-c", "exit 3"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(3));
    let summary: tracer::Summary =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary.exit_status, Some(3));
    let t = read_all(&[output], ReadOptions::default()).unwrap();
    let events = t.events.iter().filter(|e| e.ph != Phase::Metadata).count();
    assert_eq!(events as u64, summary.events);
    assert_eq!(t.stats.damage.len(), 0);

    let mut probes = Command::new(DC_TRACE)
        .args(["probes", "--layers", "sys"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(probes.stdout.take());
    assert_eq!(probes.wait().unwrap().code(), Some(0));
}
