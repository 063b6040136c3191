//! The line formatter: one event as one line of Chrome-trace JSON, numbers written without a
//! general-purpose formatter.

use crate::{ArgValue, Args, Event, Hash, Phase, TimeUnit};

/// Appends one event as a line of the format, `id` first when there is one.
pub fn format_event(t: &mut Vec<u8>, e: &Event, id: Option<u64>, unit: TimeUnit) {
    match id {
        Some(id) => {
            t.extend_from_slice(b"{\"id\":");
            push_u64(t, id);
            t.extend_from_slice(b",\"name\":");
        }
        None => t.extend_from_slice(b"{\"name\":"),
    }
    push_str(t, &e.name);
    t.extend_from_slice(b",\"cat\":");
    push_str(t, &e.cat);
    t.extend_from_slice(b",\"pid\":");
    push_u64(t, e.pid);
    t.extend_from_slice(b",\"tid\":");
    push_u64(t, e.tid);
    t.extend_from_slice(b",\"ts\":");
    push_time(t, e.ts_ns, unit);
    if e.dur_ns != 0 || e.ph == Phase::Complete {
        t.extend_from_slice(b",\"dur\":");
        push_time(t, e.dur_ns, unit);
    }
    t.extend_from_slice(b",\"ph\":\"?\"");
    let ph = t.len() - 2;
    t[ph] = e.ph.as_byte();
    push_args(t, &e.args);
    t.extend_from_slice(b"}\n");
}

/// Two decimal digits for each value below 100.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `v` in decimal. Room for the longest number is added as a constant-size block and
/// the digits are written into it in place, then cut back: no copy of a run-time length (a
/// `memcpy` call), and no wide read of digits just stored in pieces (which stalls the CPU).
#[inline(always)]
pub(super) fn push_u64(t: &mut Vec<u8>, mut v: u64) {
    let n = decimal_digits(v);
    let start = t.len();
    t.extend_from_slice(&[0; 20]);
    let buf = &mut t[start..start + 20];
    let mut i = n;
    while v >= 10_000 {
        let r = (v % 10_000) as usize;
        v /= 10_000;
        let (hi, lo) = (r / 100 * 2, r % 100 * 2);
        buf[i - 4..i - 2].copy_from_slice(&PAIRS[hi..hi + 2]);
        buf[i - 2..i].copy_from_slice(&PAIRS[lo..lo + 2]);
        i -= 4;
    }
    let mut v = v as usize;
    if v >= 100 {
        let lo = v % 100 * 2;
        v /= 100;
        buf[i - 2..i].copy_from_slice(&PAIRS[lo..lo + 2]);
        i -= 2;
    }
    if v >= 10 {
        buf[i - 2..i].copy_from_slice(&PAIRS[v * 2..v * 2 + 2]);
    } else {
        buf[i - 1] = b'0' + v as u8;
    }
    t.truncate(start + n);
}

/// Digits in `v` written in decimal: estimated from its bit length, corrected by one compare.
fn decimal_digits(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let v = v | 1;
    let estimate = ((64 - v.leading_zeros() as usize) * 1233) >> 12;
    estimate + usize::from(v >= POW10[estimate])
}

fn push_i64(t: &mut Vec<u8>, v: i64) {
    if v < 0 {
        t.push(b'-');
    }
    push_u64(t, v.unsigned_abs());
}

fn push_time(t: &mut Vec<u8>, ns: u64, unit: TimeUnit) {
    match unit {
        TimeUnit::Ns => push_u64(t, ns),
        TimeUnit::Us => {
            push_u64(t, ns / 1000);
            let frac = (ns % 1000) as usize;
            let r = frac % 100 * 2;
            t.extend_from_slice(&[b'.', b'0' + (frac / 100) as u8, PAIRS[r], PAIRS[r + 1]]);
        }
    }
}

/// Bytes a JSON string cannot hold as they are: `"`, `\` and control characters.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Writes `s` as a JSON string.
pub(crate) fn push_str(t: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    t.push(b'"');
    if b.iter().any(|&c| NEEDS_ESCAPE[usize::from(c)]) {
        push_escaped(t, b);
    } else {
        t.extend_from_slice(b);
    }
    t.push(b'"');
}

