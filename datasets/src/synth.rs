//! Large realistic traces made from real ones: a trace repeated back to back, each copy shifted
//! in time past the end of the previous one and given its own pids. Used by benchmarks here and
//! in `features`.

use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::Path;

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::error::Result;
use crate::read::Trace;
use crate::strings::StringTable;
use crate::write::{Header, TraceWriter, WriteStats};
use crate::{Event, Hash, Phase};

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
