//! The whole job, run against run: every call's time in each run split into causes (layer and reason: Σ Δ = Δ time
//! in calls), per byte, and the data each direction and mode (buffered or direct) moved in how many requests. When
//! the candidate moves a direction's data, with files opened the same way, in smaller requests, the two runs do not make the same calls, and the cause is named over the
//! whole job: its extra calls, each at the candidate's mean cost (in the call and between calls), are the small
//! requests' added time; what is left of each cause is its change per call over the baseline's calls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diagnose::Reason;
use crate::diagnose::kinds::KindTable;
use crate::diagnose::layers::causes;
use crate::diagnose::patterns::APP_LAYER;
use crate::diagnose::thresholds::{SMALL_REQUEST_BYTES, SMALLER_REQUESTS_RATIO};
use crate::trace_report::summary::Direction;

/// One cause's time in every call of each run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobCause {
    pub layer: String,
    pub reason: Reason,
    pub baseline_ns: f64,
    pub candidate_ns: f64,
    pub delta_ns: f64,
    /// The change in the cause's time per byte of data moved.
    pub delta_ns_per_byte: Option<f64>,
}

/// The data one direction moved in each run, with files opened one way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// `read` or `write`.
    pub direction: String,
    /// `buffered` or `direct`; none when the trace does not say.
    pub mode: Option<String>,
    pub baseline_calls: u64,
    pub candidate_calls: u64,
    pub baseline_bytes: u64,
    pub candidate_bytes: u64,
    pub baseline_mean_bytes: f64,
    pub candidate_mean_bytes: f64,
    /// The candidate's requests are below [`SMALL_REQUEST_BYTES`] and at most 1/[`SMALLER_REQUESTS_RATIO`] of the
    /// baseline's, on average.
    pub smaller: bool,
}

/// Every call of each run, and the time between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobDelta {
    pub baseline_calls: u64,
    pub candidate_calls: u64,
    /// Bytes of the reads and writes.
    pub baseline_bytes: u64,
    pub candidate_bytes: u64,
    /// Time in calls.
    pub baseline_ns: f64,
    pub candidate_ns: f64,
    pub delta_ns: f64,
    pub delta_ns_per_byte: Option<f64>,
    /// The time in calls by cause, most added first.
    pub causes: Vec<JobCause>,
    pub requests: Vec<Requests>,
    /// Whether the comparison's cause was named over the whole job (some direction's requests are smaller).
    pub names_the_cause: bool,
}

fn per_byte(ns: f64, bytes: u64) -> Option<f64> {
    (bytes > 0).then(|| ns / bytes as f64)
}

fn delta_per_byte(b: (f64, u64), c: (f64, u64)) -> Option<f64> {
    Some(per_byte(c.0, c.1)? - per_byte(b.0, b.1)?)
}

/// Calls and bytes of the data calls of a direction and mode.
fn moved(t: &KindTable, d: Direction, mode: Option<&str>) -> (u64, u64) {
    t.kinds
        .iter()
        .filter(|(k, _)| k.direction() == Some(d) && k.mode.as_deref() == mode)
        .fold((0, 0), |(n, b), (_, s)| (n + s.calls(), b + s.bytes as u64))
}

/// Bytes of every read and write.
fn bytes(t: &KindTable) -> u64 {
    t.kinds
        .iter()
        .filter(|(k, _)| k.direction().is_some())
        .map(|(_, s)| s.bytes as u64)
        .sum()
}

/// Every cause's time over all calls of a table.
fn totals(t: &KindTable) -> BTreeMap<(String, Reason), f64> {
    let mut out = BTreeMap::new();
    for (kind, s) in &t.kinds {
        for c in causes(t, kind, s) {
            *out.entry((c.layer, c.reason)).or_default() += c.ns;
        }
    }
    out
}

