//! Byte sizes as people write them: `4096`, `4KiB`, `16 MiB`, `1G`.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

const UNITS: [(&str, u64); 8] = [
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("K", 1 << 10),
    ("M", 1 << 20),
    ("G", 1 << 30),
    ("B", 1),
    ("", 1),
];

/// Parses a byte count with an optional binary suffix (K, KiB, M, MiB, G, GiB; case-insensitive).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits);
    let suffix = suffix.trim();
    let bad = || {
        format!(
            "invalid size `{text}`: write bytes as a number with an optional suffix K, KiB, M, MiB, G or GiB"
        )
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let (_, unit) = UNITS
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(suffix))
        .ok_or_else(bad)?;
    n.checked_mul(*unit)
        .ok_or_else(|| format!("size `{text}` does not fit in 64 bits"))
}

/// The shortest exact binary form: 4096 → `4KiB`, 1536 → `1536B`.
pub fn format_size(bytes: u64) -> String {
    for (suffix, unit) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

/// Three significant figures in the largest binary unit that fits: 1536 → `1.50 KiB`, 100 → `100 B`.
pub fn human_size(bytes: u64) -> String {
    for (suffix, unit) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= unit {
            let v = bytes as f64 / unit as f64;
            let digits = if v >= 100.0 {
                0
            } else if v >= 10.0 {
                1
            } else {
                2
            };
            return format!("{v:.digits$} {suffix}");
        }
    }
    format!("{bytes} B")
}

/// A byte size in a pipeline file: an integer or a string with a suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size: bytes as an integer, or a string such as \"64KiB\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("size {v} is negative")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                parse_size(v).map(ByteSize).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("16 mib"), Ok(16 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("4KQ").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(format_size(4096), "4KiB");
        assert_eq!(format_size(16 << 20), "16MiB");
        assert_eq!(format_size(1536), "1536B");
        assert_eq!(human_size(1536), "1.50 KiB");
        assert_eq!(human_size(100), "100 B");
        assert_eq!(human_size(150 << 20), "150 MiB");
    }
}
