//! Large realistic traces made from real ones: a trace repeated back to back, each copy shifted
//! in time past the end of the previous one and given its own pids. Used by benchmarks here and
//! in `features`.

use std::path::Path;

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
