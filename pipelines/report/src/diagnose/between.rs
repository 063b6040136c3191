//! The job's wait for a CPU between its calls. A program that computes between its I/O calls (a database building
//! its records, a compressor) and shares its CPU with other work waits, runnable, outside any call: no call's layers
//! hold that time, yet removing the competition saves it. It is a finding over the job when the wait is at least
//! [`CPU_WAIT_BETWEEN_CALLS_SHARE`] of the job's wall-clock time, and it takes over the calls' own waits for a CPU,
//! which have the same cause and the same fix ([`absorb`]).

use std::collections::BTreeMap;

use crate::diagnose::finding::{Finding, Reason, Scope};
use crate::diagnose::job::WallSplit;
use crate::diagnose::ledger::Gain;
use crate::diagnose::scan::{JobScan, SCHED};
use crate::diagnose::thresholds::CPU_WAIT_BETWEEN_CALLS_SHARE;

/// The gain method of the finding: its gain is already the job's wall-clock time.
pub const METHOD: &str = "cpu_wait_between_calls";

/// The wait, when it is a finding: `cost` in the threads' time, `wall` its part of the job's wall-clock time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuWait {
    pub cost_ns: f64,
    pub wall_ns: f64,
    pub job_wall_ns: f64,
}

/// The runnable time outside calls of a traced run with the sched layer, from its wall-clock split, when it
/// reaches the threshold.
pub fn cpu_wait(split: &WallSplit, scan: &JobScan) -> Option<CpuWait> {
    if !scan.has_sched {
        return None;
    }
    let wall_ns = split
        .between_calls
        .get(&(SCHED.to_owned(), Reason::CpuContention))
        .copied()
        .unwrap_or(0.0);
    let job_wall_ns = split.wall_ns as f64;
    let cost_ns: f64 = scan
        .threads
        .values()
        .filter_map(|t| t.offcpu_outside_ns.get("R"))
        .map(|ns| *ns as f64)
        .sum();
    (job_wall_ns > 0.0 && wall_ns >= CPU_WAIT_BETWEEN_CALLS_SHARE * job_wall_ns).then_some(
        CpuWait {
            cost_ns: cost_ns.max(wall_ns),
            wall_ns,
            job_wall_ns,
        },
    )
}

/// The finding; its share is set with the others' ([`crate::diagnose::findings`]).
pub fn finding(w: CpuWait) -> Finding {
    let how = format!(
        "The wait for a CPU between calls removed: {:.3} ms of the threads' time, {:.3} ms of the job's wall-clock \
         time, when the threads that waited were the ones the job waited for.",
        w.cost_ns / 1e6,
        w.wall_ns / 1e6
    );
    let mut evidence = BTreeMap::new();
    evidence.insert("cpu_wait_between_calls_ns".to_owned(), w.cost_ns);
    evidence.insert("share_of_wall".to_owned(), w.wall_ns / w.job_wall_ns);
    let mut f = Finding::new(
        SCHED,
        Reason::CpuContention,
        Scope::Job,
        w.cost_ns,
        0.0,
        evidence,
        Gain::new(w.wall_ns, METHOD, how),
    );
    f.recommendation = "Between its I/O calls the job waited for a CPU, runnable while other work ran: give it more \
                        CPUs (its cpuset, affinity or quota), move the competing work elsewhere, or raise its priority."
        .to_owned();
    f
}

/// The calls' waits for a CPU (`sched` / `cpu_contention` per kind of call) join the job's wait between calls, when
/// that is a finding: one finding then says what removing the competition saves, inside the calls and between them.
pub fn absorb(findings: &mut Vec<Finding>) {
    let Some(at) = findings.iter().position(|f| f.gain_method.slug == METHOD) else {
        return;
    };
    let mut job = findings.remove(at);
    let (calls, rest): (Vec<Finding>, Vec<Finding>) = findings
        .drain(..)
        .partition(|f| f.reason == Reason::CpuContention && matches!(f.scope, Scope::Calls(_)));
    *findings = rest;
    let (cost, gain) = calls
        .iter()
        .fold((0, 0), |(c, g), f| (c + f.cost_ns, g + f.gain_ns));
    if cost > 0 {
        job.cost_ns += cost;
        job.gain_ns += gain;
        job.evidence
            .insert("cpu_wait_in_calls_ns".to_owned(), cost as f64);
        job.gain_method.how = format!(
            "{} With the calls' own waits for a CPU: {:.3} ms more of the job's wall-clock time.",
            job.gain_method.how,
            gain as f64 / 1e6
        );
    }
    findings.push(job);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::kinds::Kind;

    fn calls(op: &str, reason: Reason, cost: f64, gain: f64) -> Finding {
        Finding::new(
            SCHED,
            reason,
            Scope::Calls(Kind {
                op: op.into(),
                mode: Some("buffered".into()),
                size_class: Some("100-1K".into()),
            }),
            cost,
            1e3,
            BTreeMap::new(),
            Gain::wait_removed(gain),
        )
    }

    /// The job waited 300 ns for a CPU between calls; its writes 100 ns inside them (80 ns of the wall clock) and
    /// its syncs 50 ns: one finding claims 450 ns and gains 430 ns. The writes' wait for I/O stays its own.
    #[test]
    fn the_job_takes_over_its_calls_waits_for_a_cpu() {
        let mut found = vec![
            calls("write", Reason::CpuContention, 100.0, 80.0),
            calls("write", Reason::IoWait, 70.0, 70.0),
            finding(CpuWait {
                cost_ns: 300.0,
                wall_ns: 300.0,
                job_wall_ns: 1000.0,
            }),
            calls("fdatasync", Reason::CpuContention, 50.0, 50.0),
        ];
        absorb(&mut found);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].reason, Reason::IoWait);
        let job = &found[1];
        assert_eq!(
            (&job.scope, job.cost_ns, job.gain_ns),
            (&Scope::Job, 450, 430)
        );
        assert_eq!(job.evidence["cpu_wait_in_calls_ns"], 150.0);
        assert_eq!(job.evidence["share_of_wall"], 0.3);
    }

    /// Without the job's finding, the calls' findings stay as they are.
    #[test]
    fn without_a_wait_between_calls_the_calls_keep_theirs() {
        let mut found = vec![calls("write", Reason::CpuContention, 100.0, 80.0)];
        let before = found.clone();
        absorb(&mut found);
        assert_eq!(found, before);
    }
}
