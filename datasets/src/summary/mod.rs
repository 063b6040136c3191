//! What a collection did, for people (one line per layer) and for programs (serde): dc-trace writes it
//! (`--summary-json`), and dc-report and dc-pipeline read it back without the tracer.

pub mod probes;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::vocab::{ModeKind, TraceScope};
pub use probes::{LayerReport, Refused, Timing};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub output: PathBuf,
    pub mode: ModeKind,
    /// What was traced.
    pub scope: TraceScope,
    /// The clock of `ts`.
    pub clock: String,
    /// Events written (metadata excluded).
    pub events: u64,
    pub events_per_layer: BTreeMap<String, u64>,
    /// Records the kernel could not deliver (ring buffer or a table full).
    pub drops: u64,
    pub drops_per_layer: BTreeMap<String, u64>,
    /// Off-CPU kernel stacks the kernel could not read: waits left unexplained.
    #[serde(default)]
    pub stack_errors: u64,
    /// On-CPU samples whose kernel stack the kernel could not read: CPU time left unexplained.
    #[serde(default)]
    pub sample_stack_errors: u64,
    /// Program runs the kernel skipped (`recursion_misses`: another BPF program was running on
    /// that CPU), each a lost event; per layer (`scope` for the process-following programs;
    /// uprobe programs serve `libc` and `app` at once) and per program.
    pub kernel_skipped: u64,
    pub kernel_skipped_per_layer: BTreeMap<String, u64>,
    pub kernel_skipped_per_program: BTreeMap<String, u64>,
    /// Records read from the ring buffer.
    pub records: u64,
    /// Records (and profile counters) too short, or of an unknown kind or layer: not in the trace.
    #[serde(default)]
    pub malformed: u64,
    /// Record bytes that waited on disk because the writer was behind the ring buffer.
    pub spooled_bytes: u64,
    /// The most record bytes waiting for the writer at once.
    pub peak_backlog_bytes: u64,
    /// Why the backlog could not go to disk (the ring buffer then waited for the writer).
    pub spool_error: Option<String>,
    /// Probes attached and refused, with the mechanism and the reason, per layer.
    pub layers: Vec<LayerReport>,
    pub output_bytes: u64,
    pub wall_time_s: f64,
    /// From the end of tracing (the command's exit, a signal, `--duration`) to the closed file:
    /// detaching, and writing what was still queued.
    pub finish_time_s: f64,
    /// The command's exit code (128 + signal when a signal ended it); `None` without a command.
    pub exit_status: Option<i32>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "dc-trace: {} events ({} mode, scope {}) in {:.3} s → {} ({} bytes), {} dropped, {} skipped by the kernel",
            self.events,
            self.mode,
            self.scope,
            self.wall_time_s,
            self.output.display(),
            self.output_bytes,
            self.drops,
            self.kernel_skipped
        )?;
        for l in &self.layers {
            let n = self.events_per_layer.get(&l.layer).copied().unwrap_or(0);
            let d = self.drops_per_layer.get(&l.layer).copied().unwrap_or(0);
            let mut drops = if d > 0 {
                format!(", {d} dropped")
            } else {
                String::new()
            };
            let k: u64 = self
                .kernel_skipped_per_layer
                .iter()
                .filter(|(label, _)| label.split('+').any(|p| *p == l.layer))
                .map(|(_, n)| n)
                .sum();
            if k > 0 {
                drops.push_str(&format!(", {k} skipped by the kernel"));
            }
            writeln!(f, "  {}: {n} events{drops}", l.line())?;
        }
        if self.stack_errors > 0 {
            writeln!(
                f,
                "  {} off-CPU kernel stacks could not be read: their waits stay in sched",
                self.stack_errors
            )?;
        }
        if self.sample_stack_errors > 0 {
            writeln!(
                f,
                "  {} on-CPU samples' kernel stacks could not be read: left out",
                self.sample_stack_errors
            )?;
        }
        if self.malformed > 0 {
            writeln!(
                f,
                "  {} malformed records (too short, or of an unknown kind or layer) left out",
                self.malformed
            )?;
        }
        if self.spooled_bytes > 0 {
            writeln!(
                f,
                "  the writer fell behind: {} bytes of records waited on disk (at most {} bytes queued at once); finished {:.3} s after tracing ended",
                self.spooled_bytes, self.peak_backlog_bytes, self.finish_time_s
            )?;
        }
        if let Some(e) = &self.spool_error {
            writeln!(f, "  warning: {e}")?;
        }
        if let Some(s) = self.exit_status {
            writeln!(f, "  command exited with status {s}")?;
        }
        Ok(())
    }
}
