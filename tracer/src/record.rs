//! A BPF record's header as a trace event, shared by the decoder and the layers that decode their own
//! records.

use datasets::{Args, Event, Phase};
use tracer_ebpf::EventHeader;

/// Makes `e` a complete (`X`) event of `name` with no arguments, keeping its allocations: the
/// drain fills one event per record, millions of times a second.
pub fn complete(e: &mut Event, name: &str, cat: &str, h: &EventHeader) {
    e.id = None;
    e.name.clear();
    e.name.push_str(name);
    e.cat.clear();
    e.cat.push_str(cat);
    e.ph = Phase::Complete;
    e.pid = h.tgid as u64;
    e.tid = h.tid as u64;
    e.ts_ns = h.ts;
    e.dur_ns = h.dur;
    let mut other = std::mem::take(&mut e.args.other);
    other.clear();
    e.args = Args {
        other,
        ..Args::default()
    };
}
