//! What attribution works on: an event reduced to a [`Span`], and the [`Cell`] a row gets from the events it holds.
//! [`crate::sweep`], [`crate::stream`], [`crate::nocall`] and [`crate::assemble`] all share these, and this module
//! imports none of them.

use crate::exclusive::Interval;

/// One event, reduced to what attribution needs. `end` is `ts + dur`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub ts: u64,
    pub end: u64,
    /// The event's feature (its (cat, name)).
    pub key: u32,
    /// The event's layer (its cat).
    pub layer: u32,
    /// The row this event is, or [`NO_ROW`].
    pub row: u32,
}

pub const NO_ROW: u32 = u32::MAX;

/// The layer of an event that adds its time to its column and takes no part in exclusive time: a kernel function's
/// inclusive share of an off-CPU wait (`crate::offcpu`), whose own event already files that time.
pub const INCLUSIVE_ONLY: u32 = u32::MAX;

impl Span {
    pub fn dur(&self) -> u64 {
        self.end - self.ts
    }

    /// This event as an interval of the exclusive time of a row of layer `row_layer`: it takes time, is of
    /// another layer than the row, and is not [`INCLUSIVE_ONLY`].
    pub fn interval_in(&self, row_layer: u32) -> Option<Interval> {
        (self.end > self.ts && self.layer != row_layer && self.layer != INCLUSIVE_ONLY).then_some(
            Interval {
                ts: self.ts,
                end: self.end,
                layer: self.layer,
            },
        )
    }
}

/// The value of one (row, feature) cell: summed durations and number of events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cell {
    pub row: u32,
    pub key: u32,
    pub time_ns: u64,
    pub count: u64,
}
