//! What each layer of a collection attached and refused, as dc-trace reports it in its summary: plain data, so that
//! a reader of the summary JSON (dc-report) needs no tracer.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::vocab::{Mechanism, Mechanisms};

/// A probe the kernel refused, or that this kernel lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub probe: String,
    pub mechanism: Mechanism,
    pub reason: String,
}

/// What one layer attached, and what it could not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerReport {
    pub layer: String,
    /// How its probes attach, `+` between several (`kprobe_multi+fentry`); `none` when nothing did.
    pub mechanism: Mechanisms,
    pub attached: Vec<String>,
    pub refused: Vec<Refused>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
    /// What its events carry beyond the probes' own fields (the sched layer's `kernel stacks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
}

impl LayerReport {
    /// `layer` is the layer's name (the tracer's layers display as theirs).
    pub fn new(layer: impl fmt::Display, mechanism: Mechanism) -> LayerReport {
        LayerReport {
            layer: layer.to_string(),
            mechanism: mechanism.into(),
            ..LayerReport::default()
        }
    }

    pub fn refuse(&mut self, probe: &str, mechanism: Mechanism, reason: impl fmt::Display) {
        self.refused.push(Refused {
            probe: probe.to_owned(),
            mechanism,
            reason: reason.to_string(),
        });
    }

    /// One line: what attached, how, and why the rest did not.
    pub fn line(&self) -> String {
        let mut s = format!("{:<10} ", self.layer);
        if self.attached.is_empty() {
            s.push_str("not attached");
        } else {
            s.push_str(&format!(
                "{} {} probe(s)",
                self.attached.len(),
                self.mechanism
            ));
        }
        if !self.with.is_empty() {
            s.push_str(&format!(" with {}", self.with.join(", ")));
        }
        if let Some(t) = &self.timing {
            s.push_str(&t.to_string());
        }
        if !self.refused.is_empty() {
            let mut reasons: Vec<String> = Vec::new();
            for r in &self.refused {
                let what = format!("{}: {}", r.mechanism, r.reason);
                if !reasons.contains(&what) {
                    reasons.push(what);
                }
            }
            s.push_str(&format!(
                "; {} refused ({})",
                self.refused.len(),
                reasons.join("; ")
            ));
        }
        s
    }
}

/// How long the kernel functions took to attach, and to detach at the end of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    pub functions: usize,
    /// Resolving and checking the functions and relocating the programs (kallsyms, tracefs, BTF).
    pub prepare_us: u64,
    /// Loading the programs and linking them to the functions.
    pub attach_us: u64,
    pub detach_us: Option<u64>,
    /// The links made for the functions: one kprobe session, two kprobe_multi (entry and
    /// return), or two a function (fentry and fexit, kprobe and kretprobe).
    #[serde(default)]
    pub links: usize,
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "; {} attached by {} link(s) in {:.1} ms (after {:.1} ms resolving them)",
            self.functions,
            self.links,
            self.attach_us as f64 / 1e3,
            self.prepare_us as f64 / 1e3
        )?;
        if let Some(d) = self.detach_us {
            write!(f, ", detached in {:.1} ms", d as f64 / 1e3)?;
        }
        Ok(())
    }
}
