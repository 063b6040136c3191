//! On-CPU samples named: their symbols, and each distinct stack's function names and layers. The layers'
//! contract ([`crate::layers::attach`]) holds it for the decoder; it imports nothing of the layers but the kernel
//! layer's map and symbols.

use std::collections::HashMap;
use std::sync::Arc;

use datasets::{ArgValue, Event, Phase};
use tracer_ebpf::{STACK_DEPTH, StackEvent};

use crate::layers::kernel::map::KernelLayerMap;
use crate::layers::kernel::symbols::KernelSymbols;
use crate::layers::layer::Layer;
use crate::record::complete;

/// What the decoder needs to name samples: symbols, and each distinct stack's names and layers.
pub struct Samples {
    symbols: Arc<KernelSymbols>,
    /// Frames → (`stack`, `stack_layers`).
    explained: HashMap<Vec<u64>, (String, String)>,
}

impl Samples {
    pub(super) fn new(symbols: Arc<KernelSymbols>) -> Samples {
        Samples {
            symbols,
            explained: HashMap::new(),
        }
    }

    /// Fills `e` with the sample `s`.
    pub(super) fn decode(&mut self, e: &mut Event, s: &StackEvent, klayers: &mut KernelLayerMap) {
        let n = (s.len as usize / 8).min(STACK_DEPTH);
        let frames = &s.frames[..n];
        if !self.explained.contains_key(frames) {
            let names: Vec<&str> = frames
                .iter()
                .map(|&a| self.symbols.name(a).unwrap_or("?"))
                .collect();
            let x = (names.join(";"), klayers.stack_layers(&names));
            self.explained.insert(frames.to_vec(), x);
        }
        let (stack, layers) = &self.explained[frames];
        let hdr = tracer_ebpf::EventHeader { dur: 0, ..s.hdr };
        complete(e, "sample", Layer::Oncpu.name(), &hdr);
        e.ph = Phase::Instant;
        let other = &mut e.args.other;
        other.push(("period_ns".into(), ArgValue::Int(s.hdr.dur as i64)));
        other.push(("stack".into(), ArgValue::Str(stack.clone())));
        other.push(("stack_layers".into(), ArgValue::Str(layers.clone())));
    }
}
