//! The diagnosis as JSON, the contract other tools and the tests read: `findings` in [`sort`](crate::diagnose::sort)
//! order (what can be fixed first, by cost), each with the time it claims (`cost_ns`, no second claimed twice), its
//! `share` of the job's time (`share_of`: its I/O time and any wait for a CPU between calls a finding names), and `gain_ns`, what removing its cause would save, with `gain_method`;
//! against a baseline, `comparison`; and `job`, the job's I/O time and, from a trace, its wall-clock time and the
//! part of it in I/O calls.

use std::io::Write;
use std::path::Path;

use datasets::output::{Existing, Output};
use serde::{Deserialize, Serialize};

use crate::diagnose::compare::{CompareError, Comparison, Run, compare};
use crate::diagnose::job::WallSplit;
use crate::diagnose::kinds::KindTable;
use crate::diagnose::{Finding, SHARE_OF, between, darshan, elsewhere, limits};
use crate::error::WriteError;

/// The job's time: what every finding's share divides by, and the wall-clock time it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobTime {
    /// Every call's duration summed over all threads.
    pub io_time_ns: u64,
    /// The threads' wait for a CPU between calls, when a finding names it: with `io_time_ns`, what every finding's
    /// share divides by ([`SHARE_OF`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_between_calls_ns: Option<u64>,
    /// The threads' waits for I/O between calls, when a finding that cites a device limit or a shared device takes
    /// them ([`limits::claim_waits_between_calls`]): what every finding's share divides by, too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_wait_between_calls_ns: Option<u64>,
    /// From the first instant of any traced thread to the last; none for a feature matrix alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ns: Option<u64>,
    /// The part of `wall_ns` in I/O calls: each instant shared among the threads working then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_in_calls_ns: Option<u64>,
    /// The threads followed over the wall-clock time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
}

impl JobTime {
    /// The job's time; `findings` are its diagnosis', which say whether a limit took its waits between calls.
    pub fn of(run: &Run, findings: &[Finding]) -> JobTime {
        let table = KindTable::of(&run.matrix);
        let records = run.scan.as_ref().map_or(&[][..], |s| &s.darshan[..]);
        let wall = run
            .scan
            .as_ref()
            .map(|s| WallSplit::of(&table, s))
            .filter(|w| w.wall_ns > 0);
        JobTime {
            io_time_ns: table.io_ns().max(darshan::io_ns(records)).round() as u64,
            cpu_wait_between_calls_ns: run
                .scan
                .as_ref()
                .zip(wall.as_ref())
                .and_then(|(s, w)| between::cpu_wait(w, s))
                .map(|w| w.cost_ns.round() as u64),
            io_wait_between_calls_ns: (findings.iter())
                .find_map(|f| f.evidence.get(limits::IO_WAIT_BETWEEN_CALLS))
                .map(|ns| ns.round() as u64),
            wall_ns: wall.as_ref().map(|w| w.wall_ns),
            wall_in_calls_ns: wall.as_ref().map(|w| w.in_calls_ns.round() as u64),
            threads: wall.as_ref().map(|w| w.threads),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The traces or matrix diagnosed (the candidate, with a baseline).
    pub inputs: Vec<String>,
    /// What every finding's `share` divides by ([`SHARE_OF`]); the shares add up to at most 1.
    pub share_of: String,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Said once when the inputs hold no limits to cite ([`limits::note`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits_note: Option<String>,
    /// Said once when the calls slept long until tasks outside the job woke them ([`elsewhere::note`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elsewhere_note: Option<String>,
    /// Absent from a diagnosis written before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobTime>,
}

impl Diagnosis {
    /// The candidate's findings and, with a baseline, the comparison.
    pub fn of(run: &Run, baseline: Option<&Run>) -> Result<Diagnosis, CompareError> {
        let findings = run.findings();
        Ok(Diagnosis {
            inputs: vec![run.name.clone()],
            share_of: SHARE_OF.to_owned(),
            comparison: baseline.map(|b| compare(b, run)).transpose()?,
            limits_note: limits::note(run.scan.as_ref()),
            elsewhere_note: elsewhere::note(run.scan.as_ref(), KindTable::of(&run.matrix).io_ns()),
            job: Some(JobTime::of(run, &findings)),
            findings,
        })
    }

    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// Writes it to an [`Output`] created beforehand and renames it into place.
    pub fn commit(&self, mut out: Output) -> Result<(), WriteError> {
        let text = self.to_json().map_err(|source| WriteError::Json {
            what: "the diagnosis",
            source,
        })?;
        out.write_all(text.as_bytes())?;
        out.commit()?;
        Ok(())
    }

    /// Writes it through [`Output`]: never over a file without `--force`, never half-written.
    pub fn write(&self, path: &Path, existing: Existing) -> Result<(), WriteError> {
        self.commit(Output::create(path, existing)?)
    }
}
