//! dc-report's summary against an independent oracle (`tests/data/summary_oracle.py`, Python's json module over
//! the same files), and what it does with bad input: a page that says what is missing, or a clear error.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use datasets::output::Existing;
use datasets::write::{Header, TraceWriter};
use datasets::{Args, Event, Phase, Remedy};
use report::diagnose::inputs::LoadError;
use report::error::WriteError;
use report::summary::TraceSummary;
use report::trace_report::{self, TraceReportOptions};
use serde_json::Value;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/fixtures/");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
const REPORT: &str = env!("CARGO_BIN_EXE_dc-report");

fn check_against_oracle(trace: &str, fixture: &str) {
    let s = TraceSummary::scan(
        &[PathBuf::from(SHARED).join(trace)],
        Default::default(),
        |_| {},
    )
    .unwrap();
    let oracle: Value =
        serde_json::from_str(&fs::read_to_string(Path::new(DATA).join(fixture)).unwrap()).unwrap();
    let events: BTreeMap<String, u64> = s
        .events
        .iter()
        .map(|(l, phases)| (l.clone(), phases.values().sum()))
        .collect();
    let want: BTreeMap<String, u64> = oracle["events"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(events, want);
    let rows = s.file_rows();
    assert_eq!(rows.len(), oracle["files"].as_object().unwrap().len());
    for (layer, file, st) in rows {
        let o = &oracle["files"][format!("{layer}\t{file}")];
        let got = [
            st.ops,
            st.reads,
            st.writes,
            st.bytes_read,
            st.bytes_written,
            st.time_ns,
        ];
        let want = [
            "ops",
            "reads",
            "writes",
            "bytes_read",
            "bytes_written",
            "time_ns",
        ]
        .map(|k| {
            o[k].as_u64()
                .unwrap_or_else(|| panic!("{layer} {file}: no {k}"))
        });
        assert_eq!(got, want, "{layer} {file}");
    }
}

#[test]
fn dftracer_summary_matches_the_oracle() {
    check_against_oracle("dftracer/dlio-unet3d.pfw.gz", "dlio-unet3d.summary.json");
}

#[test]
fn datacrumbs_summary_matches_the_oracle() {
    check_against_oracle(
        "datacrumbs/case-read-simple.trace.pfw.gz",
        "case-read-simple.summary.json",
    );
}

fn run(traces: &[&Path], page: &Path) -> std::process::Output {
    Command::new(REPORT)
        .args(traces)
        .arg("-o")
        .arg(page)
        .output()
        .unwrap()
}

#[test]
fn a_trace_without_events_gives_a_page_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("empty.pfw");
    TraceWriter::create(&trace, Header::new("test", "0"))
        .unwrap()
        .finish(Vec::new())
        .unwrap();
    let page = dir.path().join("empty.html");
    let out = run(&[&trace], &page);
    assert!(out.status.success(), "{out:?}");
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.contains("The traces hold no events"), "{html}");
    assert!(html.contains("No calls: there is no time to split."));
    assert!(html.contains("No read or write call moved bytes."));
    assert_eq!(
        fs::read_to_string(dir.path().join("empty.files.csv")).unwrap(),
        "layer,file,bytes_read,bytes_written,reads,writes,ops,time_ns,bandwidth_mibs,sequential_share\n"
    );
}

#[test]
fn a_trace_without_io_calls_gives_a_page_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sched.pfw.gz");
    let mut w = TraceWriter::create(&trace, Header::new("test", "0")).unwrap();
    for i in 0..3u64 {
        w.write(&Event {
            id: None,
            name: "off_cpu".into(),
            cat: "sched".into(),
            ph: Phase::Complete,
            pid: 7,
            tid: 7,
            ts_ns: 1_000_000 * i,
            dur_ns: 500,
            args: Args::default(),
        })
        .unwrap();
    }
    w.finish(Vec::new()).unwrap();
    let page = dir.path().join("sched.html");
    let out = run(&[&trace], &page);
    assert!(out.status.success(), "{out:?}");
    let html = fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<td>sched</td><td class=\"n\" data-v=\"3\">3</td>"),
        "{html}"
    );
    assert!(html.contains("No read or write calls with a size in the call layers"));
    assert!(html.contains("No calls on a named file in the call layers"));
}