fn push_escaped(t: &mut Vec<u8>, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    for (i, &c) in b.iter().enumerate() {
        if !NEEDS_ESCAPE[usize::from(c)] {
            continue;
        }
        t.extend_from_slice(&b[run..i]);
        match c {
            b'"' => t.extend_from_slice(b"\\\""),
            b'\\' => t.extend_from_slice(b"\\\\"),
            b'\n' => t.extend_from_slice(b"\\n"),
            b'\r' => t.extend_from_slice(b"\\r"),
            b'\t' => t.extend_from_slice(b"\\t"),
            _ => t.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(c >> 4)],
                HEX[usize::from(c & 15)],
            ]),
        }
        run = i + 1;
    }
    t.extend_from_slice(&b[run..]);
}

pub(crate) fn push_arg(t: &mut Vec<u8>, v: &ArgValue) {
    match v {
        ArgValue::Null => t.extend_from_slice(b"null"),
        ArgValue::Bool(b) => t.extend_from_slice(if *b { b"true" } else { b"false" }),
        ArgValue::Int(n) => push_i64(t, *n),
        ArgValue::BigInt(n) => t.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        ArgValue::Float(f) if f.is_finite() => {
            t.extend_from_slice(ryu::Buffer::new().format_finite(*f).as_bytes())
        }
        ArgValue::Float(_) => t.extend_from_slice(b"null"),
        ArgValue::Str(s) => push_str(t, s),
        ArgValue::Json(j) => t.extend_from_slice(j.as_bytes()),
    }
}

fn push_hash(t: &mut Vec<u8>, h: Hash) {
    match h.as_u64() {
        Some(v) => push_u64(t, v),
        None => t.extend_from_slice(itoa::Buffer::new().format(h.0).as_bytes()),
    }
}

/// `,"args":{...}`, or nothing when there are none. Every key is written with a leading comma;
/// the first one's becomes the `{`.
fn push_args(t: &mut Vec<u8>, a: &Args) {
    const ARGS: &[u8] = b",\"args\":";
    let start = t.len();
    t.extend_from_slice(ARGS);
    let open = t.len();
    if let Some(h) = a.fhash {
        t.extend_from_slice(b",\"fhash\":");
        push_hash(t, h);
    }
    if let Some(h) = a.hhash {
        t.extend_from_slice(b",\"hhash\":");
        push_hash(t, h);
    }
    if let Some(v) = a.size {
        t.extend_from_slice(b",\"size\":");
        push_i64(t, v);
    }
    if let Some(v) = a.ret {
        t.extend_from_slice(b",\"ret\":");
        push_i64(t, v);
    }
    if let Some(v) = a.offset {
        t.extend_from_slice(b",\"offset\":");
        push_i64(t, v);
    }
    if let Some(v) = &a.fname {
        t.extend_from_slice(b",\"fname\":");
        push_str(t, v);
    }
    if let Some(v) = &a.hostname {
        t.extend_from_slice(b",\"hostname\":");
        push_str(t, v);
    }
    if let Some(v) = &a.name {
        t.extend_from_slice(b",\"name\":");
        push_str(t, v);
    }
    if let Some(h) = a.value {
        t.extend_from_slice(b",\"value\":");
        push_hash(t, h);
    }
    for (k, v) in &a.other {
        t.push(b',');
        push_str(t, k);
        t.push(b':');
        push_arg(t, v);
    }
    if t.len() == open {
        t.truncate(start);
    } else {
        t[open] = b'{';
        t.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_numbers_at_every_length_edge() {
        let mut values = vec![0u64, u64::MAX, u64::MAX - 1];
        for k in 0..20 {
            let p = 10u64.pow(k);
            values.extend([p - 1, p, p + 1, p.saturating_mul(5), p / 2 * 3 + 7]);
        }
        for v in values {
            let mut t = b"x".to_vec();
            push_u64(&mut t, v);
            assert_eq!(t, format!("x{v}").as_bytes());
            let n = v as i64;
            let mut t = Vec::new();
            push_i64(&mut t, n);
            assert_eq!(t, n.to_string().as_bytes());
            let mut t = Vec::new();
            push_time(&mut t, v, TimeUnit::Us);
            assert_eq!(t, format!("{}.{:03}", v / 1000, v % 1000).as_bytes());
        }
    }
}
