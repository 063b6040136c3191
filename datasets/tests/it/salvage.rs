//! `salvage`: a trace cut short, or with a damaged block in the middle, reads every intact line
//! and names what it lost; without it, the damage is an error that says how to salvage.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::common::fixture;
use datasets::read::{ReadOptions, read_all};
use datasets::salvage::Damage;
use datasets::write::{Header, TraceWriter};
use datasets::{Event, Phase};

fn salvage() -> ReadOptions {
    ReadOptions {
        salvage: true,
        threads: 3,
        ..ReadOptions::default()
    }
}

/// A BGZF trace of `copies` copies of a real trace, every line numbered by the writer.
fn numbered_trace(dir: &Path, copies: usize) -> PathBuf {
    let p = dir.join("w.pfw.gz");
    let mut w = TraceWriter::create(&p, Header::new("test", "0")).unwrap();
    let t = read_all(&[fixture("dftracer/posix-old.pfw")], ReadOptions::default()).unwrap();
    for _ in 0..copies {
        for e in &t.events {
            w.write(&Event {
                id: None,
                ..e.clone()
            })
            .unwrap();
        }
    }
    w.finish(Vec::new()).unwrap();
    p
}

/// Each member's byte range, found from the sizes the headers record.
fn members(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let end = at + usize::from(u16::from_le_bytes([bytes[at + 16], bytes[at + 17]])) + 1;
        out.push(at..end);
        at = end;
    }
    out
}

/// The oracle: flate2's own gzip decoder on one member.
fn gunzip(member: &[u8]) -> String {
    let mut s = String::new();
    flate2::read::GzDecoder::new(member)
        .read_to_string(&mut s)
        .unwrap();
    s
}

/// Event lines and their ids, as serde_json reads them.
fn event_ids(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["ph"] != "M")
        .map(|v| v["id"].as_u64().unwrap())
        .collect()
}

fn all_ids(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["id"].as_u64().unwrap())
        .collect()
}

fn events_only(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.ph != Phase::Metadata)
        .map(|e| e.id.unwrap())
        .collect()
}

/// The event ids of every member but `bad`, and every id (events and metadata) of `bad`.
fn without_member(bytes: &[u8], m: &[Range<usize>], bad: usize) -> (Vec<u64>, Vec<u64>) {
    let kept = m
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != bad)
        .flat_map(|(_, r)| event_ids(&gunzip(&bytes[r.clone()])))
        .collect();
    (kept, all_ids(&gunzip(&bytes[m[bad].clone()])))
}

#[test]
fn a_trace_cut_short_keeps_every_complete_line_and_names_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let p = numbered_trace(dir.path(), 20);
    let bytes = std::fs::read(&p).unwrap();
    let m = members(&bytes);
    assert!(m.len() > 6);
    let cut = m[4].start + 1000;
    std::fs::write(&p, &bytes[..cut]).unwrap();

    let err = read_all(std::slice::from_ref(&p), ReadOptions::default()).unwrap_err();
    assert_eq!(err.remedy(), Some(datasets::Remedy::Salvage), "{err}");
    let err = err.to_string();
    assert!(err.contains("damaged gzip data"), "{err}");

    let mut whole = String::new();
    let _ = flate2::read::MultiGzDecoder::new(&bytes[..cut]).read_to_string(&mut whole);
    let complete = &whole[..whole.rfind('\n').unwrap() + 1];
    let t = read_all(std::slice::from_ref(&p), salvage()).unwrap();
    assert_eq!(events_only(&t.events), event_ids(complete));
    assert_eq!(
        t.stats.damage,
        [Damage {
            path: p.clone(),
            bytes: m[4].start as u64..cut as u64,
            msg: t.stats.damage[0].msg.clone(),
            lost_ids: None,
        }]
    );
}

