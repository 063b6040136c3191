//! Hash → string resolution, built from the `FH` (file), `HH` (host) and `SH` (other string)
//! metadata events, and from names that events give inline (`args.fname`, `args.hostname`).

use std::collections::HashMap;

use crate::{Event, Hash, Phase, hash::hash_str};

/// Which table a metadata event interns into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringKind {
    File,
    Host,
    String,
}

impl StringKind {
    /// The metadata event name (`FH`, `HH`, `SH`) for this kind.
    pub fn event_name(self) -> &'static str {
        match self {
            StringKind::File => "FH",
            StringKind::Host => "HH",
            StringKind::String => "SH",
        }
    }

    pub fn from_event_name(name: &str) -> Option<StringKind> {
        match name {
            "FH" => Some(StringKind::File),
            "HH" => Some(StringKind::Host),
            "SH" => Some(StringKind::String),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct StringTable {
    files: HashMap<Hash, String>,
    hosts: HashMap<Hash, String>,
    strings: HashMap<Hash, String>,
}

impl StringTable {
    pub fn new() -> StringTable {
        StringTable::default()
    }

    pub fn file(&self, h: Hash) -> Option<&str> {
        self.files.get(&h).map(String::as_str)
    }

    pub fn host(&self, h: Hash) -> Option<&str> {
        self.hosts.get(&h).map(String::as_str)
    }

    pub fn string(&self, h: Hash) -> Option<&str> {
        self.strings.get(&h).map(String::as_str)
    }

    /// The file an event touched: its `fhash` resolved, or its inline `fname`.
    pub fn file_of<'a>(&'a self, e: &'a Event) -> Option<&'a str> {
        e.args
            .fname
            .as_deref()
            .or_else(|| e.args.fhash.and_then(|h| self.file(h)))
    }

    /// The host an event ran on: its `hhash` resolved, or its inline `hostname`.
    pub fn host_of<'a>(&'a self, e: &'a Event) -> Option<&'a str> {
        e.args
            .hostname
            .as_deref()
            .or_else(|| e.args.hhash.and_then(|h| self.host(h)))
    }

    pub fn insert(&mut self, kind: StringKind, h: Hash, s: &str) {
        let map = match kind {
            StringKind::File => &mut self.files,
            StringKind::Host => &mut self.hosts,
            StringKind::String => &mut self.strings,
        };
        map.entry(h).or_insert_with(|| s.to_owned());
    }

    /// Learns from one event: an `FH`/`HH`/`SH` metadata event interns its `args.name` under
    /// `args.value`; any event's inline `fname`/`hostname` is interned under its `hash_str`.
    pub fn insert_event(&mut self, e: &Event) {
        if e.ph == Phase::Metadata
            && let Some(kind) = StringKind::from_event_name(&e.name)
            && let (Some(name), Some(value)) = (&e.args.name, e.args.value)
        {
            self.insert(kind, value, name);
        }
        if let Some(f) = &e.args.fname {
            self.insert(
                StringKind::File,
                e.args.fhash.unwrap_or_else(|| hash_str(f)),
                f,
            );
        }
        if let Some(h) = &e.args.hostname {
            self.insert(
                StringKind::Host,
                e.args.hhash.unwrap_or_else(|| hash_str(h)),
                h,
            );
        }
    }

    /// Number of distinct (files, hosts, strings).
    pub fn len(&self) -> (usize, usize, usize) {
        (self.files.len(), self.hosts.len(), self.strings.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0, 0)
    }

    pub fn files(&self) -> impl Iterator<Item = (Hash, &str)> {
        self.files.iter().map(|(h, s)| (*h, s.as_str()))
    }

    pub fn hosts(&self) -> impl Iterator<Item = (Hash, &str)> {
        self.hosts.iter().map(|(h, s)| (*h, s.as_str()))
    }

    /// Adds every entry of `other` that this table lacks.
    pub fn merge(&mut self, other: &StringTable) {
        for (h, s) in &other.files {
            self.insert(StringKind::File, *h, s);
        }
        for (h, s) in &other.hosts {
            self.insert(StringKind::Host, *h, s);
        }
        for (h, s) in &other.strings {
            self.insert(StringKind::String, *h, s);
        }
    }
}
