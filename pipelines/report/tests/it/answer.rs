//! The answer (verdict and findings in words) on the shared fixtures: the terminal, the Markdown and the page carry
//! the diagnosis' findings, every one, in its order; dc-report prints it in at most 25 lines, with escape codes only
//! on a terminal or when asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use features::FeatureMatrix;
use report::answer::{Answer, Item, Severity, markdown, terminal};
use report::diagnose::compare::Run;
use report::diagnose::inputs::load;
use report::diagnose::json::Diagnosis;
use report::diagnose::{FileCalls, Files, Finding, Scope, findings};
use report::html::{Page, escape};
use serde_json::Value;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/fixtures/");
const REPORT: &str = env!("CARGO_BIN_EXE_dc-report");

fn run(trace: &str) -> Run {
    load(
        &[PathBuf::from(SHARED).join(trace)],
        &Default::default(),
        false,
    )
    .unwrap()
}

fn diagnosis(trace: &str) -> Diagnosis {
    Diagnosis::of(&run(trace), None).unwrap()
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
            "Reads of 1–10 KiB of /proc/cpuinfo and 6 other files (78 calls) spend {share} of their time running kernel code in the vfs layer."
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
    assert!(a.verdict.contains(&format!("Main cause: reads of 1–10 KiB of /proc/cpuinfo and 6 other files running kernel code in the vfs layer ({:.0}% of the job's time)", 790e3 / job.io_time_ns as f64 * 100.0)), "{}", a.verdict);
}

/// The reads of `m` with sizes in `lo..hi` bytes: their count, and their calls per file.
fn reads_per_file(m: &FeatureMatrix, lo: i64, hi: i64) -> (u64, BTreeMap<&str, u64>) {
    let mut per = BTreeMap::new();
    let mut calls = 0;
    for r in 0..m.n_rows() {
        if m.op[r] == "read" && m.size[r].is_some_and(|b| (lo..hi).contains(&b)) {
            calls += 1;
            if let Some(f) = &m.file[r] {
                *per.entry(f.as_str()).or_default() += 1;
            }
        }
    }
    (calls, per)
}

/// The file with the most calls, and its calls.
fn top(per: &BTreeMap<&str, u64>) -> (String, u64) {
    let (f, n) = per.iter().max_by_key(|(_, n)| **n).unwrap();
    ((*f).to_owned(), *n)
}

/// The first finding on the reads of a size class, said.
fn item_on(f: &[Finding], size_class: &str) -> (Finding, Item) {
    let f = f
        .iter()
        .find(|f| matches!(&f.scope, Scope::Calls(k) if k.op == "read" && k.size_class.as_deref() == Some(size_class)))
        .unwrap_or_else(|| panic!("no finding on reads of {size_class}"))
        .clone();
    let it = Item::of(&f);
    (f, it)
}

/// The DataCrumbs fixture's reads of 1 to 10 KiB are mostly of one file, among others; its reads of 100 B to 1 KiB
/// are of many files, none holding half: the phrase names the first and how many others, or only how many. The
/// counts are the matrix's, per file, and the JSON keeps them with the full paths.
#[test]
fn a_kind_of_call_names_the_files_its_calls_touch() {
    let run = run("datacrumbs/case-read-simple.trace.pfw.gz");
    let f = run.findings();
    let (calls, per) = reads_per_file(&run.matrix, 1 << 10, 10 << 10);
    let (first, on_first) = top(&per);
    let named: u64 = per.values().sum();
    let share = on_first as f64 / named as f64;
    assert!((0.5..0.9).contains(&share), "{share}");
    let (finding, it) = item_on(&f, "1K-10K");
    assert!(
        it.sentence.starts_with(&format!(
            "Reads of 1–10 KiB of {first} and {} other files ({calls} calls) spend ",
            per.len() - 1
        )),
        "{}",
        it.sentence
    );
    let files = finding.files.unwrap();
    assert_eq!(
        (files.calls, files.with_file, files.distinct),
        (calls, named, per.len() as u64)
    );
    let mut listed: Vec<(&str, u64)> = per.iter().map(|(f, n)| (*f, *n)).collect();
    listed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    assert_eq!(
        files.top,
        listed
            .iter()
            .take(10)
            .map(|&(path, calls)| FileCalls {
                path: path.to_owned(),
                calls
            })
            .collect::<Vec<_>>()
    );

    let (calls, per) = reads_per_file(&run.matrix, 100, 1 << 10);
    assert!(top(&per).1 * 2 < per.values().sum(), "{per:?}");
    let (_, it) = item_on(&f, "100-1K");
    assert!(
        it.sentence.starts_with(&format!(
            "Reads of 100 B–1 KiB of {} files ({calls} calls) spend ",
            per.len()
        )),
        "{}",
        it.sentence
    );
}

