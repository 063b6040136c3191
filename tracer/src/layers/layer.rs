//! The layers by name and id, which of them a run traces, and what each attached: the vocabulary every layer
//! module and the rest of the tracer share. It imports no layer module but the kernel layer's timing.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use datasets::vocab::layer as cat;
use datasets::vocab::{Mechanism, Mechanisms};
use serde::{Deserialize, Serialize};
use tracer_ebpf::layer;

use super::kernel::links::Timing;

/// Declares the layers, in attach order: variant, name (the `cat` of its events, from the
/// vocabulary), and the id the kernel side tags its records with. Each one's probes are in
/// [`super::Layer::probes`].
macro_rules! layers {
    ($($variant:ident $name:path, $id:ident;)*) => {
        /// A layer of the I/O stack; its name is the `cat` of its events.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Layer {
            $($variant),*
        }

        impl Layer {
            pub const ALL: &[Layer] = &[$(Layer::$variant),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Layer::$variant => $name),*
                }
            }

            /// The id the kernel side tags records and drop counters with.
            pub fn id(self) -> u8 {
                match self {
                    $(Layer::$variant => layer::$id),*
                }
            }
        }
    };
}

layers! {
    Sys cat::SYS, SYS;
    Libc cat::LIBC, LIBC;
    App cat::APP, APP;
    Block cat::BLOCK, BLOCK;
    PageCache cat::PAGE_CACHE, PAGE_CACHE;
    Fs cat::FS, FS;
    Writeback cat::WRITEBACK, WRITEBACK;
    Sched cat::SCHED, SCHED;
    Irq cat::IRQ, IRQ;
    Lock cat::LOCK, LOCK;
    Mm cat::MM, MM;
    Iomap cat::IOMAP, IOMAP;
    Jbd2 cat::JBD2, JBD2;
    Kernel cat::KERNEL, KFUNC;
    Oncpu cat::ONCPU, ONCPU;
}

/// The layers to trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerSelection(pub BTreeSet<Layer>);

impl Default for LayerSelection {
    fn default() -> LayerSelection {
        LayerSelection::all()
    }
}

impl LayerSelection {
    pub fn all() -> LayerSelection {
        LayerSelection(Layer::ALL.iter().copied().collect())
    }

    pub fn only(layers: &[Layer]) -> LayerSelection {
        LayerSelection(layers.iter().copied().collect())
    }

    pub fn has(&self, l: Layer) -> bool {
        self.0.contains(&l)
    }

    /// `all`, or a comma-separated list of layer names.
    pub fn parse(s: &str) -> Result<LayerSelection, String> {
        if s == "all" {
            return Ok(LayerSelection::all());
        }
        s.split(',')
            .map(|p| p.trim().parse::<Layer>())
            .collect::<Result<BTreeSet<_>, _>>()
            .map(LayerSelection)
    }
}

impl Layer {
    pub fn from_id(id: u8) -> Option<Layer> {
        Layer::ALL.iter().copied().find(|l| l.id() == id)
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
            .iter()
            .copied()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
                format!("unknown layer `{s}` (layers: {})", names.join(", "))
            })
    }
}

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
    pub fn new(layer: Layer, mechanism: Mechanism) -> LayerReport {
        LayerReport {
            layer: layer.name().to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_is_a_canonical_layer_of_the_vocabulary() {
        for l in Layer::ALL {
            let def = cat::find(l.name()).map(|d| d.name);
            assert_eq!(def, Some(l.name()), "{l:?}");
        }
        assert!(cat::find(cat::SCOPE).is_none());
    }
}
