//! The README and `docs/` are what a newcomer reads first, so they must stay true as the code moves: every relative
//! link and `#anchor` in them leads to a file and a heading that exist, and every `dc-*` command line in a `sh` block
//! names a subcommand and flags that its binary's `--help` lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root")
}

/// README.md and every Markdown file under docs/, sorted.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files.sort();
    files
}

/// A path as the reader knows it: relative to the workspace root.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each line outside code fences, with its 1-based number.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// GitHub's anchor for a heading: lowercased, every character but letters, digits, `-`, `_` and spaces dropped,
/// spaces turned into `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a file's headings; a repeated heading gets `-1`, `-2`, ... as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(title) = line.strip_prefix('#').map(|t| t.trim_start_matches('#')) else {
            continue;
        };
        if !title.starts_with(' ') {
            continue;
        }
        let base = anchor(title);
        let n = seen.entry(base.clone()).or_default();
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// A line without its inline code spans, so that a `](` shown as code is not read as a link.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The targets of the Markdown links and images on a line.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = read(&file);
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, fragment) = match target.split_once('#') {
                    Some((p, f)) => (p, Some(f)),
                    None => (target.as_str(), None),
                };
                let resolved = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                let place = format!("{}:{number}", shown(&file));
                if !resolved.exists() {
                    broken.push(format!(
                        "{place}: `{target}`: {} does not exist",
                        shown(&resolved)
                    ));
                    continue;
                }
                if let Some(fragment) = fragment
                    && !anchors(&read(&resolved)).contains(fragment)
                {
                    broken.push(format!(
                        "{place}: `{target}`: {} has no heading whose anchor is `#{fragment}`",
                        shown(&resolved)
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 50,
        "only {checked} links found: is the parser reading the docs?"
    );
}

/// One `dc-*` invocation found in a `sh` block.
struct Invocation {
    place: String,
    binary: String,
    words: Vec<String>,
}

/// The `dc-*` invocations of a file's `sh` blocks: continuation lines joined, comments and redirections cut, each
/// `&&`/`;`/`|` part that starts with a `dc-*` binary (after `sudo`, env assignments and `target/release/`).
fn invocations(file: &Path) -> Vec<Invocation> {
    let text = read(file);
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    let mut start = 0;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if pending.is_empty() {
            start = i + 1;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let command = std::mem::take(&mut pending);
        let command = match command.find(" #") {
            Some(at) => &command[..at],
            None => command.as_str(),
        };
        for part in command
            .split("&&")
            .flat_map(|p| p.split(';'))
            .flat_map(|p| p.split('|'))
        {
            let mut words = part.split_whitespace().peekable();
            while let Some(w) = words.peek() {
                let is_env = w.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                });
                if *w == "sudo" || is_env {
                    words.next();
                } else {
                    break;
                }
            }
            let Some(first) = words.next() else { continue };
            let binary = first.strip_prefix("target/release/").unwrap_or(first);
            if !binary.starts_with("dc-") {
                continue;
            }
            let words = words
                .take_while(|w| !w.starts_with('>') && !w.starts_with('<') && !w.starts_with("2>"))
                .map(String::from)
                .collect();
            out.push(Invocation {
                place: format!("{}:{start}", shown(file)),
                binary: binary.to_string(),
                words,
            });
        }
    }
    out
}

/// The directory holding the workspace's binaries: target/release, the parent of this test's `deps/`.
fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/release")
        .to_path_buf()
}

fn help(binary: &Path, args: &[&str]) -> String {
    let out = Command::new(binary)
        .args(args)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    assert!(
        out.status.success(),
        "{} {} --help failed: {}",
        binary.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a `--help` lists under `Commands:`.
fn subcommands(help: &str) -> BTreeSet<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// Whether `--help` lists a flag (`--name` or `-x`), as a whole word.
fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        before.is_none_or(|c| c == ' ' || c == '[' || c == '\n')
            && after.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

#[test]
fn every_dc_command_line_parses() {
    let dir = binary_dir();
    let mut wrong = Vec::new();
    let mut checked = 0;
    let mut helps: BTreeMap<(String, String), String> = BTreeMap::new();
    for file in markdown_files() {
        for call in invocations(&file) {
            let binary = dir.join(&call.binary);
            assert!(
                binary.exists(),
                "{}: {} is not built: run `cargo build --release` (or `cargo test --release`, which builds every \
                 workspace binary) before this test",
                call.place,
                binary.display()
            );
            checked += 1;
            let top = helps
                .entry((call.binary.clone(), String::new()))
                .or_insert_with(|| help(&binary, &[]))
                .clone();
            let commands = subcommands(&top);
            let mut args = call.words.iter().map(String::as_str).peekable();
            let sub = if commands.is_empty() {
                String::new()
            } else {
                match args.next() {
                    Some(s) if commands.contains(s) => s.to_string(),
                    other => {
                        wrong.push(format!(
                            "{}: {} has no subcommand `{}` (it has: {})",
                            call.place,
                            call.binary,
                            other.unwrap_or(""),
                            commands.iter().cloned().collect::<Vec<_>>().join(", ")
                        ));
                        continue;
                    }
                }
            };
            let text = helps
                .entry((call.binary.clone(), sub.clone()))
                .or_insert_with(|| {
                    let args: Vec<&str> = if sub.is_empty() { vec![] } else { vec![&sub] };
                    help(&binary, &args)
                })
                .clone();
            for word in args.take_while(|w| *w != "--") {
                let flag = word.split('=').next().unwrap();
                let is_flag = flag.starts_with("--") || (flag.len() == 2 && flag.starts_with('-'));
                if is_flag && !lists_flag(&text, flag) {
                    wrong.push(format!(
                        "{}: `{} {sub}` has no flag `{flag}`",
                        call.place, call.binary
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "command lines that do not parse:\n{}",
        wrong.join("\n")
    );
    assert!(
        checked > 20,
        "only {checked} dc-* command lines found: is the parser reading the sh blocks?"
    );
}