impl JobDelta {
    pub fn of(base: &KindTable, cand: &KindTable) -> JobDelta {
        let calls = |t: &KindTable| t.kinds.iter().map(|(_, s)| s.calls()).sum::<u64>();
        let (nb, nc) = (calls(base), calls(cand));
        let (bytes_b, bytes_c) = (bytes(base), bytes(cand));
        let mut ways: Vec<(Direction, &str, Option<&str>)> = Vec::new();
        for (d, name) in [(Direction::Read, "read"), (Direction::Write, "write")] {
            for mode in [Some("buffered"), Some("direct"), None] {
                ways.push((d, name, mode));
            }
        }
        let requests: Vec<Requests> = ways
            .into_iter()
            .filter_map(|(d, name, mode)| {
                let ((cb, bb), (cc, bc)) = (moved(base, d, mode), moved(cand, d, mode));
                if cb == 0 || cc == 0 {
                    return None;
                }
                let (mb, mc) = (bb as f64 / cb as f64, bc as f64 / cc as f64);
                Some(Requests {
                    direction: name.into(),
                    mode: mode.map(str::to_owned),
                    baseline_calls: cb,
                    candidate_calls: cc,
                    baseline_bytes: bb,
                    candidate_bytes: bc,
                    baseline_mean_bytes: mb,
                    candidate_mean_bytes: mc,
                    smaller: mc < SMALL_REQUEST_BYTES as f64 && mc * SMALLER_REQUESTS_RATIO <= mb,
                })
            })
            .collect();
        let (tb, tc) = (totals(base), totals(cand));
        let mut causes: Vec<JobCause> = tb
            .keys()
            .chain(tc.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|key| {
                let (b, c) = (
                    tb.get(key).copied().unwrap_or(0.0),
                    tc.get(key).copied().unwrap_or(0.0),
                );
                JobCause {
                    layer: key.0.clone(),
                    reason: key.1,
                    baseline_ns: b,
                    candidate_ns: c,
                    delta_ns: c - b,
                    delta_ns_per_byte: delta_per_byte((b, bytes_b), (c, bytes_c)),
                }
            })
            .collect();
        causes.sort_by(|x, y| y.delta_ns.total_cmp(&x.delta_ns));
        let (ib, ic) = (base.io_ns(), cand.io_ns());
        JobDelta {
            baseline_calls: nb,
            candidate_calls: nc,
            baseline_bytes: bytes_b,
            candidate_bytes: bytes_c,
            baseline_ns: ib,
            candidate_ns: ic,
            delta_ns: ic - ib,
            delta_ns_per_byte: delta_per_byte((ib, bytes_b), (ic, bytes_c)),
            names_the_cause: requests.iter().any(|r| r.smaller),
            causes,
            requests,
        }
    }

    /// Each cause's added time over the whole job, given the time between calls as (layer, reason, baseline ns,
    /// candidate ns). With smaller requests, the candidate's extra calls carry, from every cause, their share of the
    /// candidate's time in it, filed under `app` / `small_requests`: Δ = (n_c − n_b) · c/n_c + n_b · (c/n_c − b/n_b).
    pub fn added(&self, between: &[(String, Reason, f64, f64)]) -> BTreeMap<(String, Reason), f64> {
        let (nb, nc) = (self.baseline_calls as f64, self.candidate_calls as f64);
        let extra = (nc - nb).max(0.0);
        let mut out: BTreeMap<(String, Reason), f64> = BTreeMap::new();
        let all = self
            .causes
            .iter()
            .map(|c| (&c.layer, c.reason, c.baseline_ns, c.candidate_ns))
            .chain(between.iter().map(|(l, r, b, c)| (l, *r, *b, *c)));
        for (layer, reason, b, c) in all {
            let from_calls = if self.names_the_cause && nc > 0.0 {
                extra * c / nc
            } else {
                0.0
            };
            if from_calls > 0.0 {
                *out.entry((APP_LAYER.to_owned(), Reason::SmallRequests))
                    .or_default() += from_calls;
            }
            *out.entry((layer.clone(), reason)).or_default() += c - b - from_calls;
        }
        out
    }
}
