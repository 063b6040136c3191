//! Hash → string resolution, built from the `FH` (file), `HH` (host) and `SH` (other string)
//! metadata events, and from names that events give inline (`args.fname`, `args.hostname`).
//!
//! A hash means what the metadata of its own input file and process says: DFTracer's `FH` values
//! are small integers that name different files in different processes. So every name is
//! interned under its scope, (input, pid), where the input is the file's index among the files
//! read together. A lookup in a scope takes the scope's own name; failing that, the name the
//! input's processes agree on (a DataCrumbs `HH` event has no pid, and every process uses it);
//! failing that, nothing. The lookups without a scope ([`StringTable::file`],
//! [`StringTable::file_of`]) give a name only when every scope that interned the hash agrees.
//! The table also keeps the threads' and processes' names over time ([`ThreadNames`]), scoped alike.

pub mod scope;
pub mod thread_names;

use std::collections::HashMap;

use crate::{Event, Hash, Phase, hash::hash_str};
pub use scope::Scope;
use thread_names::ThreadNames;

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

    fn index(self) -> usize {
        match self {
            StringKind::File => 0,
            StringKind::Host => 1,
            StringKind::String => 2,
        }
    }
}

/// The name the scopes that interned a hash give it, when they agree.
#[derive(Clone, Debug)]
enum Agreed {
    One(String),
    Several,
}

impl Agreed {
    fn add(&mut self, s: &str) {
        if matches!(self, Agreed::One(n) if n != s) {
            *self = Agreed::Several;
        }
    }

    fn name(&self) -> Option<&str> {
        match self {
            Agreed::One(n) => Some(n),
            Agreed::Several => None,
        }
    }
}

/// One kind's names.
#[derive(Clone, Debug, Default)]
struct Names {
    scoped: HashMap<(Scope, Hash), String>,
    per_input: HashMap<(u32, Hash), Agreed>,
    everywhere: HashMap<Hash, Agreed>,
}

impl Names {
    /// The first name a scope gives a hash stays.
    fn insert(&mut self, scope: Scope, h: Hash, s: &str) {
        if self.scoped.contains_key(&(scope, h)) {
            return;
        }
        self.scoped.insert((scope, h), s.to_owned());
        self.per_input
            .entry((scope.input, h))
            .and_modify(|a| a.add(s))
            .or_insert_with(|| Agreed::One(s.to_owned()));
        self.everywhere
            .entry(h)
            .and_modify(|a| a.add(s))
            .or_insert_with(|| Agreed::One(s.to_owned()));
    }

    fn get_in(&self, scope: Scope, h: Hash) -> Option<&str> {
        match self.scoped.get(&(scope, h)) {
            Some(s) => Some(s),
            None => self.per_input.get(&(scope.input, h))?.name(),
        }
    }

    fn get(&self, h: Hash) -> Option<&str> {
        self.everywhere.get(&h)?.name()
    }
}

#[derive(Clone, Debug, Default)]
pub struct StringTable {
    kinds: [Names; 3],
    threads: ThreadNames,
}

impl StringTable {
    pub fn new() -> StringTable {
        StringTable::default()
    }

    fn names(&self, kind: StringKind) -> &Names {
        &self.kinds[kind.index()]
    }

    /// The names `thread_name` and `process_name` metadata gave threads and processes.
    pub fn threads(&self) -> &ThreadNames {
        &self.threads
    }

    /// The file `h` names in `scope`.
    pub fn file_in(&self, scope: Scope, h: Hash) -> Option<&str> {
        self.names(StringKind::File).get_in(scope, h)
    }

    /// The host `h` names in `scope`.
    pub fn host_in(&self, scope: Scope, h: Hash) -> Option<&str> {
        self.names(StringKind::Host).get_in(scope, h)
    }

    /// The file `h` names in every scope that interned it, when they agree.
    pub fn file(&self, h: Hash) -> Option<&str> {
        self.names(StringKind::File).get(h)
    }

    /// The host `h` names in every scope that interned it, when they agree.
    pub fn host(&self, h: Hash) -> Option<&str> {
        self.names(StringKind::Host).get(h)
    }

    /// The string `h` names in every scope that interned it, when they agree.
    pub fn string(&self, h: Hash) -> Option<&str> {
        self.names(StringKind::String).get(h)
    }

