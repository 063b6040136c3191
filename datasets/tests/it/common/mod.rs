//! An independent oracle: a plain line-by-line scan with `serde_json::Value`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/")).join(rel)
}

#[derive(Debug, Default)]
pub struct Oracle {
    pub lines: u64,
    pub events: Vec<serde_json::Value>,
    /// The text of each event line, for what `Value` cannot hold (128-bit integers).
    pub texts: Vec<String>,
}

impl Oracle {
    pub fn scan(path: &std::path::Path) -> Oracle {
        let f = std::fs::File::open(path).unwrap();
        let r: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(flate2::read::MultiGzDecoder::new(f))
        } else {
            Box::new(f)
        };
        let mut o = Oracle::default();
        for line in BufReader::new(r).lines() {
            let line = line.unwrap();
            o.lines += 1;
            let t = line.trim().trim_end_matches(',');
            if t.is_empty() || t == "[" || t == "]" {
                continue;
            }
            o.events.push(serde_json::from_str(t).unwrap());
            o.texts.push(t.to_owned());
        }
        o
    }

    pub fn count_by(&self, key: &str) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for e in &self.events {
            *m.entry(e[key].as_str().unwrap_or("").to_owned())
                .or_insert(0) += 1;
        }
        m
    }

    /// A numeric field that may be a number or a string holding an integer.
    pub fn int(v: &serde_json::Value) -> Option<u64> {
        match v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }
}

pub fn count_by<'a>(
    events: impl Iterator<Item = &'a datasets::Event>,
    key: impl Fn(&datasets::Event) -> String,
) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(key(e)).or_insert(0) += 1;
    }
    m
}
