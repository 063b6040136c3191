//! The two attribution rules, over events reduced to [`Span`]s.
//!
//! Exact: an event counts for a row when it is on the row's (pid, tid) and its closed interval lies inside the row's
//! closed interval. One thread is swept in time order with the set of rows open at that time: O(n log n) for the sort
//! plus O(n · d), where d is how many rows of one thread overlap at once (1 for real system calls).
//!
//! Notebook: an event counts when its closed interval overlaps the row's, on any thread. Per event name,
//! `sum over events with ts <= row.end` minus `sum over events with end < row.ts`, from prefix sums: O(n log n).
//!
//! In both rules a row never counts itself. Exact mode also gives each row the intervals inside it, for its
//! exclusive time ([`crate::exclusive`]).

use crate::exclusive::{Excl, Interval, exclusive};
use crate::outside::Outside;
use crate::span::{Cell, NO_ROW, Span};

/// Exact attribution on one thread's spans (any order; they are sorted in place): cells sorted by (row, key), the
/// exclusive time of each row sorted by (row, layer), and the events no row holds (for [`crate::nocall`]). `rank`
/// orders the layers ([`crate::exclusive::ranks`]).
pub fn sweep_thread(spans: &mut [Span], rank: &[u32]) -> (Vec<Cell>, Vec<Excl>, Outside) {
    // Rows first among equal starts, so a row is open before the events that start with it. Traces come nearly
    // sorted, which the stable sort detects as runs.
    spans.sort_by_key(|s| (s.ts, s.row == NO_ROW));
    let mut open: Vec<Span> = Vec::new();
    let mut hits: Vec<(u32, u32, u64)> = Vec::new();
    let mut inside: Vec<(u32, Interval)> = Vec::new();
    let mut outside = Outside::default();
    let mut i = 0;
    while i < spans.len() {
        let ts = spans[i].ts;
        let group_end = i + spans[i..].partition_point(|s| s.ts == ts);
        open.retain(|r| r.end >= ts);
        open.extend(spans[i..group_end].iter().filter(|s| s.row != NO_ROW));
        for s in &spans[i..group_end] {
            let mut held = false;
            for r in &open {
                if r.end >= s.end && r.row != s.row {
                    held = true;
                    hits.push((r.row, s.key, s.dur()));
                    inside.extend(s.interval_in(r.layer).map(|iv| (r.row, iv)));
                }
            }
            if !held && s.row == NO_ROW {
                outside.add(s);
            }
        }
        i = group_end;
    }
    (fold(hits), exclusive_by_row(inside, rank), outside)
}

/// The exclusive time of each row from the intervals inside it, sorted by (row, layer).
pub fn exclusive_by_row(mut inside: Vec<(u32, Interval)>, rank: &[u32]) -> Vec<Excl> {
    inside.sort_unstable_by_key(|&(row, _)| row);
    let mut out = Vec::new();
    let mut intervals: Vec<Interval> = Vec::new();
    for chunk in inside.chunk_by(|a, b| a.0 == b.0) {
        intervals.clear();
        intervals.extend(chunk.iter().map(|&(_, iv)| iv));
        let row = chunk[0].0;
        out.extend(
            exclusive(&mut intervals, rank)
                .into_iter()
                .map(|(layer, ns)| Excl { row, layer, ns }),
        );
    }
    out
}

fn fold(mut hits: Vec<(u32, u32, u64)>) -> Vec<Cell> {
    hits.sort_unstable_by_key(|&(row, key, _)| (row, key));
    let mut cells: Vec<Cell> = Vec::new();
    for (row, key, dur) in hits {
        match cells.last_mut() {
            Some(c) if c.row == row && c.key == key => {
                c.time_ns += dur;
                c.count += 1;
            }
            _ => cells.push(Cell {
                row,
                key,
                time_ns: dur,
                count: 1,
            }),
        }
    }
    cells
}

/// Prefix sums over one feature's events, for the notebook rule.
pub struct Overlap {
    starts: Vec<u64>,
    start_sums: Vec<u64>,
    ends: Vec<u64>,
    end_sums: Vec<u64>,
}

