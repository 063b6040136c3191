//! The whole job, run against run.
//!
//! - Its wall-clock time, instant by instant ([`WallSplit`]): at each instant, what the job waited for. The threads
//!   that work at an instant (in a call, on the CPU, runnable, or in D outside a call) share it equally; a thread
//!   asleep in S outside its calls (a timer, a poll) or waiting for another thread of the job is idle, and the
//!   threads it waits for carry the instant. Only when every live thread is idle is the instant a sleep. An instant
//!   inside a call is split among its kind's causes in the kind's proportions (the trace has each layer's time per
//!   call only as the matrix's sums). Each run's parts add up to its wall-clock time, so the change's parts add up
//!   to the change in wall-clock time.
//! - Every call's time summed over threads in each run, split into causes (layer and reason: Σ Δ = Δ time in calls),
//!   per byte, and the data each direction and mode (buffered or direct) moved in how many requests. This is the
//!   per-thread detail beside the wall-clock split.
//!
//! When the candidate moves a direction's data, with files opened the same way, in smaller requests, the two runs do
//! not make the same calls, and the cause is named over the whole job: its extra calls, each at the candidate's mean
//! cost, are the small requests' added time; what is left of each cause is its change per call over the baseline's
//! calls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diagnose::Reason;
use crate::diagnose::kinds::KindTable;
use crate::diagnose::layers::{JobWaits, SELF_LAYER, causes};
use crate::diagnose::patterns::APP_LAYER;
use crate::diagnose::scan::{self, Activity, JobScan, SCHED};
use crate::diagnose::thresholds::{SMALL_REQUEST_BYTES, SMALLER_REQUESTS_RATIO};
use crate::summary::Direction;
use datasets::vocab::layer::{MM, PAGE_CACHE};

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

    /// Each cause's added time over the whole job, from each cause's time as (layer, reason, baseline ns,
    /// candidate ns): its change, unless the candidate's requests are smaller. Then the candidate's extra calls
    /// carry, from every cause, their share of the candidate's time in it, filed under `app` / `small_requests`:
    /// Δ = (n_c − n_b) · c/n_c + n_b · (c/n_c − b/n_b). Either way the parts add up to Σ (c − b).
    pub fn added<'a>(
        &self,
        all: impl IntoIterator<Item = (&'a String, Reason, f64, f64)>,
    ) -> BTreeMap<(String, Reason), f64> {
        let (nb, nc) = (self.baseline_calls as f64, self.candidate_calls as f64);
        let extra = (nc - nb).max(0.0);
        let mut out: BTreeMap<(String, Reason), f64> = BTreeMap::new();
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

/// A run's wall-clock time, from its first thread's first instant to its last thread's last, split into causes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WallSplit {
    pub wall_ns: u64,
    /// The threads followed.
    pub threads: usize,
    /// (layer, reason) → ns; they add up to `wall_ns`.
    pub parts: BTreeMap<(String, Reason), f64>,
    /// The part of `wall_ns` that went to I/O calls: each instant shared among the threads working then.
    pub in_calls_ns: f64,
    /// The parts of the rest, outside every call (on a CPU, waiting for one, asleep): a subset of `parts`.
    pub between_calls: BTreeMap<(String, Reason), f64>,
    /// The threads' time faulting pages in between calls ([`Activity::PageIn`]), summed over threads.
    pub page_in_ns: f64,
}

/// The layer of the instants when no traced thread was alive (between two traces, or before a thread's first event).
pub const UNTRACED_LAYER: &str = "untraced";

/// What an instant of a thread's life counts for: a kind of call (by its index in the table), or a cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Part {
    Kind(usize),
    Cause(&'static str, Reason),
}

impl Part {
    /// The part of a working thread's `act` ([`Activity::works`]).
    fn of(act: Activity, kind_of_row: &[usize]) -> Part {
        match act {
            Activity::Call(row) => Part::Kind(kind_of_row[row]),
            Activity::OnCpu => Part::Cause(APP_LAYER, Reason::Compute),
            // A fault reading its page in waits for it as a buffered read does
            // (`limits::name_waits_for_pages` names it by the devices' readahead).
            Activity::PageIn => Part::Cause(PAGE_CACHE, Reason::ReadaheadMiss),
            Activity::Reclaim => Part::Cause(MM, Reason::MemoryPressure),
            Activity::Off('R') => Part::Cause(SCHED, Reason::CpuContention),
            Activity::Off('D') => Part::Cause(SCHED, Reason::IoWait),
            Activity::Off(_) | Activity::JobWait => Part::Cause(SCHED, Reason::SleepWait),
        }
    }
}

