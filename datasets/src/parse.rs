//! The line parser: one JSON object per line, in any dialect datacrumbs reads.
//!
//! Numbers may be JSON numbers or strings (DFTracer writes `"pid":"0"`), hashes may exceed u64
//! (DataCrumbs wrote 128-bit integers), `dur` may be missing, and lines may start with spaces or
//! end with a comma. Values are borrowed from the line as raw JSON text and converted exactly,
//! so no `serde_json::Value` is built.
//!
//! A line goes through the first reader that takes it: `fast` (the writer's own field order,
//! then any order of plain fields), the flat `scan`ner, then serde_json, which also words
//! every error. Each later reader accepts everything an earlier one does, with the same result.

mod fast;

use std::borrow::Cow;
use std::fmt;

use compact_str::CompactString;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::hash::hash_str;
use crate::{ArgValue, Args, Event, Hash, Phase, TimeUnit};

/// Why one line is not an event. `field` is the JSON path (`ts`, `args.fhash`) or `-` when the
/// line as a whole is not a JSON object.
#[derive(Clone, Debug, PartialEq)]
pub struct LineError {
    pub field: Cow<'static, str>,
    pub msg: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.msg)
    }
}

fn err(field: impl Into<Cow<'static, str>>, msg: impl Into<String>) -> LineError {
    LineError {
        field: field.into(),
        msg: msg.into(),
    }
}

#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cat: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ph: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<RawArgs<'a>>,
}

const KNOWN_ARGS: [&str; 9] = [
    "fhash", "hhash", "size", "ret", "offset", "fname", "hostname", "name", "value",
];

#[derive(Default)]
struct RawArgs<'a> {
    known: [Option<&'a str>; KNOWN_ARGS.len()],
    other: Vec<(Cow<'a, str>, &'a str)>,
}

impl<'a> RawArgs<'a> {
    fn add(&mut self, k: Cow<'a, str>, v: &'a str) {
        match KNOWN_ARGS.iter().position(|n| *n == k) {
            Some(i) => self.known[i] = Some(v),
            None => self.other.push((k, v)),
        }
    }
}

/// The raw JSON text of each field (without surrounding whitespace), as either parser found it.
#[derive(Default)]
struct Fields<'a> {
    id: Option<&'a str>,
    name: Option<&'a str>,
    cat: Option<&'a str>,
    ph: Option<&'a str>,
    pid: Option<&'a str>,
    tid: Option<&'a str>,
    ts: Option<&'a str>,
    dur: Option<&'a str>,
    args: Option<RawArgs<'a>>,
}

