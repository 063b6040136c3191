//! `dc-trace probes`: loads and attaches what `collect` would, with an empty scope, and reports
//! per layer what attached and why the rest did not, like `bpftrace -l`.

use std::fmt::Write;

use anyhow::Result;

use crate::cli::ProbeArgs;
use crate::collect::probe_reports;
use crate::layers::kernel_map::KernelLayerMap;
use crate::layers::kernel_probeset;

pub fn list(args: &ProbeArgs) -> Result<String> {
    if let Some(patterns) = &args.discover {
        let layers = args.selection.kernel_layers.as_deref();
        let mut map = KernelLayerMap::for_run(layers, None, false)?;
        return kernel_probeset::discover(patterns, &mut map);
    }
    let (sel, verbose) = (&args.selection, args.verbose);
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
