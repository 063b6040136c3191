//! Reading what is intact in a damaged gzip or BGZF trace ([`crate::read::ReadOptions::salvage`]).
//!
//! A BGZF member that does not inflate is skipped by its recorded size; a header that is not a
//! BGZF header is skipped by scanning for the next one; a file that ends early or a plain gzip
//! stream that breaks ends there. The lines cut by a gap are dropped: the incomplete line before
//! it, and a first line after it that does not parse. Each gap becomes a [`Damage`], with the
//! `id`s missing between the last numbered line before it and the first after it.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::PathBuf;

use crate::TimeUnit;
use crate::parse::parse_line;

/// Compressed bytes that could not be read, and the lines lost with them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    pub path: PathBuf,
    /// The unreadable compressed bytes.
    pub bytes: Range<u64>,
    pub msg: String,
    /// The `id`s missing between the last numbered line before the gap and the first after it;
    /// `None` when no numbered line follows it (the file ends in the damage) or the file does
    /// not number its lines.
    pub lost_ids: Option<Range<u64>>,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: compressed bytes {}..{} unreadable ({}): ",
            self.path.display(),
            self.bytes.start,
            self.bytes.end,
            self.msg
        )?;
        match &self.lost_ids {
            Some(ids) => write!(
                f,
                "{} lines lost (ids {}..{})",
                ids.end - ids.start,
                ids.start,
                ids.end
            ),
            None => f.write_str("the lines lost are not known (no numbered line follows)"),
        }
    }
}

/// A gap among a chunk's events: compressed bytes `bytes` were skipped after `events_before`
/// of its events.
pub(crate) struct Gap {
    pub bytes: Range<u64>,
    pub msg: String,
    pub events_before: usize,
    /// No complete line of the chunk precedes the gap: the line carried over from the previous
    /// chunk was cut by it.
    pub cuts_carry: bool,
    /// No text of the chunk follows the gap: the next chunk's first line may be cut by it.
    pub at_end: bool,
}

/// A member that did not inflate: where its text would have started in the group's text, its
/// compressed bytes, and why.
pub(crate) struct BadMember {
    pub text_at: usize,
    pub bytes: Range<u64>,
    pub msg: String,
}

/// `text` without its first line when that line does not parse: the end of a line a gap cut.
pub(crate) fn without_cut_line(text: &[u8], unit: TimeUnit) -> &[u8] {
    match memchr::memchr(b'\n', text) {
        Some(n) if parse_line(&text[..n], unit).is_err() => &text[n + 1..],
        _ => text,
    }
}

/// The start of the next BGZF member header at or after `from`, scanning `f` forward; `None`
/// when the file has none.
pub(crate) fn next_bgzf_header(f: &mut (impl Read + Seek), from: u64) -> io::Result<Option<u64>> {
    const SIGNATURE: [u8; 4] = [0x1f, 0x8b, 8, 4];
    const WINDOW: usize = 1 << 20;
    let mut at = from;
    let mut buf = vec![0u8; WINDOW + 16];
    loop {
        f.seek(SeekFrom::Start(at))?;
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        let window = &buf[..n];
        for i in memchr::memmem::find_iter(window, &SIGNATURE) {
            // XLEN 6 holding the `BC` subfield of length 2, as every BGZF writer writes it.
            if window.get(i + 10..i + 16) == Some(&[6, 0, b'B', b'C', 2, 0][..]) {
                return Ok(Some(at + i as u64));
            }
        }
        if n < buf.len() {
            return Ok(None);
        }
        at += WINDOW as u64;
    }
}

/// Which `id`s each gap of one file lost: a gap stays open until the next numbered line.
#[derive(Default)]
pub(crate) struct Ledger {
    last_id: Option<u64>,
    /// Gaps (indexes into the reader's damage list) that no numbered line has followed yet.
    open: Vec<usize>,
}

impl Ledger {
    pub fn open(&mut self, damage: &mut Vec<Damage>, d: Damage) {
        self.open.push(damage.len());
        damage.push(d);
    }

    /// A numbered line: the first open gap lost every id since the last one; the gaps after it
    /// with no numbered line between them lost none of their own.
    pub fn see(&mut self, id: u64, damage: &mut [Damage]) {
        for (k, &i) in self.open.iter().enumerate() {
            let from = self.last_id.map_or(0, |l| l + 1);
            damage[i].lost_ids = Some(if k == 0 { from..id.max(from) } else { id..id });
        }
        self.open.clear();
        self.last_id = Some(id);
    }
}
