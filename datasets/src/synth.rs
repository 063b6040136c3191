//! Large realistic traces made from real ones: a trace repeated back to back, each copy shifted
//! in time past the end of the previous one and given its own pids, either in datacrumbs' own
//! format or in the text of the writer that made it. Used by benchmarks here and in `features`.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::error::{Error, Result};
use crate::input::InputError;
use crate::parse::parse_line;
use crate::read::Trace;
use crate::strings::StringTable;
use crate::write::{Header, TraceWriter, WriteStats};
use crate::{Event, Hash, Phase, TimeUnit};

/// Writes an event in datacrumbs' own format: hashes that the source's metadata resolves are
/// re-interned (so 128-bit DataCrumbs hashes become u64 XXH3 hashes); the rest are folded into
/// 64 bits (high half XOR low half).
pub fn write_rehashed(w: &mut TraceWriter, strings: &StringTable, e: &Event) -> Result<()> {
    if e.ph == Phase::Metadata {
        return Ok(());
    }
    let mut e = e.clone();
    if let Some(h) = e.args.fhash {
        e.args.fhash = Some(match strings.file_of(&e) {
            Some(name) => w.intern_file(name)?,
            None => fold(h),
        });
    }
    if let Some(h) = e.args.hhash {
        e.args.hhash = Some(match strings.host_of(&e) {
            Some(name) => w.intern_host(name)?,
            None => fold(h),
        });
    }
    w.write(&e)
}

fn fold(h: Hash) -> Hash {
    Hash(u128::from((h.0 >> 64) as u64 ^ h.0 as u64))
}

/// Writes `copies` copies of `src`'s events to `out` (BGZF when it ends in `.gz`). Copy `k` is
/// shifted by `k` times the trace's span plus one microsecond, and its pids by `k` times
/// (largest pid + 1). Metadata events are not copied; strings are interned anew.
pub fn repeat_trace(src: &Trace, copies: usize, out: &Path, header: Header) -> Result<WriteStats> {
    let mut w = TraceWriter::create(out, header)?;
    repeat_into(src, copies, &mut w)?;
    w.finish(vec![("copies".into(), crate::ArgValue::Int(copies as i64))])
}

/// [`repeat_trace`] into a writer the caller made (and finishes).
pub fn repeat_into(src: &Trace, copies: usize, w: &mut TraceWriter) -> Result<()> {
    let data = || src.events.iter().filter(|e| e.ph != Phase::Metadata);
    let start = data().map(|e| e.ts_ns).min().unwrap_or(0);
    let end = data().map(Event::end_ns).max().unwrap_or(0);
    let shift = end - start + 1000;
    let pid_stride = data().map(|e| e.pid).max().unwrap_or(0) + 1;
    for k in 0..copies as u64 {
        for e in data() {
            let mut e = e.clone();
            e.id = None;
            e.ts_ns += k * shift;
            e.pid += k * pid_stride;
            write_rehashed(w, &src.strings, &e)?;
        }
    }
    Ok(())
}

/// The `FH` values every process of a [`cm1_like`] set interns, each for a file of its own: DFTracer's values are
/// small integers, so they collide across processes and files.
pub const CM1_FH: [u64; 2] = [19179, 7];
/// The calls each process of a [`cm1_like`] set makes: (operation, `FH` value of its file).
pub const CM1_CALLS: [(&str, u64); 4] = [
    ("open64", 19179),
    ("write", 7),
    ("read", 19179),
    ("write", 7),
];

/// The pid of process `p` of file `f` of a [`cm1_like`] set.
pub fn cm1_pid(f: usize, p: usize) -> u64 {
    3_537_781 + 10 * f as u64 + p as u64
}

/// The file `value` names in process `p` of file `f` of a [`cm1_like`] set.
pub fn cm1_name(f: usize, p: usize, value: u64) -> String {
    match value {
        19179 => format!("/dev/shm/ucx_shm_posix_{f}_{p}"),
        _ => format!("cm1out_{f:06}_{p:06}_w.dat"),
    }
}

