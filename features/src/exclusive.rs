//! Exclusive time: every nanosecond of a call goes to exactly one layer, or to the call itself (`self_ns`).
//!
//! At each instant the intervals active inside the call (same thread, inside the call, dur > 0, of another layer
//! than the call's) are looked at; the innermost ones win, those that contain no other active interval. When they
//! are of several layers (intervals that overlap without nesting, or identical intervals), the exclusive-time order
//! of [`datasets::vocab::layer::LAYERS`] decides.
//! Time no interval covers is the call's own.

use compact_str::CompactString;
use datasets::vocab::layer::exclusive_rank;

/// The rank of each layer (by index) in exclusive-time order: smaller wins.
pub fn ranks(layers: &[CompactString]) -> Vec<u32> {
    let mut by_order: Vec<usize> = (0..layers.len()).collect();
    by_order.sort_by_key(|&i| exclusive_rank(&layers[i]));
    let mut rank = vec![0u32; layers.len()];
    for (r, &i) in by_order.iter().enumerate() {
        rank[i] = r as u32;
    }
    rank
}

/// An interval inside a call: `[ts, end)`, with `end > ts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub ts: u64,
    pub end: u64,
    pub layer: u32,
}

/// One row's exclusive time in one layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Excl {
    pub row: u32,
    pub layer: u32,
    pub ns: u64,
}

/// Exclusive nanoseconds per layer (by layer index, ascending; layers with none left out) of the intervals inside
/// one call, in any order. `rank` comes from [`ranks`].
pub fn exclusive(intervals: &mut [Interval], rank: &[u32]) -> Vec<(u32, u64)> {
    intervals.sort_unstable_by_key(|i| (i.ts, i.end, i.layer));
    let mut bounds: Vec<u64> = intervals.iter().flat_map(|i| [i.ts, i.end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut out: Vec<(u32, u64)> = Vec::new();
    let mut active: Vec<Interval> = Vec::new();
    let mut next = 0;
    for w in bounds.windows(2) {
        let (from, to) = (w[0], w[1]);
        while next < intervals.len() && intervals[next].ts <= from {
            active.push(intervals[next]);
            next += 1;
        }
        active.retain(|i| i.end >= to);
        let innermost = active.iter().filter(|x| {
            !active
                .iter()
                .any(|y| y.ts >= x.ts && y.end <= x.end && (y.ts, y.end) != (x.ts, x.end))
        });
        if let Some(w) = innermost.min_by_key(|i| rank[i.layer as usize]) {
            match out.iter_mut().find(|(l, _)| *l == w.layer) {
                Some((_, ns)) => *ns += to - from,
                None => out.push((w.layer, to - from)),
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(ts: u64, end: u64, layer: u32) -> Interval {
        Interval { ts, end, layer }
    }

    #[test]
    fn the_order_puts_block_before_sched_and_unknown_layers_between() {
        let names: Vec<CompactString> = ["sched", "vfs", "block", "zzz", "aaa", "irq"]
            .map(CompactString::from)
            .to_vec();
        assert_eq!(ranks(&names), [5, 2, 1, 4, 3, 0]);
    }

    #[test]
    fn nested_intervals_give_time_to_the_innermost() {
        // vfs [0, 100) holds ext4 [10, 60), which holds block [20, 30).
        let rank = [2, 1, 0];
        let mut v = [iv(0, 100, 0), iv(10, 60, 1), iv(20, 30, 2)];
        assert_eq!(exclusive(&mut v, &rank), [(0, 50), (1, 40), (2, 10)]);
    }

    #[test]
    fn overlap_without_nesting_goes_by_the_order() {
        // sched [0, 50) and block [30, 80): the shared [30, 50) goes to block, ranked first.
        let rank = [1, 0];
        let mut v = [iv(0, 50, 0), iv(30, 80, 1)];
        assert_eq!(exclusive(&mut v, &rank), [(0, 30), (1, 50)]);
        // With vfs [0, 40) inside sched, sched is never innermost while vfs runs: vfs gets [0, 30), and where vfs
        // and block overlap without nesting, block (ranked before vfs) wins.
        let rank = [1, 0, 2];
        let mut v = [iv(0, 50, 0), iv(30, 80, 1), iv(0, 40, 2)];
        assert_eq!(exclusive(&mut v, &rank), [(1, 50), (2, 30)]);
    }
}