#[test]
fn a_corrupt_member_in_the_middle_loses_only_its_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = numbered_trace(dir.path(), 20);
    let mut bytes = std::fs::read(&p).unwrap();
    let m = members(&bytes);
    let bad = 5;
    let (want_events, lost) = without_member(&bytes, &m, bad);
    bytes[m[bad].start + 300] ^= 0x5a;
    std::fs::write(&p, &bytes).unwrap();

    let t = read_all(std::slice::from_ref(&p), salvage()).unwrap();
    assert_eq!(events_only(&t.events), want_events);
    assert_eq!(t.stats.damage.len(), 1);
    let d = &t.stats.damage[0];
    assert_eq!(d.bytes, m[bad].start as u64..m[bad].end as u64);
    assert_eq!(
        d.lost_ids,
        Some(lost[0]..lost.last().unwrap() + 1),
        "{lost:?}"
    );
    assert_eq!(
        d.to_string(),
        format!(
            "{}: compressed bytes {}..{} unreadable ({}): {} lines lost (ids {}..{})",
            p.display(),
            m[bad].start,
            m[bad].end,
            d.msg,
            lost.len(),
            lost[0],
            lost.last().unwrap() + 1
        )
    );
}

#[test]
fn a_broken_member_header_is_skipped_to_the_next_intact_member() {
    let dir = tempfile::tempdir().unwrap();
    let p = numbered_trace(dir.path(), 20);
    let mut bytes = std::fs::read(&p).unwrap();
    let m = members(&bytes);
    let bad = 3;
    let (want_events, lost) = without_member(&bytes, &m, bad);
    bytes[m[bad].start..m[bad].start + 4].copy_from_slice(b"junk");
    std::fs::write(&p, &bytes).unwrap();

    let t = read_all(std::slice::from_ref(&p), salvage()).unwrap();
    assert_eq!(events_only(&t.events), want_events);
    assert_eq!(t.stats.damage.len(), 1);
    assert_eq!(
        t.stats.damage[0].bytes,
        m[bad].start as u64..m[bad].end as u64
    );
    assert_eq!(
        t.stats.damage[0].lost_ids,
        Some(lost[0]..lost.last().unwrap() + 1)
    );
}

#[test]
fn lines_cut_by_a_lost_member_are_dropped_when_members_split_lines() {
    // Members that cut lines anywhere, as bgzip writes them; member 7 is damaged.
    let src = std::fs::read(fixture("dftracer/posix-old.pfw")).unwrap();
    let pieces: Vec<&[u8]> = src.chunks(777).collect();
    let bad = 7;
    let mut c = datasets::gz::compressor(6);
    let mut out = Vec::new();
    let mut starts = Vec::new();
    for piece in &pieces {
        starts.push(out.len());
        datasets::gz::deflate_member(&mut c, piece, &mut out);
    }
    out.extend_from_slice(&datasets::gz::EOF_BLOCK);
    out[starts[bad] + 100] ^= 0xff;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("odd.pfw.gz");
    std::fs::write(&p, &out).unwrap();

    // The oracle: the lines that lie wholly outside the lost piece's text.
    let lost_from = 777 * bad;
    let lost_to = lost_from + pieces[bad].len();
    let mut want = Vec::new();
    let mut at = 0;
    for line in src.split_inclusive(|&b| b == b'\n') {
        let end = at + line.len();
        if end <= lost_from || at >= lost_to {
            let text = std::str::from_utf8(line).unwrap().trim();
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
                want.push(v["id"].as_str().unwrap().parse::<u64>().unwrap());
            }
        }
        at = end;
    }

    let t = read_all(std::slice::from_ref(&p), salvage()).unwrap();
    let got: Vec<u64> = t.events.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(got, want);
    assert_eq!(t.stats.damage.len(), 1);
    let all = src
        .split(|&b| b == b'\n')
        .filter(|l| l.trim_ascii_start().starts_with(b"{"))
        .count() as u64;
    let missing: Vec<u64> = (0..all).filter(|id| !want.contains(id)).collect();
    assert!(missing.len() > 2, "{missing:?}");
    assert_eq!(
        t.stats.damage[0].lost_ids,
        Some(missing[0]..missing.last().unwrap() + 1)
    );
}
