//! The line parser: one JSON object per line, in any dialect datacrumbs reads.
//!
//! Numbers may be JSON numbers or strings (DFTracer writes `"pid":"0"`), hashes may exceed u64
//! (DataCrumbs wrote 128-bit integers), `dur` may be missing, and lines may start with spaces or
//! end with a comma. Values are borrowed from the line as raw JSON text and converted exactly,
//! so no `serde_json::Value` is built.
//!
//! A line goes through the first reader that takes it: `fast` (the fixed field order of our
//! writer or of DataCrumbs', then any order of plain fields), the flat `scan`ner, then serde_json, which also words
//! every error. Each later reader accepts everything an earlier one does, with the same result.

mod convert;
mod fallback;
mod fast;
mod fields;
mod scan;

pub use fields::LineError;
use fields::err;

use crate::{Event, TimeUnit};

/// Strips what surrounds the object on a line: leading and trailing spaces, and the comma of
/// the JSON-array form.
pub fn trim_line(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let mut end = line.len();
    while end > start && (line[end - 1].is_ascii_whitespace() || line[end - 1] == b',') {
        end -= 1;
    }
    &line[start..end]
}

/// Parses one line (without its newline), `None` for a blank line or the `[`/`]` framing a
/// JSON-array trace. Times are converted from `unit` to nanoseconds.
pub fn parse_line(line: &[u8], unit: TimeUnit) -> Result<Option<Event>, LineError> {
    let mut out = Slots::new(Vec::with_capacity(1));
    Ok(parse_line_into(line, unit, &mut out)?
        .then(|| out.into_events().pop())
        .flatten())
}

/// [`parse_line`] onto the end of `out`: `Ok(true)` when the line held an event.
pub(crate) fn parse_line_into(
    line: &[u8],
    unit: TimeUnit,
    out: &mut Slots,
) -> Result<bool, LineError> {
    let t = trim_line(line);
    if t.is_empty() || t == b"[" || t == b"]" {
        return Ok(false);
    }
    let e = out.slot();
    if !fast::event_into(t, unit, e) {
        *e = parse_general(t, unit)?;
    }
    out.fill();
    Ok(true)
}

/// A line in the fixed shape of our writer or of DataCrumbs' at the start of `text`, ending in a newline: its
/// event goes onto `out` and the line's length (without the newline) is returned. `None` says
/// nothing: find the line's end and use [`parse_line_into`].
pub(crate) fn parse_written_line(text: &[u8], unit: TimeUnit, out: &mut Slots) -> Option<usize> {
    let n = fast::line_into(text, unit, out.slot())?;
    out.fill();
    Some(n)
}

/// Parsed events, written over the events of an earlier chunk: resetting an event in place keeps its strings'
/// heap memory, where dropping it and building a new one freed and allocated every long name, and moved each
/// 350-byte event into place.
pub(crate) struct Slots {
    events: Vec<Event>,
    /// Events parsed so far; the ones after them are stale.
    len: usize,
}

/// How many slots ahead [`Slots::slot`] asks for the stale events' memory, for writing: each is 350 bytes last read
/// on another core, and without this the stores into each new event stalled the parser.
const PREFETCH_AHEAD: usize = 4;

