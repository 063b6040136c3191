//! Kernel stacks into per-function events, before attribution. dc-trace gives two kinds of event a kernel stack
//! (`stack`, innermost first, and each frame's layer, `stack_layers`): an on-CPU sample, replaced by one point per
//! function on it ([`crate::oncpu`]), and an off-CPU wait, kept and joined by one interval per function on it
//! ([`crate::offcpu`]).

use std::borrow::Cow;

use anyhow::Result;
use compact_str::CompactString;
use datasets::{ArgValue, Args, Event, Phase};

use crate::offcpu;
use crate::oncpu::{self, Period, UNMAPPED};
use crate::options::BuildOptions;

fn has_stack(e: &Event) -> bool {
    oncpu::is_sample(e) || offcpu::has_stack(e)
}

fn push(e: Event, opts: &BuildOptions, period: &Period, out: &mut Vec<Event>) -> Result<()> {
    if oncpu::is_sample(&e) {
        return oncpu::points(&e, opts, period, out);
    }
    if offcpu::has_stack(&e) {
        offcpu::functions(&e, opts, out);
    }
    out.push(e);
    Ok(())
}

/// `events` with every stack expanded (see the module); borrowed when there is none.
pub fn expand<'e>(
    events: &'e [Event],
    opts: &BuildOptions,
    period: &Period,
) -> Result<Cow<'e, [Event]>> {
    if !events.iter().any(has_stack) {
        return Ok(Cow::Borrowed(events));
    }
    let mut out = Vec::with_capacity(events.len() * 2);
    for e in events {
        push(e.clone(), opts, period, &mut out)?;
    }
    Ok(Cow::Owned(out))
}

/// [`expand`] in place, moving the other events instead of copying them: a batch read from a file.
pub fn expand_batch(events: &mut Vec<Event>, opts: &BuildOptions, period: &Period) -> Result<()> {
    if !events.iter().any(has_stack) {
        return Ok(());
    }
    let mut out = Vec::with_capacity(events.len() * 2);
    for e in events.drain(..) {
        push(e, opts, period, &mut out)?;
    }
    *events = out;
    Ok(())
}

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
