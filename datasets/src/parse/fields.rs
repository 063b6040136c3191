//! What the line readers share: the raw JSON text of a line's fields as a reader found them ([`Fields`]), and the
//! error a line gets ([`LineError`]). Every reader and the converter build on it; it imports none of them.

use std::borrow::Cow;
use std::fmt;

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

pub(super) fn err(field: impl Into<Cow<'static, str>>, msg: impl Into<String>) -> LineError {
    LineError {
        field: field.into(),
        msg: msg.into(),
    }
}

const KNOWN_ARGS: [&str; 9] = [
    "fhash", "hhash", "size", "ret", "offset", "fname", "hostname", "name", "value",
];

#[derive(Default)]
pub(super) struct RawArgs<'a> {
    pub(super) known: [Option<&'a str>; KNOWN_ARGS.len()],
    pub(super) other: Vec<(Cow<'a, str>, &'a str)>,
}

impl<'a> RawArgs<'a> {
    pub(super) fn add(&mut self, k: Cow<'a, str>, v: &'a str) {
        match KNOWN_ARGS.iter().position(|n| *n == k) {
            Some(i) => self.known[i] = Some(v),
            None => self.other.push((k, v)),
        }
    }
}

/// The raw JSON text of each field (without surrounding whitespace), as either parser found it.
#[derive(Default)]
pub(super) struct Fields<'a> {
    pub(super) id: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) cat: Option<&'a str>,
    pub(super) ph: Option<&'a str>,
    pub(super) pid: Option<&'a str>,
    pub(super) tid: Option<&'a str>,
    pub(super) ts: Option<&'a str>,
    pub(super) dur: Option<&'a str>,
    pub(super) args: Option<RawArgs<'a>>,
}