fn prefetch(e: &Event) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = (e as *const Event).cast::<u8>();
        for offset in (0..size_of::<Event>()).step_by(64) {
            // SAFETY: PREFETCHW only hints that the line will be written (0F 0D, a no-op on x86-64 CPUs without
            // it); it never faults and changes no register, flag or memory.
            unsafe {
                std::arch::asm!(
                    "prefetchw [{0}]",
                    in(reg) start.wrapping_add(offset),
                    options(nostack, preserves_flags, readonly)
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = e;
}

impl Slots {
    /// Parses over `events` (stale events, or none).
    pub(crate) fn new(events: Vec<Event>) -> Self {
        Slots { events, len: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The last parsed event.
    pub(crate) fn last(&self) -> &Event {
        &self.events[self.len - 1]
    }

    /// The slot after the parsed events, reset; it counts once [`Slots::fill`] says it holds an event.
    fn slot(&mut self) -> &mut Event {
        if let Some(ahead) = self.events.get(self.len + PREFETCH_AHEAD) {
            prefetch(ahead);
        }
        if self.len == self.events.len() {
            self.events.push(fast::blank());
        } else {
            self.events[self.len].reset();
        }
        &mut self.events[self.len]
    }

    fn fill(&mut self) {
        self.len += 1;
    }

    pub(crate) fn push(&mut self, e: Event) {
        *self.slot() = e;
        self.fill();
    }

    /// The parsed events; the stale ones after them are dropped.
    pub(crate) fn into_events(mut self) -> Vec<Event> {
        self.events.truncate(self.len);
        self.events
    }
}
/// Every line the fast path declines: the flat scanner, then serde_json.
fn parse_general(t: &[u8], unit: TimeUnit) -> Result<Event, LineError> {
    let text = std::str::from_utf8(t).map_err(|e| err("-", format!("not UTF-8: {e}")))?;
    let fields = match scan::scan(text) {
        Some(f) => f,
        None => fallback::fields_serde(text)?,
    };
    convert::convert(fields, unit)
}

/// The property the fuzzer checks on any input: parsing never panics, the fast path agrees with
/// the general one wherever it accepts a line, and an event that parses writes back as a line
/// that parses to the same event, in both time units.
pub fn check_roundtrip(line: &[u8]) -> Result<(), String> {
    for unit in [TimeUnit::Us, TimeUnit::Ns] {
        let t = trim_line(line);
        if let Some(e) = fast::event(t, unit) {
            let general = parse_general(t, unit);
            if general.as_ref() != Ok(&e) {
                return Err(format!(
                    "{:?}: fast path read {e:?}, general path {general:?}",
                    String::from_utf8_lossy(line)
                ));
            }
        }
        let Ok(Some(e)) = parse_line(line, unit) else {
            continue;
        };
        let mut out = Vec::new();
        crate::write::format_event(&mut out, &e, e.id, unit);
        match parse_line(&out, unit) {
            Ok(Some(back)) if back == e => {}
            other => {
                return Err(format!(
                    "{:?} parsed to {e:?}, wrote {:?}, read back {other:?}",
                    String::from_utf8_lossy(line),
                    String::from_utf8_lossy(&out)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn via_serde(line: &[u8], unit: TimeUnit) -> Result<Option<Event>, LineError> {
        let t = trim_line(line);
        if t.is_empty() || t == b"[" || t == b"]" {
            return Ok(None);
        }
        let text = std::str::from_utf8(t).map_err(|e| err("-", format!("not UTF-8: {e}")))?;
        convert::convert(fallback::fields_serde(text)?, unit).map(Some)
    }

    fn lines() -> Vec<Vec<u8>> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
        let mut out = Vec::new();
        for dir in ["datacrumbs", "dftracer"] {
            for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
                let path = entry.unwrap().path();
                let mut text = Vec::new();
                let f = std::fs::File::open(&path).unwrap();
                if path.extension().is_some_and(|e| e == "gz") {
                    flate2::read::MultiGzDecoder::new(f)
                        .read_to_end(&mut text)
                        .unwrap();
                } else {
                    std::io::BufReader::new(f).read_to_end(&mut text).unwrap();
                }
                out.extend(text.split(|&b| b == b'\n').map(<[u8]>::to_vec));
            }
        }
        let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/parse_line");
        for entry in std::fs::read_dir(corpus).unwrap() {
            out.push(std::fs::read(entry.unwrap().path()).unwrap());
        }
        out
    }

    #[test]
    fn scanner_agrees_with_serde() {
        let mut scanned = 0;
        let mut cases = lines();
        // Shapes the scanner must hand to serde_json, or read exactly as it does.
        for extra in [
            &br#"{"ph":"X","ts":1,"ts":2}"#[..],
            br#"{"ph":"X","ts":01}"#,
            br#"{"ph":"X","ts":1.}"#,
            br#"{"ph":"X","ts":-0.5e+3}"#,
            br#"{"ph":"X","ts":1,}"#,
            br#"{"ph":"X","args":{"a":[1],"b":2}}"#,
            br#"{"ph":"X","args":{"fhash":1,"fhash":2,"k":1,"k":true}}"#,
            br#"{"ph":"X","args":null}"#,
            br#"{"ph":"X","args":3}"#,
            br#"{"ph":"X","nm\u0061":"a"}"#,
            br#"{"ph":"X","name":"a\tb"}"#,
            b"{\"ph\":\"X\",\"name\":\"a\x01b\"}",
            br#"{"ph":"X"} x"#,
            br#"{"ph":"X","unknown":{"a":1}}"#,
            br#"{ "ph" : "X" , "dur" : null , "args" : { } }"#,
            br#"{"ph":"X","pid":tru}"#,
            br#"{}"#,
        ] {
            cases.push(extra.to_vec());
        }
        for line in &cases {
            let t = trim_line(line);
            if std::str::from_utf8(t).ok().and_then(scan::scan).is_some() {
                scanned += 1;
            }
            for unit in [TimeUnit::Us, TimeUnit::Ns] {
                assert_eq!(
                    parse_line(line, unit),
                    via_serde(line, unit),
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
        }
        // Most real lines take the scanner.
        assert!(
            scanned * 10 > cases.len() * 9,
            "{scanned} of {}",
            cases.len()
        );
    }

    #[test]
    fn fast_path_agrees_with_general() {
        let mut cases = lines();
        let big = "1".repeat(38);
        let bigger = "3".repeat(39);
        for extra in [
            r#"{"id":0,"name":"n","cat":"c","pid":1,"tid":2,"ts":1.2345,"dur":0.0005,"ph":"X","args":{"fhash":1}}"#.to_owned(),
            r#"{"ph":"X","ts":1.2344999,"dur":12.3,"args":null}"#.into(),
            r#"{"ph":"X","ts":"0012.5","dur":"7","pid":"007","tid":"0","id":"18446744073709551615"}"#.into(),
            r#"{"ph":"X","id":1234567890123456789,"pid":9999999999999999999}"#.into(),
            r#"{"ph":"X","id":12345678901234567890}"#.into(),
            r#"{"ph":"X","id":01}"#.into(),
            r#"{"ph":"X","ts":01.5}"#.into(),
            r#"{"ph":"X","ts":1.}"#.into(),
            r#"{"ph":"X","ts":"1."}"#.into(),
            r#"{"ph":"X","ts":1e3}"#.into(),
            r#"{"ph":"X","ts":-1}"#.into(),
            r#"{"ph":"X","ts":18446744073709551.615}"#.into(),
            r#"{"ph":"X","ts":18446744073709552}"#.into(),
            format!(r#"{{"ph":"X","args":{{"fhash":{big},"hhash":"{big}","value":{bigger}}}}}"#),
            format!(r#"{{"ph":"M","args":{{"name":"x","value":"{big}"}}}}"#),
            r#"{"ph":"M","args":{"name":5,"value":"v"}}"#.into(),
            r#"{"ph":"X","args":{"size":-123456789012345678,"ret":"-5","offset":"+5"}}"#.into(),
            r#"{"ph":"X","args":{"size":-0,"ret":1.0,"offset":-}}"#.into(),
            r#"{"ph":"X","args":{"fname":"/a/b","hostname":"h","k":"v","n":1,"f":2.5,"t":true,"z":null,"k":3}}"#.into(),
            r#"{"ph":"X","args":{"fname":"/a","fhash":7,"hostname":"h","hhash":8}}"#.into(),
            r#"{"ph":"X","args":{"size":1,"size":2}}"#.into(),
            r#"{"ph":"X","args":{"a":[1]}}"#.into(),
            r#"{ "ph" : "X" , "name" : "é → ü" , "cat" : "ünïcödé and a long tail past eight" }"#.into(),
            r#"{"ph":"é"}"#.into(),
            r#"{"ph":"XY"}"#.into(),
            r#"{"ph":"\""}"#.into(),
            r#"{"ph":"X","name":"a\"b"}"#.into(),
            "{\"ph\":\"X\",\"name\":\"tab\there\"}".into(),
            r#"{"ph":"X","name":null}"#.into(),
            r#"{"ph":"X","ph":"X"}"#.into(),
            r#"{"ph":"X"}}"#.into(),
            r#"{"ph":"X","args":nul}"#.into(),
            r#"{"name":"no phase"}"#.into(),
            r#"{"ph":"X","args":{"fhash":1234567890123456,"hhash":0123456789012345678}}"#.into(),
            r#"{"ph":"X","args":{"fhash":12345678901234567.5}}"#.into(),
            r#"{"ph":"X","args":{"fhash":"0000000000000000000012","hhash":12345678901234567}}"#.into(),
            r#"{"ph":"X","args":{"value":340282366920938463463374607431768211455}}"#.into(),
            r#"{"ph":"X","args":{"value":340282366920938463463374607431768211456}}"#.into(),
            r#"{"ph":"X","args":{"value":1234567890123456789012345678901234567890}}"#.into(),
            r#"{"ph":"X","args":{"fhash":123456789012345678901234,"hhash":"0000000000000000000000000000000000000000000042"}}"#.into(),
            r#"{"ph":"X","args":{"fhash":12345678901234567890123456789012345678,"hhash":99999999999999999999999999999999999999}}"#.into(),
            r#"{"ph":"X","args":{"fhash":123456789012345678901234567.5,"hhash":1234567890123456789012345678901234567}}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "X", "ts": 1.5, "dur": "7", "args": null}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "X", "dur": 3, "ts": 1}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "X", "ts": 5, "args": {}, "dur": 3}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "XY", "ts": 5}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "a\"b", "cat": "c", "ph": "X"}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "X", "args": {"hhash": 1, "size_sum": null, "fhash": 2}}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "X", "args": {"hhash": 1, "hhash": 2}}"#.into(),
            r#"{"pid": -1, "tid": 2, "name": "n", "cat": "c", "ph": "X"}"#.into(),
            r#"{"pid": 1, "tid": 2, "name": "n", "cat": "c", "ph": "X", "ts": 1e3}"#.into(),
            r#"{"pid":1, "tid": 2, "name": "n", "cat": "c", "ph": "X"}"#.into(),
        ] {
            cases.push(extra.into_bytes());
        }
        cases.push(b"{\"ph\":\"X\",\"name\":\"\xff\xfe\"}".to_vec());
        let mut fast_hits = 0;
        for line in &cases {
            for unit in [TimeUnit::Us, TimeUnit::Ns] {
                let t = trim_line(line);
                if let Some(e) = fast::event(t, unit) {
                    fast_hits += 1;
                    assert_eq!(
                        parse_general(t, unit),
                        Ok(e),
                        "{}",
                        String::from_utf8_lossy(line)
                    );
                }
            }
        }
        assert!(
            fast_hits * 10 > cases.len() * 2 * 8,
            "{fast_hits} of {}",
            cases.len() * 2
        );
    }

    /// DataCrumbs' and DFTracer's traces take a writer's fixed shape, as ours do: no line is left to the
    /// field-by-field reader, each reads as the general path reads it, and DataCrumbs' lines are read up to their
    /// newline without a search for it.
    #[test]
    fn every_foreign_trace_line_takes_a_writers_shape() {
        for (name, newline) in [
            ("datacrumbs/case-read-simple.trace.pfw.gz", true),
            ("datacrumbs/case-write-simple.trace.pfw.gz", true),
            ("dftracer/dlio-unet3d.pfw.gz", false),
            ("dftracer/posix-old.pfw", false),
        ] {
            let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            let mut text = Vec::new();
            let file = std::fs::File::open(&path).unwrap();
            if name.ends_with(".gz") {
                flate2::read::MultiGzDecoder::new(file)
                    .read_to_end(&mut text)
                    .unwrap();
            } else {
                std::io::BufReader::new(file)
                    .read_to_end(&mut text)
                    .unwrap();
            }
            let mut shaped = 0;
            let mut rest = &text[..];
            while let Some(len) = memchr::memchr(b'\n', rest) {
                let line = &rest[..len + 1];
                rest = &rest[len + 1..];
                let t = trim_line(line);
                if matches!(t, b"[" | b"]") {
                    continue;
                }
                for unit in [TimeUnit::Us, TimeUnit::Ns] {
                    let mut e = fast::blank();
                    let n = fast::shaped_prefix(t, unit, &mut e);
                    assert_eq!(n, Some(t.len()), "{name}: {}", String::from_utf8_lossy(t));
                    assert_eq!(Ok(e), parse_general(t, unit));
                    if newline {
                        let mut e = fast::blank();
                        assert_eq!(fast::line_into(line, unit, &mut e), Some(len));
                    }
                }
                shaped += 1;
            }
            let events = match name {
                "datacrumbs/case-read-simple.trace.pfw.gz" => 216_630,
                "datacrumbs/case-write-simple.trace.pfw.gz" => 216_131,
                "dftracer/dlio-unet3d.pfw.gz" => 93_894,
                _ => 1012,
            };
            assert_eq!(shaped, events, "{name}");
        }
    }

    #[test]
    fn lines_parsed_over_stale_events_equal_lines_parsed_fresh() {
        let lines = lines();
        for unit in [TimeUnit::Us, TimeUnit::Ns] {
            let fresh: Vec<Event> = lines
                .iter()
                .filter_map(|l| parse_line(l, unit).ok().flatten())
                .collect();
            // Stale events of every shape the fixtures hold, in another order, more of them than lines.
            assert!(fresh.iter().any(|e| e.args.fname.is_some()));
            assert!(fresh.iter().any(|e| e.args.name.is_some()));
            assert!(fresh.iter().any(|e| !e.args.other.is_empty()));
            assert!(fresh.iter().any(|e| e.name.len() > 24));
            let stale = fresh.iter().rev().chain(&fresh).cloned().collect();
            let mut out = Slots::new(stale);
            for l in &lines {
                let mut text = l.clone();
                text.push(b'\n');
                if parse_written_line(&text, unit, &mut out).is_none() {
                    let _ = parse_line_into(l, unit, &mut out);
                }
            }
            assert_eq!(out.len(), fresh.len());
            assert!(out.into_events() == fresh);
        }
    }

    #[test]
    fn fast_path_reads_what_the_writer_writes() {
        let mut read = 0;
        for line in lines() {
            let Ok(Some(e)) = parse_line(&line, TimeUnit::Us) else {
                continue;
            };
            for unit in [TimeUnit::Us, TimeUnit::Ns] {
                let mut out = Vec::new();
                crate::write::format_event(&mut out, &e, Some(e.id.unwrap_or(7)), unit);
                let t = trim_line(&out);
                let general = parse_general(t, unit).unwrap();
                let mut fast = fast::blank();
                if fast::ours(t, unit, &mut fast).is_some() {
                    read += 1;
                    assert_eq!(fast, general, "{}", String::from_utf8_lossy(t));
                } else {
                    // Only untyped args or escapes leave the writer's own shape.
                    assert!(
                        !general.args.other.is_empty() || t.contains(&b'\\'),
                        "{}",
                        String::from_utf8_lossy(t)
                    );
                }
            }
        }
        assert!(read > 1000, "{read}");
    }
}
