//! A thread's events that lie inside no row, summed as they are met: what [`crate::sweep`] and [`crate::stream`] hand
//! to the no-call table ([`crate::nocall`]). It imports none of them.

use crate::exclusive::Interval;
use crate::span::{INCLUSIVE_ONLY, Span};

/// A thread's events outside every row, summed.
#[derive(Clone, Debug, Default)]
pub struct Outside {
    /// (key, summed durations, count, earliest start), one entry per key.
    pub(crate) cells: Vec<(u32, u64, u64, u64)>,
    /// The intervals among them, for the exclusive time.
    pub(crate) intervals: Vec<Interval>,
}

impl Outside {
    pub fn add(&mut self, s: &Span) {
        match self.cells.iter_mut().find(|c| c.0 == s.key) {
            Some(c) => {
                c.1 += s.dur();
                c.2 += 1;
                c.3 = c.3.min(s.ts);
            }
            None => self.cells.push((s.key, s.dur(), 1, s.ts)),
        }
        // No layer is the bucket's own, so the only intervals left out are those that take no part at all.
        self.intervals.extend(s.interval_in(INCLUSIVE_ONLY));
    }

    /// Keys and layers given as indices into wider name lists.
    pub fn renumber(&mut self, keys: &[u32], layers: &[u32]) {
        for c in &mut self.cells {
            c.0 = keys[c.0 as usize];
        }
        for iv in &mut self.intervals {
            iv.layer = layers[iv.layer as usize];
        }
    }

    pub fn merge(&mut self, other: Outside) {
        for (key, ns, count, first) in other.cells {
            match self.cells.iter_mut().find(|c| c.0 == key) {
                Some(c) => {
                    c.1 += ns;
                    c.2 += count;
                    c.3 = c.3.min(first);
                }
                None => self.cells.push((key, ns, count, first)),
            }
        }
        self.intervals.extend(other.intervals);
    }
}
