//! One module per layer of the I/O stack. Each owns its probes' setup (which maps it fills, which
//! programs it attaches where) and the decoding of its records into trace events.

pub mod block;
pub mod kfunc;
pub mod sched;
pub mod sys;
pub mod tracepoints;
pub mod uprobe;

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use anyhow::{Context, Result};
use aya::{
    Ebpf,
    programs::{Program, RawTracePoint, TracePoint},
};
use serde::Serialize;
use tracer_ebpf::layer;

/// A layer of the I/O stack; its name is the `cat` of its events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Sys,
    Libc,
    App,
    Block,
    PageCache,
    Fs,
    Writeback,
    Sched,
    Kernel,
}

impl Layer {
    pub const ALL: [Layer; 9] = [
        Layer::Sys,
        Layer::Libc,
        Layer::App,
        Layer::Block,
        Layer::PageCache,
        Layer::Fs,
        Layer::Writeback,
        Layer::Sched,
        Layer::Kernel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Sys => "sys",
            Layer::Libc => "libc",
            Layer::App => "app",
            Layer::Block => "block",
            Layer::PageCache => "page_cache",
            Layer::Fs => "fs",
            Layer::Writeback => "writeback",
            Layer::Sched => "sched",
            Layer::Kernel => "kernel",
        }
    }

    /// The id the kernel side tags records and drop counters with.
    pub fn id(self) -> u8 {
        match self {
            Layer::Sys => layer::SYS,
            Layer::Libc => layer::LIBC,
            Layer::App => layer::APP,
            Layer::Block => layer::BLOCK,
            Layer::PageCache => layer::PAGE_CACHE,
            Layer::Fs => layer::FS,
            Layer::Writeback => layer::WRITEBACK,
            Layer::Sched => layer::SCHED,
            Layer::Kernel => layer::KFUNC,
        }
    }

    pub fn from_id(id: u8) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.id() == id)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layer {
    type Err = String;

    fn from_str(s: &str) -> Result<Layer, String> {
        Layer::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
                format!("unknown layer `{s}` (layers: {})", names.join(", "))
            })
    }
}

/// A probe the kernel refused, or that this kernel lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refused {
    pub probe: String,
    pub mechanism: String,
    pub reason: String,
}

/// What one layer attached, and what it could not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LayerReport {
    pub layer: String,
    /// How its probes attach: `tracepoint`, `uprobe`, `fentry`, `kprobe`, or `none`.
    pub mechanism: String,
    pub attached: Vec<String>,
    pub refused: Vec<Refused>,
}

impl LayerReport {
    pub fn new(layer: Layer, mechanism: &str) -> LayerReport {
        LayerReport {
            layer: layer.name().to_owned(),
            mechanism: mechanism.to_owned(),
            ..LayerReport::default()
        }
    }

    pub fn refuse(&mut self, probe: &str, mechanism: &str, reason: impl fmt::Display) {
        self.refused.push(Refused {
            probe: probe.to_owned(),
            mechanism: mechanism.to_owned(),
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

/// Loads programs on first use and attaches them; every link belongs to `ebpf` and goes with it.
pub struct Attacher<'a> {
    pub ebpf: &'a mut Ebpf,
    loaded: HashSet<String>,
}

impl<'a> Attacher<'a> {
    pub fn new(ebpf: &'a mut Ebpf) -> Attacher<'a> {
        Attacher {
            ebpf,
            loaded: HashSet::new(),
        }
    }

    /// The program `name`, loaded into the kernel.
    pub fn program(&mut self, name: &str) -> Result<&mut Program> {
        let first = self.loaded.insert(name.to_owned());
        let program = self
            .ebpf
            .program_mut(name)
            .with_context(|| format!("program {name} is not in the eBPF object"))?;
        if first {
            let res = match program {
                Program::TracePoint(p) => p.load(),
                Program::RawTracePoint(p) => p.load(),
                Program::UProbe(p) => p.load(),
                Program::KProbe(p) => p.load(),
                _ => Ok(()),
            };
            if let Err(e) = res {
                self.loaded.remove(name);
                return Err(e).with_context(|| format!("loading {name}"));
            }
        }
        Ok(self.ebpf.program_mut(name).expect("checked above"))
    }

    /// Names of the object's maps.
    pub fn map_names(&self) -> Vec<String> {
        self.ebpf.maps().map(|(n, _)| n.to_owned()).collect()
    }

    /// Attaches tracepoint program `prog` to `category/name`.
    pub fn tracepoint(&mut self, prog: &str, category: &str, name: &str) -> Result<()> {
        let p: &mut TracePoint = self.program(prog)?.try_into()?;
        p.attach(category, name)
            .with_context(|| format!("attaching {prog} to {category}/{name}"))?;
        Ok(())
    }

    /// Attaches raw tracepoint program `prog` to `name`.
    pub fn raw_tracepoint(&mut self, prog: &str, name: &str) -> Result<()> {
        let p: &mut RawTracePoint = self.program(prog)?.try_into()?;
        p.attach(name)
            .with_context(|| format!("attaching {prog} to raw tracepoint {name}"))?;
        Ok(())
    }
}

/// The chain of an error as one line, without the verifier's log that follows its first line.
pub fn reason(e: &anyhow::Error) -> String {
    let full = format!("{e:#}");
    let first = full.lines().next().unwrap_or_default();
    match first.find(" Verifier output:") {
        Some(i) => first[..i].to_owned(),
        None => first.to_owned(),
    }
}