/// Writes `files` DFTracer-style traces (every field a JSON string) to `dir`, each with `pids` processes that
/// intern the same [`CM1_FH`] values for files of their own (as DFTracer's cm1 traces do), then make the
/// [`CM1_CALLS`] on them, 100 µs apart and 40 µs long. Process `p` starts at 1 s + `p` ms in every file.
pub fn cm1_like(dir: &Path, files: usize, pids: usize) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut paths = Vec::new();
    for f in 0..files {
        let mut text = String::from("[\n");
        for p in 0..pids {
            let pid = cm1_pid(f, p);
            for value in CM1_FH {
                let name = cm1_name(f, p, value);
                text += &format!(
                    r#"{{"name":"FH","cat":"dftracer","pid":"{pid}","tid":"{pid}","ph":"M","args":{{"name":"{name}","value":"{value}"}}}}"#
                );
                text.push('\n');
            }
            for (k, (op, fh)) in CM1_CALLS.iter().enumerate() {
                let ts = 1_000_000 + 1_000 * p + 100 * k;
                let args = match *op {
                    "open64" => format!(r#""fhash":"{fh}","flags":"66""#),
                    _ => format!(r#""fhash":"{fh}","size":"4096","offset":"{}""#, 4096 * k),
                };
                text += &format!(
                    r#"{{"id":"{k}","name":"{op}","cat":"POSIX","pid":"{pid}","tid":"{pid}","ts":"{ts}","dur":"40","ph":"X","args":{{{args}}}}}"#
                );
                text.push('\n');
            }
        }
        let path = dir.join(format!("cm1-{f}.pfw"));
        std::fs::write(&path, text)?;
        paths.push(path);
    }
    Ok(paths)
}

/// `from` (gzip, one member or many, as BGZF is) written again to `to` as one plain gzip member at level 6, as
/// DataCrumbs and DFTracer write their traces: the benchmarks' second input.
pub fn regzip(from: &Path, to: &Path) -> io::Result<()> {
    let mut r = MultiGzDecoder::new(BufReader::new(File::open(from)?));
    let mut w = GzEncoder::new(BufWriter::new(File::create(to)?), Compression::new(6));
    io::copy(&mut r, &mut w)?;
    w.finish()?;
    Ok(())
}

/// What [`repeat_text`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextCopies {
    /// Event lines, over every copy.
    pub events: u64,
    /// Bytes of text, before compression.
    pub text_bytes: u64,
    /// What copy `k` adds to each `pid`, `tid` and `id`: `k` times this.
    pub id_stride: u64,
    /// What copy `k` adds to each `ts`, in the file's own unit: `k` times this.
    pub ts_shift: u64,
}

/// The fields [`repeat_text`] shifts.
const SHIFTED: [&str; 4] = ["id", "pid", "tid", "ts"];

