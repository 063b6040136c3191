//! The README's two commands are the project's contract with a newcomer and with CI: keep them true.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn quick_start_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let section = readme
        .split("## Quick start")
        .nth(1)
        .expect("README has a '## Quick start' section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("Quick start has a ```sh block");
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn readme_has_exactly_two_commands_and_they_exist() {
    let commands = quick_start_commands();
    assert_eq!(
        commands.len(),
        2,
        "Quick start must hold two commands: {commands:?}"
    );
    for command in &commands {
        let script = root().join(command.split_whitespace().next().unwrap());
        let meta =
            std::fs::metadata(&script).unwrap_or_else(|e| panic!("{}: {e}", script.display()));
        assert!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0,
            "{} is not executable",
            script.display()
        );
        let text = std::fs::read_to_string(&script).unwrap();
        assert!(
            text.contains("scripts/setup.sh"),
            "{command} must set the machine up first"
        );
    }
}

#[test]
fn ci_runs_readme_command_two_word_for_word() {
    let commands = quick_start_commands();
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with('#') && !l.starts_with("set ") && !l.starts_with("cd ")
        })
        .collect();
    assert_eq!(
        ci_commands,
        [commands[1].as_str()],
        ".ci/run must run README command 2 and nothing else"
    );
}

#[test]
fn test_command_runs_fmt_clippy_and_tests() {
    let commands = quick_start_commands();
    let script = std::fs::read_to_string(root().join(&commands[1])).unwrap();
    for needle in [
        "cargo fmt --all -- --check",
        "cargo clippy --workspace --all-targets --release -- -D warnings",
        "cargo test --release",
    ] {
        assert!(
            script.contains(needle),
            "{} must run `{needle}`",
            commands[1]
        );
    }
}