impl<'a> From<RawEvent<'a>> for Fields<'a> {
    fn from(r: RawEvent<'a>) -> Self {
        Fields {
            id: r.id.map(RawValue::get),
            name: r.name.map(RawValue::get),
            cat: r.cat.map(RawValue::get),
            ph: r.ph.map(RawValue::get),
            pid: r.pid.map(RawValue::get),
            tid: r.tid.map(RawValue::get),
            ts: r.ts.map(RawValue::get),
            dur: r.dur.map(RawValue::get),
            args: r.args,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawArgs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawArgs<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                let mut out = RawArgs::default();
                while let Some(Str(k)) = m.next_key::<Str<'de>>()? {
                    let v: &'de RawValue = m.next_value()?;
                    out.add(k, v.get());
                }
                Ok(out)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The raw text of a value, `None` for JSON `null`.
fn non_null(v: Option<&str>) -> Option<&str> {
    v.filter(|s| *s != "null")
}

/// A number given as a JSON number or a JSON string holding one.
fn number_text<'a>(field: &'static str, raw: &'a str) -> Result<&'a str, LineError> {
    let t = match raw.as_bytes()[0] {
        b'"' => {
            let inner = &raw[1..raw.len() - 1];
            if inner.contains('\\') {
                return Err(err(field, format!("expected a number, found {raw}")));
            }
            inner.trim()
        }
        b'-' | b'0'..=b'9' => raw,
        _ => {
            return Err(err(
                field,
                format!("expected a number, found {}", clip(raw)),
            ));
        }
    };
    if t.is_empty() {
        return Err(err(field, "expected a number, found an empty string"));
    }
    Ok(t)
}

fn clip(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn parse_u64(field: &'static str, v: Option<&str>) -> Result<Option<u64>, LineError> {
    let Some(raw) = non_null(v) else {
        return Ok(None);
    };
    let t = number_text(field, raw)?;
    if let Ok(n) = t.parse::<u64>() {
        return Ok(Some(n));
    }
    match t.parse::<f64>() {
        Ok(f) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(Some(f as u64)),
        _ => Err(err(
            field,
            format!("expected an unsigned integer, found {}", clip(raw)),
        )),
    }
}

fn parse_i64(field: &'static str, v: Option<&str>) -> Result<Option<i64>, LineError> {
    let Some(raw) = non_null(v) else {
        return Ok(None);
    };
    let t = number_text(field, raw)?;
    if let Ok(n) = t.parse::<i64>() {
        return Ok(Some(n));
    }
    match t.parse::<f64>() {
        Ok(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Some(f as i64)),
        _ => Err(err(
            field,
            format!("expected an integer, found {}", clip(raw)),
        )),
    }
}

fn parse_hash(field: &'static str, v: Option<&str>) -> Result<Option<Hash>, LineError> {
    let Some(raw) = non_null(v) else {
        return Ok(None);
    };
    let t = number_text(field, raw)?;
    parse_u128(t).map(|h| Some(Hash(h))).map_err(|_| {
        err(
            field,
            format!("expected an unsigned integer hash, found {}", clip(raw)),
        )
    })
}

/// Decimal digits to u128, 19 digits at a time through u64 (DataCrumbs hashes have 39 digits).
fn parse_u128(t: &str) -> Result<u128, ()> {
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    let mut v: u128 = 0;
    for chunk in t.as_bytes().chunks(19) {
        let part: u64 = std::str::from_utf8(chunk)
            .map_err(|_| ())?
            .parse()
            .map_err(|_| ())?;
        v = v
            .checked_mul(10u128.pow(chunk.len() as u32))
            .and_then(|v| v.checked_add(u128::from(part)))
            .ok_or(())?;
    }
    Ok(v)
}

/// Converts a time in `unit` to nanoseconds exactly: decimals are read as decimals, not floats.
fn parse_time(
    field: &'static str,
    v: Option<&str>,
    unit: TimeUnit,
) -> Result<Option<u64>, LineError> {
    let Some(raw) = non_null(v) else {
        return Ok(None);
    };
    let t = number_text(field, raw)?;
    let scale: u64 = match unit {
        TimeUnit::Ns => 1,
        TimeUnit::Us => 1000,
    };
    let bad = || {
        err(
            field,
            format!(
                "expected a non-negative time in {unit}, found {}",
                clip(raw)
            ),
        )
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !int.is_empty() && digits(int) && digits(frac) {
        let whole = int.parse::<u64>().map_err(|_| bad())?;
        let mut sub = 0u64;
        let mut place = scale;
        let mut round_up = false;
        for b in frac.bytes() {
            place /= 10;
            if place == 0 {
                round_up = b >= b'5';
                break;
            }
            sub += u64::from(b - b'0') * place;
        }
        return whole
            .checked_mul(scale)
            .and_then(|n| n.checked_add(sub + u64::from(round_up)))
            .map(Some)
            .ok_or_else(bad);
    }
    match t.parse::<f64>() {
        Ok(f) if f >= 0.0 && (f * scale as f64) < 1.8e19 => {
            Ok(Some((f * scale as f64).round() as u64))
        }
        _ => Err(bad()),
    }
}

fn parse_str<'a>(
    field: &'static str,
    v: Option<&'a str>,
) -> Result<Option<Cow<'a, str>>, LineError> {
    let Some(raw) = non_null(v) else {
        return Ok(None);
    };
    if !raw.starts_with('"') {
        return Err(err(
            field,
            format!("expected a string, found {}", clip(raw)),
        ));
    }
    let inner = &raw[1..raw.len() - 1];
    if !inner.contains('\\') {
        return Ok(Some(Cow::Borrowed(inner)));
    }
    serde_json::from_str::<String>(raw)
        .map(|s| Some(Cow::Owned(s)))
        .map_err(|e| err(field, e.to_string()))
}

fn compact(s: Option<Cow<'_, str>>) -> CompactString {
    s.map(|s| CompactString::from(s.as_ref()))
        .unwrap_or_default()
}

/// An `args` value with no typed field, kept exactly: integers beyond i64 stay integers.
pub fn arg_value(raw: &str) -> Result<ArgValue, String> {
    Ok(match raw.as_bytes()[0] {
        b'n' => ArgValue::Null,
        b't' => ArgValue::Bool(true),
        b'f' => ArgValue::Bool(false),
        b'"' => {
            let inner = &raw[1..raw.len() - 1];
            if inner.contains('\\') {
                ArgValue::Str(serde_json::from_str::<String>(raw).map_err(|e| e.to_string())?)
            } else {
                ArgValue::Str(inner.to_owned())
            }
        }
        b'[' | b'{' => ArgValue::Json(raw.to_owned()),
        _ => {
            if let Ok(n) = raw.parse::<i64>() {
                ArgValue::Int(n)
            } else if let Ok(n) = raw.parse::<i128>() {
                ArgValue::BigInt(n)
            } else {
                match raw.parse::<f64>().map_err(|e| e.to_string())? {
                    f if f.is_finite() => ArgValue::Float(f),
                    // Beyond f64 (`1e999`): keep the exact text.
                    _ => ArgValue::Json(raw.to_owned()),
                }
            }
        }
    })
}

/// Strips what surrounds the object on a line: leading and trailing spaces, and the comma of
/// the JSON-array form.
pub fn trim_line(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let mut end = line.len();
    while end > start && (line[end - 1].is_ascii_whitespace() || line[end - 1] == b',') {
        end -= 1;
    }
    &line[start..end]
}

/// A single pass over the common shape of a line: one flat object whose keys are the known
/// fields, whose values are strings without escapes, plain numbers, `true`, `false` or `null`,
/// and whose `args` is a flat object of the same. It returns the same raw field texts serde_json
/// would, and `None` for anything else (escapes, nesting, unknown or repeated fields, any
/// syntax error), which then takes the serde_json path, so both paths agree on every line.
fn scan(text: &str) -> Option<Fields<'_>> {
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

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
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
    fn scalar(&mut self) -> Option<(usize, usize)> {
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

/// Parses one line (without its newline), `None` for a blank line or the `[`/`]` framing a
/// JSON-array trace. Times are converted from `unit` to nanoseconds.
pub fn parse_line(line: &[u8], unit: TimeUnit) -> Result<Option<Event>, LineError> {
    let mut out = Vec::with_capacity(1);
    Ok(parse_line_into(line, unit, &mut out)?
        .then(|| out.pop())
        .flatten())
}

/// [`parse_line`] onto the end of `out`: `Ok(true)` when the line held an event.
pub fn parse_line_into(
    line: &[u8],
    unit: TimeUnit,
    out: &mut Vec<Event>,
) -> Result<bool, LineError> {
    let t = trim_line(line);
    if t.is_empty() || t == b"[" || t == b"]" {
        return Ok(false);
    }
    if !fast::event_into(t, unit, out) {
        out.push(parse_general(t, unit)?);
    }
    Ok(true)
}

/// A line exactly as datacrumbs writes it at the start of `text`, ending in a newline: its
/// event goes onto `out` and the line's length (without the newline) is returned. `None` says
/// nothing: find the line's end and use [`parse_line_into`].
pub fn parse_written_line(text: &[u8], unit: TimeUnit, out: &mut Vec<Event>) -> Option<usize> {
    fast::line_into(text, unit, out)
}

/// Every line the fast path declines: the flat scanner, then serde_json.
fn parse_general(t: &[u8], unit: TimeUnit) -> Result<Event, LineError> {
    let text = std::str::from_utf8(t).map_err(|e| err("-", format!("not UTF-8: {e}")))?;
    let fields = match scan(text) {
        Some(f) => f,
        None => fields_serde(text)?,
    };
    convert(fields, unit)
}

fn fields_serde(text: &str) -> Result<Fields<'_>, LineError> {
    let raw: RawEvent<'_> = serde_json::from_str(text).map_err(|e| err("-", e.to_string()))?;
    Ok(raw.into())
}

fn convert(r: Fields<'_>, unit: TimeUnit) -> Result<Event, LineError> {
    let ph = match parse_str("ph", r.ph)? {
        Some(p)
            if p.len() == 1
                && p.as_bytes()[0].is_ascii_graphic()
                && !matches!(p.as_bytes()[0], b'"' | b'\\') =>
        {
            Phase::from_byte(p.as_bytes()[0])
        }
        Some(p) => {
            return Err(err(
                "ph",
                format!("expected one printable character, found {:?}", clip(&p)),
            ));
        }
        None => return Err(err("ph", "missing")),
    };
    let a = r.args.unwrap_or_default();
    let [
        fhash,
        hhash,
        size,
        ret,
        offset,
        fname,
        hostname,
        name,
        value,
    ] = a.known;
    let fname = parse_str("args.fname", fname)?.map(Cow::into_owned);
    let hostname = parse_str("args.hostname", hostname)?.map(Cow::into_owned);
    let fhash = parse_hash("args.fhash", fhash)?.or_else(|| fname.as_deref().map(hash_str));
    let hhash = parse_hash("args.hhash", hhash)?.or_else(|| hostname.as_deref().map(hash_str));
    let mut other = Vec::with_capacity(a.other.len());
    for (k, v) in a.other {
        let value = arg_value(v).map_err(|m| err(format!("args.{k}"), m))?;
        other.push((CompactString::from(k.as_ref()), value));
    }
    // `name`/`value` intern strings in FH/HH/SH events; elsewhere they may hold anything.
    let name = match non_null(name) {
        Some(raw) if raw.starts_with('"') => parse_str("args.name", name)?.map(Cow::into_owned),
        Some(raw) => {
            other.push((
                "name".into(),
                arg_value(raw).map_err(|m| err("args.name", m))?,
            ));
            None
        }
        None => None,
    };
    let value = match parse_hash("args.value", value) {
        Ok(h) => h,
        Err(_) => {
            let raw = value.unwrap_or("null");
            other.push((
                "value".into(),
                arg_value(raw).map_err(|m| err("args.value", m))?,
            ));
            None
        }
    };
    let args = Args {
        fhash,
        hhash,
        size: parse_i64("args.size", size)?,
        ret: parse_i64("args.ret", ret)?,
        offset: parse_i64("args.offset", offset)?,
        fname,
        hostname,
        name,
        value,
        other,
    };
    Ok(Event {
        id: parse_u64("id", r.id)?,
        name: compact(parse_str("name", r.name)?),
        cat: compact(parse_str("cat", r.cat)?),
        ph,
        pid: parse_u64("pid", r.pid)?.unwrap_or(0),
        tid: parse_u64("tid", r.tid)?.unwrap_or(0),
        ts_ns: parse_time("ts", r.ts, unit)?.unwrap_or(0),
        dur_ns: parse_time("dur", r.dur, unit)?.unwrap_or(0),
        args,
    })
}

/// The property the fuzzer checks on any input: parsing never panics, the fast path agrees with
/// the general one wherever it accepts a line, and an event that parses writes back as a line
/// that parses to the same event, in both time units.
pub fn check_roundtrip(line: &[u8]) -> Result<(), String> {
    for unit in [TimeUnit::Us, TimeUnit::Ns] {
        let t = trim_line(line);
        if let Some(e) = fast::event(t, unit) {
            let general = parse_general(t, unit);
            if general.as_ref() != Ok(&e) {
                return Err(format!(
                    "{:?}: fast path read {e:?}, general path {general:?}",
                    String::from_utf8_lossy(line)
                ));
            }
        }
        let Ok(Some(e)) = parse_line(line, unit) else {
            continue;
        };
        let mut out = Vec::new();
        crate::write::format_event(&mut out, &e, e.id, unit);
        match parse_line(&out, unit) {
            Ok(Some(back)) if back == e => {}
            other => {
                return Err(format!(
                    "{:?} parsed to {e:?}, wrote {:?}, read back {other:?}",
                    String::from_utf8_lossy(line),
                    String::from_utf8_lossy(&out)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn via_serde(line: &[u8], unit: TimeUnit) -> Result<Option<Event>, LineError> {
        let t = trim_line(line);
        if t.is_empty() || t == b"[" || t == b"]" {
            return Ok(None);
        }
        let text = std::str::from_utf8(t).map_err(|e| err("-", format!("not UTF-8: {e}")))?;
        convert(fields_serde(text)?, unit).map(Some)
    }

    fn lines() -> Vec<Vec<u8>> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces");
        let mut out = Vec::new();
        for dir in ["datacrumbs", "dftracer"] {
            for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
                let path = entry.unwrap().path();
                let mut text = Vec::new();
                let f = std::fs::File::open(&path).unwrap();
                if path.extension().is_some_and(|e| e == "gz") {
                    flate2::read::MultiGzDecoder::new(f)
                        .read_to_end(&mut text)
                        .unwrap();
                } else {
                    std::io::BufReader::new(f).read_to_end(&mut text).unwrap();
                }
                out.extend(text.split(|&b| b == b'\n').map(<[u8]>::to_vec));
            }
        }
        let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/parse_line");
        for entry in std::fs::read_dir(corpus).unwrap() {
            out.push(std::fs::read(entry.unwrap().path()).unwrap());
        }
        out
    }

    #[test]
    fn scanner_agrees_with_serde() {
        let mut scanned = 0;
        let mut cases = lines();
        // Shapes the scanner must hand to serde_json, or read exactly as it does.
        for extra in [
            &br#"{"ph":"X","ts":1,"ts":2}"#[..],
            br#"{"ph":"X","ts":01}"#,
            br#"{"ph":"X","ts":1.}"#,
            br#"{"ph":"X","ts":-0.5e+3}"#,
            br#"{"ph":"X","ts":1,}"#,
            br#"{"ph":"X","args":{"a":[1],"b":2}}"#,
            br#"{"ph":"X","args":{"fhash":1,"fhash":2,"k":1,"k":true}}"#,
            br#"{"ph":"X","args":null}"#,
            br#"{"ph":"X","args":3}"#,
            br#"{"ph":"X","nm\u0061":"a"}"#,
            br#"{"ph":"X","name":"a\tb"}"#,
            b"{\"ph\":\"X\",\"name\":\"a\x01b\"}",
            br#"{"ph":"X"} x"#,
            br#"{"ph":"X","unknown":{"a":1}}"#,
            br#"{ "ph" : "X" , "dur" : null , "args" : { } }"#,
            br#"{"ph":"X","pid":tru}"#,
            br#"{}"#,
        ] {
            cases.push(extra.to_vec());
        }
        for line in &cases {
            let t = trim_line(line);
            if std::str::from_utf8(t).ok().and_then(scan).is_some() {
                scanned += 1;
            }
            for unit in [TimeUnit::Us, TimeUnit::Ns] {
                assert_eq!(
                    parse_line(line, unit),
                    via_serde(line, unit),
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
        }
        // Most real lines take the scanner.
        assert!(
            scanned * 10 > cases.len() * 9,
            "{scanned} of {}",
            cases.len()
        );
    }

    #[test]
    fn fast_path_agrees_with_general() {
        let mut cases = lines();
        let big = "1".repeat(38);
        let bigger = "3".repeat(39);
        for extra in [
            r#"{"id":0,"name":"n","cat":"c","pid":1,"tid":2,"ts":1.2345,"dur":0.0005,"ph":"X","args":{"fhash":1}}"#.to_owned(),
            r#"{"ph":"X","ts":1.2344999,"dur":12.3,"args":null}"#.into(),
            r#"{"ph":"X","ts":"0012.5","dur":"7","pid":"007","tid":"0","id":"18446744073709551615"}"#.into(),
            r#"{"ph":"X","id":1234567890123456789,"pid":9999999999999999999}"#.into(),
            r#"{"ph":"X","id":12345678901234567890}"#.into(),
            r#"{"ph":"X","id":01}"#.into(),
            r#"{"ph":"X","ts":01.5}"#.into(),
            r#"{"ph":"X","ts":1.}"#.into(),
            r#"{"ph":"X","ts":"1."}"#.into(),
            r#"{"ph":"X","ts":1e3}"#.into(),
            r#"{"ph":"X","ts":-1}"#.into(),
            r#"{"ph":"X","ts":18446744073709551.615}"#.into(),
            r#"{"ph":"X","ts":18446744073709552}"#.into(),
            format!(r#"{{"ph":"X","args":{{"fhash":{big},"hhash":"{big}","value":{bigger}}}}}"#),
            format!(r#"{{"ph":"M","args":{{"name":"x","value":"{big}"}}}}"#),
            r#"{"ph":"M","args":{"name":5,"value":"v"}}"#.into(),
            r#"{"ph":"X","args":{"size":-123456789012345678,"ret":"-5","offset":"+5"}}"#.into(),
            r#"{"ph":"X","args":{"size":-0,"ret":1.0,"offset":-}}"#.into(),
            r#"{"ph":"X","args":{"fname":"/a/b","hostname":"h","k":"v","n":1,"f":2.5,"t":true,"z":null,"k":3}}"#.into(),
            r#"{"ph":"X","args":{"fname":"/a","fhash":7,"hostname":"h","hhash":8}}"#.into(),
            r#"{"ph":"X","args":{"size":1,"size":2}}"#.into(),
            r#"{"ph":"X","args":{"a":[1]}}"#.into(),
            r#"{ "ph" : "X" , "name" : "é → ü" , "cat" : "ünïcödé and a long tail past eight" }"#.into(),
            r#"{"ph":"é"}"#.into(),
            r#"{"ph":"XY"}"#.into(),
            r#"{"ph":"\""}"#.into(),
            r#"{"ph":"X","name":"a\"b"}"#.into(),
            "{\"ph\":\"X\",\"name\":\"tab\there\"}".into(),
            r#"{"ph":"X","name":null}"#.into(),
            r#"{"ph":"X","ph":"X"}"#.into(),
            r#"{"ph":"X"}}"#.into(),
            r#"{"ph":"X","args":nul}"#.into(),
            r#"{"name":"no phase"}"#.into(),
            r#"{"ph":"X","args":{"fhash":1234567890123456,"hhash":0123456789012345678}}"#.into(),
            r#"{"ph":"X","args":{"fhash":12345678901234567.5}}"#.into(),
            r#"{"ph":"X","args":{"fhash":"0000000000000000000012","hhash":12345678901234567}}"#.into(),
            r#"{"ph":"X","args":{"value":340282366920938463463374607431768211455}}"#.into(),
            r#"{"ph":"X","args":{"value":340282366920938463463374607431768211456}}"#.into(),
            r#"{"ph":"X","args":{"value":1234567890123456789012345678901234567890}}"#.into(),
        ] {
            cases.push(extra.into_bytes());
        }
        cases.push(b"{\"ph\":\"X\",\"name\":\"\xff\xfe\"}".to_vec());
        let mut fast_hits = 0;
        for line in &cases {
            for unit in [TimeUnit::Us, TimeUnit::Ns] {
                let t = trim_line(line);
                if let Some(e) = fast::event(t, unit) {
                    fast_hits += 1;
                    assert_eq!(
                        parse_general(t, unit),
                        Ok(e),
                        "{}",
                        String::from_utf8_lossy(line)
                    );
                }
            }
        }
        assert!(
            fast_hits * 10 > cases.len() * 2 * 8,
            "{fast_hits} of {}",
            cases.len() * 2
        );
    }

    #[test]
    fn fast_path_reads_what_the_writer_writes() {
        let mut read = 0;
        for line in lines() {
            let Ok(Some(e)) = parse_line(&line, TimeUnit::Us) else {
                continue;
            };
            for unit in [TimeUnit::Us, TimeUnit::Ns] {
                let mut out = Vec::new();
                crate::write::format_event(&mut out, &e, Some(e.id.unwrap_or(7)), unit);
                let t = trim_line(&out);
                let general = parse_general(t, unit).unwrap();
                let mut fast = fast::blank();
                if fast::ours(t, unit, &mut fast).is_some() {
                    read += 1;
                    assert_eq!(fast, general, "{}", String::from_utf8_lossy(t));
                } else {
                    // Only untyped args or escapes leave the writer's own shape.
                    assert!(
                        !general.args.other.is_empty() || t.contains(&b'\\'),
                        "{}",
                        String::from_utf8_lossy(t)
                    );
                }
            }
        }
        assert!(read > 1000, "{read}");
    }
}
