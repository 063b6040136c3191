//! The writer's output reads back exactly, in both time units and both containers.

use crate::common::Oracle;
use compact_str::CompactString;
use datasets::read::{Compression, ReadOptions, UnitSource, read_all};
use datasets::write::{Header, TraceWriter, WriteOptions, WriteStats};
use datasets::{ArgValue, Args, Event, Hash, Phase, TimeUnit};
use std::io::Read;

fn header(unit: TimeUnit) -> Header {
    Header {
        writer: "test".into(),
        version: "1.2.3".into(),
        time_unit: unit,
        clock: "CLOCK_MONOTONIC".into(),
        host: "node \"7\"".into(),
        kernel: "6.18.0".into(),
        layers: "sys,sched,irq".into(),
    }
}

fn events(w: &mut TraceWriter, n: u64) -> Vec<Event> {
    let host = w.intern_host("node-7").unwrap();
    (0..n)
        .map(|i| {
            let file = w
                .intern_file(&format!("/data/file-{}\twith\\odd \"chars\" é", i % 37))
                .unwrap();
            let mut other = vec![(CompactString::from("flags"), ArgValue::Int(i as i64 - 50))];
            if i % 3 == 0 {
                other.push(("lat".into(), ArgValue::Float(i as f64 / 7.0)));
                other.push((
                    "big".into(),
                    ArgValue::BigInt(i128::from(u64::MAX) + i as i128),
                ));
                other.push(("s".into(), ArgValue::Str("a\nb".into())));
                other.push(("n".into(), ArgValue::Null));
                other.push(("j".into(), ArgValue::Json("[1,{\"a\":2}]".into())));
            }
            Event {
                id: Some(1000 + i),
                name: if i % 5 == 0 {
                    "read".into()
                } else {
                    "vfs_write".into()
                },
                cat: if i % 2 == 0 {
                    "sys".into()
                } else {
                    "vfs".into()
                },
                ph: if i % 11 == 0 {
                    Phase::Instant
                } else {
                    Phase::Complete
                },
                pid: 4000 + i % 3,
                tid: 5000 + i % 5,
                ts_ns: 1_700_000_000_000_000_123 + i * 1_234_567,
                dur_ns: if i % 11 == 0 { 0 } else { i * 999 + 1 },
                args: Args {
                    fhash: Some(file),
                    hhash: Some(host),
                    size: Some(i as i64 * 4096),
                    ret: Some(-(i as i64 % 4)),
                    offset: (i % 2 == 0).then_some(i as i64 * 10),
                    other,
                    ..Args::default()
                },
            }
        })
        .collect()
}

fn roundtrip(name: &str, unit: TimeUnit, n: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let mut w = TraceWriter::create(&path, header(unit)).unwrap();
    let evs = events(&mut w, n);
    for e in &evs {
        w.write(e).unwrap();
    }
    let stats = w
        .finish(vec![("dropped".into(), ArgValue::Int(3))])
        .unwrap();
    assert_eq!(stats.events, n);
    assert_eq!(stats.metadata, 1 + 1 + 37.min(n) + 1);
    assert_eq!(stats.file_bytes, std::fs::metadata(&path).unwrap().len());

    // Read back with a different unit option: the header must win.
    let opts = ReadOptions {
        time_unit: Some(match unit {
            TimeUnit::Us => TimeUnit::Ns,
            TimeUnit::Ns => TimeUnit::Us,
        }),
        ..ReadOptions::default()
    };
    let t = read_all(std::slice::from_ref(&path), opts).unwrap();
    let f = &t.stats.files[0];
    assert_eq!((f.time_unit, f.unit_source), (unit, UnitSource::Header));
    let gz = name.ends_with(".gz");
    assert_eq!(
        f.compression,
        if gz {
            Compression::Bgzf
        } else {
            Compression::Plain
        }
    );
    let data: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| e.ph != Phase::Metadata)
        .collect();
    assert_eq!(data.len() as u64, n);
    for (a, b) in data.iter().zip(&evs) {
        assert_eq!(*a, b);
    }
    assert_eq!(t.stats.text_bytes, stats.text_bytes);
    assert_eq!(
        t.strings.file(evs[1].args.fhash.unwrap()),
        Some("/data/file-1\twith\\odd \"chars\" é")
    );
    assert_eq!(t.strings.host(evs[0].args.hhash.unwrap()), Some("node-7"));
    let closing = t.events.last().unwrap();
    assert_eq!(closing.name, datasets::write::CLOSING_EVENT);
    assert_eq!(closing.args.get("dropped"), Some(&ArgValue::Int(3)));
    assert_eq!(closing.args.get("events"), Some(&ArgValue::Int(n as i64)));

    // An independent JSON scan (through plain gunzip for .gz) sees the same lines.
    let o = Oracle::scan(&path);
    assert_eq!(o.lines, t.stats.lines);
    assert_eq!(o.events.len(), t.events.len());
    assert_eq!(o.events[0]["args"]["host"], "node \"7\"");
    assert_eq!(o.events[0]["args"]["time_unit"], unit.as_str());
    assert_eq!(o.events[0]["args"]["layers"], "sys,sched,irq");
}

