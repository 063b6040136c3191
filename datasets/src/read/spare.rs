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

    /// An empty text buffer with room for `cap` bytes.
    pub(crate) fn text(&self, cap: usize) -> Vec<u8> {
        take(&self.text, cap)
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

/// Buffers are emptied here, by the worker that takes them, not by the reader's thread that gives them back: the
/// reader's thread is the one stage that does not run in parallel.
fn take<T>(pool: &Mutex<Vec<Vec<T>>>, cap: usize) -> Vec<T> {
    let spare = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let mut v = spare.unwrap_or_default();
    v.clear();
    v.reserve(cap);
    v
}

fn give<T>(pool: &Mutex<Vec<Vec<T>>>, v: Vec<T>, keep: usize) {
    let mut pool = pool.lock().unwrap_or_else(|e| e.into_inner());
    if pool.len() < keep && v.capacity() > 0 {
        pool.push(v);
    }
}
