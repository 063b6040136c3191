//! Headless Chromium (Debian's `chromium`, from setup.sh) on dc-report's pages: the checks every page must pass, for
//! the tests of pages made from fixtures (dc-report's `tests/it/browser.rs`) and from fresh dc-trace traces
//! (dc-pipeline's `tests/it/diagnose_trace.rs`, which needs the tracer). The pages, their screenshots and measured
//! copies stay in `target/tmp/dc-report/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `dc-report/` in `target_tmp`, the test crate's `CARGO_TARGET_TMPDIR`, made if missing: where the tests write their
/// pages, for a person to open after the run.
pub fn artefacts(target_tmp: impl AsRef<Path>) -> PathBuf {
    let dir = target_tmp.as_ref().join("dc-report");
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
pub fn dom(page: &Path) -> (String, Vec<String>) {
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

/// The page laid out 1280 px wide and 900 px high, as measured in it (CSS pixels): the findings list's scroll and
/// client widths, the page's, the first recommendation's bottom edge, and the viewport's height; -1 where the page
/// has no findings.
#[derive(Debug, serde::Deserialize)]
pub struct Layout {
    pub scroll: f64,
    pub client: f64,
    pub page_scroll: f64,
    pub page_client: f64,
    pub todo_bottom: f64,
    pub inner_h: f64,
}

/// Lays `page` out at 1280 × 900 in Chromium: a copy of it beside it, `name.measure.html`, with a script that writes
/// its measurements into the DOM.
pub fn layout(name: &str, page: &Path) -> Layout {
    const MEASURE: &str = r#"<script>
window.addEventListener('load', () => {
  const ol = document.querySelector('ol.findings');
  const todo = document.querySelector('.todo');
  document.body.setAttribute('data-measure', JSON.stringify({
    scroll: ol ? ol.scrollWidth : -1, client: ol ? ol.clientWidth : -1,
    page_scroll: document.documentElement.scrollWidth, page_client: document.documentElement.clientWidth,
    todo_bottom: todo ? todo.getBoundingClientRect().bottom : -1, inner_h: window.innerHeight}));
});
</script>"#;
    let copy = page.with_file_name(format!("{name}.measure.html"));
    fs::write(&copy, fs::read_to_string(page).unwrap() + MEASURE).unwrap();
    let (dom, _) = chromium(&copy, &["--dump-dom", "--window-size=1280,900"]);
    let attr = dom
        .split("data-measure=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{name}: no measurement in the DOM"));
    serde_json::from_str(&attr.replace("&quot;", "\"")).unwrap()
}

/// Checks every page must pass, `headings` being the page's sections; returns the DOM. The screenshot is `name.png`
/// beside the page.
pub fn check_page(name: &str, page: &Path, headings: &[&str]) -> String {
    let html = fs::read_to_string(page).unwrap();
    // Self-contained: no element loads anything; the one link (Perfetto) is followed only when clicked.
    for loads in ["src=", "<link", "@import", "url("] {
        assert!(!html.contains(loads), "{name}: page contains {loads}");
    }
    let (dom, console) = dom(page);
    assert!(console.is_empty(), "{name}: console: {console:#?}");
    for h in headings {
        assert!(
            dom.contains(&format!(">{h}</h2>")),
            "{name}: no heading {h}"
        );
    }
    // At 1280 px the findings do not scroll sideways, nor does the page, and the first recommendation is on the
    // first screen.
    let l = layout(name, page);
    assert!(
        l.scroll <= l.client && l.page_scroll <= l.page_client,
        "{name}: {l:?}"
    );
    assert!(l.todo_bottom <= l.inner_h, "{name}: {l:?}");
    let (var, inked) = screenshot(page, &page.with_file_name(format!("{name}.png")));
    assert!(
        var > 100.0 && inked > 0.02,
        "{name}: blank screenshot ({var}, {inked})"
    );
    dom
}
