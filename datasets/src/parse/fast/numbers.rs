//! Numbers on the fast path: runs of decimal digits read eight at a time, integers, hashes up
//! to 128 bits and decimal times, each exactly as the general path converts them.

use super::{HIGH, ONES, P};
use crate::{Hash, TimeUnit};

/// Digits that always fit in a u64.
const U64_DIGITS: usize = 19;
/// Digits that always fit in a u128; one more may.
const U128_DIGITS: usize = 38;
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

/// Eight bytes less `'0'` each: digit values where they are digits.
fn digit_word(c: &[u8]) -> u64 {
    u64::from_le_bytes(c.try_into().expect("8 bytes")).wrapping_sub(ONES * u64::from(b'0'))
}

impl P<'_> {
    /// Up to `max` (at most 19) decimal digits as (value, how many), eight at a time.
    #[inline(always)]
    pub(super) fn run(&mut self, max: usize) -> (u64, usize) {
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
    pub(super) fn long_run(&mut self, max: usize) -> (u64, usize) {
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
    pub(super) fn digits(&mut self, max: usize, quoted: bool) -> Option<u64> {
        let start = self.i;
        let (v, n) = self.run(max);
        if n == 0 || (!quoted && n > 1 && self.b[start] == b'0') {
            return None;
        }
        Some(v)
    }

    /// No more digits, fraction or exponent follow an integer.
    pub(super) fn int_end(&self) -> Option<()> {
        match self.peek() {
            Some(b'0'..=b'9' | b'.' | b'e' | b'E') => None,
            _ => Some(()),
        }
    }

    pub(super) fn uint(&mut self) -> Option<u64> {
        let q = self.open_quote();
        let v = self.digits(U64_DIGITS, q)?;
        self.int_end()?;
        self.close_quote(q)?;
        Some(v)
    }

    pub(super) fn int(&mut self) -> Option<i64> {
        let q = self.open_quote();
        let neg = self.eat(b'-').is_some();
        let v = self.digits(U64_DIGITS - 1, q)? as i64;
        self.int_end()?;
        self.close_quote(q)?;
        Some(if neg { -v } else { v })
    }

    /// Sixteen digits, the first not 0, when they are there (hashes have 19 or more).
    pub(super) fn sixteen(&mut self) -> Option<u64> {
        let c = self.b.get(self.i..self.i + 16)?;
        if c[0] == b'0' {
            return None;
        }
        let (a, b) = (digit_word(&c[..8]), digit_word(&c[8..]));
        if ((a.wrapping_add(ONES * 0x76) | a) | (b.wrapping_add(ONES * 0x76) | b)) & HIGH != 0 {
            return None;
        }
        self.i += 16;
        Some(eight_digits(a) * POW10[8] + eight_digits(b))
    }

    /// Eight digits, when the next eight bytes are all digits.
    fn eight(&mut self) -> Option<u64> {
        let a = digit_word(self.b.get(self.i..self.i + 8)?);
        if (a.wrapping_add(ONES * 0x76) | a) & HIGH != 0 {
            return None;
        }
        self.i += 8;
        Some(eight_digits(a))
    }

    pub(super) fn hash(&mut self) -> Option<Hash> {
        let q = self.open_quote();
        let start = self.i;
        let mut v = match self.sixteen() {
            Some(v) => u128::from(v),
            None => u128::from(self.digits(U64_DIGITS, q)?),
        };
        // Eight digits at a time while the value cannot overflow (DataCrumbs' hashes have 38 or 39), then one at a
        // time.
        while self.i - start + 8 <= U128_DIGITS {
            let Some(part) = self.eight() else { break };
            v = v * u128::from(POW10[8]) + u128::from(part);
        }
        let (part, k) = self.run(U128_DIGITS.saturating_sub(self.i - start).min(8));
        v = v * u128::from(POW10[k]) + u128::from(part);
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

    /// A non-negative decimal in `unit`, to nanoseconds, exactly as [`super::convert::parse_time`] does:
    /// digits beyond nanoseconds round half up on the first of them.
    pub(super) fn time(&mut self, unit: TimeUnit) -> Option<u64> {
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
