//! Bad input: errors name the file, the line and the field; damaged gzip yields every complete
//! event before the damage; `skip_invalid` counts what it skips.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::fixture;
use datasets::read::{ReadOptions, TraceReader, read_all};
use datasets::write::{Header, TraceWriter};
use datasets::{Error, Event, InputError, Phase, TimeUnit};

fn collect(path: &Path, opts: ReadOptions) -> (Vec<Event>, Option<Error>) {
    let mut events = Vec::new();
    for b in TraceReader::open(&[path.to_path_buf()], opts).unwrap() {
        match b {
            Ok(b) => events.extend(b.events),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

fn write_text(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const GOOD: &str = r#"{"name":"a","cat":"sys","ph":"X","pid":1,"tid":1,"ts":1,"dur":2}"#;

#[test]
fn bad_line_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[\n{GOOD}\n{GOOD}\n{}\n{GOOD}\n",
        GOOD.replace("\"ts\":1", "\"ts\":\"soon\"")
    );
    let p = write_text(dir.path(), "bad.pfw", &text);
    let (events, err) = collect(&p, ReadOptions::default());
    assert_eq!(events.len(), 2);
    match err.unwrap() {
        Error::Parse(InputError {
            file, line, field, ..
        }) => {
            assert_eq!(
                (file, line, field.as_deref()),
                (p.clone(), Some(4), Some("ts"))
            );
        }
        other => panic!("{other}"),
    }
    let msg = read_all(std::slice::from_ref(&p), ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with(&format!("{}:4: field `ts`:", p.display())),
        "{msg}"
    );
}

#[test]
fn not_json_names_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_text(
        dir.path(),
        "bad.pfw",
        &format!("[\n{GOOD}\n{{\"name\": oops}}\n"),
    );
    let e = read_all(&[p], ReadOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::Parse(InputError { line: Some(3), ref field, .. }) if field.as_deref() == Some("-")),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let p = write_text(
        dir.path(),
        "bad.pfw",
        &format!("{GOOD}\n{}\n", GOOD.replace("\"ph\":\"X\",", "")),
    );
    let e = read_all(&[p], ReadOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::Parse(InputError { line: Some(2), ref field, .. }) if field.as_deref() == Some("ph")),
        "{e}"
    );
}

#[test]
fn skip_invalid_counts_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[\n{GOOD}\nnot json\n{GOOD}\n{}\n{GOOD}",
        GOOD.replace("\"pid\":1", "\"pid\":-4")
    );
    let p = write_text(dir.path(), "bad.pfw", &text);
    let opts = ReadOptions {
        skip_invalid: true,
        ..ReadOptions::default()
    };
    let t = read_all(&[p], opts).unwrap();
    assert_eq!(t.events.len(), 3);
    assert_eq!(t.stats.skipped, 2);
    assert_eq!(t.stats.lines, 6);
    assert_eq!(t.stats.skipped_examples.len(), 2);
    assert!(t.stats.skipped_examples[0].contains(":3: field `-`"));
    assert!(t.stats.skipped_examples[1].contains(":5: field `pid`"));
}

#[test]
fn missing_file_is_named() {
    let e = read_all(
        &[PathBuf::from("/nonexistent/x.pfw")],
        ReadOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/x.pfw: "), "{e}");
    let e = datasets::read::expand_globs(&["/nonexistent/*.pfw".into()]).unwrap_err();
    assert!(e.to_string().contains("matches no file"));
}

/// Cuts a file and checks that every complete line before the cut is read, then an error.
fn truncated(src: &Path, keep: usize, expect_offset: Option<u64>) {
    let bytes = std::fs::read(src).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.pfw.gz");
    std::fs::write(&p, &bytes[..keep]).unwrap();
    // The oracle: what plain gunzip recovers from the cut file, whole lines only.
    let mut text = Vec::new();
    let _ = std::io::Read::read_to_end(
        &mut flate2::read::MultiGzDecoder::new(&bytes[..keep]),
        &mut text,
    );
    let complete = &text[..text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)];
    let expect = complete
        .split(|&b| b == b'\n')
        .filter(|l| {
            let t = datasets::parse::trim_line(l);
            !t.is_empty() && t != b"[" && t != b"]"
        })
        .count();
    let (events, err) = collect(&p, ReadOptions::default());
    assert_eq!(events.len(), expect);
    assert!(expect > 0);
    match err.expect("truncation must be an error") {
        Error::Damaged {
            path, offset, line, ..
        } => {
            assert_eq!(path, p);
            assert_eq!(
                line,
                complete.iter().filter(|&&b| b == b'\n').count() as u64
            );
            if let Some(o) = expect_offset {
                assert_eq!(offset, o);
            }
        }
        other => panic!("{other}"),
    }
}

