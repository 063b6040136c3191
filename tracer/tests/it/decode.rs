//! The decoder on records made here, without a kernel (no root): a record too short, of an unknown
//! kind, or of a layer id no layer has is counted malformed and written nowhere, instead of being
//! filed under a layer it does not belong to; well-formed records become events.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datasets::read::{ReadOptions, read_all};
use datasets::write::{Header, META_CAT, TraceWriter};
use tracer::Layer;
use tracer::decode::Decoder;
use tracer::layers::Names;
use tracer::layers::tracepoints::ProbeName;
use tracer_ebpf::{
    EventHeader, HAS_FD, HAS_SIZE, NameEvent, ProbeEvent, ProfileKey, ProfileValue, SysEvent,
    TpEvent, kind, layer, named, role,
};

/// The bytes of a record, as the ring buffer holds them.
fn bytes<T: aya::Pod>(v: &T) -> Vec<u8> {
    // SAFETY: `v` is a live `T` of `size_of::<T>()` bytes, and the record types this test makes
    // have no padding (their fields are laid out without gaps), so every byte is initialized.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

fn header(k: u8, layer: u8) -> EventHeader {
    EventHeader {
        kind: k,
        layer,
        tgid: 10,
        tid: 11,
        ts: 5_000,
        dur: 250,
        ..EventHeader::default()
    }
}

fn read_call(layer: u8) -> SysEvent {
    SysEvent {
        hdr: header(kind::SYS, layer),
        nr: libc::SYS_read as u32,
        fd: 3,
        ret: 4096,
        size: 4096,
        has: HAS_SIZE | HAS_FD,
        ..SysEvent::default()
    }
}

fn probe(layer: u8) -> ProbeEvent {
    ProbeEvent {
        hdr: header(kind::PROBE, layer),
        ret: 7,
        ..ProbeEvent::default()
    }
}

fn tracepoint(layer: u8) -> TpEvent {
    TpEvent {
        hdr: header(kind::TP, layer),
        probe: 1,
        role: role::POINT as u32,
        ..TpEvent::default()
    }
}

fn names() -> Names {
    let mut names = Names::default();
    names.uprobes.push(("H5Fopen".to_owned(), Layer::App));
    names.tps.insert(
        1,
        ProbeName {
            name: "ext4_da_write_begin".to_owned(),
            layer: Layer::Fs,
            fields: Default::default(),
        },
    );
    names
}

/// (name, cat, pid, tid, ts ns, dur ns, size, ret) of every event in `path` but the header and the
/// closing.
type Row = (String, String, u64, u64, u64, u64, Option<i64>, Option<i64>);

fn rows(path: &Path) -> Vec<Row> {
    let t = read_all(&[path.to_path_buf()], ReadOptions::default()).unwrap();
    t.events
        .iter()
        .filter(|e| e.cat != META_CAT)
        .map(|e| {
            (
                e.name.to_string(),
                e.cat.to_string(),
                e.pid,
                e.tid,
                e.ts_ns,
                e.dur_ns,
                e.args.size,
                e.args.ret,
            )
        })
        .collect()
}

fn row(name: &str, cat: &str, size: Option<i64>, ret: i64) -> Row {
    (
        name.to_owned(),
        cat.to_owned(),
        10,
        11,
        5_000,
        250,
        size,
        Some(ret),
    )
}

#[test]
fn records_of_an_unknown_layer_kind_or_length_are_malformed_and_written_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw");
    let mut w = TraceWriter::create(&path, Header::new("test", "0")).unwrap();
    let mut d = Decoder::new(names(), None);
    let unknown = layer::COUNT as u8;
    let records = [
        bytes(&read_call(layer::SYS)),
        bytes(&read_call(unknown)),
        bytes(&probe(layer::APP)),
        bytes(&probe(unknown)),
        bytes(&tracepoint(layer::FS)),
        bytes(&tracepoint(0xff)),
        bytes(&read_call(layer::SYS))[..size_of::<EventHeader>() - 1].to_vec(),
        bytes(&read_call(layer::SYS))[..size_of::<SysEvent>() - 1].to_vec(),
        bytes(&header(42, layer::SYS)),
    ];
    for r in &records {
        d.record(r, &mut w).unwrap();
    }
    assert_eq!(d.malformed, 6);
    assert_eq!(
        d.per_layer,
        BTreeMap::from([(Layer::Sys, 1), (Layer::App, 1), (Layer::Fs, 1)])
    );
    w.finish(Vec::new()).unwrap();
    let mut point = row("ext4_da_write_begin", "fs", None, 0);
    point.7 = None;
    assert_eq!(
        rows(&path),
        [
            row("read", "sys", Some(4096), 4096),
            row("H5Fopen", "app", None, 7),
            point,
        ]
    );
}

