//! The start of `dc-trace collect` (needs root and BPF): what it refuses before it creates any file
//! (`--pid 0`, a pid that names no process, a `--uprobe` target that cannot be read or matches no
//! function, an unwritable `--summary-json`), the library's typed errors for the same, and a SIGINT
//! or SIGTERM that arrives before tracing begins, which leaves nothing and says so.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use datasets::error::chain;
use datasets::read::{ReadOptions, read_all};
use tracer::{Error, Remedy, Target};

const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");

/// `dc-trace collect --layers sys -o t.pfw.gz ARGS` in `dir`.
fn collect(dir: &Path) -> Command {
    let mut c = Command::new(DC_TRACE);
    c.current_dir(dir)
        .args(["collect", "--layers", "sys", "-o", "t.pfw.gz"]);
    c
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn refused_starts_name_the_option_exit_2_and_leave_no_file() {
    let _machine = test_support::machine();
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let pid_max = pid_max.trim();
    let testload = env!("CARGO_BIN_EXE_dc-trace-testload");
    let no_match = format!("{testload}:^no_such_function$");
    let cases: [(Vec<&str>, String); 5] = [
        (
            vec!["--pid", "0"],
            "--pid 0: not a process (process ids start at 1)".to_owned(),
        ),
        (
            vec!["--pid", pid_max],
            format!("--pid {pid_max}: no such process"),
        ),
        (
            vec!["--uprobe", "/nonexistent.so:.*", "--", "touch", "ran"],
            "--uprobe /nonexistent.so:.*: reading /nonexistent.so: No such file or directory \
             (os error 2); give --skip-missing-uprobes to trace without it"
                .to_owned(),
        ),
        (
            vec!["--uprobe", &no_match, "--", "touch", "ran"],
            format!(
                "--uprobe {testload}:^no_such_function$: no defined function matches; give \
                 --skip-missing-uprobes to trace without it"
            ),
        ),
        (
            vec!["--summary-json", "missing/s.json", "--", "touch", "ran"],
            "missing/s.json: cannot be created: the directory missing does not exist".to_owned(),
        ),
    ];
    for (args, error) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = collect(dir.path()).args(&args).output().unwrap();
        assert_eq!(stderr(&out), format!("dc-trace: {error}\n"), "{args:?}");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(entries(dir.path()), Vec::<String>::new(), "{args:?}");
    }
}

/// The same refusals from the library: each is about the process or the uprobe target, named in words with no flag
/// (the binary names the flag and adds the remedy's hint, as the test above checks).
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn the_library_refuses_them_as_typed_errors_that_name_no_flag() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("t.pfw.gz");
    let mut o = tracer::CollectOptions::command(&output, Vec::new());
    o.pids = vec![0];
    let e = tracer::collect(&o).unwrap_err();
    assert!(
        matches!(&e, Error::Target { target: Target::Pid(0), source } if matches!(**source, Error::PidZero)),
        "{e:?}"
    );
    assert_eq!(
        chain(&e),
        "process 0: not a process (process ids start at 1)"
    );
    assert_eq!(e.remedy(), None);

    let mut o = tracer::CollectOptions::command(&output, vec!["touch".into(), "ran".into()]);
    o.uprobes = vec![tracer::UprobeTarget::parse("/nonexistent.so:.*").unwrap()];
    let e = tracer::collect(&o).unwrap_err();
    assert!(
        matches!(&e, Error::Target { target: Target::Uprobe(t), source }
            if t == "/nonexistent.so:.*" && matches!(**source, Error::UprobeMissing { .. })),
        "{e:?}"
    );
    assert_eq!(e.remedy(), Some(Remedy::SkipMissingUprobes));
    assert_eq!(
        chain(&e),
        "uprobe /nonexistent.so:.*: reading /nonexistent.so: No such file or directory (os error 2)"
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn skip_missing_uprobes_traces_on_and_reports_the_target_refused() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let out = collect(dir.path())
        .args(["--uprobe", "/nonexistent.so:.*", "--skip-missing-uprobes"])
        .args(["--", "touch", "ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "\n  app        not attached; 1 refused (uprobe: reading /nonexistent.so: No such file \
             or directory (os error 2)): 0 events\n"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(entries(dir.path()), ["ran", "t.pfw.gz"]);
}

/// A signal that arrives before dc-trace installs its handlers: sent to it while it has the signal
/// blocked (a mask is inherited across exec), it is pending until the handlers take it, as one
/// sent in its first instant would be.
fn signalled_at_start(sig: i32) -> (Output, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = collect(dir.path());
    cmd.args(["--summary-json", "s.json", "--", "touch", "ran"])
        .stderr(Stdio::piped());
    // SAFETY: only sigprocmask and the set it reads, both async-signal-safe, run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    // SAFETY: kill takes no pointers.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let out = child.wait_with_output().unwrap();
    (out, entries(dir.path()))
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_signal_before_tracing_begins_leaves_nothing_and_says_so() {
    let _machine = test_support::machine();
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let (out, left) = signalled_at_start(sig);
        assert_eq!(
            stderr(&out),
            format!("dc-trace: interrupted by {name} before tracing began; nothing was written\n")
        );
        assert_eq!(out.status.code(), Some(128 + sig));
        assert_eq!(left, Vec::<String>::new());
    }
}

/// SIGINT as soon as the partial trace exists, while dc-trace loads and attaches: whether it lands
/// before tracing begins or just after is the machine's timing, and each has one outcome.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_signal_once_the_file_exists_leaves_nothing_or_a_complete_trace() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(DC_TRACE)
        .current_dir(dir.path())
        .args(["collect", "--layers", "all", "-o", "t.pfw.gz"])
        .args(["--", "sleep", "60"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let partial = dir.path().join(format!("t.pfw.gz.{}.partial", child.id()));
    while !partial.exists() {
        assert!(child.try_wait().unwrap().is_none(), "dc-trace ended early");
        std::thread::yield_now();
    }
    // SAFETY: kill takes no pointers.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let stderr = {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert_eq!(out.status.signal(), None);
        stderr(&out)
    };
    let trace = dir.path().join("t.pfw.gz");
    if trace.exists() {
        assert!(
            stderr.ends_with("  command exited with status 130\n"),
            "{stderr}"
        );
        let t = read_all(&[trace], ReadOptions::default()).unwrap();
        assert_eq!(t.stats.damage.len(), 0);
        assert_eq!(entries(dir.path()), ["t.pfw.gz"]);
    } else {
        assert_eq!(
            stderr,
            "dc-trace: interrupted by SIGINT before tracing began; nothing was written\n"
        );
        assert_eq!(entries(dir.path()), Vec::<String>::new());
    }
}
