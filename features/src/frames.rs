//! A kernel stack's frames, as dc-trace writes them on an event (`stack`, innermost first, and each frame's layer,
//! `stack_layers`), and the event one frame adds: what [`crate::oncpu`] and [`crate::offcpu`] both build on. It
//! imports neither, so that [`crate::stacks`] can dispatch to both.

use compact_str::CompactString;
use datasets::{ArgValue, Args, Event, Phase};

use crate::options::BuildOptions;

/// The layer of kernel functions the map does not name.
pub use datasets::vocab::layer::KERNEL as UNMAPPED;

fn text<'e>(e: &'e Event, key: &str) -> &'e str {
    match e.args.get(key) {
        Some(ArgValue::Str(s)) => s.as_str(),
        _ => "",
    }
}

/// The (function, layer) of each frame of `e`'s stack, innermost first.
pub fn frames<'e>(e: &'e Event, opts: &BuildOptions) -> Vec<(&'e str, &'e str)> {
    text(e, "stack")
        .split(';')
        .zip(
            text(e, "stack_layers")
                .split(';')
                .chain(std::iter::repeat("")),
        )
        .filter(|(f, _)| !f.is_empty())
        .map(|(f, l)| (f, layer_of(l, opts)))
        .collect()
}

/// Each function of `frames` once: a recursive function counts once per stack.
pub fn distinct<'f>(frames: &'f [(&'f str, &'f str)]) -> impl Iterator<Item = (&'f str, &'f str)> {
    frames
        .iter()
        .enumerate()
        .filter(|&(i, &(f, _))| frames[..i].iter().all(|&(g, _)| g != f))
        .map(|(_, &frame)| frame)
}

/// A frame's layer; a row layer's events would be taken for calls, so a frame filed there stays
/// `kernel`'s.
fn layer_of<'l>(l: &'l str, opts: &BuildOptions) -> &'l str {
    if l.is_empty() || opts.is_row_layer(l) {
        UNMAPPED
    } else {
        l
    }
}

/// An event of `cat` and `name` on `e`'s thread at `e`'s start, of phase `ph` and `dur_ns`: what one frame of `e`'s
/// stack adds.
pub fn frame_event(e: &Event, cat: &str, name: CompactString, ph: Phase, dur_ns: u64) -> Event {
    Event {
        id: None,
        name,
        cat: cat.into(),
        ph,
        pid: e.pid,
        tid: e.tid,
        ts_ns: e.ts_ns,
        dur_ns,
        args: Args::default(),
    }
}
