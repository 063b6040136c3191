//! Run against run: the change in the job's wall-clock time split into causes ([`WallDelta`], when both runs are
//! traces with the sched layer); per kind of call in both runs, the change in mean time per call and per byte split
//! exactly into its causes (layer and reason: Σ Δ = Δ mean, up to float rounding), each layer's events that changed
//! most, a bootstrap interval and the change in bandwidth; the whole job's calls by cause, summed over threads
//! ([`JobDelta`]); the time between calls per thread state, summed over threads; the cause that carries the most
//! added time; the findings that appeared or went away.
//!
//! The cause is read from the wall-clock split when there is one: summing every thread's time counts a thread that
//! sleeps while another works (fio's main process, waiting for its job) as if the job waited for it. It is named
//! only when the wall-clock time grew by more than [`WALL_NOISE_SHARE`] of the baseline's, and the cause adds more
//! than that share itself: the parts of two runs of the same job move by more than their sum does.

use std::collections::{BTreeMap, BTreeSet};

use features::FeatureMatrix;
use serde::{Deserialize, Serialize};

use crate::diagnose::bootstrap::{self, Interval};
use crate::diagnose::job::{JobDelta, WallCause, WallDelta, WallSplit, most_added_first};
use crate::diagnose::kinds::{Kind, KindStats, KindTable};
use crate::diagnose::layers::{Cause as LayerCause, causes};
use crate::diagnose::limits;
use crate::diagnose::patterns::APP_LAYER;
use crate::diagnose::scan::{JOB_WAIT, JobScan};
use crate::diagnose::thresholds::{PROGRAM_SHARE, TOP_EVENTS, WALL_NOISE_SHARE};
use crate::diagnose::{Finding, Reason, findings};

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Neither a kind of call both made nor, in smaller requests, the same direction's data to compare the whole job
    /// by.
    #[error(
        "{base} and {cand} have no kind of call in common (operation × buffered or direct × size class): nothing to \
         compare"
    )]
    NothingInCommon { base: String, cand: String },
}

/// One side of a comparison: its calls and, when read from traces, the pass over them.
#[derive(Clone, Debug)]
pub struct Run {
    /// The files it came from, for messages.
    pub name: String,
    pub matrix: FeatureMatrix,
    pub scan: Option<JobScan>,
}

impl Run {
    pub fn findings(&self) -> Vec<Finding> {
        findings(&self.matrix, self.scan.as_ref())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventDelta {
    /// `{layer}::{name}`.
    pub event: String,
    pub delta_ns_per_call: f64,
}

/// One cause's part of a kind's change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerDelta {
    pub layer: String,
    pub reason: Reason,
    pub baseline_ns_per_call: f64,
    pub candidate_ns_per_call: f64,
    pub delta_ns_per_call: f64,
    pub delta_ns_per_byte: Option<f64>,
    /// The layer's events whose inclusive time per call changed most.
    pub top_events: Vec<EventDelta>,
}

/// A kind of call in both runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallsDelta {
    pub kind: Kind,
    pub label: String,
    pub baseline_calls: u64,
    pub candidate_calls: u64,
    pub baseline_mean_ns: f64,
    pub candidate_mean_ns: f64,
    pub delta_ns_per_call: f64,
    pub delta_ns_per_byte: Option<f64>,
    /// The bootstrap interval of `delta_ns_per_call`; none when there are too few calls, and `interval_note` says so.
    pub interval: Option<Interval>,
    pub interval_note: Option<String>,
    pub baseline_mibs: Option<f64>,
    pub candidate_mibs: Option<f64>,
    pub delta_mibs: Option<f64>,
    /// `delta_ns_per_call` × the candidate's calls: the time the candidate spent beyond the baseline's means.
    pub added_ns: f64,
    pub layers: Vec<LayerDelta>,
}

/// Time outside the I/O calls, summed over threads, in one state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BetweenCalls {
    /// `on_cpu`, or `offcpu_{state}`.
    pub state: String,
    pub layer: String,
    pub reason: Reason,
    pub baseline_ns: u64,
    pub candidate_ns: u64,
    pub delta_ns: i64,
}

