//! Each second of the job counted once, and what removing a cause would gain. The [`Ledger`] holds what is left of
//! every call's time: an application pattern claims its time first (the root cause before its symptom), and the
//! layer findings name only what no pattern claimed. [`Gain`] is the time the job would save if a finding's cause
//! were removed, with how it was computed from the same trace.

use std::collections::BTreeMap;

use features::FeatureMatrix;
use serde::{Deserialize, Serialize};

use crate::summary::{Direction, direction};

/// How a finding's gain was computed: a stable slug and a sentence with the numbers used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GainMethod {
    pub slug: String,
    pub how: String,
}

/// The time the job would save if a cause were removed, and how that was computed.
#[derive(Clone, Debug, PartialEq)]
pub struct Gain {
    pub ns: f64,
    pub method: GainMethod,
}

impl Gain {
    pub fn new(ns: f64, slug: &str, how: impl Into<String>) -> Gain {
        Gain {
            ns: if ns.is_finite() { ns.max(0.0) } else { 0.0 },
            method: GainMethod {
                slug: slug.to_owned(),
                how: how.into(),
            },
        }
    }

    /// A wait removed entirely: the calls would not wait there.
    pub fn wait_removed(ns: f64) -> Gain {
        Gain::new(
            ns,
            "wait_removed",
            "The wait removed: the calls would not wait here, and keep the rest of their time.",
        )
    }

    /// The calls' own work, which no cause outside them adds.
    pub fn inherent() -> Gain {
        Gain::new(
            0.0,
            "inherent",
            "The calls' own work: nothing is saved without making other calls (see the application findings).",
        )
    }
}

/// What is left of each call's time (the matrix's rows) after the findings so far claimed theirs.
#[derive(Clone, Debug, PartialEq)]
pub struct Ledger {
    dur: Vec<f64>,
    left: Vec<f64>,
}

impl Ledger {
    pub fn new(m: &FeatureMatrix) -> Ledger {
        let dur: Vec<f64> = m.dur_ns.iter().map(|d| *d as f64).collect();
        Ledger {
            left: dur.clone(),
            dur,
        }
    }

    /// The time still unclaimed in `rows`.
    pub fn left(&self, rows: &[usize]) -> f64 {
        rows.iter().map(|&r| self.left[r]).sum()
    }

    /// Claims up to `ns` of `rows`, from each in proportion to what is left of it; returns what was claimed.
    pub fn claim(&mut self, rows: &[usize], ns: f64) -> f64 {
        let left = self.left(rows);
        if left <= 0.0 || ns <= 0.0 {
            return 0.0;
        }
        let part = (ns / left).min(1.0);
        for &r in rows {
            self.left[r] -= self.left[r] * part;
        }
        left * part
    }

    /// The time claimed so far per operation as Darshan's counters split it: `READ`, `WRITE` and `META` (every
    /// call that is neither).
    pub fn taken(&self, m: &FeatureMatrix) -> BTreeMap<&'static str, f64> {
        let mut out = BTreeMap::new();
        for r in 0..self.dur.len() {
            let op = match direction(&m.op[r]) {
                Some(Direction::Read) => "READ",
                Some(Direction::Write) => "WRITE",
                None => "META",
            };
            *out.entry(op).or_default() += self.dur[r] - self.left[r];
        }
        out
    }

    /// Per row, the share of its time still unclaimed (0 for a call that took no time).
    pub fn weights(&self) -> Vec<f64> {
        self.dur
            .iter()
            .zip(&self.left)
            .map(|(d, l)| if *d > 0.0 { l / d } else { 1.0 })
            .collect()
    }
}

/// The least-squares line `dur = a + b · size` over (size, dur) pairs: the per-call cost `a` and the cost per
/// byte `b`. None with fewer than two distinct sizes.
pub fn per_call_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0, y + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(xx, xy), p| {
        (xx + (p.0 - mx).powi(2), xy + (p.0 - mx) * (p.1 - my))
    });
    (sxx > 0.0).then(|| {
        let b = sxy / sxx;
        (my - b * mx, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_takes_at_most_what_is_left_in_proportion() {
        let mut l = Ledger {
            dur: vec![100.0, 300.0, 50.0],
            left: vec![100.0, 300.0, 50.0],
        };
        assert_eq!(l.claim(&[0, 1], 200.0), 200.0);
        assert_eq!(l.left, vec![50.0, 150.0, 50.0]);
        assert_eq!(l.claim(&[0, 1, 2], 1000.0), 250.0);
        assert_eq!(l.weights(), vec![0.0, 0.0, 0.0]);
    }

    #[test]
    fn the_fit_recovers_a_line_and_needs_two_sizes() {
        let pts: Vec<(f64, f64)> = [10.0, 20.0, 40.0]
            .iter()
            .map(|x| (*x, 7.0 + 0.5 * x))
            .collect();
        let (a, b) = per_call_fit(&pts).unwrap();
        assert!((a - 7.0).abs() < 1e-9 && (b - 0.5).abs() < 1e-12, "{a} {b}");
        assert_eq!(per_call_fit(&[(4.0, 1.0), (4.0, 3.0)]), None);
    }
}