/// Writes `copies` copies of the trace text in `src` (plain or gzip) to `out` as one gzip member at level 6, as
/// DataCrumbs and DFTracer wrote theirs, in the source's own dialect, line by line: copy `k` adds `k` times
/// (the largest `pid`, `tid` or `id` + 1) to each of those fields and `k` times (the trace's span + 1) to `ts`,
/// editing only their digits, so every other byte of a line is the source's. The `[` and `]` lines that frame
/// the source are written once. Each written line is read back and must be its source line's event shifted:
/// a line whose fields could not be edited in place is an error naming it.
pub fn repeat_text(src: &Path, copies: usize, out: &Path) -> Result<TextCopies> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| Error::Io { path, cause }
    };
    let mut raw = Vec::new();
    File::open(src)
        .and_then(|mut f| f.read_to_end(&mut raw))
        .map_err(io_err(src))?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut text)
            .map_err(io_err(src))?;
        text
    } else {
        raw
    };
    // Parsed as microseconds, the times are the file's numbers times 1000, whatever unit it used.
    let mut lines = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let at = n as u64 + 1;
        let e = parse_line(line, TimeUnit::Us)
            .map_err(|e| Error::Parse(InputError::new(src, Some(at), Some(&e.field), e.msg)))?;
        lines.push((at, line, e));
    }
    let events = || lines.iter().filter_map(|(_, _, e)| e.as_ref());
    let timed = || events().filter(|e| e.ph != Phase::Metadata);
    let start = timed().map(|e| e.ts_ns).min().unwrap_or(0);
    let end = timed().map(Event::end_ns).max().unwrap_or(0);
    let ts_shift = (end - start).div_ceil(1000) + 1;
    let id_stride = events()
        .map(|e| e.pid.max(e.tid).max(e.id.unwrap_or(0)))
        .max()
        .unwrap_or(0)
        + 1;
    let framing = |l: &[u8]| matches!(crate::parse::trim_line(l), b"[" | b"]" | b"");
    let first = lines
        .iter()
        .position(|(_, l, _)| !framing(l))
        .unwrap_or(lines.len());
    let last = lines
        .iter()
        .rposition(|(_, l, _)| !framing(l))
        .map_or(first, |i| i + 1);
    let mut w = GzEncoder::new(
        BufWriter::new(File::create(out).map_err(io_err(out))?),
        Compression::new(6),
    );
    let mut stats = TextCopies {
        events: 0,
        text_bytes: 0,
        id_stride,
        ts_shift,
    };
    let mut buf = Vec::new();
    let mut emit = |w: &mut GzEncoder<BufWriter<File>>, line: &[u8]| {
        stats.text_bytes += line.len() as u64 + 1;
        w.write_all(line).and_then(|()| w.write_all(b"\n"))
    };
    for (_, line, _) in &lines[..first] {
        emit(&mut w, line).map_err(io_err(out))?;
    }
    for k in 0..copies as u64 {
        for (at, line, e) in &lines[first..last] {
            let Some(e) = e else {
                emit(&mut w, line).map_err(io_err(out))?;
                continue;
            };
            buf.clear();
            let mut expect = e.clone();
            let mut found = Vec::with_capacity(SHIFTED.len());
            for key in SHIFTED {
                match number_at(line, key) {
                    Some(Some((start, len))) => found.push((start, len, key)),
                    Some(None) => {
                        return Err(Error::Parse(InputError::new(
                            src,
                            Some(*at),
                            Some(key),
                            "not a whole number to shift",
                        )));
                    }
                    None => {}
                }
            }
            found.sort_unstable();
            let mut copied = 0;
            for (start, len, key) in found {
                let step = if key == "ts" { ts_shift } else { id_stride };
                let shifted = std::str::from_utf8(&line[start..start + len])
                    .ok()
                    .and_then(|d| d.parse::<u64>().ok())
                    .and_then(|v| v.checked_add(k * step))
                    .ok_or_else(|| {
                        Error::Parse(InputError::new(
                            src,
                            Some(*at),
                            Some(key),
                            "not a u64 to shift",
                        ))
                    })?;
                buf.extend_from_slice(&line[copied..start]);
                buf.extend_from_slice(itoa::Buffer::new().format(shifted).as_bytes());
                copied = start + len;
                match key {
                    "id" => expect.id = expect.id.map(|v| v + k * step),
                    "pid" => expect.pid += k * step,
                    "tid" => expect.tid += k * step,
                    _ => expect.ts_ns += k * step * 1000,
                }
            }
            buf.extend_from_slice(&line[copied..]);
            if parse_line(&buf, TimeUnit::Us).ok().flatten().as_ref() != Some(&expect) {
                return Err(Error::Parse(InputError::new(
                    src,
                    Some(*at),
                    None,
                    "its pid, tid, id and ts could not be shifted in place",
                )));
            }
            emit(&mut w, &buf).map_err(io_err(out))?;
            stats.events += 1;
        }
    }
    for (_, line, _) in &lines[last..] {
        if !line.is_empty() {
            emit(&mut w, line).map_err(io_err(out))?;
        }
    }
    w.finish()
        .and_then(|mut b| b.flush())
        .map_err(io_err(out))?;
    Ok(stats)
}

/// Where the digits of the first `"key":` in `line` are (spaces and a quote may precede them): `Some((start,
/// length))`, `Some(None)` when its value does not start with a digit, `None` when `key` is not there.
fn number_at(line: &[u8], key: &str) -> Option<Option<(usize, usize)>> {
    let pattern = format!("\"{key}\":");
    let at = memchr::memmem::find(line, pattern.as_bytes())? + pattern.len();
    let start = at
        + line[at..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'"')
            .count();
    let len = line[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    Some((len > 0).then_some((start, len)))
}
