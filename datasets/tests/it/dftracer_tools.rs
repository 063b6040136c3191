//! DFTracer's own tools (PyPI `dftracer-utils`, installed by scripts/setup.sh) accept what
//! TraceWriter writes, and count the events we wrote. The tools must be present: a missing tool
//! fails this test.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::fixture;
use datasets::read::{ReadOptions, read_all};
use datasets::write::Header;

fn tool(name: &str) -> PathBuf {
    let venv = std::env::var_os("DC_VENV")
        .map_or_else(|| PathBuf::from("/opt/datacrumbs-venv"), PathBuf::from);
    let p = venv.join("bin").join(name);
    assert!(
        p.is_file(),
        "{} is missing: run scripts/setup.sh",
        p.display()
    );
    p
}

fn validate(file: &Path) -> String {
    let out = Command::new(tool("dftracer_validate"))
        .arg("--files")
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "dftracer_validate rejected {}: {stdout}{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn event_count(dir: &Path, index: &Path) -> u64 {
    let out = Command::new(tool("dftracer_event_count"))
        .arg("-d")
        .arg(dir)
        .arg("--index-dir")
        .arg(index)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn dftracer_tools_accept_our_files() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    // The DataCrumbs trace that dftracer_validate rejects (128-bit hashes), rewritten by us,
    // twice over so that it spans many BGZF members.
    let src = read_all(
        &[fixture("datacrumbs/case-read-simple.trace.pfw.gz")],
        ReadOptions::default(),
    )
    .unwrap();
    let out = traces.join("case-read-simple.pfw.gz");
    let stats =
        datasets::synth::repeat_trace(&src, 2, &out, Header::new("datasets-test", "0")).unwrap();
    assert_eq!(stats.events, 2 * 216_506);
    assert!(stats.members > 100);

    let report = validate(&out);
    let lines = stats.events + stats.metadata;
    assert!(
        report.contains(&format!("1 passed, 0 failed, {lines} lines")),
        "{report}"
    );
    assert_eq!(
        event_count(&traces, &dir.path().join("index")),
        stats.events
    );

    // What we read back agrees with both.
    let back = read_all(&[out], ReadOptions::default()).unwrap();
    assert_eq!(back.events.len() as u64, lines);
    assert!(
        back.events
            .iter()
            .filter_map(|e| e.args.fhash)
            .all(|h| h.as_u64().is_some() && back.strings.file(h).is_some())
    );
}
