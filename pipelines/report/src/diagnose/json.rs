//! The diagnosis as JSON, the contract other tools and the tests read: `findings` sorted by cost, each with the
//! time it claims (`cost_ns`, no second claimed twice), its `share` of the job's I/O time (`share_of`), and
//! `gain_ns`, what removing its cause would save, with `gain_method`; against a baseline, `comparison`.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use datasets::output::{Existing, Output};
use serde::{Deserialize, Serialize};

use crate::diagnose::compare::{Comparison, Run, compare};
use crate::diagnose::{Finding, SHARE_OF, limits};

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
}

impl Diagnosis {
    /// The candidate's findings and, with a baseline, the comparison.
    pub fn of(run: &Run, baseline: Option<&Run>) -> Result<Diagnosis> {
        Ok(Diagnosis {
            inputs: vec![run.name.clone()],
            share_of: SHARE_OF.to_owned(),
            findings: run.findings(),
            comparison: baseline.map(|b| compare(b, run)).transpose()?,
            limits_note: limits::note(run.scan.as_ref()),
        })
    }

    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// Writes it to an [`Output`] created beforehand and renames it into place.
    pub fn commit(&self, mut out: Output) -> Result<()> {
        out.write_all(self.to_json()?.as_bytes())?;
        out.commit()?;
        Ok(())
    }

    /// Writes it through [`Output`]: never over a file without `--force`, never half-written.
    pub fn write(&self, path: &Path, existing: Existing) -> Result<()> {
        self.commit(Output::create(path, existing)?)
    }
}
