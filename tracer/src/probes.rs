//! `dc-trace probes`: loads and attaches what `collect` would, with an empty scope, and reports
//! per layer what attached and why the rest did not, like `bpftrace -l`.

use std::fmt::Write;

use anyhow::Result;

use crate::cli::Selection;
use crate::collect::probe_reports;

pub fn list(sel: &Selection, verbose: bool) -> Result<String> {
    let reports = probe_reports(sel)?;
    let mut out = String::new();
    for r in &reports {
        writeln!(out, "{}", r.line())?;
        if verbose {
            for a in &r.attached {
                writeln!(out, "  + {}:{a}", r.mechanism)?;
            }
            for f in &r.refused {
                writeln!(out, "  - {}:{} ({})", f.mechanism, f.probe, f.reason)?;
            }
        }
    }
    Ok(out)
}
