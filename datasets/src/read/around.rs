//! A group's text read around the BGZF members that did not inflate ([`crate::salvage`]).

use super::parsed::Parsed;
use crate::TimeUnit;
use crate::salvage::{BadMember, Gap, without_cut_line};

/// Parses a group's text around the members that did not inflate, as if the text went on
/// across each gap, minus the lines the gaps cut.
pub(super) fn parse_around(
    text: &[u8],
    bad: &[BadMember],
    unit: TimeUnit,
    skip_invalid: bool,
    parse: impl Fn(&[u8], TimeUnit, bool, bool) -> Parsed,
) -> Parsed {
    let first = bad.first().map_or(text.len(), |b| b.text_at);
    let mut p = parse(&text[..first], unit, skip_invalid, true);
    for (i, b) in bad.iter().enumerate() {
        let end = bad.get(i + 1).map_or(text.len(), |n| n.text_at);
        let segment = &text[b.text_at..end];
        let kept = without_cut_line(segment, unit);
        // Only the group's first line may continue the previous chunk: no placeholder inside.
        let mut q = parse(kept, unit, skip_invalid, false);
        q.text_bytes = segment.len() as u64;
        let gap = Gap {
            bytes: b.bytes.clone(),
            msg: b.msg.clone(),
            events_before: p.events.len(),
            cuts_carry: p.lines == 0,
            at_end: b.text_at == text.len(),
        };
        p = join(p, gap, q);
    }
    p
}

/// `q` after `p` across `gap`: `p`'s incomplete last line is dropped.
fn join(mut p: Parsed, gap: Gap, q: Parsed) -> Parsed {
    let before = p.events.len() - usize::from(p.head_event);
    let shift = before + usize::from(q.head_event);
    let lines = p.lines;
    p.errors.extend(
        q.errors
            .into_iter()
            .map(|(i, later, e)| (lines + i, shift + later, e)),
    );
    p.events.extend(q.events);
    p.digests.extend(q.digests);
    p.lines += q.lines;
    p.tail = q.tail;
    p.text_bytes += q.text_bytes;
    p.gaps.push(gap);
    p.gaps.extend(q.gaps);
    p
}
