//! The layers by name and id, which of them a run traces, and what each attached: the vocabulary every layer
//! module and the rest of the tracer share. It imports no layer module but the kernel layer's timing.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use datasets::vocab::layer as cat;
use serde::Serialize;
use tracer_ebpf::layer;

pub use datasets::summary::{LayerReport, Refused};

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