    /// The file an event of input `input` touched: its inline `fname`, or its `fhash` resolved
    /// in its scope.
    pub fn file_of_in<'a>(&'a self, input: u32, e: &'a Event) -> Option<&'a str> {
        e.args
            .fname
            .as_deref()
            .or_else(|| e.args.fhash.and_then(|h| self.file_in(scope(input, e), h)))
    }

    /// The host an event of input `input` ran on: its inline `hostname`, or its `hhash`
    /// resolved in its scope.
    pub fn host_of_in<'a>(&'a self, input: u32, e: &'a Event) -> Option<&'a str> {
        e.args
            .hostname
            .as_deref()
            .or_else(|| e.args.hhash.and_then(|h| self.host_in(scope(input, e), h)))
    }

    /// [`StringTable::file_of_in`] for an event whose input is not known: its `fhash` resolves
    /// only to a name every scope agrees on.
    pub fn file_of<'a>(&'a self, e: &'a Event) -> Option<&'a str> {
        e.args
            .fname
            .as_deref()
            .or_else(|| e.args.fhash.and_then(|h| self.file(h)))
    }

    /// [`StringTable::host_of_in`] for an event whose input is not known.
    pub fn host_of<'a>(&'a self, e: &'a Event) -> Option<&'a str> {
        e.args
            .hostname
            .as_deref()
            .or_else(|| e.args.hhash.and_then(|h| self.host(h)))
    }

    pub fn insert(&mut self, kind: StringKind, scope: Scope, h: Hash, s: &str) {
        self.kinds[kind.index()].insert(scope, h, s);
    }

    /// Learns from one event of input `input`: an `FH`/`HH`/`SH` metadata event interns its
    /// `args.name` under `args.value`; any event's inline `fname`/`hostname` is interned under
    /// its `hash_str`. Both in the event's scope. A `thread_name`/`process_name` event names its thread or process.
    pub fn insert_event_in(&mut self, input: u32, e: &Event) {
        let at = scope(input, e);
        self.threads.insert_event_in(input, e);
        if e.ph == Phase::Metadata
            && let Some(kind) = StringKind::from_event_name(&e.name)
            && let (Some(name), Some(value)) = (&e.args.name, e.args.value)
        {
            self.insert(kind, at, value, name);
        }
        if let Some(f) = &e.args.fname {
            let h = e.args.fhash.unwrap_or_else(|| hash_str(f));
            self.insert(StringKind::File, at, h, f);
        }
        if let Some(h) = &e.args.hostname {
            let hash = e.args.hhash.unwrap_or_else(|| hash_str(h));
            self.insert(StringKind::Host, at, hash, h);
        }
    }

    /// [`StringTable::insert_event_in`] for a single input.
    pub fn insert_event(&mut self, e: &Event) {
        self.insert_event_in(0, e);
    }

    /// Number of distinct hashes of (files, hosts, strings).
    pub fn len(&self) -> (usize, usize, usize) {
        let n = |k: StringKind| self.names(k).everywhere.len();
        (
            n(StringKind::File),
            n(StringKind::Host),
            n(StringKind::String),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0, 0)
    }

    /// Every file hash with the name all its scopes agree on.
    pub fn files(&self) -> impl Iterator<Item = (Hash, &str)> {
        agreed(self.names(StringKind::File))
    }

    /// Every host hash with the name all its scopes agree on.
    pub fn hosts(&self) -> impl Iterator<Item = (Hash, &str)> {
        agreed(self.names(StringKind::Host))
    }

    /// Adds every entry of `other`, a table of one input, as input `input`.
    pub fn merge_input(&mut self, input: u32, other: &StringTable) {
        for (mine, theirs) in self.kinds.iter_mut().zip(&other.kinds) {
            for ((s, h), name) in &theirs.scoped {
                mine.insert(Scope { input, pid: s.pid }, *h, name);
            }
        }
        self.threads.merge_input(input, &other.threads);
    }
}

fn scope(input: u32, e: &Event) -> Scope {
    Scope { input, pid: e.pid }
}

fn agreed(names: &Names) -> impl Iterator<Item = (Hash, &str)> {
    names
        .everywhere
        .iter()
        .filter_map(|(h, a)| Some((*h, a.name()?)))
}