#[test]
fn truncated_single_member_gzip() {
    let src = fixture("dftracer/dlio-unet3d.pfw.gz");
    let len = std::fs::metadata(&src).unwrap().len() as usize;
    truncated(&src, len / 2, Some((len / 2) as u64));
    truncated(&src, len - 3, None);
}

#[test]
fn truncated_bgzf() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.pfw.gz");
    let mut w = TraceWriter::create(&p, Header::new("test", "0")).unwrap();
    let t = read_all(&[fixture("dftracer/posix-old.pfw")], ReadOptions::default()).unwrap();
    for _ in 0..20 {
        for e in &t.events {
            w.write(e).unwrap();
        }
    }
    w.finish(Vec::new()).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    // Find the member boundaries to cut inside the third member.
    let mut at = 0;
    let mut starts = Vec::new();
    while at < bytes.len() {
        starts.push(at);
        at += usize::from(u16::from_le_bytes([bytes[at + 16], bytes[at + 17]])) + 1;
    }
    assert!(starts.len() > 4);
    truncated(&p, starts[2] + 1000, Some(starts[2] as u64));
}

#[test]
fn corrupt_bgzf_member_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.pfw.gz");
    let mut w = TraceWriter::create(&p, Header::new("test", "0")).unwrap();
    let t = read_all(&[fixture("dftracer/posix-old.pfw")], ReadOptions::default()).unwrap();
    for _ in 0..5 {
        for e in &t.events {
            w.write(e).unwrap();
        }
    }
    w.finish(Vec::new()).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    let second = usize::from(u16::from_le_bytes([bytes[16], bytes[17]])) + 1;
    bytes[second + 40] ^= 0xff;
    std::fs::File::create(&p)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let (_, err) = collect(&p, ReadOptions::default());
    assert!(matches!(err, Some(Error::Damaged { offset, .. }) if offset == second as u64));
}

#[test]
fn lines_split_across_members_are_stitched() {
    // A BGZF file whose members cut lines anywhere, as bgzip would write it.
    let src = std::fs::read(fixture("dftracer/posix-old.pfw")).unwrap();
    let mut c = datasets::gz::compressor(6);
    let mut out = Vec::new();
    for piece in src.chunks(777) {
        datasets::gz::deflate_member(&mut c, piece, &mut out);
    }
    out.extend_from_slice(&datasets::gz::EOF_BLOCK);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("odd.pfw.gz");
    std::fs::write(&p, out).unwrap();
    let opts = ReadOptions {
        threads: 3,
        ..ReadOptions::default()
    };
    let t = read_all(&[p], opts).unwrap();
    let plain = read_all(&[fixture("dftracer/posix-old.pfw")], ReadOptions::default()).unwrap();
    assert_eq!(t.events, plain.events);
    assert_eq!(t.stats.lines, plain.stats.lines);
    assert_eq!(
        t.events.iter().filter(|e| e.ph == Phase::Complete).count(),
        1012
    );
    assert_eq!(t.stats.files[0].time_unit, TimeUnit::Us);
}

