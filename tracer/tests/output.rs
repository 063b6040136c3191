//! The trace file (needs root and BPF for the failed start): an existing file or a symbolic link
//! at `-o` is refused before anything is loaded, and a start that fails leaves no file.

use std::path::Path;
use std::process::{Command, Output};

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
fn a_failed_start_leaves_no_file() {
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
fn an_existing_file_or_a_symlink_is_never_overwritten() {
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