impl WallSplit {
    /// The split of a run whose calls `table` groups and whose trace `scan` read.
    pub fn of(table: &KindTable, scan: &JobScan) -> WallSplit {
        let n_rows = table.kinds.iter().map(|(_, s)| s.rows.len()).sum::<usize>();
        let mut kind_of_row = vec![0; n_rows];
        for (i, (_, s)) in table.kinds.iter().enumerate() {
            for &r in &s.rows {
                kind_of_row[r] = i;
            }
        }
        let lives = scan.activities();
        let job_waits = JobWaits::of(scan);
        let mut by_part: BTreeMap<Part, f64> = BTreeMap::new();
        scan::sweep(&lives, |dt, open| {
            let working = open.iter().filter(|a| a.works()).count();
            if working > 0 {
                for a in open.iter().filter(|a| a.works()) {
                    *by_part.entry(Part::of(*a, &kind_of_row)).or_default() += dt / working as f64;
                }
            } else if !open.is_empty() {
                *by_part
                    .entry(Part::Cause(SCHED, Reason::SleepWait))
                    .or_default() += dt;
            } else {
                *by_part
                    .entry(Part::Cause(UNTRACED_LAYER, Reason::LayerTime))
                    .or_default() += dt;
            }
        });
        let mut parts: BTreeMap<(String, Reason), f64> = BTreeMap::new();
        let mut between_calls: BTreeMap<(String, Reason), f64> = BTreeMap::new();
        let mut in_calls_ns = 0.0;
        for (part, ns) in by_part {
            match part {
                Part::Cause(layer, reason) => {
                    *parts.entry((layer.to_owned(), reason)).or_default() += ns;
                    *between_calls.entry((layer.to_owned(), reason)).or_default() += ns;
                }
                Part::Kind(i) => {
                    in_calls_ns += ns;
                    let (kind, s) = &table.kinds[i];
                    let mut cs = causes(table, kind, s);
                    // A call's wait for a CPU another thread of the job held is that thread's instant
                    // (`Activity::JobWait`), not the call's: it is no part of the call's share of this one.
                    if let Some(c) = cs
                        .iter_mut()
                        .find(|c| (c.layer.as_str(), c.reason) == (SCHED, Reason::CpuContention))
                    {
                        c.ns *= 1.0 - job_waits.job_share(SCHED, Reason::CpuContention, &s.rows);
                    }
                    let total: f64 = cs.iter().map(|c| c.ns).sum();
                    if total > 0.0 {
                        for c in cs {
                            *parts.entry((c.layer, c.reason)).or_default() += ns * c.ns / total;
                        }
                    } else {
                        *parts
                            .entry((SELF_LAYER.to_owned(), Reason::CallOverhead))
                            .or_default() += ns;
                    }
                }
            }
        }
        let page_in_ns = (lives.iter().flat_map(|(_, life)| life))
            .filter(|x| x.2 == Activity::PageIn)
            .map(|x| (x.1 - x.0) as f64)
            .sum();
        let first = lives
            .iter()
            .filter_map(|(_, a)| a.first().map(|x| x.0))
            .min();
        let last = lives
            .iter()
            .filter_map(|(_, a)| a.last().map(|x| x.1))
            .max();
        WallSplit {
            wall_ns: first.zip(last).map_or(0, |(a, b)| b - a),
            threads: lives.len(),
            parts,
            in_calls_ns,
            between_calls,
            page_in_ns,
        }
    }
}

/// One cause's part of each run's wall-clock time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WallCause {
    pub layer: String,
    pub reason: Reason,
    pub baseline_ns: f64,
    pub candidate_ns: f64,
    /// Its part of the change in wall-clock time (with smaller requests, the extra calls' time is `app` /
    /// `small_requests`'s). The parts add up to `delta_ns`.
    pub added_ns: f64,
}

/// Sorts a wall-clock split's parts, most added first, then by layer and reason.
pub fn most_added_first(causes: &mut [WallCause]) {
    causes.sort_by(|x, y| {
        y.added_ns
            .total_cmp(&x.added_ns)
            .then_with(|| (&x.layer, x.reason).cmp(&(&y.layer, y.reason)))
    });
}

/// The change in the job's wall-clock time, split into causes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WallDelta {
    pub baseline_ns: u64,
    pub candidate_ns: u64,
    pub delta_ns: i64,
    pub baseline_threads: usize,
    pub candidate_threads: usize,
    /// Most added first.
    pub causes: Vec<WallCause>,
}

impl WallDelta {
    /// A layer whose time has one reason in each run, but not the same one (block time `device_bound` in the
    /// baseline, `throttled_above_device` in the candidate), is compared under the candidate's reason, as the kinds
    /// of call are, so that its change is one cause.
    pub fn of(job: &JobDelta, base: &WallSplit, cand: &WallSplit) -> WallDelta {
        let only = |w: &WallSplit, layer: &str| -> Option<Reason> {
            let mut it = w.parts.keys().filter(|(l, _)| l == layer);
            let first = it.next()?.1;
            it.next().is_none().then_some(first)
        };
        let mut renamed: BTreeMap<(String, Reason), f64> = BTreeMap::new();
        for ((layer, reason), ns) in &base.parts {
            let reason = match (only(base, layer), only(cand, layer)) {
                (Some(_), Some(c)) => c,
                _ => *reason,
            };
            *renamed.entry((layer.clone(), reason)).or_default() += ns;
        }
        let keys: std::collections::BTreeSet<&(String, Reason)> =
            renamed.keys().chain(cand.parts.keys()).collect();
        let get = |w: &BTreeMap<(String, Reason), f64>, k: &(String, Reason)| {
            w.get(k).copied().unwrap_or(0.0)
        };
        let added = job.added(
            keys.iter()
                .map(|k| (&k.0, k.1, get(&renamed, k), get(&cand.parts, k))),
        );
        let mut causes: Vec<WallCause> = added
            .into_iter()
            .map(|(k, added_ns)| WallCause {
                baseline_ns: get(&renamed, &k),
                candidate_ns: get(&cand.parts, &k),
                added_ns,
                layer: k.0,
                reason: k.1,
            })
            .collect();
        most_added_first(&mut causes);
        WallDelta {
            baseline_ns: base.wall_ns,
            candidate_ns: cand.wall_ns,
            delta_ns: cand.wall_ns as i64 - base.wall_ns as i64,
            baseline_threads: base.threads,
            candidate_threads: cand.threads,
            causes,
        }
    }
}