#[test]
fn a_file_that_is_not_a_trace_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("notes.txt");
    fs::write(&trace, "hello\n").unwrap();
    let page = dir.path().join("notes.html");
    let out = run(&[&trace], &page);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.txt:1"), "{err}");
    assert!(!page.exists());
    let missing = dir.path().join("missing.pfw");
    let out = run(&[&missing], &page);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.pfw"));
}

fn write(
    traces: &[PathBuf],
    page: &Path,
    summaries: Vec<PathBuf>,
) -> Result<(), trace_report::Error> {
    trace_report::write(&TraceReportOptions {
        traces: traces.to_vec(),
        read: Default::default(),
        output: page.to_path_buf(),
        existing: Existing::Refuse,
        baseline: Vec::new(),
        json: None,
        summaries,
        progress: false,
    })
    .map(|_| ())
}

/// The library's errors are typed: each names its file, keeps what would get past it (the flag the binary names),
/// and the binary prints the whole chain with that flag.
#[test]
fn errors_name_their_file_and_what_gets_past_them() {
    let dir = tempfile::tempdir().unwrap();
    let whole =
        fs::read(Path::new(SHARED).join("datacrumbs/case-read-simple.trace.pfw.gz")).unwrap();
    let cut = dir.path().join("cut.pfw.gz");
    fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let page = dir.path().join("cut.html");
    let e = write(std::slice::from_ref(&cut), &page, Vec::new()).unwrap_err();
    assert!(
        matches!(
            &e,
            trace_report::Error::Load(LoadError::Trace(datasets::Error::Damaged { path, .. })) if *path == cut
        ),
        "{e:?}"
    );
    assert_eq!(e.remedy(), Some(Remedy::Salvage));
    let out = run(&[&cut], &page);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.starts_with(&format!("dc-report: {}: damaged gzip data", cut.display())),
        "{err}"
    );
    assert!(err.contains("--salvage"), "{err}");

    let trace = Path::new(SHARED).join("dftracer/posix-old.pfw");
    let summary = dir.path().join("summary.json");
    fs::write(&summary, "{\"probes\": [\n").unwrap();
    let e = write(std::slice::from_ref(&trace), &page, vec![summary.clone()]).unwrap_err();
    assert!(
        matches!(&e, trace_report::Error::NotSummary { path, .. } if *path == summary),
        "{e:?}"
    );
    let text = datasets::error::chain(&e);
    assert!(
        text.starts_with(&format!(
            "{}: not a summary dc-trace wrote (JSON): ",
            summary.display()
        )) && text.ends_with("line 2 column 0"),
        "{text}"
    );
    assert_eq!(e.remedy(), None);

    fs::write(&page, "").unwrap();
    let e = write(std::slice::from_ref(&trace), &page, Vec::new()).unwrap_err();
    assert!(
        matches!(&e, trace_report::Error::Write(WriteError::Output(datasets::Error::Exists { path })) if *path == page),
        "{e:?}"
    );
    assert_eq!(e.remedy(), Some(Remedy::Replace));
}

/// DFTracer's `FH` values are small integers that collide across processes, and two hosts' traces can hold the same
/// pid: each trace's hash names the file its own `FH` line gave, never another trace's.
#[test]
fn colliding_file_hashes_name_the_files_of_their_own_trace() {
    let dir = tempfile::tempdir().unwrap();
    let traces: Vec<PathBuf> = (0..3)
        .map(|i| {
            let path = dir.path().join(format!("rank{i}.pfw"));
            let pid = 100;
            fs::write(
                &path,
                format!(
                    concat!(
                        r#"{{"id":0,"name":"FH","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M","args":{{"name":"/out/rank{i}.dat","value":19179}}}}"#,
                        "\n",
                        r#"{{"id":1,"name":"write","cat":"POSIX","pid":{pid},"tid":{pid},"ts":10,"dur":5,"ph":"X","args":{{"fhash":19179,"size":{size},"ret":{size}}}}}"#,
                        "\n"
                    ),
                    pid = pid,
                    i = i,
                    size = 4096 * (i + 1)
                ),
            )
            .unwrap();
            path
        })
        .collect();
    let s = TraceSummary::scan(&traces, Default::default(), |_| {}).unwrap();
    let files: BTreeMap<String, u64> = s.files["POSIX"]
        .iter()
        .map(|(name, f)| (name.clone(), f.bytes_written))
        .collect();
    let want: BTreeMap<String, u64> = (0..3)
        .map(|i| (format!("/out/rank{i}.dat"), 4096 * (i + 1)))
        .collect();
    assert_eq!(files, want);
}
