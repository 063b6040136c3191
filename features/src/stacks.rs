//! Kernel stacks into per-function events, before attribution. dc-trace gives two kinds of event a kernel stack
//! (`stack`, innermost first, and each frame's layer, `stack_layers`): an on-CPU sample, replaced by one point per
//! function on it ([`crate::oncpu`]), and an off-CPU wait, kept and joined by one interval per function on it
//! ([`crate::offcpu`]).

use std::borrow::Cow;

use crate::error::Result;
use datasets::Event;

use crate::offcpu;
use crate::oncpu::{self, Period};
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
    if !has_stacks(events) {
        return Ok(Cow::Borrowed(events));
    }
    let mut out = Vec::with_capacity(events.len() * 2);
    for e in events {
        push(e.clone(), opts, period, &mut out)?;
    }
    Ok(Cow::Owned(out))
}

/// Whether [`expand_batch`] changes `events`: whether one of them carries a stack.
pub fn has_stacks(events: &[Event]) -> bool {
    events.iter().any(has_stack)
}

/// [`expand`] in place, moving the other events instead of copying them: a batch read from a file.
pub fn expand_batch(events: &mut Vec<Event>, opts: &BuildOptions, period: &Period) -> Result<()> {
    if !has_stacks(events) {
        return Ok(());
    }
    expand_found(events, opts, period)
}

/// [`expand_batch`] of a batch [`has_stacks`] already found stacks in (a batch's events are many, the check is not
/// free).
pub fn expand_found(events: &mut Vec<Event>, opts: &BuildOptions, period: &Period) -> Result<()> {
    let mut out = Vec::with_capacity(events.len() * 2);
    for e in events.drain(..) {
        push(e, opts, period, &mut out)?;
    }
    *events = out;
    Ok(())
}
