//! A finding's gain in the job's wall-clock time. Its cost is thread time: four processes that each wait a second on
//! one lock cost four seconds, yet removing the lock saves the job at most the second they waited side by side. Each
//! instant of the job is shared among the threads working then, as the run-against-run split shares it
//! ([`crate::diagnose::job::WallSplit`]): a call gets the instant over the number of threads in a call, on a CPU or
//! waiting for one or for I/O, while threads asleep outside the job's work take no share. A finding's gain is scaled
//! by the wall-clock share of the calls it covers over their own time.

use features::FeatureMatrix;

use crate::diagnose::finding::{Finding, Scope};
use crate::diagnose::kinds::KindTable;
use crate::diagnose::scan::{self, Activity, JobScan};

/// Per row of the matrix: the time it was a thread's innermost call, and that time's share of the wall clock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowTime {
    pub own_ns: Vec<f64>,
    pub wall_ns: Vec<f64>,
}

impl RowTime {
    pub fn of(scan: &JobScan, n_rows: usize) -> RowTime {
        let mut t = RowTime {
            own_ns: vec![0.0; n_rows],
            wall_ns: vec![0.0; n_rows],
        };
        scan::sweep(&scan.activities(), |dt, open| {
            let working = open.iter().filter(|a| a.works()).count();
            for a in open {
                if let Activity::Call(r) = *a
                    && r < n_rows
                {
                    t.own_ns[r] += dt;
                    t.wall_ns[r] += dt / working as f64;
                }
            }
        });
        t
    }

    /// The wall-clock share of the time of `rows`; none when they have no time.
    pub fn factor(&self, rows: impl IntoIterator<Item = usize>) -> Option<f64> {
        let (mut own, mut wall) = (0.0, 0.0);
        for r in rows {
            own += self.own_ns[r];
            wall += self.wall_ns[r];
        }
        (own > 0.0).then(|| (wall / own).min(1.0))
    }
}

/// The rows of `m` among the calls `f` covers: its scope's, or for a finding over the job made of several kinds'
/// findings, those kinds'.
fn rows(m: &FeatureMatrix, table: &KindTable, f: &Finding) -> Vec<usize> {
    let all = 0..m.n_rows();
    match &f.scope {
        Scope::Job if !f.kinds.is_empty() => {
            let mut rows: Vec<usize> = (f.kinds.iter())
                .filter_map(|k| table.get(k))
                .flat_map(|s| s.rows.iter().copied())
                .collect();
            rows.sort_unstable();
            rows
        }
        Scope::Job => all.collect(),
        Scope::Calls(k) => table.get(k).map_or_else(Vec::new, |s| s.rows.clone()),
        Scope::File { path } => all
            .filter(|&r| m.file[r].as_deref() == Some(path.as_str()))
            .collect(),
        Scope::Process { pid } => all.filter(|&r| m.pid[r] == *pid).collect(),
        Scope::Thread { pid, tid } => all
            .filter(|&r| m.pid[r] == *pid && m.tid[r] == *tid)
            .collect(),
    }
}

/// The share of the summed time of `rows` that counts each instant of a thread once per kind of call: asynchronous
/// requests in flight together (io_uring's, libaio's) each last until their completion, so eight in flight count each
/// instant eight times, and a call nested in one of its kind (an fread holding its read) counts its time twice. Per
/// thread and kind, the union of the calls' intervals over their sum; calls of different kinds stay whole.
pub fn self_overlap(m: &FeatureMatrix, table: &KindTable, rows: &[usize]) -> Option<f64> {
    overlap(m, &kind_of(m, table), rows)
}

/// Per row of `m`, the index of its kind in `table`.
fn kind_of(m: &FeatureMatrix, table: &KindTable) -> Vec<usize> {
    let mut kind_of = vec![usize::MAX; m.n_rows()];
    for (k, (_, s)) in table.kinds.iter().enumerate() {
        for &r in &s.rows {
            kind_of[r] = k;
        }
    }
    kind_of
}

