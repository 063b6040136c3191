//! The fast path: one pass over a line that converts each value as it is read, for lines whose
//! every field is plain (known keys once each, strings without escapes, integers and decimals
//! without exponents, `args` a flat object). Anything else returns `None` and takes the general
//! path, which also produces every error, so both paths agree on every line they both accept.

mod numbers;

use compact_str::CompactString;

use super::convert::arg_value;
use super::scan::Scanner;
use crate::hash::hash_str;
use crate::{Args, Event, Phase, TimeUnit};

/// A byte of 1 in each lane, and the top bit of each lane, for eight bytes tested at once.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

/// Reads `t` (a trimmed line) in one pass into `e` (a blank event), or returns `false` for the
/// general path. The event is built in place: it is large.
pub(super) fn event_into(t: &[u8], unit: TimeUnit, e: &mut Event) -> bool {
    if shaped_prefix(t, unit, e) == Some(t.len()) {
        return true;
    }
    e.reset();
    any_order(t, unit, e).is_some()
}

pub(super) fn event(t: &[u8], unit: TimeUnit) -> Option<Event> {
    let mut e = blank();
    event_into(t, unit, &mut e).then_some(e)
}

/// Replaces `s`'s text, in its own memory.
fn set(s: &mut CompactString, v: &str) {
    s.clear();
    s.push_str(v);
}

pub(super) fn blank() -> Event {
    Event::new("", "", Phase::Other(0))
}

