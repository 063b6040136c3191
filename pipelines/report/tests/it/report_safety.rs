//! What `dc-report` does with the page and the CSV it writes, as dc-trace and dc-features do with theirs:
//! an existing file is kept unless `--force`, a symbolic link is never written through, the files are
//! mode 0640, a run that fails (an output that cannot be made, a bad input, a full disk) leaves no file
//! and names the path the user gave. It needs no privilege: an unprivileged user writes the page.

use std::os::unix::fs::{MetadataExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);

fn dc_report(page: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dc-report"));
    c.arg(TRACE)
        .arg("-o")
        .arg(page)
        .args(extra)
        .env_remove("SUDO_UID")
        .env_remove("SUDO_GID");
    c
}

fn run(page: &Path, extra: &[&str]) -> Output {
    dc_report(page, extra).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("r.html"), dir.join("r.files.csv"))
}

#[test]
fn an_existing_page_or_csv_is_kept_unless_forced_and_files_are_mode_0640() {
    let dir = tempfile::tempdir().unwrap();
    let (page, csv) = paths(dir.path());
    for (mine, name) in [(&page, "r.html"), (&csv, "r.files.csv")] {
        std::fs::write(mine, "mine").unwrap();
        let out = run(&page, &[]);
        assert!(!out.status.success());
        assert_eq!(
            stderr(&out),
            format!(
                "dc-report: {}: already exists; give --force to replace it\n",
                mine.display()
            )
        );
        assert_eq!(names(dir.path()), [name]);
        assert_eq!(std::fs::read_to_string(mine).unwrap(), "mine");
        std::fs::remove_file(mine).unwrap();
    }

    std::fs::write(&csv, "mine").unwrap();
    std::fs::write(&page, "mine").unwrap();
    let out = run(&page, &["--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        Some(page.to_str().unwrap())
    );
    assert_eq!(names(dir.path()), ["r.files.csv", "r.html"]);
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    assert!(
        std::fs::read_to_string(&csv)
            .unwrap()
            .starts_with("layer,file,bytes_read,")
    );
    for f in [&page, &csv] {
        let mode = std::fs::metadata(f).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o640, "{}", f.display());
    }
}

#[test]
fn a_symbolic_link_is_never_written_through_for_the_page_or_the_csv() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let (page, csv) = paths(dir.path());
    symlink(&victim, &page).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let out = run(&page, extra);
        assert!(!out.status.success());
        assert_eq!(
            stderr(&out),
            format!(
                "dc-report: {}: is a symbolic link; an output is never written through or over one\n",
                page.display()
            )
        );
    }
    std::fs::remove_file(&page).unwrap();
    symlink(&victim, &csv).unwrap();
    let out = run(&page, &["--force"]);
    assert_eq!(
        stderr(&out),
        format!(
            "dc-report: {}: is a symbolic link; an output is never written through or over one\n",
            csv.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(names(dir.path()), ["r.files.csv", "victim"]);
}

#[test]
fn a_run_that_fails_leaves_no_file_and_names_the_path_given() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("nowhere/r.html");
    let out = run(&page, &[]);
    assert_eq!(
        stderr(&out),
        format!(
            "dc-report: {}: cannot be created: the directory {} does not exist\n",
            page.display(),
            dir.path().join("nowhere").display()
        )
    );

    let notes = dir.path().join("notes.pfw");
    std::fs::write(&notes, "hello\n").unwrap();
    let (page, _) = paths(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_dc-report"))
        .arg(&notes)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with(&format!("dc-report: {}:1:", notes.display())),
        "{}",
        stderr(&out)
    );
    assert_eq!(names(dir.path()), ["notes.pfw"]);
}

#[test]
fn a_full_disk_leaves_no_page_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (page, _) = paths(dir.path());
    let mut cmd = dc_report(&page, &[]);
    // SAFETY: between fork and exec the child only calls two async-signal-safe functions.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: 16 << 10,
                rlim_max: 16 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        format!(
            "dc-report: {}: File too large (os error 27)\n",
            page.display()
        )
    );
    assert!(names(dir.path()).is_empty());
}

#[test]
fn the_help_describes_dc_report() {
    let out = Command::new(env!("CARGO_BIN_EXE_dc-report"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        Some(
            "One self-contained HTML page summarizing traces (datacrumbs, DataCrumbs, DFTracer), and its per-file table as CSV"
        )
    );
}

/// `nobody`, whom a root test run becomes before dc-report starts; a test run by a user stays that user.
const NOBODY: u32 = 65534;

#[test]
fn an_unprivileged_user_writes_the_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let (page, csv) = paths(dir.path());
    let mut cmd = dc_report(&page, &[]);
    // SAFETY: between fork and exec the child only calls async-signal-safe functions.
    unsafe {
        cmd.pre_exec(|| {
            if libc::geteuid() == 0
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(NOBODY) != 0
                    || libc::setuid(NOBODY) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let writer = if unsafe { libc::geteuid() } == 0 {
        NOBODY
    } else {
        unsafe { libc::geteuid() }
    };
    for f in [&page, &csv] {
        let meta = std::fs::metadata(f).unwrap();
        assert_eq!(meta.uid(), writer, "{}", f.display());
        assert!(meta.len() > 0, "{}", f.display());
    }
}