#[test]
fn bgzf_us_roundtrip_many_members() {
    roundtrip("t.pfw.gz", TimeUnit::Us, 20_000);
}

#[test]
fn bgzf_ns_roundtrip() {
    roundtrip("t.pfw.gz", TimeUnit::Ns, 500);
}

#[test]
fn plain_roundtrip() {
    roundtrip("t.pfw", TimeUnit::Us, 3_000);
}

#[test]
fn microseconds_with_three_decimals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw");
    let mut w = TraceWriter::create(&path, header(TimeUnit::Us)).unwrap();
    let e = Event {
        id: None,
        name: "x".into(),
        cat: "sys".into(),
        ph: Phase::Complete,
        pid: 1,
        tid: 2,
        ts_ns: 12_345,
        dur_ns: 7,
        args: Args::default(),
    };
    w.write(&e).unwrap();
    w.finish(Vec::new()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().nth(2).unwrap();
    assert_eq!(
        line,
        r#"{"id":1,"name":"x","cat":"sys","pid":1,"tid":2,"ts":12.345,"dur":0.007,"ph":"X"}"#
    );
}

/// The formatter as it was before it was tuned for speed, kept as the oracle for its output.
mod reference {
    use datasets::{ArgValue, Args, Event, Hash, Phase, TimeUnit};

    pub fn format_event(t: &mut Vec<u8>, e: &Event, id: Option<u64>, unit: TimeUnit) {
        t.push(b'{');
        if let Some(id) = id {
            t.extend_from_slice(b"\"id\":");
            push_u64(t, id);
            t.push(b',');
        }
        t.extend_from_slice(b"\"name\":");
        push_str(t, &e.name);
        t.extend_from_slice(b",\"cat\":");
        push_str(t, &e.cat);
        t.extend_from_slice(b",\"pid\":");
        push_u64(t, e.pid);
        t.extend_from_slice(b",\"tid\":");
        push_u64(t, e.tid);
        t.extend_from_slice(b",\"ts\":");
        push_time(t, e.ts_ns, unit);
        if e.dur_ns != 0 || e.ph == Phase::Complete {
            t.extend_from_slice(b",\"dur\":");
            push_time(t, e.dur_ns, unit);
        }
        t.extend_from_slice(b",\"ph\":\"");
        t.push(e.ph.as_byte());
        t.push(b'"');
        push_args(t, &e.args);
        t.extend_from_slice(b"}\n");
    }

    fn push_u64(t: &mut Vec<u8>, v: u64) {
        t.extend_from_slice(v.to_string().as_bytes());
    }

    fn push_time(t: &mut Vec<u8>, ns: u64, unit: TimeUnit) {
        match unit {
            TimeUnit::Ns => push_u64(t, ns),
            TimeUnit::Us => {
                t.extend_from_slice(format!("{}.{:03}", ns / 1000, ns % 1000).as_bytes())
            }
        }
    }

    fn push_str(t: &mut Vec<u8>, s: &str) {
        t.push(b'"');
        for c in s.bytes() {
            match c {
                b'"' => t.extend_from_slice(b"\\\""),
                b'\\' => t.extend_from_slice(b"\\\\"),
                b'\n' => t.extend_from_slice(b"\\n"),
                b'\r' => t.extend_from_slice(b"\\r"),
                b'\t' => t.extend_from_slice(b"\\t"),
                0..=0x1f => t.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
                _ => t.push(c),
            }
        }
        t.push(b'"');
    }

