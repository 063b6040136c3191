//! dc-report's page in headless Chromium, for a DataCrumbs trace and a DFTracer trace: no console message at all (the
//! page logs nothing, so any line is an error or a failed load, with the network unreachable), every section
//! heading in the DOM after the scripts ran, and a screenshot that is not blank. Pipelines'
//! `tests/it/diagnose_trace.rs` checks the page of a fresh `dc-trace collect` of dd the same way.
//!
//! The screenshots stay in `target/tmp/dc-report/` as the test's artefacts. Chromium and the checks are
//! `test_support::chromium`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use report::trace_report::sections::{JOB, OPERATIONS, PER_FILE, TIME, TIMELINE};
use test_support::chromium::{artefacts, check_page, dom, layout};

/// The test crate's `target/tmp`, which holds the pages in `dc-report/`.
const TMP: &str = env!("CARGO_TARGET_TMPDIR");
/// The sections every page has.
const HEADINGS: &[&str] = &[JOB, TIME, OPERATIONS, PER_FILE, TIMELINE];
const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/fixtures/");
const REPORT: &str = env!("CARGO_BIN_EXE_dc-report");

fn report(name: &str, traces: &[&Path], extra: &[&str]) -> PathBuf {
    let page = artefacts(TMP).join(format!("{name}.html"));
    let out = Command::new(REPORT)
        .args(traces)
        .args(extra)
        // The page stays in target/tmp for a person to open, and a later run replaces it.
        .arg("--force")
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "dc-report {name}: {out:?}");
    // The page's path first, then the verdict and findings.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        page.to_str()
    );
    page
}

#[test]
fn the_console_check_sees_errors() {
    let page = artefacts(TMP).join("console-error.html");
    fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let (_, console) = dom(&page);
    assert_eq!(console.len(), 1, "{console:?}");
    assert!(console[0].contains("undefinedFunction"), "{console:?}");
}

#[test]
fn the_layout_check_sees_findings_wider_than_the_screen() {
    let page = artefacts(TMP).join("overflow.html");
    fs::write(
        &page,
        format!(
            "<!DOCTYPE html><html><body><ol class=\"findings\"><li><pre>{}</pre><p class=\"todo\">x</p></li></ol></body></html>",
            "w".repeat(400)
        ),
    )
    .unwrap();
    let l = layout("overflow", &page);
    assert!(l.scroll > l.client, "{l:?}");
}

#[test]
fn datacrumbs_trace_page() {
    let trace = PathBuf::from(SHARED).join("datacrumbs/case-read-simple.trace.pfw.gz");
    let page = report("datacrumbs", &[&trace], &[]);
    check_page("datacrumbs", &page, HEADINGS);
}

#[test]
fn dftracer_trace_page() {
    let trace = PathBuf::from(SHARED).join("dftracer/dlio-unet3d.pfw.gz");
    let page = report("dftracer", &[&trace], &[]);
    check_page("dftracer", &page, HEADINGS);
}
