//! The writer's output reads back exactly, in both time units and both containers.

mod common;

use common::Oracle;
use compact_str::CompactString;
use datasets::read::{Compression, ReadOptions, UnitSource, read_all};
use datasets::write::{Header, TraceWriter};
use datasets::{ArgValue, Args, Event, Phase, TimeUnit};

fn header(unit: TimeUnit) -> Header {
    Header {
        writer: "test".into(),
        version: "1.2.3".into(),
        time_unit: unit,
        clock: "CLOCK_MONOTONIC".into(),
        host: "node \"7\"".into(),
        kernel: "6.18.0".into(),
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
