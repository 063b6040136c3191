//! `synth::repeat_text`: a foreign trace repeated in its own dialect reads back as the source's events, copy
//! after copy, each with its own pids, tids and times, and every other field untouched.

use std::path::PathBuf;

use crate::common::fixture;
use datasets::read::{Compression, ReadOptions, read_all};
use datasets::synth::repeat_text;
use datasets::{Event, Phase};

#[test]
fn datacrumbs_trace_repeated_as_text_reads_as_the_source_shifted() {
    let src = fixture("datacrumbs/case-write-simple.trace.pfw.gz");
    let source = read_all(std::slice::from_ref(&src), ReadOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("three.pfw.gz");
    let copies = 3;
    let written = repeat_text(&src, copies, &out).unwrap();

    let pid = source
        .events
        .iter()
        .map(|e| e.pid.max(e.tid))
        .max()
        .unwrap();
    let timed = || source.events.iter().filter(|e| e.ph != Phase::Metadata);
    let span = timed().map(Event::end_ns).max().unwrap() - timed().map(|e| e.ts_ns).min().unwrap();
    assert_eq!(written.id_stride, pid + 1);
    // The file's unit is microseconds.
    assert_eq!(written.ts_shift, span.div_ceil(1000) + 1);
    assert!(written.ts_shift * 1000 > span);

    let copy = read_all(std::slice::from_ref(&out), ReadOptions::default()).unwrap();
    assert_eq!(copy.stats.files[0].compression, Compression::Gzip);
    assert_eq!(written.events, copies as u64 * source.events.len() as u64);
    assert_eq!(copy.events.len() as u64, written.events);
    // `[` once at the top and `]` once at the end, as in the source.
    assert_eq!(copy.stats.lines, written.events + 2);
    for (i, got) in copy.events.iter().enumerate() {
        let k = (i / source.events.len()) as u64;
        let mut want = source.events[i % source.events.len()].clone();
        // Only the `HH` line has no pid.
        if want.pid != 0 {
            want.pid += k * written.id_stride;
            want.tid += k * written.id_stride;
        }
        if want.ph != Phase::Metadata {
            want.ts_ns += k * written.ts_shift * 1000;
        }
        assert_eq!(got, &want, "event {i}");
    }
    // Copies take each other's place in time: no two overlap.
    let end_of = |k: u64| {
        copy.events[k as usize * source.events.len()..(k as usize + 1) * source.events.len()]
            .iter()
            .filter(|e| e.ph != Phase::Metadata)
            .map(Event::end_ns)
            .max()
            .unwrap()
    };
    let start_of = |k: u64| {
        copy.events[k as usize * source.events.len()..(k as usize + 1) * source.events.len()]
            .iter()
            .filter(|e| e.ph != Phase::Metadata)
            .map(|e| e.ts_ns)
            .min()
            .unwrap()
    };
    assert!(end_of(0) < start_of(1) && end_of(1) < start_of(2));
}

#[test]
fn a_line_whose_time_cannot_be_shifted_in_place_is_refused_by_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let src: PathBuf = dir.path().join("bad.pfw");
    std::fs::write(
        &src,
        "[\n{\"pid\": 1, \"tid\": 1, \"name\": \"read\", \"cat\": \"sys\", \"ph\": \"X\", \"ts\": 5}\n\
         {\"pid\": 1, \"tid\": 1, \"name\": \"read\", \"cat\": \"sys\", \"ph\": \"X\", \"ts\": 5.5e1}\n",
    )
    .unwrap();
    let err = repeat_text(&src, 2, &dir.path().join("out.pfw.gz")).unwrap_err();
    let text = err.to_string();
    // `5.5e1` is 55 µs, but a shift added to its digits would scale with the exponent.
    assert!(
        text.contains("bad.pfw:3:") && text.contains("shifted"),
        "{text}"
    );
}
