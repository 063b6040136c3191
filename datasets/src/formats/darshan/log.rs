//! A Darshan log as read: its job, names, modules, counter records and DXT segments, and the error a bad log
//! gets. The header's reader ([`super::header`]) and the event conversion ([`super::events`]) build on it; it
//! imports neither.

use std::collections::BTreeMap;

/// Magic number of the header; byte-swapped when the log was written on the other endianness.
pub(super) const MAGIC: i64 = 6_567_223;

/// What is wrong, and where: a byte offset in the file, and for compressed regions the offset
/// in the region's decompressed data.
#[derive(Debug, Clone, PartialEq)]
pub struct DarshanError {
    pub offset: u64,
    pub field: String,
    pub msg: String,
}

pub(super) type Result<T> = std::result::Result<T, DarshanError>;

pub(super) fn fail<T>(offset: u64, field: impl Into<String>, msg: impl Into<String>) -> Result<T> {
    Err(DarshanError {
        offset,
        field: field.into(),
        msg: msg.into(),
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Zlib,
    Bzip2,
    None,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub uid: i64,
    pub start_time_sec: i64,
    pub start_time_nsec: i64,
    pub end_time_sec: i64,
    pub end_time_nsec: i64,
    pub nprocs: i64,
    pub jobid: i64,
    /// `key=value` lines of the job's metadata, in order.
    pub metadata: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub index: usize,
    /// `None` for an index this reader has no name for.
    pub name: Option<&'static str>,
    pub version: u32,
    /// The runtime ran out of memory for this module's records: some are missing.
    pub partial: bool,
    /// Whether this reader decodes its records (POSIX, MPI-IO, STDIO, DXT POSIX and MPI-IO).
    pub read: bool,
}

/// One module record of counters (`darshan_posix_file` and its kind), current layout.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterRecord {
    pub module: &'static str,
    pub id: u64,
    /// -1 for a record shared by all ranks.
    pub rank: i64,
    pub counters: Vec<(&'static str, i64)>,
    pub fcounters: Vec<(&'static str, f64)>,
}

/// One DXT read or write: times are seconds since the job started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// -1 where the format did not record it (DXT MPI-IO 1).
    pub offset: i64,
    pub length: i64,
    pub start: f64,
    pub end: f64,
    /// The pthread id; DXT POSIX 1 and MPI-IO 1 and 2 did not record it.
    pub thread: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DxtRecord {
    /// `DXT_POSIX` or `DXT_MPIIO`.
    pub module: &'static str,
    pub id: u64,
    pub rank: i64,
    pub hostname: String,
    pub writes: Vec<Segment>,
    pub reads: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    pub path: String,
    pub fs_type: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Log {
    /// The log format version, as the header states it (`3.41`).
    pub version: String,
    pub compression: Compression,
    pub job: Job,
    pub exe: String,
    /// In the order the log lists them.
    pub mounts: Vec<Mount>,
    /// Record id → name (a file path, usually).
    pub names: BTreeMap<u64, String>,
    /// Modules with data, by index.
    pub modules: Vec<Module>,
    pub records: Vec<CounterRecord>,
    pub dxt: Vec<DxtRecord>,
}

impl Log {
    /// Whether any module is partial (the log's partial flag).
    pub fn partial(&self) -> bool {
        self.modules.iter().any(|m| m.partial)
    }
}