/// [`self_overlap`], with each row's kind worked out once for all findings.
fn overlap(m: &FeatureMatrix, kind_of: &[usize], rows: &[usize]) -> Option<f64> {
    let mut groups: std::collections::HashMap<(u64, u64, usize), Vec<(u64, u64)>> =
        Default::default();
    for &r in rows {
        let (ts, dur) = (m.ts_ns[r], m.dur_ns[r]);
        if dur > 0 {
            groups
                .entry((m.pid[r], m.tid[r], kind_of[r]))
                .or_default()
                .push((ts, ts + dur));
        }
    }
    let (mut union, mut sum) = (0u64, 0u64);
    for spans in groups.values_mut() {
        spans.sort_unstable();
        let mut reach = 0;
        for &(a, b) in spans.iter() {
            sum += b - a;
            union += b.saturating_sub(a.max(reach));
            reach = reach.max(b);
        }
    }
    (sum > 0).then(|| union as f64 / sum as f64)
}

/// Scales each finding's gain to the job's wall-clock time, and says so in its method, when the calls it covers
/// were in flight together ([`self_overlap`]) or shared the clock with other working threads.
pub fn apply(findings: &mut [Finding], m: &FeatureMatrix, table: &KindTable, scan: &JobScan) {
    let t = RowTime::of(scan, m.n_rows());
    let kinds = kind_of(m, table);
    for f in findings.iter_mut() {
        let rows = rows(m, table, f);
        let Some(x) = t.factor(rows.iter().copied()) else {
            continue;
        };
        let x = x * overlap(m, &kinds, &rows).unwrap_or(1.0);
        if x >= 1.0 - 1e-9 || f.gain_ns == 0 {
            continue;
        }
        let thread_ns = f.gain_ns;
        f.gain_ns = (thread_ns as f64 * x).round() as u64;
        f.gain_method.how = format!(
            "{} That is {:.3} ms of the threads' time; the calls were in flight together or shared the job's clock \
             with other working threads, so {:.0}% of their time was the job's wall-clock time.",
            f.gain_method.how,
            thread_ns as f64 / 1e6,
            x * 100.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::Reason;
    use crate::diagnose::ledger::Gain;

    /// One call per row: (thread, op, start, end).
    fn matrix(calls: &[(u64, &str, u64, u64)]) -> FeatureMatrix {
        let n = calls.len();
        FeatureMatrix {
            op: calls.iter().map(|c| c.1.into()).collect(),
            pid: vec![1; n],
            tid: calls.iter().map(|c| c.0).collect(),
            ts_ns: calls.iter().map(|c| c.2).collect(),
            dur_ns: calls.iter().map(|c| c.3 - c.2).collect(),
            file: vec![None; n],
            size: vec![None; n],
            bandwidth_mibs: vec![None; n],
            direct: vec![None; n],
            sequential: vec![None; n],
            run: vec![None; n],
            thread: vec![None; n],
            process: vec![None; n],
            self_ns: calls.iter().map(|c| c.3 - c.2).collect(),
            features: Vec::new(),
        }
    }

    /// A sync in one thread shares its 100 ns with another thread's stat; an open runs alone later. A finding over
    /// the job that a shared device made of the syncs' finding gains half their time, the syncs' share of the
    /// clock; without its kinds, the share of every call (200 of 300 ns).
    #[test]
    fn a_finding_over_the_job_is_scaled_by_the_clock_share_of_the_kinds_it_merged() {
        let m = matrix(&[
            (1, "fsync", 0, 100),
            (2, "newfstatat", 0, 100),
            (1, "openat", 200, 300),
        ]);
        let table = KindTable::of(&m);
        let scan = JobScan::with_calls(&m);
        let sync = table.kinds.iter().find(|(k, _)| k.op == "fsync").unwrap();
        let finding = |kinds: Vec<crate::diagnose::kinds::Kind>| Finding {
            kinds,
            ..Finding::new(
                "block",
                Reason::SharedDevice,
                Scope::Job,
                100.0,
                300.0,
                Default::default(),
                Gain::wait_removed(100.0),
            )
        };
        let mut findings = vec![finding(vec![sync.0.clone()]), finding(Vec::new())];
        apply(&mut findings, &m, &table, &scan);
        assert_eq!([findings[0].gain_ns, findings[1].gain_ns], [50, 67]);
    }
}
