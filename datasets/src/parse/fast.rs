//! The fast path: one pass over a line that converts each value as it is read, for lines whose
//! every field is plain (known keys once each, strings without escapes, integers and decimals
//! without exponents, `args` a flat object). Anything else returns `None` and takes the general
//! path, which also produces every error, so both paths agree on every line they both accept.

use compact_str::CompactString;

use super::{Scanner, arg_value};
use crate::hash::hash_str;
use crate::{Args, Event, Hash, Phase, TimeUnit};

/// Digits that always fit in a u64.
const U64_DIGITS: usize = 19;
/// Digits that always fit in a u128; one more may.
const U128_DIGITS: usize = 38;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const POW10: [u64; 9] = {
    let mut p = [1u64; 9];
    let mut i = 1;
    while i < 9 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// The number eight digit values (one per byte, the first in the lowest byte) spell.
fn eight_digits(d: u64) -> u64 {
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 100 + (1_000_000 << 32);
    const MUL2: u64 = 1 + (10_000 << 32);
    let v = d.wrapping_mul(10).wrapping_add(d >> 8);
    (v & MASK)
        .wrapping_mul(MUL1)
        .wrapping_add(((v >> 16) & MASK).wrapping_mul(MUL2))
        >> 32
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

/// Reads `t` (a trimmed line) in one pass onto the end of `out`, or returns `false` (leaving
/// `out` as it was) for the general path. The event is built in place: it is large.
pub(super) fn event_into(t: &[u8], unit: TimeUnit, out: &mut Vec<Event>) -> bool {
    out.push(blank());
    let e = out.last_mut().expect("just pushed");
    if ours(t, unit, e).is_some() {
        return true;
    }
    *e = blank();
    if any_order(t, unit, e).is_some() {
        return true;
    }
    out.pop();
    false
}

pub(super) fn event(t: &[u8], unit: TimeUnit) -> Option<Event> {
    let mut out = Vec::with_capacity(1);
    event_into(t, unit, &mut out).then(|| out.pop()).flatten()
}

pub(super) fn blank() -> Event {
    Event {
        id: None,
        name: CompactString::default(),
        cat: CompactString::default(),
        ph: Phase::Other(0),
        pid: 0,
        tid: 0,
        ts_ns: 0,
        dur_ns: 0,
        args: Args::default(),
    }
}

/// A line exactly as [`crate::write::format_event`] writes it: fields in its order, no spaces,
/// `args` holding only typed fields. Keys are matched as literals instead of being read.
pub(super) fn ours(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<()> {
    (ours_prefix(t, unit, e)? == t.len()).then_some(())
}

/// A line in the writer's shape at the start of `text`, directly followed by its newline: the
/// event goes onto `out` and the line's length is returned. No separate search for the newline.
pub(super) fn line_into(text: &[u8], unit: TimeUnit, out: &mut Vec<Event>) -> Option<usize> {
    out.push(blank());
    let e = out.last_mut().expect("just pushed");
    match ours_prefix(text, unit, e) {
        Some(n) if text.get(n) == Some(&b'\n') => Some(n),
        _ => {
            out.pop();
            None
        }
    }
}

/// [`ours`] on the start of `t`: where the event's closing brace ends.
fn ours_prefix(t: &[u8], unit: TimeUnit, e: &mut Event) -> Option<usize> {
    let mut p = P { b: t, i: 0 };
    p.lit(b"{\"id\":")?;
    e.id = Some(p.uint()?);
    p.lit(b",\"name\":")?;
    e.name = CompactString::from(p.str()?);
    p.lit(b",\"cat\":")?;
    e.cat = CompactString::from(p.str()?);
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
    let ph = *p.b.get(p.i)?;
    if !ph.is_ascii_graphic() || ph == b'"' || ph == b'\\' {
        return None;
    }
    e.ph = Phase::from_byte(ph);
    p.i += 1;
    p.lit(b"\"")?;
    if p.lit(b",\"args\":{").is_some() {
        p.ordered_args(&mut e.args)?;
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
                e.name = CompactString::from(p.str()?);
                2
            }
            b"cat" => {
                e.cat = CompactString::from(p.str()?);
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
            a.size = Some(self.int()?);
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

    /// Up to `max` (at most 19) decimal digits as (value, how many), eight at a time.
    #[inline(always)]
    fn run(&mut self, max: usize) -> (u64, usize) {
        // Most numbers are short and not at the very end of the line: one word does.
        if let Some(c) = self.b.get(self.i..self.i + 8) {
            let d = u64::from_le_bytes(c.try_into().expect("8 bytes"))
                .wrapping_sub(ONES * u64::from(b'0'));
            let not_digit = (d.wrapping_add(ONES * 0x76) | d) & HIGH;
            let k = (not_digit.trailing_zeros() / 8) as usize;
            if k == 0 {
                return (0, 0);
            }
            if k < 8 && k <= max {
                self.i += k;
                return (eight_digits(d << (8 * (8 - k))), k);
            }
        }
        self.long_run(max)
    }

    /// [`Self::run`] for long runs and the end of the line.
    fn long_run(&mut self, max: usize) -> (u64, usize) {
        let start = self.i;
        let mut v = 0u64;
        while self.i - start < max {
            let left = max - (self.i - start);
            let (part, k) = match self.b.get(self.i..self.i + 8) {
                Some(c) => {
                    let d = u64::from_le_bytes(c.try_into().expect("8 bytes"))
                        .wrapping_sub(ONES * u64::from(b'0'));
                    // A byte is not a digit when it is 10 or more after subtracting '0'; the
                    // lowest flagged byte is exact (carries only reach bytes above it).
                    let not_digit = (d.wrapping_add(ONES * 0x76) | d) & HIGH;
                    let k = ((not_digit.trailing_zeros() / 8) as usize).min(left);
                    if k == 0 {
                        break;
                    }
                    // The k digits to the top of the word: zero bytes below are leading zeros.
                    (eight_digits(d << (8 * (8 - k))), k)
                }
                None => {
                    let (mut part, mut k) = (0, 0);
                    while let Some(&c @ b'0'..=b'9') = self.b.get(self.i + k).filter(|_| k < left) {
                        part = part * 10 + u64::from(c - b'0');
                        k += 1;
                    }
                    if k == 0 {
                        break;
                    }
                    (part, k)
                }
            };
            v = v * POW10[k] + part;
            self.i += k;
            if k < 8 {
                break;
            }
        }
        (v, self.i - start)
    }

    /// One to `max` decimal digits as a u64, stopping after `max`. A JSON number may not have
    /// leading zeros; a quoted one is any run of digits.
    #[inline(always)]
    fn digits(&mut self, max: usize, quoted: bool) -> Option<u64> {
        let start = self.i;
        let (v, n) = self.run(max);
        if n == 0 || (!quoted && n > 1 && self.b[start] == b'0') {
            return None;
        }
        Some(v)
    }

    /// No more digits, fraction or exponent follow an integer.
    fn int_end(&self) -> Option<()> {
        match self.peek() {
            Some(b'0'..=b'9' | b'.' | b'e' | b'E') => None,
            _ => Some(()),
        }
    }

    fn uint(&mut self) -> Option<u64> {
        let q = self.open_quote();
        let v = self.digits(U64_DIGITS, q)?;
        self.int_end()?;
        self.close_quote(q)?;
        Some(v)
    }

    fn int(&mut self) -> Option<i64> {
        let q = self.open_quote();
        let neg = self.eat(b'-').is_some();
        let v = self.digits(U64_DIGITS - 1, q)? as i64;
        self.int_end()?;
        self.close_quote(q)?;
        Some(if neg { -v } else { v })
    }

    /// Sixteen digits, the first not 0, when they are there (hashes have 19 or more).
    fn sixteen(&mut self) -> Option<u64> {
        let c = self.b.get(self.i..self.i + 16)?;
        if c[0] == b'0' {
            return None;
        }
        let word = |c: &[u8]| {
            u64::from_le_bytes(c.try_into().expect("8 bytes")).wrapping_sub(ONES * u64::from(b'0'))
        };
        let (a, b) = (word(&c[..8]), word(&c[8..]));
        if ((a.wrapping_add(ONES * 0x76) | a) | (b.wrapping_add(ONES * 0x76) | b)) & HIGH != 0 {
            return None;
        }
        self.i += 16;
        Some(eight_digits(a) * POW10[8] + eight_digits(b))
    }

    fn hash(&mut self) -> Option<Hash> {
        let q = self.open_quote();
        let start = self.i;
        let mut v = match self.sixteen() {
            Some(v) => u128::from(v),
            None => u128::from(self.digits(U64_DIGITS, q)?),
        };
        while let Some(&c @ b'0'..=b'9') = self.b.get(self.i) {
            v = if self.i - start < U128_DIGITS {
                v * 10 + u128::from(c - b'0')
            } else {
                v.checked_mul(10)?.checked_add(u128::from(c - b'0'))?
            };
            self.i += 1;
        }
        self.int_end()?;
        self.close_quote(q)?;
        Some(Hash(v))
    }

    /// A non-negative decimal in `unit`, to nanoseconds, exactly as [`super::parse_time`] does:
    /// digits beyond nanoseconds round half up on the first of them.
    fn time(&mut self, unit: TimeUnit) -> Option<u64> {
        let q = self.open_quote();
        let whole = self.digits(U64_DIGITS, q)?;
        if let Some(b'0'..=b'9') = self.peek() {
            return None;
        }
        // Fraction digits that are whole nanoseconds.
        let (scale, keep) = match unit {
            TimeUnit::Ns => (1, 0),
            TimeUnit::Us => (1000, 3),
        };
        let mut sub = 0u64;
        let mut round_up = false;
        if self.eat(b'.').is_some() {
            let start = self.i;
            let (kept, n) = self.run(keep);
            sub = kept * POW10[keep - n];
            if let Some(c @ b'0'..=b'9') = self.peek() {
                round_up = c >= b'5';
                while let Some(b'0'..=b'9') = self.peek() {
                    self.i += 1;
                }
            }
            if self.i == start {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            return None;
        }
        self.close_quote(q)?;
        whole
            .checked_mul(scale)?
            .checked_add(sub + u64::from(round_up))
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
                    a.size = Some(self.int()?);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_runs_match_a_plain_loop() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut rand = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200_000 {
            let len = (rand() % 24) as usize;
            let line: Vec<u8> = (0..len)
                .map(|_| match rand() % 8 {
                    0 => b"./e\"}-x9"[(rand() % 8) as usize],
                    1 => (rand() % 256) as u8,
                    _ => b'0' + (rand() % 10) as u8,
                })
                .collect();
            let max = (rand() % 20) as usize;
            let mut p = P { b: &line, i: 0 };
            let got = p.run(max);
            let n = line
                .iter()
                .take(max)
                .take_while(|c| c.is_ascii_digit())
                .count();
            let v = line[..n]
                .iter()
                .fold(0u64, |v, c| v * 10 + u64::from(c - b'0'));
            assert_eq!(
                got,
                (v, n),
                "{:?} max {max}",
                String::from_utf8_lossy(&line)
            );
            assert_eq!(p.i, n);
        }
    }
}