/// The same trace's reads of /proc/cpuinfo and one read of another file: nearly all of one file, which the phrase
/// names alone.
#[test]
fn calls_nearly_all_of_one_file_name_it() {
    let m = run("datacrumbs/case-read-simple.trace.pfw.gz").matrix;
    let in_class =
        |r: usize| m.op[r] == "read" && m.size[r].is_some_and(|b| (1 << 10..10 << 10).contains(&b));
    let of = |r: usize, path: &str| m.file[r].as_deref() == Some(path);
    let other = (0..m.n_rows())
        .find(|&r| in_class(r) && !of(r, "/proc/cpuinfo") && m.file[r].is_some())
        .unwrap();
    let rows: Vec<usize> = (0..m.n_rows())
        .filter(|&r| of(r, "/proc/cpuinfo") || r == other)
        .collect();
    let m = m.select_rows(&rows);
    let (calls, per) = reads_per_file(&m, 1 << 10, 10 << 10);
    assert_eq!(per.len(), 2);
    let share = per["/proc/cpuinfo"] as f64 / calls as f64;
    assert!((0.9..1.0).contains(&share), "{share}");
    let (_, it) = item_on(&findings(&m, None), "1K-10K");
    assert!(
        it.sentence.starts_with(&format!(
            "Reads of 1–10 KiB of /proc/cpuinfo ({calls} calls) spend "
        )),
        "{}",
        it.sentence
    );
}

/// A long path keeps its last components in the sentence, and its whole in the JSON and the page's evidence.
#[test]
fn a_long_path_is_shortened_in_words_only() {
    const PMIX: &str = "/usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf";
    let m = run("datacrumbs/case-read-simple.trace.pfw.gz").matrix;
    let rows: Vec<usize> = (0..m.n_rows())
        .filter(|&r| m.file[r].as_deref() == Some(PMIX))
        .collect();
    let m = m.select_rows(&rows);
    let (calls, _) = reads_per_file(&m, 0, 100);
    let (f, it) = item_on(&findings(&m, None), "0-100");
    assert!(
        it.sentence.starts_with(&format!(
            "Reads of under 100 B of …/pmix2/share/pmix-mca-params.conf ({calls} calls) spend "
        )),
        "{}",
        it.sentence
    );
    assert_eq!(f.files.as_ref().map(|x| x.top[0].path.as_str()), Some(PMIX));
    let a = Answer {
        verdict: String::new(),
        comparison: None,
        items: vec![it],
        note: None,
    };
    let mut page = Page::new("t");
    report::answer::html::section(&mut page, &a, None);
    assert!(
        page.finish()
            .contains(&escape(&format!("Files: {PMIX} ({calls} calls).")))
    );
}

/// Calls that name no file keep the phrase they had: the trace's reads with the file column emptied, and Darshan's
/// counters, which hold no calls.
#[test]
fn calls_without_a_file_name_none() {
    let mut m = run("datacrumbs/case-read-simple.trace.pfw.gz").matrix;
    m.file = vec![None; m.n_rows()];
    let (calls, _) = reads_per_file(&m, 1 << 10, 10 << 10);
    let (f, it) = item_on(&findings(&m, None), "1K-10K");
    assert_eq!(f.files, None::<Files>);
    assert!(
        it.sentence
            .starts_with(&format!("Reads of 1–10 KiB ({calls} calls) spend ")),
        "{}",
        it.sentence
    );
    let d = diagnosis("darshan/nonmpi_dxt_anonymized.darshan");
    assert!(d.findings.iter().all(|f| f.files.is_none()));
    assert_eq!(
        Answer::of(&d).items[0].sentence,
        "100% of writes (9,830 of 9,830) are small."
    );
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
    // The JSON names the files of a finding's calls by their full paths.
    assert_eq!(v["findings"][0]["files"]["top"][0]["path"], "/proc/cpuinfo");
}
