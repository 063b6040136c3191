//! The flat scanner: one pass over the common shape of a line, yielding the raw field texts
//! serde_json would, or `None` to hand the line to serde_json.

use std::borrow::Cow;

use super::fields::{Fields, RawArgs};

/// A single pass over the common shape of a line: one flat object whose keys are the known
/// fields, whose values are strings without escapes, plain numbers, `true`, `false` or `null`,
/// and whose `args` is a flat object of the same. It returns the same raw field texts serde_json
/// would, and `None` for anything else (escapes, nesting, unknown or repeated fields, any
/// syntax error), which then takes the serde_json path, so both paths agree on every line.
pub(super) fn scan(text: &str) -> Option<Fields<'_>> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    let mut f = Fields::default();
    s.object(|s, key| {
        let slot = match key {
            b"id" => &mut f.id,
            b"name" => &mut f.name,
            b"cat" => &mut f.cat,
            b"ph" => &mut f.ph,
            b"pid" => &mut f.pid,
            b"tid" => &mut f.tid,
            b"ts" => &mut f.ts,
            b"dur" => &mut f.dur,
            b"args" => {
                if f.args.is_some() {
                    return None;
                }
                let mut args = RawArgs::default();
                if s.peek()? == b'{' {
                    s.object(|s, k| {
                        let v = s.scalar()?;
                        // Keys are checked to be escape-free ASCII-delimited slices of `text`.
                        let k = std::str::from_utf8(k).ok()?;
                        args.add(Cow::Borrowed(k), &text[v.0..v.1]);
                        Some(())
                    })?;
                } else {
                    let (a, b) = s.scalar()?;
                    if &text[a..b] != "null" {
                        return None;
                    }
                }
                f.args = Some(args);
                return Some(());
            }
            _ => return None,
        };
        if slot.is_some() {
            return None;
        }
        let (a, b) = s.scalar()?;
        *slot = Some(&text[a..b]);
        Some(())
    })?;
    (s.i == s.b.len()).then_some(f)
}

pub(super) struct Scanner<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// `{ "key": value, ... }`, calling `field` after each key and its colon.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let (a, b) = self.string()?;
            let key = &self.b[a + 1..b - 1];
            self.ws();
            self.eat(b':')?;
            self.ws();
            field(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string without escapes or control characters, as (start, end) including the quotes.
    fn string(&mut self) -> Option<(usize, usize)> {
        let start = self.i;
        self.eat(b'"')?;
        let rest = &self.b[self.i..];
        let n = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[n] != b'"' || rest[..n].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i += n + 1;
        Some((start, self.i))
    }

    /// A string, a number, `true`, `false` or `null`, as (start, end).
    pub(super) fn scalar(&mut self) -> Option<(usize, usize)> {
        let start = self.i;
        match self.peek()? {
            b'"' => return self.string(),
            b'-' | b'0'..=b'9' => self.number()?,
            b't' => self.word(b"true")?,
            b'f' => self.word(b"false")?,
            b'n' => self.word(b"null")?,
            _ => return None,
        }
        Some((start, self.i))
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(w).then(|| self.i += w.len())
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.eat(b'.').is_some() && self.digits() == 0 {
            return None;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }
}
