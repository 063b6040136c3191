//! dc-report's page in headless Chromium (Debian's `chromium`, from setup.sh), for a DataCrumbs trace, a DFTracer
//! trace and a fresh `dc-trace collect` of dd (as root): no console message at all (the page logs nothing, so any
//! line is an error or a failed load, with the network unreachable), every section heading in the DOM after the
//! scripts ran, a screenshot that is not blank, and dd's output file with the bytes dd wrote.
//!
//! The screenshots stay in `target/tmp/dc-report/` as the test's artefacts.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pipelines::trace_report::sections::{JOB, OPERATIONS, PER_FILE, TIME, TIMELINE};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/fixtures/");
const REPORT: &str = env!("CARGO_BIN_EXE_dc-report");

fn artefacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dc-report");
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs headless Chromium on `page` with `args` and the network unreachable; returns (stdout, console lines).
fn chromium(page: &Path, args: &[&str]) -> (String, Vec<String>) {
    let out = Command::new("timeout")
        .arg("180")
        .arg("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium (setup.sh installs it)");
    assert!(out.status.success(), "chromium: {out:?}");
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (String::from_utf8(out.stdout).unwrap(), console)
}

/// The DOM after scripts ran, and the console's lines.
fn dom(page: &Path) -> (String, Vec<String>) {
    chromium(page, &["--dump-dom"])
}

/// Screenshot of the top of the page; returns its pixels' luminance variance and the share of non-white pixels.
fn screenshot(page: &Path, png: &Path) -> (f64, f64) {
    let shot = format!("--screenshot={}", png.display());
    chromium(page, &[&shot, "--window-size=1200,1800"]);
    let mut reader = png::Decoder::new(std::io::BufReader::new(fs::File::open(png).unwrap()))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let lum: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| (p[0] as f64 + p[1] as f64 + p[2] as f64) / 3.0)
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    let inked = lum.iter().filter(|&&l| l < 250.0).count() as f64 / lum.len() as f64;
    (var, inked)
}

fn report(name: &str, traces: &[&Path], extra: &[&str]) -> PathBuf {
    let page = artefacts().join(format!("{name}.html"));
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
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        page.to_str().unwrap()
    );
    page
}

/// Checks every page must pass; returns the DOM.
fn check_page(name: &str, page: &Path) -> String {
    let html = fs::read_to_string(page).unwrap();
    // Self-contained: no element loads anything; the one link (Perfetto) is followed only when clicked.
    for loads in ["src=", "<link", "@import", "url("] {
        assert!(!html.contains(loads), "{name}: page contains {loads}");
    }
    let (dom, console) = dom(page);
    assert!(console.is_empty(), "{name}: console: {console:#?}");
    for h in [JOB, TIME, OPERATIONS, PER_FILE, TIMELINE] {
        assert!(
            dom.contains(&format!(">{h}</h2>")),
            "{name}: no heading {h}"
        );
    }
    let (var, inked) = screenshot(page, &artefacts().join(format!("{name}.png")));
    assert!(
        var > 100.0 && inked > 0.02,
        "{name}: blank screenshot ({var}, {inked})"
    );
    dom
}

#[test]
fn the_console_check_sees_errors() {
    let page = artefacts().join("console-error.html");
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
fn datacrumbs_trace_page() {
    let trace = PathBuf::from(SHARED).join("datacrumbs/case-read-simple.trace.pfw.gz");
    let page = report("datacrumbs", &[&trace], &[]);
    check_page("datacrumbs", &page);
}

#[test]
fn dftracer_trace_page() {
    let trace = PathBuf::from(SHARED).join("dftracer/dlio-unet3d.pfw.gz");
    let page = report("dftracer", &[&trace], &[]);
    check_page("dftracer", &page);
}

#[test]
fn dd_trace_page() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dd.out");
    let trace = dir.path().join("dd.pfw.gz");
    let command = vec![
        "dd".to_owned(),
        "if=/dev/zero".to_owned(),
        format!("of={}", file.display()),
        "bs=64K".to_owned(),
        "count=24".to_owned(),
        "status=none".to_owned(),
    ];
    let summary = tracer::collect(&tracer::CollectOptions::command(&trace, command)).unwrap();
    assert_eq!(summary.exit_status, Some(0));
    let summary_json = dir.path().join("summary.json");
    fs::write(&summary_json, serde_json::to_string(&summary).unwrap()).unwrap();
    let page = report(
        "dd",
        &[&trace],
        &["--summary", summary_json.to_str().unwrap()],
    );
    let dom = check_page("dd", &page);

    // The oracle: the size of the file dd created.
    let written = fs::metadata(&file).unwrap().len();
    assert_eq!(written, 24 * 65536);
    let row = regex::Regex::new(&format!(
        "<tr><td>sys</td><td>{}</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td>",
        regex::escape(file.to_str().unwrap())
    ))
    .unwrap();
    let cells = row
        .captures(&dom)
        .unwrap_or_else(|| panic!("no row for {} in the per-file table", file.display()));
    let n = |i: usize| cells[i].parse::<u64>().unwrap();
    // bytes read, bytes written, reads, writes
    assert_eq!((n(1), n(2), n(3), n(4)), (0, written, 0, 24));
    let csv = fs::read_to_string(artefacts().join("dd.files.csv")).unwrap();
    assert!(
        csv.contains(&format!("sys,\"{}\",0,{written},0,24,", file.display())),
        "{csv}"
    );
    // The probes dc-trace reported are on the page.
    assert!(dom.contains("<h3>Probes</h3>"));
    assert!(dom.contains("tracepoint"));
}
