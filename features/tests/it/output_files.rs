//! What `dc-features` does with the files it writes and the traces it cannot read whole: an
//! existing output is kept unless `--force`, a symbolic link is never written through, files are
//! mode 0640 and belong to the user who ran sudo, a failed run leaves no file, each cause of an
//! error is printed once, and `--salvage` reads a cut trace and says what it lost.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TRACE: &str = "../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz";

fn trace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE)
}

fn dc_features(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dc-features"));
    c.args(args).env_remove("SUDO_UID").env_remove("SUDO_GID");
    c
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

#[test]
fn an_existing_output_is_kept_unless_forced_and_a_symlink_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.csv");
    let out_s = out.to_str().unwrap();
    let t = trace();
    let t = t.to_str().unwrap();
    std::fs::write(&out, "mine").unwrap();
    let run = dc_features(&["build", t, "-o", out_s]).output().unwrap();
    assert!(!run.status.success());
    assert_eq!(
        stderr(&run),
        format!("dc-features: {out_s}: already exists; give --force to replace it\n")
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");

    let run = dc_features(&["build", t, "-o", out_s, "--force"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("op,pid,tid,")
    );
    // The no-call table is written beside the matrix, the same way.
    let written = [
        "m.csv",
        "m.csv.meta.json",
        "m.no-call.csv",
        "m.no-call.csv.meta.json",
    ];
    assert_eq!(names(dir.path()), written);
    for f in written {
        let mode = std::fs::metadata(dir.path().join(f)).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o640, "{f}");
    }

    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.path().join("link.parquet");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let link_s = link.to_str().unwrap();
    let run = dc_features(&["convert", t, "-o", link_s, "--force"])
        .output()
        .unwrap();
    assert_eq!(
        stderr(&run),
        format!(
            "dc-features: {link_s}: is a symbolic link; an output is never written through or over one\n"
        )
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn under_sudo_the_output_belongs_to_the_invoking_user() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e.parquet");
    let t = trace();
    let run = dc_features(&["convert", t.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65533")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let meta = std::fs::metadata(&out).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (65534, 65533));
}

#[test]
fn a_failed_run_leaves_no_file_and_prints_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e.parquet");
    let missing = dir.path().join("no-such.pfw.gz");
    let run = dc_features(&[
        "convert",
        missing.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(
        stderr(&run),
        format!(
            "dc-features: {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    assert!(names(dir.path()).is_empty());
}

#[test]
fn a_cut_trace_is_refused_with_the_way_to_salvage_it_and_salvaged_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(trace()).unwrap();
    let cut_at = bytes.len() * 2 / 3;
    let cut = dir.path().join("cut.pfw.gz");
    std::fs::write(&cut, &bytes[..cut_at]).unwrap();
    let cut_s = cut.to_str().unwrap();
    let out = dir.path().join("e.parquet");
    let out_s = out.to_str().unwrap();

    let run = dc_features(&["convert", cut_s, "-o", out_s])
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(
        stderr(&run).contains("--salvage reads every intact part"),
        "{}",
        stderr(&run)
    );
    assert!(!out.exists());

    let run = dc_features(&["convert", cut_s, "-o", out_s, "--salvage"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let err = stderr(&run);
    let damage = err
        .lines()
        .find(|l| l.starts_with("dc-features: salvaged around damage: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        damage.contains(&format!("..{cut_at} unreadable")),
        "{damage}"
    );
}
