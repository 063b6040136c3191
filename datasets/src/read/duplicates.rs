//! Exact duplicate events: the same event written twice (a buffer flushed twice, a file concatenated onto itself)
//! would be counted twice, and a duplicated call would contain its twin. An event with an `id` (datacrumbs and
//! DFTracer number every event) that equals, in every field, an earlier event of the same file is that event
//! again: the reader drops it and counts it. Events without an id are all kept: in DataCrumbs' microsecond traces,
//! distinct kernel calls often give identical lines (15% of the lines of case-read-simple.trace.pfw.gz repeat
//! an earlier one exactly). Metadata events are kept too: interning a name twice is harmless.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::quality::{FixedState, RandomState};

use crate::{ArgValue, Event, Phase};

/// Ids past `2 × (slots so far) + DENSE_SLACK` go to the hash set, so that one far id cannot grow the vector.
const DENSE_SLACK: u64 = 1 << 16;

/// The digests of the events of the current file, by id. Writers number events from 0 up, so the digest of an
/// id's first event sits in a vector indexed by id (8 bytes an event, written in order, where a hash set of every
/// event cost a cache miss each and 45% of a build's CPU time).
#[derive(Default)]
pub(super) struct Seen {
    /// The digest of the first event of each id, 0 where none came yet.
    first: Vec<u64>,
    /// (id, digest) of the events no slot of `first` holds: ids far past the others, and events that share an
    /// id with an earlier, different one.
    rest: HashSet<(u64, u64), RandomState>,
}

impl Seen {
    /// Drops from `events` the events with an id seen before in this file (or twice in `events`); returns how many.
    /// `keys` are the events' [`key`]s, when a worker computed them: then the events themselves are only touched
    /// when one is dropped, which is rare.
    pub(super) fn drop_repeats(&mut self, events: &mut Vec<Event>, keys: &[(u64, u64)]) -> u64 {
        let computed: Vec<(u64, u64)>;
        let keys = if keys.len() == events.len() {
            keys
        } else {
            computed = events.iter().map(key).collect();
            &computed
        };
        let repeats: Vec<usize> = keys
            .iter()
            .enumerate()
            .filter(|&(_, &(id, digest))| digest != 0 && !self.first_time(id, digest))
            .map(|(i, _)| i)
            .collect();
        if repeats.is_empty() {
            return 0;
        }
        let mut repeats = repeats.iter().copied().peekable();
        let mut i = 0;
        events.retain(|_| {
            let repeat = repeats.next_if_eq(&i).is_some();
            i += 1;
            !repeat
        });
        (i - events.len()) as u64
    }

    /// Whether no earlier event had this id and digest; records it.
    fn first_time(&mut self, id: u64, digest: u64) -> bool {
        let limit = 2 * self.first.len() as u64 + DENSE_SLACK;
        if id < limit {
            let i = id as usize;
            if i >= self.first.len() {
                self.first.resize(i + 1, 0);
            }
            match self.first[i] {
                0 => {
                    self.first[i] = digest;
                    return true;
                }
                d if d == digest => return false,
                _ => {}
            }
        }
        self.rest.insert((id, digest))
    }
}

/// (id, [`digest`]) of an event that [`Seen`] compares (one with an id, not metadata), (0, 0) for the others.
pub(super) fn key(e: &Event) -> (u64, u64) {
    match e.id {
        Some(id) if e.ph != Phase::Metadata => (id, digest(e)),
        _ => (0, 0),
    }
}

/// A 64-bit digest of every field but the id (never 0, the empty slot). Events of one id are compared by it, so two
/// distinct events of one id share a digest about once in 2^64. A string hashes with a 0xff after it, a byte UTF-8
/// never holds, so that fields cannot run into each other.
pub(super) fn digest(e: &Event) -> u64 {
    // One seed for the workers that compute digests and the reader that computes the ones they did not.
    let mut h = FixedState::with_seed(0x6463_6475_7065_7331).build_hasher();
    let a = &e.args;
    // The fixed-width fields in one write: written word by word, they took 1.6 times as long.
    let mut words = [0u64; 21];
    for (i, v) in [a.fhash, a.hhash, a.value].into_iter().enumerate() {
        if let Some(x) = v {
            words[3 * i..3 * i + 3].copy_from_slice(&[1, x.0 as u64, (x.0 >> 64) as u64]);
        }
    }
    for (i, v) in [a.size, a.ret, a.offset].into_iter().enumerate() {
        if let Some(x) = v {
            words[9 + 2 * i..11 + 2 * i].copy_from_slice(&[1, x as u64]);
        }
    }
    words[15..].copy_from_slice(&[
        u64::from(e.ph.as_byte()),
        e.pid,
        e.tid,
        e.ts_ns,
        e.dur_ns,
        a.other.len() as u64,
    ]);
    let mut bytes = [0u8; 21 * 8];
    for (chunk, w) in bytes.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    h.write(&bytes);
    e.name.as_str().hash(&mut h);
    e.cat.as_str().hash(&mut h);
    for s in [&a.fname, &a.hostname, &a.name] {
        s.as_deref().hash(&mut h);
    }
    for (k, v) in &a.other {
        k.as_str().hash(&mut h);
        match v {
            ArgValue::Null => h.write_u8(0),
            ArgValue::Bool(b) => h.write_u16(0x100 | u16::from(*b)),
            ArgValue::Int(i) => {
                h.write_u8(2);
                h.write_i64(*i)
            }
            ArgValue::BigInt(i) => {
                h.write_u8(3);
                h.write_i128(*i)
            }
            ArgValue::Float(f) => {
                h.write_u8(4);
                h.write_u64(f.to_bits())
            }
            ArgValue::Str(s) => {
                h.write_u8(5);
                s.as_str().hash(&mut h)
            }
            ArgValue::Json(s) => {
                h.write_u8(6);
                s.as_str().hash(&mut h)
            }
        }
    }
    h.finish().max(1)
}
