//! `dc-features` refuses input that would give wrong numbers, and says what it dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use features::FeatureMatrix;

fn dc_features(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dc-features"))
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `n` reads on one thread, 100 µs apart, each holding one `lseek`.
fn calls(n: u64) -> Vec<String> {
    (0..n)
        .flat_map(|i| {
            let ts = 1000 + 100 * i;
            [
                format!(
                    r#"{{"id":{},"name":"lseek","cat":"STDIO","pid":7,"tid":7,"ts":{},"dur":5,"ph":"X"}}"#,
                    2 * i,
                    ts + 10
                ),
                format!(
                    r#"{{"id":{},"name":"read","cat":"POSIX","pid":7,"tid":7,"ts":{ts},"dur":50,"ph":"X","args":{{"size":4096}}}}"#,
                    2 * i + 1
                ),
            ]
        })
        .collect()
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

#[test]
fn exact_duplicate_events_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let once = calls(50);
    // Every line written twice, as a process that flushed its buffer twice does.
    let twice: Vec<String> = once.iter().flat_map(|l| [l.clone(), l.clone()]).collect();
    let p = write(dir.path(), "twice.pfw", &twice);
    let out = dir.path().join("m.csv");
    let run = dc_features(&["build", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        text(&run.stderr),
        format!(
            "dc-features: 100 events from 1 file(s) (100 exact duplicate event(s) dropped) -> 50 rows x 2 feature \
             columns in {}\ndc-features: 0 event(s) outside every row, in 0 no-call row(s) (one per thread) -> {}\n",
            out.display(),
            dir.path().join("m.no-call.csv").display()
        )
    );
    let m = FeatureMatrix::read(&out).unwrap();
    assert_eq!(m.n_rows(), 50);
    assert!(m.dur_ns.iter().all(|&d| d == 50_000));
    let lseek = m.column("STDIO::lseek").unwrap();
    assert!(
        lseek.values.iter().all(|&v| v == 5_000.0),
        "{:?}",
        lseek.values
    );
    assert!(m.column("POSIX::read").is_none());
}

#[test]
fn a_negative_size_is_refused_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = calls(3);
    lines[3] = lines[3].replace(r#""size":4096"#, r#""size":-4096"#);
    let p = write(dir.path(), "neg.pfw", &lines);
    let out = dir.path().join("m.csv");
    let run = dc_features(&["build", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        text(&run.stderr),
        format!(
            "dc-features: {}:4: field `args.size`: a byte count cannot be negative, found -4096\n",
            p.display()
        )
    );
    assert!(!out.exists());
}

#[test]
fn a_row_layer_or_operation_the_input_lacks_is_refused_with_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "t.pfw", &calls(3));
    let out = dir.path().join("m.csv");
    let build = |extra: &[&str]| {
        let mut args = vec!["build", p.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend(extra);
        dc_features(&args)
    };
    let run = build(&["--rows", "nosuchlayer"]);
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        text(&run.stderr),
        "dc-features: row layer `nosuchlayer`: no event of the input is of this layer; the layers the input has: \
         POSIX, STDIO\n"
    );
    let run = build(&["--ops", "bogus"]);
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        text(&run.stderr),
        "dc-features: operation `bogus`: no call of the row layer(s) sys, POSIX in the input is of these \
         operations; the operations of these layers the input has: read\n"
    );
    let run = build(&["--rows", "STDIO:bogus,nope"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        text(&run.stderr).contains("operation `bogus`, `nope`: no call of the row layer(s) STDIO")
    );
    assert!(!out.exists());
    // A layer the input has, with one of its operations, gives rows.
    let run = build(&["--rows", "STDIO:lseek"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(FeatureMatrix::read(&out).unwrap().n_rows(), 3);
}

#[test]
fn an_empty_gzip_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.pfw.gz");
    std::fs::write(&zero, b"").unwrap();
    let nothing = dir.path().join("nothing.pfw.gz");
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::fs::write(&nothing, gz.finish().unwrap()).unwrap();
    let out = dir.path().join("m.csv");
    for (p, what) in [
        (
            &zero,
            "an empty file, not gzip data (0 bytes); a trace was expected",
        ),
        (
            &nothing,
            "gzip data that holds nothing (0 bytes of text); a trace was expected",
        ),
    ] {
        for cmd in ["build", "convert"] {
            let run = dc_features(&[cmd, p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
            assert_eq!(run.status.code(), Some(1), "{cmd}");
            assert_eq!(
                text(&run.stderr),
                format!("dc-features: {}: {what}\n", p.display())
            );
        }
    }
}

#[test]
fn progress_shows_on_a_terminal_whatever_the_input_size_and_stays_off_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "t.pfw", &calls(3));
    let out = dir.path().join("m.csv");
    let summary = format!(
        "dc-features: 6 events from 1 file(s) -> 3 rows x 2 feature columns in {}\ndc-features: 0 event(s) outside \
         every row, in 0 no-call row(s) (one per thread) -> {}\n",
        out.display(),
        dir.path().join("m.no-call.csv").display()
    );
    let args = [
        "build",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
    ];
    // stderr is a pipe: the summary alone.
    assert_eq!(text(&dc_features(&args).stderr), summary);
    // stderr is a terminal (script(1) gives the command one): the spinner is drawn, then cleared.
    let command = format!("{} {}", env!("CARGO_BIN_EXE_dc-features"), args.join(" "));
    let run = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let screen = text(&run.stdout);
    assert!(screen.contains("reading"), "{screen:?}");
    assert!(
        screen.ends_with(&summary.replace('\n', "\r\n")),
        "{screen:?}"
    );
}

#[test]
fn an_output_in_a_missing_directory_is_named_as_the_user_gave_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "t.pfw", &calls(3));
    let missing = dir.path().join("missing");
    for (cmd, name) in [
        ("build", "m.parquet"),
        ("build", "m.jsonl"),
        ("convert", "e.parquet"),
    ] {
        let out = missing.join(name);
        let run = dc_features(&[cmd, p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(run.status.code(), Some(1), "{cmd} {name}");
        assert_eq!(
            text(&run.stderr),
            format!(
                "dc-features: {}: cannot be created: the directory {} does not exist\n",
                out.display(),
                missing.display()
            ),
            "{cmd} {name}"
        );
    }
    assert!(!missing.exists());
}
