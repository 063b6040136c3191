//! Raw field texts to an [`Event`]: every value converted exactly (decimal times as decimals,
//! hashes up to 128 bits, numbers given as strings), each error naming its field.

use std::borrow::Cow;

use compact_str::CompactString;

use super::fields::{Fields, LineError, err};
use crate::hash::hash_str;
use crate::{ArgValue, Args, Event, Hash, Phase, TimeUnit};

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

/// A count of bytes: an integer that is not negative (a negative one would become a negative bandwidth).
fn byte_count(field: &'static str, v: Option<&str>) -> Result<Option<i64>, LineError> {
    match parse_i64(field, v)? {
        Some(n) if n < 0 => Err(err(
            field,
            format!("a byte count cannot be negative, found {n}"),
        )),
        n => Ok(n),
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
pub(super) fn arg_value(raw: &str) -> Result<ArgValue, String> {
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
pub(super) fn convert(r: Fields<'_>, unit: TimeUnit) -> Result<Event, LineError> {
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
        size: byte_count("args.size", size)?,
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
