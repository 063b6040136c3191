//! Exact duplicate events: the same event written twice (a buffer flushed twice, a file concatenated onto itself)
//! would be counted twice, and a duplicated call would contain its twin. An event with an `id` (datacrumbs and
//! DFTracer number every event) that equals, in every field, an earlier event of the same file is that event
//! again: the reader drops it and counts it. Events without an id are all kept: in DataCrumbs' microsecond traces,
//! distinct kernel calls often give identical lines (15% of the lines of case-read-simple.trace.pfw.gz repeat
//! an earlier one exactly). Metadata events are kept too: interning a name twice is harmless.

use std::collections::HashSet;

use foldhash::fast::RandomState;
use xxhash_rust::xxh3::xxh3_128;

use crate::{ArgValue, Event, Phase};

/// The digests of the events of the current file.
#[derive(Default)]
pub(super) struct Seen {
    digests: HashSet<u128, RandomState>,
    buf: Vec<u8>,
}

impl Seen {
    /// Drops from `events` the events with an id seen before in this file (or twice in `events`); returns how many.
    pub(super) fn drop_repeats(&mut self, events: &mut Vec<Event>) -> u64 {
        let before = events.len();
        let Seen { digests, buf } = self;
        events.retain(|e| {
            e.id.is_none() || e.ph == Phase::Metadata || digests.insert(digest(buf, e))
        });
        (before - events.len()) as u64
    }
}

/// A 128-bit digest of every field (XXH3-128, so two distinct events share one as rarely as random values would).
fn digest(buf: &mut Vec<u8>, e: &Event) -> u128 {
    buf.clear();
    let mut put = |tag: u8, b: &[u8]| {
        buf.push(tag);
        buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
        buf.extend_from_slice(b);
    };
    let mut opt = |v: Option<u128>| match v {
        Some(x) => put(1, &x.to_le_bytes()),
        None => put(0, &[]),
    };
    opt(e.id.map(u128::from));
    let a = &e.args;
    for v in [a.fhash, a.hhash, a.value] {
        opt(v.map(|h| h.0));
    }
    for v in [a.size, a.ret, a.offset] {
        opt(v.map(|x| x as u128));
    }
    put(b'n', e.name.as_bytes());
    put(b'c', e.cat.as_bytes());
    put(e.ph.as_byte(), &[]);
    for n in [e.pid, e.tid, e.ts_ns, e.dur_ns] {
        put(b'u', &n.to_le_bytes());
    }
    for s in [&a.fname, &a.hostname, &a.name] {
        match s {
            Some(s) => put(1, s.as_bytes()),
            None => put(0, &[]),
        }
    }
    for (k, v) in &a.other {
        put(b'k', k.as_bytes());
        match v {
            ArgValue::Null => put(b'n', &[]),
            ArgValue::Bool(b) => put(b'b', &[u8::from(*b)]),
            ArgValue::Int(i) => put(b'i', &i.to_le_bytes()),
            ArgValue::BigInt(i) => put(b'I', &i.to_le_bytes()),
            ArgValue::Float(f) => put(b'f', &f.to_bits().to_le_bytes()),
            ArgValue::Str(s) => put(b's', s.as_bytes()),
            ArgValue::Json(s) => put(b'j', s.as_bytes()),
        }
    }
    xxh3_128(buf)
}