    fn push_arg(t: &mut Vec<u8>, v: &ArgValue) {
        match v {
            ArgValue::Null => t.extend_from_slice(b"null"),
            ArgValue::Bool(b) => t.extend_from_slice(if *b { b"true" } else { b"false" }),
            ArgValue::Int(n) => t.extend_from_slice(n.to_string().as_bytes()),
            ArgValue::BigInt(n) => t.extend_from_slice(n.to_string().as_bytes()),
            ArgValue::Float(f) if f.is_finite() => {
                t.extend_from_slice(ryu::Buffer::new().format_finite(*f).as_bytes())
            }
            ArgValue::Float(_) => t.extend_from_slice(b"null"),
            ArgValue::Str(s) => push_str(t, s),
            ArgValue::Json(j) => t.extend_from_slice(j.as_bytes()),
        }
    }

    fn push_hash(t: &mut Vec<u8>, h: Hash) {
        t.extend_from_slice(h.0.to_string().as_bytes());
    }

    fn push_args(t: &mut Vec<u8>, a: &Args) {
        let start = t.len();
        t.extend_from_slice(b",\"args\":{");
        let open = t.len();
        let key = |t: &mut Vec<u8>, k: &str| {
            if t.len() > open {
                t.push(b',');
            }
            push_str(t, k);
            t.push(b':');
        };
        if let Some(h) = a.fhash {
            key(t, "fhash");
            push_hash(t, h);
        }
        if let Some(h) = a.hhash {
            key(t, "hhash");
            push_hash(t, h);
        }
        for (k, v) in [("size", a.size), ("ret", a.ret), ("offset", a.offset)] {
            if let Some(v) = v {
                key(t, k);
                t.extend_from_slice(v.to_string().as_bytes());
            }
        }
        for (k, v) in [
            ("fname", &a.fname),
            ("hostname", &a.hostname),
            ("name", &a.name),
        ] {
            if let Some(v) = v {
                key(t, k);
                push_str(t, v);
            }
        }
        if let Some(h) = a.value {
            key(t, "value");
            push_hash(t, h);
        }
        for (k, v) in &a.other {
            key(t, k);
            push_arg(t, v);
        }
        if t.len() == open {
            t.truncate(start);
        } else {
            t.push(b'}');
        }
    }
}

