//! `dc-trace probes`: loads and attaches what `collect` would, with an empty scope, and reports
//! per layer what attached and why the rest did not, like `bpftrace -l`.

use std::fmt::Write;

use crate::error::Result;

use crate::collect::probe_reports;
use crate::layers::kernel::map::KernelLayerMap;
use crate::layers::kernel::probeset;
use crate::options::TracerOptions;

/// What `probes` is asked.
#[derive(Clone, Debug, Default)]
pub struct ProbeOptions {
    /// The options of the `collect` whose probes are listed.
    pub tracer: TracerOptions,
    /// One line per probe, not only the count per layer.
    pub verbose: bool,
    /// Write a probe set of the functions matching any of these regexes (none: those the layer
    /// map files under a layer) instead.
    pub discover: Option<Vec<String>>,
}

pub fn list(args: &ProbeOptions) -> Result<String> {
    if let Some(patterns) = &args.discover {
        let layers = args.tracer.kernel_layers.as_deref();
        let mut map = KernelLayerMap::for_run(layers, None, false)?;
        return probeset::discover(patterns, &mut |n| map.layer(n).to_owned());
    }
    let verbose = args.verbose;
    let reports = probe_reports(&args.tracer)?;
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