#[test]
fn our_lines_split_across_members_are_stitched() {
    // Our own lines (the fast path's shape) cut anywhere by members, including right before a
    // newline, read the same as the plain text.
    let src = read_all(
        &[fixture("datacrumbs/case-read-simple.trace.pfw.gz")],
        ReadOptions::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("ours.pfw");
    let header = Header::new("test", "0");
    datasets::synth::repeat_trace(&src, 1, &plain, header).unwrap();
    let text = std::fs::read(&plain).unwrap();
    let want = read_all(std::slice::from_ref(&plain), ReadOptions::default()).unwrap();
    assert!(want.events.len() > 200_000);
    let first_close = text.windows(2).position(|w| w == b"}\n").unwrap() + 1;
    for piece in [777, first_close, 65_000] {
        let mut c = datasets::gz::compressor(1);
        let mut out = Vec::new();
        for chunk in text.chunks(piece) {
            datasets::gz::deflate_member(&mut c, chunk, &mut out);
        }
        out.extend_from_slice(&datasets::gz::EOF_BLOCK);
        let p = dir.path().join(format!("cut-{piece}.pfw.gz"));
        std::fs::write(&p, out).unwrap();
        let opts = ReadOptions {
            threads: 3,
            ..ReadOptions::default()
        };
        let t = read_all(&[p], opts).unwrap();
        assert_eq!(t.stats.lines, want.stats.lines, "pieces of {piece}");
        assert!(t.events == want.events, "pieces of {piece}");
    }
}

#[test]
fn batches_are_in_file_order_with_line_numbers() {
    let p = fixture("dftracer/dlio-unet3d.pfw.gz");
    let oracle = common::Oracle::scan(&p);
    let ids: Vec<u64> = oracle
        .events
        .iter()
        .map(|e| common::Oracle::int(&e["id"]).unwrap())
        .collect();
    let mut seen = Vec::new();
    let mut last_line = 0;
    for b in TraceReader::open(std::slice::from_ref(&p), ReadOptions::default()).unwrap() {
        let b = b.unwrap();
        assert!(b.first_line > last_line);
        assert_eq!(&*b.source, p.as_path());
        last_line = b.first_line;
        seen.extend(b.events.iter().map(|e| e.id.unwrap()));
    }
    assert_eq!(seen, ids);
}

#[test]
fn a_negative_size_is_refused_in_every_dialect() {
    let dir = tempfile::tempdir().unwrap();
    // datacrumbs' own field order (the fast path), then DFTracer's string fields (the general path).
    for size in ["-400", r#""-400""#] {
        let bad = format!(
            r#"{{"id":1,"name":"read","cat":"sys","pid":1,"tid":1,"ts":1,"dur":2,"ph":"X","args":{{"size":{size}}}}}"#
        );
        let p = write_text(dir.path(), "neg.pfw", &format!("{GOOD}\n{bad}\n{GOOD}\n"));
        let err = read_all(std::slice::from_ref(&p), ReadOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}:2: field `args.size`: a byte count cannot be negative, found -400",
                p.display()
            )
        );
    }
}

#[test]
fn an_empty_gzip_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let zero = write_text(dir.path(), "zero.pfw.gz", "");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"").unwrap();
    let nothing = dir.path().join("nothing.pfw.gz");
    std::fs::write(&nothing, gz.finish().unwrap()).unwrap();
    let bgzf_eof = dir.path().join("eof.pfw.gz");
    std::fs::write(&bgzf_eof, datasets::gz::EOF_BLOCK).unwrap();
    for (p, what) in [
        (&zero, "an empty file, not gzip data (0 bytes)"),
        (&nothing, "gzip data that holds nothing (0 bytes of text)"),
        (&bgzf_eof, "gzip data that holds nothing (0 bytes of text)"),
    ] {
        let err = read_all(std::slice::from_ref(p), ReadOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: {what}; a trace was expected", p.display())
        );
    }
    // A plain empty file is an empty trace, as before.
    let plain = write_text(dir.path(), "empty.pfw", "");
    let t = read_all(&[plain], ReadOptions::default()).unwrap();
    assert_eq!((t.events.len(), t.stats.files.len()), (0, 1));
}