#[test]
fn counters_of_an_unknown_layer_are_malformed_even_when_the_id_truncates_to_a_known_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw");
    let mut w = TraceWriter::create(&path, Header::new("test", "0")).unwrap();
    let interval = 1_000_000;
    let mut d = Decoder::new(names(), Some(interval));
    let key = |layer: u32| ProfileKey {
        bucket: 3,
        tgid: 10,
        tid: 11,
        layer,
        probe: libc::SYS_read as u32,
        file: 0,
    };
    let value = ProfileValue {
        count: 2,
        time_ns: 500,
        bytes: 8192,
    };
    // 256 is layer::SYS (0) once cut to a byte.
    for layer in [layer::SYS as u32, 256, layer::COUNT] {
        d.counter(&key(layer), &value, &mut w).unwrap();
    }
    // Records teach names in profile mode; none is an event.
    d.record(&bytes(&read_call(layer::SYS)), &mut w).unwrap();
    d.record(&bytes(&read_call(layer::COUNT as u8)), &mut w)
        .unwrap();
    assert_eq!(d.malformed, 3);
    assert_eq!(d.per_layer, BTreeMap::from([(Layer::Sys, 1)]));
    w.finish(Vec::new()).unwrap();
    let t = read_all(&[path], ReadOptions::default()).unwrap();
    let got: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.cat != META_CAT)
        .map(|e| (e.name.as_str(), e.cat.as_str(), e.ts_ns, e.args.other.len()))
        .collect();
    assert_eq!(got, [("read", "sys", 3 * interval, 3)]);
}

/// The tracer's calibration helper (process 10 here) is counted and written nowhere, names included, until it was
/// reaped; after that its pid may be a traced process's, whose records are written. Profile counters count its
/// calls.
#[test]
fn an_ignored_process_is_counted_and_written_nowhere_until_it_was_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw");
    let mut w = TraceWriter::create(&path, Header::new("test", "0")).unwrap();
    let mut d = Decoder::new(names(), None);
    let reaped = Arc::new(AtomicU64::new(u64::MAX));
    d.ignore(10, reaped.clone());
    let name = NameEvent {
        hdr: header(kind::NAME, layer::SCHED),
        comm: *b"dc-trace\0\0\0\0\0\0\0\0",
        by: named::SELF,
        ..NameEvent::default()
    };
    let mut other = read_call(layer::SYS);
    other.hdr.tgid = 12;
    for r in [
        bytes(&read_call(layer::SYS)),
        bytes(&name),
        bytes(&probe(layer::APP)),
        bytes(&other),
    ] {
        d.record(&r, &mut w).unwrap();
    }
    assert_eq!((d.ignored_events, d.malformed), (3, 0));
    assert_eq!(d.per_layer, BTreeMap::from([(Layer::Sys, 1)]));

    // Reaped at 5 000, the pid is free again: a call that began then is another process's.
    reaped.store(5_000, Ordering::Relaxed);
    d.record(&bytes(&read_call(layer::SYS)), &mut w).unwrap();
    assert_eq!(d.ignored_events, 3);
    w.finish(Vec::new()).unwrap();
    let t = read_all(&[path], ReadOptions::default()).unwrap();
    let got: Vec<(&str, u64)> = t
        .events
        .iter()
        .filter(|e| e.cat != META_CAT || e.name.ends_with("_name"))
        .map(|e| (e.name.as_str(), e.pid))
        .collect();
    assert_eq!(got, [("read", 12), ("read", 10)]);

    let mut w = TraceWriter::create(dir.path().join("p.pfw"), Header::new("test", "0")).unwrap();
    let mut d = Decoder::new(names(), Some(1_000));
    d.ignore(10, Arc::new(AtomicU64::new(u64::MAX)));
    let key = ProfileKey {
        bucket: 3,
        tgid: 10,
        tid: 11,
        layer: layer::SYS as u32,
        probe: libc::SYS_read as u32,
        file: 0,
    };
    let value = ProfileValue {
        count: 256,
        time_ns: 500,
        bytes: 256,
    };
    d.counter(&key, &value, &mut w).unwrap();
    assert_eq!(d.ignored_events, 256);
    assert_eq!(d.per_layer, BTreeMap::new());
}
