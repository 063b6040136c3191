//! The event model every crate shares: one Chrome-trace event, with times in nanoseconds.

use compact_str::CompactString;

/// Chrome trace event phase (`ph`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `X`: a complete event with a duration.
    Complete,
    /// `C`: a counter sample.
    Counter,
    /// `M`: metadata (string interning, process names, the header).
    Metadata,
    /// `i` or `I`: an instant.
    Instant,
    /// `B`: the start of a duration.
    Begin,
    /// `E`: the end of a duration.
    End,
    /// Any other single-character phase, kept as its byte.
    Other(u8),
}

impl Phase {
    pub fn from_byte(b: u8) -> Phase {
        match b {
            b'X' => Phase::Complete,
            b'C' => Phase::Counter,
            b'M' => Phase::Metadata,
            b'i' | b'I' => Phase::Instant,
            b'B' => Phase::Begin,
            b'E' => Phase::End,
            other => Phase::Other(other),
        }
    }

    pub fn as_byte(self) -> u8 {
        match self {
            Phase::Complete => b'X',
            Phase::Counter => b'C',
            Phase::Metadata => b'M',
            Phase::Instant => b'i',
            Phase::Begin => b'B',
            Phase::End => b'E',
            Phase::Other(b) => b,
        }
    }
}

/// A string hash as a trace stores it. DataCrumbs (Python era) wrote 128-bit integers, so the
/// value is kept whole; datacrumbs writes hashes that fit in a u64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash(pub u128);

impl Hash {
    /// The hash as a u64, when it fits.
    pub fn as_u64(self) -> Option<u64> {
        u64::try_from(self.0).ok()
    }
}

/// An `args` value that has no typed field in [`Args`].
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Null,
    Bool(bool),
    Int(i64),
    /// Integers beyond i64, kept exactly.
    BigInt(i128),
    Float(f64),
    Str(String),
    /// Nested arrays or objects, kept as their JSON text.
    Json(String),
}

/// The `args` of an event: the fields datacrumbs analyses are typed, the rest are kept in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    /// File hash, resolved through `FH` metadata.
    pub fhash: Option<Hash>,
    /// Host hash, resolved through `HH` metadata.
    pub hhash: Option<Hash>,
    /// Bytes transferred.
    pub size: Option<i64>,
    /// Return value of the call.
    pub ret: Option<i64>,
    /// File offset, where the call has one.
    pub offset: Option<i64>,
    /// File name given inline (DFTracer, DataCrumbs profiles).
    pub fname: Option<String>,
    /// Host name given inline (DFTracer, DataCrumbs profiles).
    pub hostname: Option<String>,
    /// Metadata events: the interned string (`args.name`).
    pub name: Option<String>,
    /// Metadata events: the hash it is interned as (`args.value`).
    pub value: Option<Hash>,
    /// Every other argument, in the order it appeared.
    pub other: Vec<(CompactString, ArgValue)>,
}

impl Args {
    /// Makes these `Args::default()` again, keeping the memory of the list of other arguments.
    pub fn reset(&mut self) {
        // Destructured, so that a new field cannot be forgotten here.
        let Args {
            fhash,
            hhash,
            size,
            ret,
            offset,
            fname,
            hostname,
            name,
            value,
            other,
        } = self;
        (*fhash, *hhash, *value) = (None, None, None);
        (*size, *ret, *offset) = (None, None, None);
        (*fname, *hostname, *name) = (None, None, None);
        other.clear();
    }

    pub fn get(&self, key: &str) -> Option<&ArgValue> {
        self.other.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// One trace event. Times are nanoseconds on the trace's clock, whatever unit the file used.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: Option<u64>,
    pub name: CompactString,
    /// The layer: `sys`, `vfs`, `ext4`, `block`, `page_cache`, `libc`, `app`, ... (or a foreign category).
    pub cat: CompactString,
    pub ph: Phase,
    pub pid: u64,
    pub tid: u64,
    pub ts_ns: u64,
    /// Zero where the file omits `dur`.
    pub dur_ns: u64,
    pub args: Args,
}

impl Event {
    /// An event of `name`, `cat` and phase `ph`, every other field zero or empty, for a reader to fill.
    pub fn new(name: &str, cat: &str, ph: Phase) -> Self {
        Event {
            id: None,
            name: name.into(),
            cat: cat.into(),
            ph,
            pid: 0,
            tid: 0,
            ts_ns: 0,
            dur_ns: 0,
            args: Args::default(),
        }
    }

    /// Makes this `Event::new("", "", Phase::Other(0))` again, keeping the heap memory of its strings and list: a
    /// reader parses each chunk over the events of an earlier one, where freeing and allocating every long name, and
    /// moving each new event into place, took a sixth of a build's CPU.
    pub fn reset(&mut self) {
        // Destructured, so that a new field cannot be forgotten here.
        let Event {
            id,
            name,
            cat,
            ph,
            pid,
            tid,
            ts_ns,
            dur_ns,
            args,
        } = self;
        *id = None;
        name.clear();
        cat.clear();
        *ph = Phase::Other(0);
        (*pid, *tid, *ts_ns, *dur_ns) = (0, 0, 0, 0);
        args.reset();
    }

    /// End of the event's interval, in nanoseconds.
    pub fn end_ns(&self) -> u64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }
}
