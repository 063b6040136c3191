//! The answer (verdict and findings in words) on the shared fixtures: the terminal, the Markdown and the page carry
//! the diagnosis' findings, every one, in its order; dc-report prints it in at most 25 lines, with escape codes only
//! on a terminal or when asked.

use std::path::{Path, PathBuf};
use std::process::Command;

use report::answer::{Answer, Severity, markdown, terminal};
use report::diagnose::inputs::load;
use report::diagnose::json::Diagnosis;
use report::html::{Page, escape};
use serde_json::Value;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/fixtures/");
const REPORT: &str = env!("CARGO_BIN_EXE_dc-report");

fn diagnosis(trace: &str) -> Diagnosis {
    let run = load(
        &[PathBuf::from(SHARED).join(trace)],
        &Default::default(),
        false,
    )
    .unwrap();
    Diagnosis::of(&run, None).unwrap()
}

/// Where each of `needles` is in `text`, each searched after the one before it.
fn in_order(text: &str, needles: &[String], what: &str) {
    let mut from = 0;
    for n in needles {
        let at = text[from..]
            .find(n.as_str())
            .unwrap_or_else(|| panic!("{what}: `{n}` missing after byte {from}:\n{text}"));
        from += at + n.len();
    }
}

fn strip(s: &str) -> String {
    anstream::adapter::strip_str(s).to_string()
}

#[test]
fn the_terminal_the_markdown_and_the_page_list_the_same_findings_in_order() {
    for trace in [
        "datacrumbs/case-read-simple.trace.pfw.gz",
        "darshan/nonmpi_dxt_anonymized.darshan",
        "dftracer/dlio-unet3d.pfw.gz",
    ] {
        let d = diagnosis(trace);
        assert!(!d.findings.is_empty(), "{trace}");
        let a = Answer::of(&d);
        // One item per finding of the JSON, in its order.
        let keys: Vec<String> = d
            .findings
            .iter()
            .map(|f| format!("{} / {} ({})", f.layer, f.reason.slug(), f.scope.label()))
            .collect();
        assert_eq!(
            a.items.iter().map(|i| i.key.clone()).collect::<Vec<_>>(),
            keys
        );
        let sentences: Vec<String> = a.items.iter().map(|i| i.sentence.clone()).collect();
        let all = strip(&terminal::render(&a, &terminal::Options::default()));
        let md = markdown::render(&a);
        let mut page = Page::new("t");
        report::answer::html::section(&mut page, &a, None);
        let html = page.finish();
        for (what, text, escaped) in [
            ("terminal", &all, false),
            ("markdown", &md, false),
            ("html", &html, true),
        ] {
            let needles: Vec<String> = std::iter::once(&a.verdict)
                .chain(&sentences)
                .map(|s| if escaped { escape(s) } else { s.clone() })
                .collect();
            in_order(text, &needles, what);
        }
        // Each renderer lists as many findings as the JSON has: one severity label per finding.
        let labels = |text: &str, prefix: &dyn Fn(&str) -> String| {
            text.lines()
                .filter(|l| {
                    [Severity::High, Severity::Medium, Severity::Low]
                        .iter()
                        .any(|s| l.starts_with(&prefix(s.label())))
                })
                .count()
        };
        assert_eq!(labels(&all, &|s| s.to_owned()), d.findings.len(), "{trace}");
        let numbered: usize = md
            .lines()
            .filter(|l| {
                l.split_once(". **")
                    .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
            })
            .count();
        assert_eq!(numbered, d.findings.len(), "{trace}");
        assert_eq!(
            html.matches("<li class=").count(),
            d.findings.len(),
            "{trace}"
        );
        // The evidence stays behind a disclosure, key by key as the JSON has it.
        for f in &d.findings {
            for k in f.evidence.keys() {
                assert!(html.contains(&format!("<code>{}</code>", escape(k))), "{k}");
            }
        }
    }
}

#[test]
fn a_layer_finding_says_its_calls_share_and_numbers_in_units() {
    let d = diagnosis("datacrumbs/case-read-simple.trace.pfw.gz");
    let a = Answer::of(&d);
    // tests/diagnose_shared.rs: the 78 reads of 1K-10K spend 790 µs in vfs of their 842 µs.
    let share = format!("{:.0}%", 790.0 / 842.0 * 100.0);
    assert_eq!(
        a.items[0].sentence,
        format!(
            "Reads of 1–10 KiB (78 calls) spend {share} of their time running kernel code in the vfs layer."
        )
    );
    assert_eq!(a.items[0].numbers[0].value, "790 µs");
    assert!(
        (2..=4).contains(&a.items[0].numbers.len()),
        "{:?}",
        a.items[0].numbers
    );
    // One thread: its calls never overlap, so the wall-clock time in calls is the I/O time.
    let job = d.job.as_ref().unwrap();
    assert_eq!(job.threads, Some(1));
    assert_eq!(job.wall_in_calls_ns, Some(job.io_time_ns));
    assert!(a.verdict.starts_with("The job ran "), "{}", a.verdict);
    assert!(a.verdict.contains(&format!("Main cause: reads of 1–10 KiB running kernel code in the vfs layer ({:.0}% of the job's time)", 790e3 / job.io_time_ns as f64 * 100.0)), "{}", a.verdict);
}

fn dc_report(dir: &Path, extra: &[&str]) -> (String, Value) {
    let json = dir.join("d.json");
    let out = Command::new(REPORT)
        .arg(PathBuf::from(SHARED).join("datacrumbs/case-read-simple.trace.pfw.gz"))
        .args(["--force", "-q", "-o"])
        .arg(dir.join("r.html"))
        .arg("--json")
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (String::from_utf8(out.stdout).unwrap(), v)
}

#[test]
fn dc_report_prints_the_answer_plain_on_a_pipe_and_in_colour_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, v) = dc_report(dir.path(), &[]);
    let lines: Vec<&str> = plain.lines().collect();
    assert_eq!(lines[0], dir.path().join("r.html").to_str().unwrap());
    assert!(lines.len() <= 25, "{plain}");
    assert!(!plain.contains('\x1b'), "{plain}");
    assert!(lines[1].starts_with("Verdict: The job ran "), "{plain}");
    let (never, _) = dc_report(dir.path(), &["--color", "never"]);
    assert_eq!(never, plain);
    let (colour, _) = dc_report(dir.path(), &["--color", "always"]);
    assert!(colour.contains("\x1b["), "{colour}");
    assert_eq!(strip(&colour), plain);
    let (all, _) = dc_report(dir.path(), &["--all"]);
    let listed = all
        .lines()
        .filter(|l| {
            ["HIGH ", "MEDIUM ", "LOW "]
                .iter()
                .any(|s| l.starts_with(s))
        })
        .count();
    assert_eq!(listed, v["findings"].as_array().unwrap().len());
}