/// A line in [`crate::write::format_event`]'s field order, without spaces. Keys are matched as literals instead of
/// being read, those of `args` too when it holds only typed fields in the writer's order.
#[cfg(test)]
pub(super) fn ours(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<()> {
    (ours_prefix(t, unit, e)? == t.len()).then_some(())
}

/// A line in a writer's fixed shape at the start of `text`, directly followed by its newline: the
/// event goes into `e` (a blank event) and the line's length is returned. No separate search for
/// the newline.
pub(super) fn line_into(text: &[u8], unit: TimeUnit, e: &mut Event) -> Option<usize> {
    shaped_prefix(text, unit, e).filter(|&n| text.get(n) == Some(&b'\n'))
}

/// The line at the start of `t` in a writer's fixed shape, ours or DataCrumbs': where its closing brace ends. The
/// first bytes tell the shapes apart, so `e` (a blank event) is only written by the shape that reads the line.
pub(super) fn shaped_prefix(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<usize> {
    match t.get(2)? {
        b'i' => ours_prefix(t, unit, e),
        b'p' | b'n' => datacrumbs_prefix(t, unit, e),
        _ => None,
    }
}

/// A line as DataCrumbs (the Python/BCC era) wrote it: `{"pid": 1, "tid": 1, "name": "read", "cat": "sys", "ph":
/// "X", "ts": 7736, "dur": 4, "args": {"hhash": ..., "fhash": ...}}`, fields in that order with a space after
/// each colon and comma, `pid` and `tid` (together: the `HH` line has neither), `ts`, `dur` and `args` each
/// optional. Keys are matched as literals; `args` may hold any plain fields, in any order.
fn datacrumbs_prefix(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<usize> {
    let mut p = P { b: t, i: 0 };
    if p.lit(b"{\"pid\": ").is_some() {
        e.pid = p.uint()?;
        p.lit(b", \"tid\": ")?;
        e.tid = p.uint()?;
        p.lit(b", \"name\": ")?;
    } else {
        p.lit(b"{\"name\": ")?;
    }
    e.name.push_str(p.str()?);
    p.lit(b", \"cat\": ")?;
    e.cat.push_str(p.str()?);
    p.lit(b", \"ph\": \"")?;
    e.ph = p.ph_byte()?;
    p.lit(b"\"")?;
    if p.lit(b", \"ts\": ").is_some() {
        e.ts_ns = p.time(unit)?;
    }
    if p.lit(b", \"dur\": ").is_some() {
        e.dur_ns = p.time(unit)?;
    }
    if p.lit(b", \"args\": ").is_some() {
        p.args(&mut e.args)?;
    }
    p.lit(b"}")?;
    Some(p.i)
}

/// The line at the start of `t` in our writer's field order: where the event's closing brace ends. `e` is blank, so its
/// strings are appended to.
fn ours_prefix(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<usize> {
    let mut p = P { b: t, i: 0 };
    p.lit(b"{\"id\":")?;
    e.id = Some(p.uint()?);
    p.lit(b",\"name\":")?;
    e.name.push_str(p.str()?);
    p.lit(b",\"cat\":")?;
    e.cat.push_str(p.str()?);
    p.lit(b",\"pid\":")?;
    e.pid = p.uint()?;
    p.lit(b",\"tid\":")?;
    e.tid = p.uint()?;
    p.lit(b",\"ts\":")?;
    e.ts_ns = p.time(unit)?;
    if p.lit(b",\"dur\":").is_some() {
        e.dur_ns = p.time(unit)?;
    }
    p.lit(b",\"ph\":\"")?;
    e.ph = p.ph_byte()?;
    p.lit(b"\"")?;
    if p.lit(b",\"args\":").is_some() {
        let at = p.i;
        // Other writers in our field order (DFTracer) put other fields in `args`, in their own order: read in the
        // same pass, not from the start of the line again.
        if p.lit(b"{")
            .and_then(|()| p.ordered_args(&mut e.args))
            .is_none()
        {
            e.args.reset();
            p.i = at;
            p.args(&mut e.args)?;
        }
    }
    p.lit(b"}")?;
    Some(p.i)
}

/// Any order of known fields, with or without spaces.
fn any_order(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<()> {
    let mut p = P { b: t, i: 0 };
    let mut seen = 0u16;
    p.eat(b'{')?;
    p.ws();
    if p.eat(b'}').is_some() {
        return None;
    }
    loop {
        let key = p.key()?;
        let bit = match key {
            b"id" => {
                e.id = Some(p.uint()?);
                1
            }
            b"name" => {
                set(&mut e.name, p.str()?);
                2
            }
            b"cat" => {
                set(&mut e.cat, p.str()?);
                4
            }
            b"ph" => {
                let s = p.str()?.as_bytes();
                if s.len() != 1 || !s[0].is_ascii_graphic() || s[0] == b'"' || s[0] == b'\\' {
                    return None;
                }
                e.ph = Phase::from_byte(s[0]);
                8
            }
            b"pid" => {
                e.pid = p.uint()?;
                16
            }
            b"tid" => {
                e.tid = p.uint()?;
                32
            }
            b"ts" => {
                e.ts_ns = p.time(unit)?;
                64
            }
            b"dur" => {
                e.dur_ns = p.time(unit)?;
                128
            }
            b"args" => {
                p.args(&mut e.args)?;
                256
            }
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if !p.next()? {
            break;
        }
    }
    (p.i == p.b.len() && seen & 8 != 0).then_some(())
}

impl<'a> P<'a> {
    fn lit<const N: usize>(&mut self, s: &[u8; N]) -> Option<()> {
        (self.b.get(self.i..self.i + N)? == s).then(|| self.i += N)
    }

    /// The one byte inside `ph`'s quotes, as the general path takes it: printable ASCII, not a quote or backslash.
    fn ph_byte(&mut self) -> Option<Phase> {
        let ph = *self.b.get(self.i)?;
        if !ph.is_ascii_graphic() || ph == b'"' || ph == b'\\' {
            return None;
        }
        self.i += 1;
        Some(Phase::from_byte(ph))
    }

    /// The next `args` key, when it is `key` (`"size":`): after a comma unless it is the first.
    fn arg_key<const N: usize>(&mut self, first: &mut bool, key: &[u8; N]) -> bool {
        let at = self.i + usize::from(!*first);
        if (*first || self.b.get(self.i) == Some(&b',')) && self.b.get(at..at + N) == Some(key) {
            self.i = at + N;
            *first = false;
            return true;
        }
        false
    }

    /// The typed `args` fields in the writer's order, up to the closing brace.
    fn ordered_args(&mut self, a: &mut Args) -> Option<()> {
        let mut first = true;
        if self.arg_key(&mut first, b"\"fhash\":") {
            a.fhash = Some(self.hash()?);
        }
        if self.arg_key(&mut first, b"\"hhash\":") {
            a.hhash = Some(self.hash()?);
        }
        if self.arg_key(&mut first, b"\"size\":") {
            a.size = Some(self.int().filter(|s| *s >= 0)?);
        }
        if self.arg_key(&mut first, b"\"ret\":") {
            a.ret = Some(self.int()?);
        }
        if self.arg_key(&mut first, b"\"offset\":") {
            a.offset = Some(self.int()?);
        }
        if self.arg_key(&mut first, b"\"fname\":") {
            a.fname = Some(self.str()?.to_owned());
        }
        if self.arg_key(&mut first, b"\"hostname\":") {
            a.hostname = Some(self.str()?.to_owned());
        }
        if self.arg_key(&mut first, b"\"name\":") {
            a.name = Some(self.str()?.to_owned());
        }
        if self.arg_key(&mut first, b"\"value\":") {
            a.value = Some(self.hash()?);
        }
        if first {
            return None;
        }
        if let Some(f) = &a.fname {
            a.fhash = a.fhash.or_else(|| Some(hash_str(f)));
        }
        if let Some(h) = &a.hostname {
            a.hhash = a.hhash.or_else(|| Some(hash_str(h)));
        }
        self.lit(b"}")
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// After a value: `true` at a comma (another member follows), `false` at the closing brace.
    fn next(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(true)
            }
            b'}' => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string's bytes without the quotes (no escapes, no control characters), and whether
    /// they are all ASCII. Eight bytes at a time.
    fn raw_str(&mut self) -> Option<(&'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut ascii = true;
        while let Some(w) = self.b.get(self.i..self.i + 8) {
            let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
            // The lowest flagged byte is exact: borrows only flag bytes above a real match.
            let stop = zero(w ^ (ONES * u64::from(b'"')))
                | zero(w ^ (ONES * u64::from(b'\\')))
                | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
            if stop != 0 {
                let n = (stop.trailing_zeros() / 8) as usize;
                ascii &= w & ((1 << (8 * n)) - 1) & HIGH == 0;
                self.i += n;
                break;
            }
            ascii &= w & HIGH == 0;
            self.i += 8;
        }
        loop {
            match *self.b.get(self.i)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                c => {
                    ascii &= c < 0x80;
                    self.i += 1;
                }
            }
        }
        self.i += 1;
        Some((&self.b[start..self.i - 1], ascii))
    }

    fn str(&mut self) -> Option<&'a str> {
        match self.raw_str()? {
            // SAFETY: every byte is below 0x80, so the bytes are ASCII and valid UTF-8.
            (s, true) => Some(unsafe { std::str::from_utf8_unchecked(s) }),
            (s, false) => std::str::from_utf8(s).ok(),
        }
    }

    /// `"key"` and its colon.
    fn key(&mut self) -> Option<&'a [u8]> {
        let (k, _) = self.raw_str()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(k)
    }

    /// Whether the value is a string (a number quoted, as DFTracer writes them).
    fn open_quote(&mut self) -> bool {
        self.eat(b'"').is_some()
    }

    fn close_quote(&mut self, quoted: bool) -> Option<()> {
        if quoted { self.eat(b'"') } else { Some(()) }
    }
    fn args(&mut self, a: &mut Args) -> Option<()> {
        if self.peek()? == b'n' {
            return self.b[self.i..].starts_with(b"null").then(|| self.i += 4);
        }
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let mut seen = 0u16;
        let mut fname = None;
        let mut hostname = None;
        loop {
            let key = self.key()?;
            let bit = match key {
                b"fhash" => {
                    a.fhash = Some(self.hash()?);
                    1
                }
                b"hhash" => {
                    a.hhash = Some(self.hash()?);
                    2
                }
                b"size" => {
                    a.size = Some(self.int().filter(|s| *s >= 0)?);
                    4
                }
                b"ret" => {
                    a.ret = Some(self.int()?);
                    8
                }
                b"offset" => {
                    a.offset = Some(self.int()?);
                    16
                }
                b"fname" => {
                    fname = Some(self.str()?);
                    32
                }
                b"hostname" => {
                    hostname = Some(self.str()?);
                    64
                }
                b"name" => {
                    a.name = Some(self.str()?.to_owned());
                    128
                }
                b"value" => {
                    a.value = Some(self.hash()?);
                    256
                }
                _ => {
                    let k = std::str::from_utf8(key).ok()?;
                    let mut s = Scanner {
                        b: self.b,
                        i: self.i,
                    };
                    let (start, end) = s.scalar()?;
                    self.i = end;
                    let raw = std::str::from_utf8(&self.b[start..end]).ok()?;
                    a.other.push((CompactString::from(k), arg_value(raw).ok()?));
                    0
                }
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            if !self.next()? {
                break;
            }
        }
        if let Some(f) = fname {
            a.fhash = a.fhash.or_else(|| Some(hash_str(f)));
            a.fname = Some(f.to_owned());
        }
        if let Some(h) = hostname {
            a.hhash = a.hhash.or_else(|| Some(hash_str(h)));
            a.hostname = Some(h.to_owned());
        }
        Some(())
    }
}