/// The cause that carries the most added time: a layer's reason, or the application pattern behind it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    pub layer: String,
    pub reason: Reason,
    /// Its added time over the sum of every cause's added time that is positive.
    pub share: f64,
    pub added_ns: f64,
    /// The layer and reason the added time was found in, when an application pattern that only the candidate has
    /// claims calls holding at least half of it: a sync after every write adds its time as journal commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<Through>,
}

/// Where a root cause's added time shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Through {
    pub layer: String,
    pub reason: Reason,
}

/// The root cause before the symptom: the candidate's first finding (the one that would gain most) that the baseline
/// does not have as a root cause too (a pattern both runs share did not change) is the cause, and the layer's
/// reason where its time went, when it claims at least half the added time, and it is an
/// application pattern (a sync after every write) or a recorded limit that took over the waits it caused (a
/// cgroup's read throttle holding readahead's requests). Its added time is then every part of the split it caused:
/// its own, the symptom's, and for a limit each wait it took over ([`limits::took_over`]); a write throttle adds
/// both the syncs' wait for their pages' writeback and their requests' wait above the device.
fn root_cause(
    layer_cause: Cause,
    candidate: &[Finding],
    baseline: &[Finding],
    added: &BTreeMap<(String, Reason), f64>,
    positive: f64,
) -> Cause {
    let is_root = |f: &Finding| f.layer == APP_LAYER || limits::cites_limit(f);
    let in_baseline = |f: &Finding| baseline.iter().any(|b| b.key() == f.key() && is_root(b));
    let Some(top) = (candidate.iter())
        .find(|f| !(is_root(f) && in_baseline(f)))
        .filter(|top| is_root(top) && top.cost_ns as f64 >= 0.5 * layer_cause.added_ns)
    else {
        return layer_cause;
    };
    let symptom = (layer_cause.layer.as_str(), layer_cause.reason);
    let caused = |(l, r): (&str, Reason)| {
        (l, r) == (top.layer.as_str(), top.reason) || limits::took_over(top, r)
    };
    let mut added_ns: f64 = added
        .iter()
        .filter(|((l, r), v)| **v > 0.0 && caused((l.as_str(), *r)))
        .map(|(_, v)| v)
        .sum();
    if !caused(symptom) {
        added_ns += layer_cause.added_ns;
    }
    let through = (symptom != (top.layer.as_str(), top.reason)).then(|| Through {
        layer: layer_cause.layer.clone(),
        reason: layer_cause.reason,
    });
    Cause {
        layer: top.layer.clone(),
        reason: top.reason,
        share: added_ns / positive,
        added_ns,
        through,
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    /// None when nothing added time (the candidate is not slower).
    pub cause: Option<Cause>,
    pub calls: Vec<CallsDelta>,
    /// Kinds of call in one run only.
    pub only_in_baseline: Vec<String>,
    pub only_in_candidate: Vec<String>,
    /// Every call of each run, summed over threads: the cause is named from it when the candidate's requests are
    /// smaller and neither run has a wall-clock split.
    pub job: JobDelta,
    /// The change in wall-clock time by cause: none when either run has no trace with the sched layer, with the
    /// reason in `between_calls_note`.
    pub wall: Option<WallDelta>,
    /// The tracer's own cost in the candidate less the baseline's ([`limits::tracer_ns`], both at the lower of the
    /// two runs' [`limits::record_price`]); none when either run did
    /// not measure it. What the candidate added is its own part of `wall` (`tracer` / `tracer_cost`), never the
    /// cause: a run nobody traces does not pay it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer_added_ns: Option<f64>,
    /// None when either run has no trace to read it from (feature matrices), with the reason in the note.
    pub between_calls: Option<Vec<BetweenCalls>>,
    pub between_calls_note: Option<String>,
    /// Said when no program (process name) ran in both runs: the comparison then sets two programs side by side,
    /// not one program under two conditions ([`programs_note`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_note: Option<String>,
    pub appeared: Vec<Finding>,
    pub gone: Vec<Finding>,
}

fn per(ns: f64, n: f64) -> f64 {
    if n > 0.0 { ns / n } else { 0.0 }
}

/// Inclusive time per call of every event of `layer`.
fn events_per_call(t: &KindTable, s: &KindStats, layer: &str) -> BTreeMap<String, f64> {
    t.events(s, layer)
        .map(|(name, v)| (name.to_owned(), v / s.calls() as f64))
        .collect()
}

fn calls_delta(
    kind: &Kind,
    (bt, b): (&KindTable, &KindStats),
    (ct, c): (&KindTable, &KindStats),
    (bm, cm): (&FeatureMatrix, &FeatureMatrix),
) -> CallsDelta {
    let (nb, nc) = (b.calls() as f64, c.calls() as f64);
    let bytes = |s: &KindStats| (s.sized == s.calls() && s.bytes > 0).then_some(s.bytes as f64);
    let per_byte = |bv: f64, cv: f64| Some(per(cv, bytes(c)?) - per(bv, bytes(b)?));
    let (mut bc, cc) = (causes(bt, kind, b), causes(ct, kind, c));
    renamed_as_candidate(&mut bc, &cc);
    let mut split: BTreeMap<(String, Reason), (f64, f64)> = BTreeMap::new();
    for x in bc {
        split.entry((x.layer, x.reason)).or_default().0 += x.ns;
    }
    for x in cc {
        split.entry((x.layer, x.reason)).or_default().1 += x.ns;
    }
    let layers = split
        .into_iter()
        .map(|((layer, reason), (bv, cv))| {
            let (be, ce) = (
                events_per_call(bt, b, &layer),
                events_per_call(ct, c, &layer),
            );
            let mut top: Vec<EventDelta> = be
                .keys()
                .chain(ce.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .map(|name| EventDelta {
                    event: format!("{layer}::{name}"),
                    delta_ns_per_call: ce.get(name).copied().unwrap_or(0.0)
                        - be.get(name).copied().unwrap_or(0.0),
                })
                .collect();
            top.sort_by(|x, y| {
                y.delta_ns_per_call
                    .abs()
                    .total_cmp(&x.delta_ns_per_call.abs())
                    .then_with(|| x.event.cmp(&y.event))
            });
            top.truncate(TOP_EVENTS);
            LayerDelta {
                baseline_ns_per_call: per(bv, nb),
                candidate_ns_per_call: per(cv, nc),
                delta_ns_per_call: per(cv, nc) - per(bv, nb),
                delta_ns_per_byte: per_byte(bv, cv),
                top_events: top,
                layer,
                reason,
            }
        })
        .collect();
    let durs = |m: &FeatureMatrix, s: &KindStats| -> Vec<f64> {
        s.rows.iter().map(|&r| m.dur_ns[r] as f64).collect()
    };
    let (interval, interval_note) = match bootstrap::delta_mean(&durs(bm, b), &durs(cm, c)) {
        Ok(i) => (Some(i), None),
        Err(note) => (None, Some(note)),
    };
    let delta = c.mean_ns() - b.mean_ns();
    let (bw_b, bw_c) = (b.bandwidth_mibs(), c.bandwidth_mibs());
    CallsDelta {
        kind: kind.clone(),
        label: kind.label(),
        baseline_calls: b.calls(),
        candidate_calls: c.calls(),
        baseline_mean_ns: b.mean_ns(),
        candidate_mean_ns: c.mean_ns(),
        delta_ns_per_call: delta,
        delta_ns_per_byte: per_byte(b.dur_ns as f64, c.dur_ns as f64),
        interval,
        interval_note,
        baseline_mibs: bw_b,
        candidate_mibs: bw_c,
        delta_mibs: bw_b.zip(bw_c).map(|(x, y)| y - x),
        added_ns: delta * nc,
        layers,
    }
}

/// A layer whose time has one reason in each run, but not the same one (block time `device_bound` in the baseline,
/// `throttled_above_device` in the candidate), is compared under the candidate's reason, so that its change is one
/// entry.
fn renamed_as_candidate(base: &mut [LayerCause], cand: &[LayerCause]) {
    let only = |v: &[LayerCause], layer: &str| -> Option<Reason> {
        let mut it = v.iter().filter(|c| c.layer == layer);
        let first = it.next()?.reason;
        it.next().is_none().then_some(first)
    };
    let renames: Vec<(String, Reason)> = base
        .iter()
        .filter_map(|b| {
            let (br, cr) = (only(base, &b.layer)?, only(cand, &b.layer)?);
            (br != cr).then(|| (b.layer.clone(), cr))
        })
        .collect();
    for b in base.iter_mut() {
        if let Some((_, r)) = renames.iter().find(|(l, _)| *l == b.layer) {
            b.reason = *r;
        }
    }
}

/// Per state, the time outside calls summed over a run's threads.
fn between(scan: &JobScan) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for t in scan.threads.values() {
        *out.entry("on_cpu".into()).or_default() += t.on_cpu_outside_ns();
        for (state, ns) in t.offcpu_outside_ns.iter().filter(|(s, _)| *s != JOB_WAIT) {
            *out.entry(format!("offcpu_{state}")).or_default() += ns;
        }
    }
    out
}

fn state_cause(state: &str) -> (&'static str, Reason) {
    match state {
        "on_cpu" => ("app", Reason::Compute),
        "offcpu_R" => ("sched", Reason::CpuContention),
        "offcpu_D" => ("sched", Reason::IoWait),
        _ => ("sched", Reason::SleepWait),
    }
}

fn between_calls(base: &JobScan, cand: &JobScan) -> Vec<BetweenCalls> {
    let (b, c) = (between(base), between(cand));
    let states: BTreeSet<&String> = b.keys().chain(c.keys()).collect();
    states
        .into_iter()
        .map(|state| {
            let (bv, cv) = (
                b.get(state).copied().unwrap_or(0),
                c.get(state).copied().unwrap_or(0),
            );
            let (layer, reason) = state_cause(state);
            BetweenCalls {
                state: state.clone(),
                layer: layer.into(),
                reason,
                baseline_ns: bv,
                candidate_ns: cv,
                delta_ns: cv as i64 - bv as i64,
            }
        })
        .collect()
}

/// Each cause's added time from the kinds of call in both runs (Δ mean × the candidate's calls) and between calls.
fn added_per_kind(
    calls: &[CallsDelta],
    between: Option<&[BetweenCalls]>,
) -> BTreeMap<(String, Reason), f64> {
    let mut added: BTreeMap<(String, Reason), f64> = BTreeMap::new();
    for d in calls {
        for l in &d.layers {
            *added.entry((l.layer.clone(), l.reason)).or_default() +=
                l.delta_ns_per_call * d.candidate_calls as f64;
        }
    }
    for b in between.into_iter().flatten() {
        *added.entry((b.layer.clone(), b.reason)).or_default() += b.delta_ns as f64;
    }
    added
}

/// The note for two runs that share no program: the process names that hold at least [`PROGRAM_SHARE`] of each
/// run's time in calls, when both runs name theirs and no name is in both (a shell that only started the program,
/// in both runs, is no program in common).
pub fn programs_note(base: &FeatureMatrix, cand: &FeatureMatrix) -> Option<String> {
    let names = |m: &FeatureMatrix| -> BTreeSet<String> {
        let mut time: BTreeMap<&str, f64> = BTreeMap::new();
        for (p, d) in m.process.iter().zip(&m.dur_ns) {
            if let Some(p) = p {
                *time.entry(p.as_str()).or_default() += *d as f64;
            }
        }
        let total: f64 = time.values().sum();
        (time.into_iter())
            .filter(|(_, t)| *t > 0.0 && *t >= PROGRAM_SHARE * total)
            .map(|(p, _)| p.to_owned())
            .collect()
    };
    let (b, c) = (names(base), names(cand));
    if b.is_empty() || c.is_empty() || !b.is_disjoint(&c) {
        return None;
    }
    let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
    Some(format!(
        "the two runs share no program (baseline: {}; candidate: {}): the comparison sets their calls side by side, and its cause is the difference between two programs, not a cause acting on one",
        list(&b),
        list(&c)
    ))
}

/// The layer of the tracer's own cost in a comparison.
pub const TRACER_LAYER: &str = "tracer";

/// The on-CPU causes a traced process's calls and the time around them fall under, where the tracer's probes run.
const ON_CPU: [Reason; 4] = [
    Reason::Compute,
    Reason::CallOverhead,
    Reason::MemoryCopy,
    Reason::KernelCpu,
];

/// Moves the tracer's own cost the candidate added, `tracer_ns` when positive, out of the causes it swelled into a
/// part of its own (`tracer` / [`Reason::TracerCost`]), so that the parts still add up to the change: first out of
/// `small_requests` (its extra calls carry their records), then out of the on-CPU causes in proportion to what they
/// added, never more than they added. Returns what it moved.
fn take_out_tracer(causes: &mut Vec<WallCause>, tracer_ns: f64) -> f64 {
    let mut left = tracer_ns.max(0.0);
    if let Some(c) = (causes.iter_mut())
        .find(|c| c.layer == APP_LAYER && c.reason == Reason::SmallRequests && c.added_ns > 0.0)
    {
        let t = left.min(c.added_ns);
        c.added_ns -= t;
        left -= t;
    }
    let grew_on_cpu = |c: &WallCause| ON_CPU.contains(&c.reason) && c.added_ns > 0.0;
    let on_cpu: f64 = causes
        .iter()
        .filter(|c| grew_on_cpu(c))
        .map(|c| c.added_ns)
        .sum();
    if left > 0.0 && on_cpu > 0.0 {
        let t = left.min(on_cpu);
        for c in causes.iter_mut().filter(|c| grew_on_cpu(c)) {
            c.added_ns -= t * c.added_ns / on_cpu;
        }
        left -= t;
    }
    let moved = tracer_ns.max(0.0) - left;
    if moved > 0.0 {
        causes.push(WallCause {
            layer: TRACER_LAYER.into(),
            reason: Reason::TracerCost,
            baseline_ns: 0.0,
            candidate_ns: moved,
            added_ns: moved,
        });
        most_added_first(causes);
    }
    moved
}

/// Compares a candidate with a baseline. Runs with no kind of call in common are an error naming both, unless the
/// candidate moves the same direction's data in smaller requests: then the whole job is compared.
pub fn compare(base: &Run, cand: &Run) -> Result<Comparison, CompareError> {
    let (bt, ct) = (KindTable::of(&base.matrix), KindTable::of(&cand.matrix));
    let job = JobDelta::of(&bt, &ct);
    let mut calls = Vec::new();
    for (kind, c) in &ct.kinds {
        if let Some(b) = bt.get(kind) {
            calls.push(calls_delta(
                kind,
                (&bt, b),
                (&ct, c),
                (&base.matrix, &cand.matrix),
            ));
        }
    }
    if calls.is_empty() && !job.names_the_cause {
        return Err(CompareError::NothingInCommon {
            base: base.name.clone(),
            cand: cand.name.clone(),
        });
    }
    calls.sort_by(|x, y| {
        y.added_ns
            .abs()
            .total_cmp(&x.added_ns.abs())
            .then_with(|| x.kind.cmp(&y.kind))
    });
    let only = |t: &KindTable, other: &KindTable| -> Vec<String> {
        t.kinds
            .iter()
            .filter(|(k, _)| other.get(k).is_none())
            .map(|(k, _)| k.label())
            .collect()
    };
    let (between_calls, between_calls_note) = match (&base.scan, &cand.scan) {
        (Some(b), Some(c)) if b.has_sched && c.has_sched => (Some(between_calls(b, c)), None),
        (Some(_), Some(_)) => (
            None,
            Some("the traces hold no off-CPU intervals (no sched layer): the time between calls cannot be split by state".to_owned()),
        ),
        _ => (
            None,
            Some("a feature matrix holds only the calls: compare traces for the time between them".to_owned()),
        ),
    };
    let split = |t: &KindTable, scan: &JobScan| {
        let mut s = WallSplit::of(t, scan);
        limits::name_page_ins_between_calls(&mut s, scan);
        limits::name_waits_for_pages(&mut s.parts, &limits::Recorded::of(&scan.limits));
        s
    };
    let tracer_added_ns = match (&base.scan, &cand.scan) {
        (Some(b), Some(c)) => (limits::record_price(b).zip(limits::record_price(c)))
            .map(|(pb, pc)| pb.min(pc))
            .map(|p| limits::tracer_ns(c, p) - limits::tracer_ns(b, p)),
        _ => None,
    };
    let mut wall = match (&base.scan, &cand.scan) {
        (Some(b), Some(c)) if b.has_sched && c.has_sched => {
            Some(WallDelta::of(&job, &split(&bt, b), &split(&ct, c)))
        }
        _ => None,
    };
    let added = if let Some(w) = &mut wall {
        let tracer = take_out_tracer(&mut w.causes, tracer_added_ns.unwrap_or(0.0));
        let noise = WALL_NOISE_SHARE * w.baseline_ns as f64;
        let grew = w.delta_ns as f64 - tracer > noise;
        w.causes
            .iter()
            .filter(|c| grew && c.reason != Reason::TracerCost && c.added_ns > noise)
            .map(|c| ((c.layer.clone(), c.reason), c.added_ns))
            .collect()
    } else if job.names_the_cause {
        let between: Vec<(String, Reason, f64, f64)> = between_calls
            .iter()
            .flatten()
            .map(|b| {
                (
                    b.layer.clone(),
                    b.reason,
                    b.baseline_ns as f64,
                    b.candidate_ns as f64,
                )
            })
            .collect();
        job.added(
            job.causes
                .iter()
                .map(|c| (&c.layer, c.reason, c.baseline_ns, c.candidate_ns))
                .chain(between.iter().map(|(l, r, b, c)| (l, *r, *b, *c))),
        )
    } else {
        added_per_kind(&calls, between_calls.as_deref())
    };
    let positive: f64 = match &wall {
        Some(w) => w
            .causes
            .iter()
            .filter(|c| c.reason != Reason::TracerCost)
            .map(|c| c.added_ns)
            .filter(|v| *v > 0.0)
            .sum(),
        None => added.values().filter(|v| **v > 0.0).sum(),
    };
    let cause = added
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .max_by(|a, b| a.1.total_cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|((layer, reason), v)| Cause {
            layer: layer.clone(),
            reason: *reason,
            share: v / positive,
            added_ns: *v,
            through: None,
        });
    let (bf, cf) = (base.findings(), cand.findings());
    let keys = |f: &[Finding]| f.iter().map(Finding::key).collect::<Vec<_>>();
    let (bk, ck) = (keys(&bf), keys(&cf));
    let cause = cause.map(|c| root_cause(c, &cf, &bf, &added, positive));
    Ok(Comparison {
        baseline: base.name.clone(),
        candidate: cand.name.clone(),
        cause,
        only_in_baseline: only(&bt, &ct),
        only_in_candidate: only(&ct, &bt),
        calls,
        job,
        wall,
        tracer_added_ns,
        between_calls,
        between_calls_note,
        programs_note: programs_note(&base.matrix, &cand.matrix),
        appeared: cf.into_iter().filter(|f| !bk.contains(&f.key())).collect(),
        gone: bf.into_iter().filter(|f| !ck.contains(&f.key())).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::Scope;
    use crate::diagnose::ledger::Gain;

    fn part(layer: &str, reason: Reason, added_ns: f64) -> WallCause {
        WallCause {
            layer: layer.into(),
            reason,
            baseline_ns: 0.0,
            candidate_ns: added_ns.max(0.0),
            added_ns,
        }
    }

    /// tar's small records are a pattern of both runs; under a small dirty limit the candidate's opens waited 30 ms
    /// more, for blocks under writeback, which the limit's finding claims. The shared pattern is passed over: the
    /// cause is the limit, through the opens' waits. A layer finding the baseline lacks, first after the pattern,
    /// leaves the layer's cause.
    #[test]
    fn a_pattern_both_runs_share_is_passed_over_for_the_root_cause() {
        let finding = |layer: &str, reason, scope, ns: f64, evidence: &[(&str, f64)]| {
            Finding::new(
                layer,
                reason,
                scope,
                ns,
                100e6,
                evidence.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                Gain::wait_removed(ns),
            )
        };
        let small = || {
            let write = Kind {
                op: "write".into(),
                mode: Some("buffered".into()),
                size_class: None,
            };
            finding(
                APP_LAYER,
                Reason::SmallRequests,
                Scope::Calls(write),
                31e6,
                &[],
            )
        };
        let limit = finding(
            "writeback",
            Reason::DirtyThrottling,
            Scope::Job,
            30e6,
            &[(limits::WRITEBACK_HELD_EVIDENCE, 30e6)],
        );
        let layer_cause = || Cause {
            layer: "ext4".into(),
            reason: Reason::IoWait,
            share: 0.9,
            added_ns: 30e6,
            through: None,
        };
        let added = BTreeMap::from([(("ext4".to_owned(), Reason::IoWait), 30e6)]);
        let cause = root_cause(
            layer_cause(),
            &[small(), limit.clone()],
            &[small()],
            &added,
            33e6,
        );
        assert_eq!(
            (cause.layer.as_str(), cause.reason, cause.added_ns),
            ("writeback", Reason::DirtyThrottling, 30e6)
        );
        assert_eq!(
            cause.through,
            Some(Through {
                layer: "ext4".into(),
                reason: Reason::IoWait
            })
        );
        let open = Kind {
            op: "openat".into(),
            mode: None,
            size_class: None,
        };
        let waits = finding("ext4", Reason::IoWait, Scope::Calls(open), 30e6, &[]);
        let cause = root_cause(
            layer_cause(),
            &[small(), waits, limit],
            &[small()],
            &added,
            33e6,
        );
        assert_eq!(cause, layer_cause());
    }

    /// A candidate in smaller requests whose extra records cost 50 ms: 40 come out of the extra calls'
    /// `small_requests`, the other 10 out of the on-CPU causes by what they added (8 and 2), none out of a wait or
    /// of what shrank; the parts still add up to the change.
    #[test]
    fn the_tracers_cost_comes_out_of_the_extra_calls_then_the_cpu_time() {
        let mut causes = vec![
            part(APP_LAYER, Reason::SmallRequests, 40e6),
            part("app", Reason::Compute, 16e6),
            part("self", Reason::CallOverhead, 4e6),
            part("block", Reason::DeviceBound, 30e6),
            part("self", Reason::MemoryCopy, -5e6),
        ];
        let sum = |c: &[WallCause]| c.iter().map(|c| c.added_ns).sum::<f64>();
        let before = sum(&causes);
        assert_eq!(take_out_tracer(&mut causes, 50e6), 50e6);
        assert!((sum(&causes) - before).abs() < 1e-3);
        let get = |r: Reason| causes.iter().find(|c| c.reason == r).unwrap().added_ns;
        assert_eq!(
            [
                get(Reason::TracerCost),
                get(Reason::SmallRequests),
                get(Reason::Compute),
                get(Reason::CallOverhead),
                get(Reason::DeviceBound),
                get(Reason::MemoryCopy)
            ],
            [50e6, 0.0, 8e6, 2e6, 30e6, -5e6]
        );
        assert_eq!(causes[0].layer, TRACER_LAYER);
        assert_eq!(causes[1].reason, Reason::DeviceBound);

        // More than they added: the rest stays where it was; a candidate that recorded less moves nothing.
        let mut small = vec![part("app", Reason::Compute, 3e6)];
        assert_eq!(take_out_tracer(&mut small, 5e6), 3e6);
        assert_eq!(small[0].added_ns, 3e6);
        assert_eq!(small[1].added_ns, 0.0);
        let mut fewer = vec![part("app", Reason::Compute, 3e6)];
        assert_eq!(take_out_tracer(&mut fewer, -5e6), 0.0);
        assert_eq!(fewer.len(), 1);
    }
}
