//! Buffers given back for reuse. Each chunk needs a buffer of text and one of events several times larger; allocated
//! fresh, they came from new pages each time, and the kernel's zeroing and unmapping of those pages took a fifth of a
//! build's CPU time.

use std::sync::Mutex;

use crate::Event;

/// Spare text and event buffers, at most `keep` of each.
pub(crate) struct Spare {
    keep: usize,
    text: Mutex<Vec<Vec<u8>>>,
    events: Mutex<Vec<Vec<Event>>>,
}

impl Spare {
    pub(crate) fn new(keep: usize) -> Self {
        Spare {
            keep,
            text: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
        }
    }

    /// A text buffer of `len` bytes, for a reader to overwrite: what a buffer held when it was given back is left in
    /// it, and only the bytes past its old length are zeroed (zeroing each chunk's buffer whole was 8% of a build's
    /// CPU time, on the one thread that inflates).
    pub(crate) fn text(&self, len: usize) -> Vec<u8> {
        let spare = self.text.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut v = spare.unwrap_or_default();
        v.resize(len, 0);
        v
    }

    pub(crate) fn give_text(&self, v: Vec<u8>) {
        give(&self.text, v, self.keep);
    }

    /// An event buffer as it was given back: its stale events are parsed over ([`crate::parse::Slots`]).
    pub(crate) fn stale_events(&self) -> Vec<Event> {
        let spare = self.events.lock().unwrap_or_else(|e| e.into_inner()).pop();
        spare.unwrap_or_default()
    }

    pub(crate) fn give_events(&self, v: Vec<Event>) {
        give(&self.events, v, self.keep);
    }
}

fn give<T>(pool: &Mutex<Vec<Vec<T>>>, v: Vec<T>, keep: usize) {
    let mut pool = pool.lock().unwrap_or_else(|e| e.into_inner());
    if pool.len() < keep && v.capacity() > 0 {
        pool.push(v);
    }
}
