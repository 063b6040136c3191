//! One chunk of text parsed into events by a worker: what the reader's workers ([`super::dispatch`]) make and its
//! reassembly ([`super::reassemble`]) and salvage ([`super::around`]) take in. It imports none of them.

use super::duplicates;
use crate::parse::{LineError, Slots, parse_line_into, parse_written_line};
use crate::salvage::Gap;
use crate::{Event, Phase, TimeUnit};

/// Text handed to one parse task: its events (about 600 KB) stay in the caches between the worker that parses them
/// and the thread that reads them, where 1 MiB chunks took about 4% more CPU.
pub(super) const CHUNK_TEXT: usize = 1 << 18;
/// What a worker made of one chunk of text.
pub(super) struct Parsed {
    /// The first line's bytes, kept in case it continues a line from the previous chunk.
    pub head: Vec<u8>,
    /// Whether `events[0]` came from the first line.
    pub head_event: bool,
    /// Whether `events[0]` only holds the place of a first line that did not parse: it is often the end of a line
    /// the previous chunk began, and the stitched line's event takes the slot without moving the others.
    pub head_slot: bool,
    pub events: Vec<Event>,
    /// The (id, digest) of each event ([`duplicates::key`]), when the reader drops duplicates and a worker computed
    /// them.
    pub digests: Vec<(u64, u64)>,
    /// (line index within the chunk, events of later lines before it, error).
    pub errors: Vec<(u64, usize, LineError)>,
    /// Complete lines (newlines) in the chunk.
    pub lines: u64,
    /// Bytes after the last newline.
    pub tail: Vec<u8>,
    pub text_bytes: u64,
    /// Compressed data that did not inflate: (file offset, message).
    pub damage: Option<(u64, String)>,
    /// With [`ReadOptions::salvage`]: the members skipped among these events.
    pub gaps: Vec<Gap>,
}

/// Parses `text` over `events` (stale events whose memory is reused, or none), with each event's duplicate key when
/// `keys` asks for them. With `slot`, a first line that does not parse gets a placeholder event
/// ([`Parsed::head_slot`]).
pub(super) fn parse_text(
    text: &[u8],
    unit: TimeUnit,
    skip_invalid: bool,
    keys: bool,
    mut events: Vec<Event>,
    slot: bool,
) -> Parsed {
    // Lines are rarely shorter; a shorter one costs a reallocation, not a failure.
    events.reserve((text.len() / 128 + 1).saturating_sub(events.len()));
    let mut out = Slots::new(events);
    let mut p = Parsed {
        head: Vec::new(),
        head_event: false,
        head_slot: false,
        events: Vec::new(),
        digests: Vec::new(),
        errors: Vec::new(),
        lines: 0,
        tail: Vec::new(),
        text_bytes: text.len() as u64,
        damage: None,
        gaps: Vec::new(),
    };
    if keys {
        p.digests.reserve(text.len() / 128 + 1);
    }
    let mut start = 0;
    while start < text.len() {
        let rest = &text[start..];
        let (len, parsed) = match parse_written_line(rest, unit, &mut out) {
            Some(len) => (len, Ok(true)),
            None => match memchr::memchr(b'\n', rest) {
                Some(len) => (len, parse_line_into(&rest[..len], unit, &mut out)),
                None => break,
            },
        };
        let idx = p.lines;
        p.lines += 1;
        start += len + 1;
        if idx == 0 {
            p.head = rest[..len].to_vec();
        }
        match parsed {
            Ok(false) => {}
            Ok(true) => {
                p.head_event |= idx == 0;
                if keys {
                    p.digests.push(duplicates::key(out.last()));
                }
            }
            Err(e) => {
                let later = out.len() - usize::from(p.head_event);
                p.errors.push((idx, later, e));
                // The first line may be the end of a line the previous chunk began.
                if idx == 0 && slot {
                    out.push(Event::new("", "", Phase::Other(0)));
                    if keys {
                        p.digests.push((0, 0));
                    }
                    p.head_event = true;
                    p.head_slot = true;
                }
                if !skip_invalid && idx > 0 {
                    break;
                }
            }
        }
    }
    if p.errors
        .last()
        .is_none_or(|(i, _, _)| *i == 0 || skip_invalid)
    {
        p.tail = text[start..].to_vec();
    }
    p.events = out.into_events();
    p
}