#[test]
fn repeated_events_with_ids_are_dropped_when_asked_and_counted_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let line = |id: u64, ts: u64| {
        format!(
            r#"{{"id":{id},"name":"read","cat":"sys","pid":1,"tid":1,"ts":{ts},"dur":2,"ph":"X"}}"#
        )
    };
    let no_id = GOOD.to_owned();
    // Ids 1 and 2 twice; one id-less line twice (DataCrumbs' identical microsecond events are distinct calls).
    let text = [
        line(1, 1),
        line(2, 5),
        line(1, 1),
        no_id.clone(),
        no_id,
        line(2, 5),
        line(3, 9),
    ]
    .join("\n");
    let a = write_text(dir.path(), "a.pfw", &(text.clone() + "\n"));
    let b = write_text(dir.path(), "b.pfw", &(text + "\n"));
    let paths = [a, b];
    let kept: usize = TraceReader::open(&paths, ReadOptions::default())
        .unwrap()
        .map(|b| b.unwrap().events.len())
        .sum();
    assert_eq!(kept, 14);
    let mut r = TraceReader::open(&paths, ReadOptions::default())
        .unwrap()
        .drop_duplicates();
    let ids: Vec<Option<u64>> = r
        .by_ref()
        .flat_map(|b| b.unwrap().events)
        .map(|e| e.id)
        .collect();
    // Each file keeps its own first copy.
    let per_file = [Some(1), Some(2), None, None, Some(3)];
    assert_eq!(ids, [per_file, per_file].concat());
    let s = r.stats();
    assert_eq!((s.events, s.duplicates), (10, 4));
    assert_eq!(
        s.files
            .iter()
            .map(|f| (f.events, f.duplicates))
            .collect::<Vec<_>>(),
        [(5, 2), (5, 2)]
    );
}

#[test]
fn duplicates_and_bad_lines_at_chunk_starts_match_a_line_by_line_reading() {
    // Members hold whole lines, so the reader's chunks start at line starts, each on an invalid line (a
    // chunk's first line that does not parse, with nothing carried before it). Repeats lie chunks apart, some ids
    // repeat with other content (kept), and some ids are far past the others.
    let line = |id: u64, ts: u64| {
        format!(
            r#"{{"id":{id},"name":"read","cat":"sys","pid":1,"tid":1,"ts":{ts},"dur":2,"ph":"X","args":{{"size":4096}}}}"#
        )
    };
    let mut lines = Vec::new();
    for i in 0..40_000u64 {
        lines.push(match i {
            _ if i % 50 == 0 => r#"{"ph":"X","ts":"x"}"#.to_owned(),
            _ if i % 1000 == 999 => line(i - 500, i - 500),
            _ if i % 1500 == 1499 => line(i - 1, i),
            _ if i % 5000 == 4999 => line(1 << 40, 7),
            _ => line(i, i),
        });
    }
    let mut c = datasets::gz::compressor(1);
    let mut out = Vec::new();
    for member in lines.chunks(50) {
        let text: String = member.iter().map(|l| format!("{l}\n")).collect();
        datasets::gz::deflate_member(&mut c, text.as_bytes(), &mut out);
    }
    out.extend_from_slice(&datasets::gz::EOF_BLOCK);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dups.pfw.gz");
    std::fs::write(&p, out).unwrap();

    let mut seen = std::collections::HashSet::new();
    let (mut want, mut bad, mut repeats) = (Vec::new(), 0, 0);
    for l in &lines {
        match datasets::parse::parse_line(l.as_bytes(), TimeUnit::Us) {
            Err(_) => bad += 1,
            Ok(e) => {
                let e = e.unwrap();
                if seen.insert((e.id, format!("{e:?}"))) {
                    want.push(e);
                } else {
                    repeats += 1;
                }
            }
        }
    }
    assert_eq!((bad, repeats), (800, 27));
    let opts = ReadOptions {
        threads: 2,
        skip_invalid: true,
        ..ReadOptions::default()
    };
    let mut r = TraceReader::open(std::slice::from_ref(&p), opts)
        .unwrap()
        .drop_duplicates();
    let mut got = Vec::new();
    while let Some(b) = r.next() {
        let b = b.unwrap();
        got.extend(b.events.iter().cloned());
        r.recycle(b.events);
    }
    let s = r.stats();
    assert_eq!((s.skipped, s.duplicates, s.lines), (800, 27, 40_000));
    assert_eq!(got.len(), want.len());
    assert!(got == want);
}