impl Overlap {
    /// From one feature's spans (any order).
    pub fn new(spans: &[Span]) -> Self {
        let mut by_start: Vec<(u64, u64)> = spans.iter().map(|s| (s.ts, s.dur())).collect();
        let mut by_end: Vec<(u64, u64)> = spans.iter().map(|s| (s.end, s.dur())).collect();
        by_start.sort_unstable();
        by_end.sort_unstable();
        let sums = |v: &[(u64, u64)]| {
            let mut acc = 0u64;
            std::iter::once(0)
                .chain(v.iter().map(|&(_, d)| {
                    acc += d;
                    acc
                }))
                .collect()
        };
        Overlap {
            start_sums: sums(&by_start),
            end_sums: sums(&by_end),
            starts: by_start.into_iter().map(|(t, _)| t).collect(),
            ends: by_end.into_iter().map(|(t, _)| t).collect(),
        }
    }

    /// (summed durations, count) of the events whose closed interval overlaps `[ts, end]`.
    pub fn query(&self, ts: u64, end: u64) -> (u64, u64) {
        let started = self.starts.partition_point(|&t| t <= end);
        let ended = self.ends.partition_point(|&t| t < ts);
        (
            self.start_sums[started] - self.end_sums[ended],
            (started - ended) as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute_exact(spans: &[Span]) -> Vec<Cell> {
        let mut hits = Vec::new();
        for r in spans.iter().filter(|s| s.row != NO_ROW) {
            for s in spans {
                if s.row != r.row && s.ts >= r.ts && s.end <= r.end {
                    hits.push((r.row, s.key, s.dur()));
                }
            }
        }
        fold(hits)
    }

    fn spans_strategy() -> impl Strategy<Value = Vec<Span>> {
        prop::collection::vec(
            (0u64..60, 0u64..20, 0u32..4, prop::bool::weighted(0.3)),
            0..80,
        )
        .prop_map(|v| {
            let mut next_row = 0;
            v.into_iter()
                .map(|(ts, dur, key, is_row)| {
                    let row = if is_row {
                        next_row += 1;
                        next_row - 1
                    } else {
                        NO_ROW
                    };
                    Span {
                        ts,
                        end: ts + dur,
                        key,
                        layer: key % 2,
                        row,
                    }
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn sweep_matches_brute_force(mut spans in spans_strategy()) {
            let expected = brute_exact(&spans);
            prop_assert_eq!(sweep_thread(&mut spans, &[0, 1]).0, expected);
        }

        #[test]
        fn overlap_matches_brute_force(spans in spans_strategy(), ts in 0u64..80, dur in 0u64..30) {
            let end = ts + dur;
            let hit: Vec<&Span> = spans.iter().filter(|s| s.ts <= end && s.end >= ts).collect();
            let expected = (hit.iter().map(|s| s.dur()).sum::<u64>(), hit.len() as u64);
            prop_assert_eq!(Overlap::new(&spans).query(ts, end), expected);
        }
    }

    #[test]
    fn touching_rows_share_a_point_event() {
        let mut spans = vec![
            Span {
                ts: 10,
                end: 12,
                key: 0,
                layer: 0,
                row: 0,
            },
            Span {
                ts: 12,
                end: 14,
                key: 0,
                layer: 0,
                row: 1,
            },
            Span {
                ts: 12,
                end: 12,
                key: 1,
                layer: 1,
                row: NO_ROW,
            },
            Span {
                ts: 11,
                end: 13,
                key: 2,
                layer: 2,
                row: NO_ROW,
            },
        ];
        assert_eq!(
            sweep_thread(&mut spans, &[0, 1, 2]).0,
            vec![
                Cell {
                    row: 0,
                    key: 1,
                    time_ns: 0,
                    count: 1
                },
                Cell {
                    row: 1,
                    key: 1,
                    time_ns: 0,
                    count: 1
                },
            ]
        );
    }
}