/// Events covering every field alone and together, numbers at their edges and strings with
/// every kind of escape.
fn varied_events() -> Vec<Event> {
    let ints = [
        0i64,
        1,
        -1,
        9,
        10,
        99,
        100,
        12345,
        -98765,
        i64::MAX,
        i64::MIN,
    ];
    let u64s = [
        0u64,
        1,
        9,
        10,
        99,
        100,
        999,
        1000,
        1001,
        123_456_789,
        u64::MAX,
    ];
    let hashes = [
        Hash(0),
        Hash(7),
        Hash(u128::from(u64::MAX)),
        Hash(u128::from(u64::MAX) + 1),
        Hash(u128::MAX),
    ];
    let mut strs = vec![
        "",
        "pwrite64",
        "a\"b\\c",
        "tab\there\nnew\rret",
        "\u{1}\u{1f}\u{0}x\u{7f}",
        "é ünïcode ✓",
        "/very/long/path/that/goes/on/and/on/without/escapes/at/all/file.h5",
    ];
    // Every short length.
    let letters = "abcdefghijklmnopqrstuvwxyz";
    strs.extend((1..20).map(|n| &letters[n % 7..n % 7 + n]));
    let phases = [
        Phase::Complete,
        Phase::Instant,
        Phase::Counter,
        Phase::Metadata,
        Phase::Other(b'b'),
    ];
    let values = [
        ArgValue::Null,
        ArgValue::Bool(true),
        ArgValue::Bool(false),
        ArgValue::Int(-42),
        ArgValue::BigInt(-(i128::from(u64::MAX)) * 3),
        ArgValue::Float(0.1),
        ArgValue::Float(f64::NAN),
        ArgValue::Float(-1e300),
        ArgValue::Str("q\"uote".into()),
        ArgValue::Json("[1,{\"a\":2}]".into()),
    ];
    (0..3000usize)
        .map(|i| {
            let pick = |n: usize, salt: usize| (i * 7 + salt * 13 + i / n) % n;
            let on = |bit: usize| (i >> bit) & 1 == 1 || i % 17 == bit;
            let mut other = Vec::new();
            for j in 0..(i / 256 + i) % 4 {
                other.push((
                    CompactString::from(strs[pick(strs.len(), 20 + j)]),
                    values[pick(values.len(), 30 + j)].clone(),
                ));
            }
            Event {
                id: on(9).then_some(u64s[pick(u64s.len(), 1)]),
                name: strs[pick(strs.len(), 2)].into(),
                cat: strs[pick(strs.len(), 3)].into(),
                ph: phases[pick(phases.len(), 4)],
                pid: u64s[pick(u64s.len(), 5)],
                tid: u64s[pick(u64s.len(), 6)],
                ts_ns: u64s[pick(u64s.len(), 7)],
                dur_ns: if on(8) { 0 } else { u64s[pick(u64s.len(), 8)] },
                args: Args {
                    fhash: on(0).then_some(hashes[pick(hashes.len(), 9)]),
                    hhash: on(1).then_some(hashes[pick(hashes.len(), 10)]),
                    size: on(2).then_some(ints[pick(ints.len(), 11)]),
                    ret: on(3).then_some(ints[pick(ints.len(), 12)]),
                    offset: on(4).then_some(ints[pick(ints.len(), 13)]),
                    fname: on(5).then(|| strs[pick(strs.len(), 14)].into()),
                    hostname: on(6).then(|| strs[pick(strs.len(), 15)].into()),
                    name: on(7).then(|| strs[pick(strs.len(), 16)].into()),
                    value: on(10).then_some(hashes[pick(hashes.len(), 17)]),
                    other,
                },
            }
        })
        .collect()
}

#[test]
fn format_event_writes_what_the_reference_writes() {
    let evs = varied_events();
    let (mut ours, mut oracle) = (Vec::new(), Vec::new());
    for e in &evs {
        for unit in [TimeUnit::Us, TimeUnit::Ns] {
            for id in [None, e.id, Some(123)] {
                let (a, b) = (ours.len(), oracle.len());
                datasets::write::format_event(&mut ours, e, id, unit);
                reference::format_event(&mut oracle, e, id, unit);
                assert_eq!(
                    String::from_utf8_lossy(&ours[a..]),
                    String::from_utf8_lossy(&oracle[b..]),
                    "{e:?}"
                );
            }
        }
    }
    assert_eq!(ours, oracle);
    // The mix reaches every optional field, every escape and both hash widths.
    let text = String::from_utf8(ours).unwrap();
    for part in [
        "\"args\":{\"fhash\":",
        "\"args\":{\"size\":",
        ",\"hhash\":",
        ",\"offset\":",
        ",\"fname\":",
        ",\"hostname\":",
        ",\"value\":",
        "\\u001f",
        "\\u0000",
        "\\t",
        "\\\"",
        ":18446744073709551616",
        ":-9223372036854775808",
        ":null",
    ] {
        assert!(text.contains(part), "{part}");
    }
    let typed = [
        "fhash", "hhash", "size", "ret", "offset", "fname", "hostname", "name", "value",
    ];
    let untyped_first = text
        .split("\"args\":{\"")
        .skip(1)
        .filter(|rest| !typed.iter().any(|k| rest.starts_with(&format!("{k}\":"))));
    assert!(untyped_first.count() > 0);
    assert!(text.lines().any(|l| !l.contains("\"args\"")));
}

/// Writes the same events with `opts` to `name` in a fresh directory; returns the file's bytes
/// and the stats.
fn write_with(name: &str, opts: Option<WriteOptions>, n: u64) -> (Vec<u8>, WriteStats) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let mut w = match opts {
        Some(opts) => TraceWriter::create_with(&path, header(TimeUnit::Us), opts).unwrap(),
        None => TraceWriter::create_with_level(&path, header(TimeUnit::Us), 1).unwrap(),
    };
    for e in &events(&mut w, n) {
        w.write(e).unwrap();
    }
    let stats = w.finish(vec![("n".into(), ArgValue::Int(7))]).unwrap();
    (std::fs::read(&path).unwrap(), stats)
}

fn gunzip(file: &[u8]) -> String {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn background_compression_writes_the_same_bytes() {
    let (inline, inline_stats) = write_with("t.pfw.gz", None, 6000);
    assert!(inline_stats.members > 10, "{inline_stats:?}");
    assert_eq!(inline_stats.file_bytes, inline.len() as u64);
    let text = gunzip(&inline);
    assert_eq!(text.len() as u64, inline_stats.text_bytes);
    // `[`, header, HH, 37 FH, the events, closing, `]`.
    assert_eq!(text.lines().count(), 1 + 1 + 1 + 37 + 6000 + 1 + 1);
    for threads in [1, 2, 5] {
        let opts = WriteOptions {
            level: 1,
            compress_threads: threads,
            ..WriteOptions::default()
        };
        let (file, stats) = write_with("t.pfw.gz", Some(opts), 6000);
        assert_eq!(stats, inline_stats, "{threads} threads");
        assert!(file == inline, "{threads} threads: the files differ");
        assert_eq!(gunzip(&file), text);
    }
}

#[test]
fn background_compression_at_level_6_and_for_a_short_trace() {
    for n in [0, 3, 2000] {
        let (inline, inline_stats) = {
            let opts = WriteOptions {
                level: 6,
                compress_threads: 0,
                ..WriteOptions::default()
            };
            write_with("t.pfw.gz", Some(opts), n)
        };
        let opts = WriteOptions {
            level: 6,
            compress_threads: 2,
            ..WriteOptions::default()
        };
        let (file, stats) = write_with("t.pfw.gz", Some(opts), n);
        assert_eq!(stats, inline_stats, "{n} events");
        assert!(file == inline, "{n} events: the files differ");
    }
}

#[test]
fn compression_threads_that_fall_behind_write_the_same_text() {
    // At level 12 one thread compresses far slower than events are formatted, so it takes
    // blocks with every other block waiting and catches up at level 1: members of both levels.
    let (inline, inline_stats) = write_with("t.pfw.gz", None, 6000);
    let opts = WriteOptions {
        level: 12,
        compress_threads: 1,
        ..WriteOptions::default()
    };
    let (file, stats) = write_with("t.pfw.gz", Some(opts), 6000);
    assert_eq!(gunzip(&file), gunzip(&inline));
    assert_eq!(stats.file_bytes, file.len() as u64);
    assert_eq!(
        (
            stats.events,
            stats.metadata,
            stats.members,
            stats.text_bytes
        ),
        (
            inline_stats.events,
            inline_stats.metadata,
            inline_stats.members,
            inline_stats.text_bytes
        )
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw.gz");
    std::fs::write(&path, &file).unwrap();
    let back = read_all(&[path], ReadOptions::default()).unwrap();
    assert_eq!(back.stats.files[0].compression, Compression::Bgzf);
    assert_eq!(back.events.len() as u64, stats.events + stats.metadata);
}

#[test]
fn plain_text_ignores_compression_threads() {
    let (inline, inline_stats) = write_with("t.pfw", None, 500);
    let opts = WriteOptions {
        level: 1,
        compress_threads: 2,
        ..WriteOptions::default()
    };
    let (file, stats) = write_with("t.pfw", Some(opts), 500);
    assert_eq!((stats.members, stats.file_bytes), (0, inline.len() as u64));
    assert_eq!(stats, inline_stats);
    assert!(file == inline);
}

#[test]
fn a_writer_with_compression_threads_moves_to_another_thread() {
    fn send<T: Send>(t: T) -> T {
        t
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw.gz");
    let opts = WriteOptions {
        level: 1,
        compress_threads: 2,
        ..WriteOptions::default()
    };
    let w = send(TraceWriter::create_with(&path, header(TimeUnit::Us), opts).unwrap());
    let stats = std::thread::spawn(move || w.finish(Vec::new()))
        .join()
        .unwrap()
        .unwrap();
    assert_eq!((stats.events, stats.metadata, stats.members), (0, 2, 2));
    assert_eq!(stats.file_bytes, std::fs::metadata(&path).unwrap().len());
}
