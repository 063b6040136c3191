//! One pass over traces that keeps what a job summary shows: the job's metadata, events per layer, counts, bytes
//! and time per operation, access sizes, per-file statistics and bytes over time per process.
//!
//! Memory grows with the number of layers, operation names, files, processes and time bins, never with the number
//! of events: the timeline doubles its bin width whenever it would hold more than [`TIME_BINS`] bins.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use compact_str::CompactString;
use datasets::read::{ReadOptions, ReadStats, TraceReader};
pub use datasets::vocab::Direction;
pub use datasets::vocab::layer::CALL_LAYERS;
pub use datasets::vocab::op::direction;
use datasets::write::{CLOSING_EVENT, HEADER_EVENT};
use datasets::{ArgValue, Event, Hash, Phase};
use features::FeatureMatrix;
use features::row::{SizeRule, row_size};

use crate::pass::{Kinds, Pass, Seen};

/// The most time bins the timeline keeps.
pub const TIME_BINS: usize = 120;
/// Darshan's access-size histogram bins: upper bounds (exclusive), the last one open.
pub const SIZE_BINS: [(u64, &str); 10] = [
    (100, "0-100"),
    (1 << 10, "100-1K"),
    (10 << 10, "1K-10K"),
    (100 << 10, "10K-100K"),
    (1 << 20, "100K-1M"),
    (4 << 20, "1M-4M"),
    (10 << 20, "4M-10M"),
    (100 << 20, "10M-100M"),
    (1 << 30, "100M-1G"),
    (u64::MAX, "1G+"),
];

/// Bytes a call moved: its non-negative return value, or else its size argument.
pub fn transferred(e: &Event) -> Option<u64> {
    moved(e, || row_size(e))
}

/// [`transferred`], the rule of `e`'s operation known.
pub fn transferred_as(rule: SizeRule, e: &Event) -> Option<u64> {
    moved(e, || rule.size(e))
}

fn moved(e: &Event, size: impl FnOnce() -> Option<i64>) -> Option<u64> {
    e.args
        .ret
        .filter(|r| *r >= 0)
        .or_else(|| size().filter(|s| *s >= 0))
        .map(|b| b as u64)
}

/// Bytes a call asked for: its size argument, or else what it moved; `rule` is its operation's.
pub fn requested_as(rule: SizeRule, e: &Event) -> Option<u64> {
    rule.size(e)
        .filter(|s| *s >= 0)
        .map(|s| s as u64)
        .or_else(|| transferred_as(rule, e))
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpStats {
    pub count: u64,
    /// Bytes of the events that carry a size or a return value.
    pub bytes: u64,
    pub time_ns: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub reads: u64,
    pub writes: u64,
    /// Every call on the file, data or not.
    pub ops: u64,
    pub time_ns: u64,
    /// Calls the feature matrix marks sequential (offset = the previous call's offset + size, same file and pid).
    pub sequential: u64,
    /// Calls the feature matrix marks sequential or not (both offsets known).
    pub with_predecessor: u64,
}

impl FileStats {
    /// Bytes moved per second of time spent in its calls.
    pub fn bandwidth_mibs(&self) -> Option<f64> {
        (self.time_ns > 0).then(|| {
            (self.bytes_read + self.bytes_written) as f64
                / (1 << 20) as f64
                / (self.time_ns as f64 * 1e-9)
        })
    }

    pub fn sequential_share(&self) -> Option<f64> {
        (self.with_predecessor > 0).then(|| self.sequential as f64 / self.with_predecessor as f64)
    }
}

/// Bytes per (time bin, pid); bins are `width_ns` wide from `origin_ns`.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub origin_ns: Option<u64>,
    pub width_ns: u64,
    pub bins: BTreeMap<i64, HashMap<u64, u64>>,
}

impl Timeline {
    fn add(&mut self, ts: u64, pid: u64, bytes: u64) {
        let origin = *self.origin_ns.get_or_insert(ts);
        self.width_ns = self.width_ns.max(1);
        let index = |t: u64, w: u64| (t as i128 - origin as i128).div_euclid(w as i128) as i64;
        *self
            .bins
            .entry(index(ts, self.width_ns))
            .or_default()
            .entry(pid)
            .or_default() += bytes;
        while self.span() > TIME_BINS {
            self.width_ns *= 2;
            let old = std::mem::take(&mut self.bins);
            for (i, pids) in old {
                let merged = self.bins.entry(i.div_euclid(2)).or_default();
                for (pid, b) in pids {
                    *merged.entry(pid).or_default() += b;
                }
            }
        }
    }

    /// Bins from the first to the last, empty ones included.
    pub fn span(&self) -> usize {
        match (self.bins.keys().next(), self.bins.keys().next_back()) {
            (Some(a), Some(b)) => (b - a + 1) as usize,
            _ => 0,
        }
    }
}

/// Everything the summary keeps of the traces.
#[derive(Clone, Debug, Default)]
pub struct TraceSummary {
    pub traces: Vec<PathBuf>,
    /// The `dc_header` and `dc_closing` arguments of each trace that has them, in file order.
    pub headers: Vec<Vec<(String, String)>>,
    pub closings: Vec<Vec<(String, String)>>,
    pub hosts: Vec<String>,
    pub pids: HashSet<u64>,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    /// Events per layer and phase (`X`, `i`, `C`, ...), metadata excluded.
    pub events: BTreeMap<String, BTreeMap<char, u64>>,
    pub metadata: u64,
    /// Per layer, per operation.
    pub ops: BTreeMap<CompactString, HashMap<CompactString, OpStats>>,
    /// Requested sizes of the reads and writes of the call layers, by [`Direction`] (0 read, 1 write).
    pub size_histogram: [[u64; SIZE_BINS.len()]; 2],
    pub common_sizes: HashMap<(u64, u8), u64>,
    /// Per call layer, per file.
    pub files: BTreeMap<String, HashMap<String, FileStats>>,
    /// Bytes read and written by the call layers.
    pub timeline: Timeline,
    pub read: ReadStats,
}

fn arg_text(v: &ArgValue) -> String {
    match v {
        ArgValue::Null => "null".into(),
        ArgValue::Bool(b) => b.to_string(),
        ArgValue::Int(i) => i.to_string(),
        ArgValue::BigInt(i) => i.to_string(),
        ArgValue::Float(f) => f.to_string(),
        ArgValue::Str(s) => s.clone(),
        ArgValue::Json(s) => s.clone(),
    }
}

/// Reads every trace once, giving each event with its input's index (the scope its hashes resolve in), and calling
/// `progress` after each batch; returns the read's counts. Exact duplicates are dropped, as the feature matrix
/// drops them ([`TraceReader::drop_duplicates`]).
pub fn each_event(
    paths: &[PathBuf],
    opts: ReadOptions,
    mut add: impl FnMut(u32, &Event),
    mut progress: impl FnMut(&ReadStats),
) -> Result<ReadStats, datasets::Error> {
    let mut reader = TraceReader::open(paths, opts)?.drop_duplicates();
    while let Some(batch) = reader.next() {
        let batch = batch?;
        for e in &batch.events {
            add(batch.input, e);
        }
        progress(reader.stats());
        reader.recycle(batch.events);
    }
    Ok(reader.stats().clone())
}

impl TraceSummary {
    /// Reads every trace once, calling `progress` with what has been read so far.
    pub fn scan(
        paths: &[PathBuf],
        opts: ReadOptions,
        mut progress: impl FnMut(&ReadStats),
    ) -> Result<TraceSummary, datasets::Error> {
        let (mut s, mut pass) = (Summarizer::new(paths), Pass::default());
        let read = each_event(
            paths,
            opts,
            |input, e| s.add(&pass.see(input, e)),
            &mut progress,
        )?;
        Ok(s.finish(read, &pass.kinds))
    }

    fn add_call(
        &mut self,
        seen: &Seen,
        dir: Option<Direction>,
        rule: SizeRule,
        bytes: Option<u64>,
    ) {
        let e = seen.e;
        if let (Some(d), Some(size)) = (dir, requested_as(rule, e)) {
            let bin = SIZE_BINS
                .iter()
                .position(|(hi, _)| size < *hi)
                .expect("the last bin is open");
            self.size_histogram[d as usize][bin] += 1;
            *self.common_sizes.entry((size, d as u8)).or_default() += 1;
        }
        if let (Some(_), Some(b)) = (dir, bytes) {
            self.timeline.add(e.ts_ns, e.pid, b);
        }
        let Some(file) = seen.strings.file_of_in(seen.input, e) else {
            return;
        };
        if !self.files.contains_key(e.cat.as_str()) {
            self.files.insert(e.cat.to_string(), HashMap::new());
        }
        let files = self.files.get_mut(e.cat.as_str()).expect("inserted above");
        if !files.contains_key(file) {
            files.insert(file.to_owned(), FileStats::default());
        }
        let f = files.get_mut(file).expect("inserted above");
        f.ops += 1;
        f.time_ns += e.dur_ns;
        let Some(d) = dir else { return };
        let b = bytes.unwrap_or(0);
        match d {
            Direction::Read => {
                f.reads += 1;
                f.bytes_read += b;
            }
            Direction::Write => {
                f.writes += 1;
                f.bytes_written += b;
            }
        }
    }

    /// Counts the matrix's `sequential` column per file, for the files' sequential share.
    pub fn add_sequential(&mut self, m: &FeatureMatrix) {
        for (file, seq) in m.file.iter().zip(&m.sequential) {
            let (Some(file), Some(seq)) = (file, seq) else {
                continue;
            };
            if let Some(f) = self.files.values_mut().find_map(|fs| fs.get_mut(file)) {
                f.with_predecessor += 1;
                f.sequential += u64::from(*seq);
            }
        }
    }

    pub fn duration_ns(&self) -> u64 {
        self.first_ns.map_or(0, |f| self.last_ns - f)
    }

    /// Reads and writes of the call layers.
    pub fn io_calls(&self) -> u64 {
        self.size_histogram.iter().flatten().sum()
    }

    /// The most common requested sizes: (size, direction, count), most frequent first.
    pub fn top_sizes(&self, n: usize) -> Vec<(u64, Direction, u64)> {
        let mut v: Vec<(u64, Direction, u64)> = self
            .common_sizes
            .iter()
            .map(|(&(size, d), &count)| {
                let d = if d == 0 {
                    Direction::Read
                } else {
                    Direction::Write
                };
                (size, d, count)
            })
            .collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        v.truncate(n);
        v
    }

    /// Every (layer, file) row, most bytes first.
    pub fn file_rows(&self) -> Vec<(&str, &str, &FileStats)> {
        let mut rows: Vec<(&str, &str, &FileStats)> = self
            .files
            .iter()
            .flat_map(|(l, fs)| fs.iter().map(move |(f, s)| (l.as_str(), f.as_str(), s)))
            .collect();
        rows.sort_by(|a, b| {
            let total = |s: &FileStats| s.bytes_read + s.bytes_written;
            total(b.2)
                .cmp(&total(a.2))
                .then(b.2.ops.cmp(&a.2.ops))
                .then(a.1.cmp(b.1))
        });
        rows
    }
}

/// Builds a [`TraceSummary`] one event at a time ([`Summarizer::add`]), in the order the traces hold them.
///
/// An event costs the sums of its kind ([`crate::pass::Kinds`]); the maps keyed by names are filled once per kind,
/// at the end. The host and the pid of the event before are remembered, so that a run of events of one process
/// looks its host up once.
pub struct Summarizer {
    s: TraceSummary,
    /// Per kind met outside metadata, by its index: its events' sums.
    kinds: Vec<Option<OpStats>>,
    /// (input, pid, hhash) of the last event whose host was looked up, while no event since could have named a
    /// host: an event of the same key has the same host, already listed.
    host_key: Option<(u32, u64, Option<Hash>)>,
    last_pid: Option<u64>,
}

impl Summarizer {
    pub fn new(paths: &[PathBuf]) -> Summarizer {
        Summarizer {
            s: TraceSummary {
                traces: paths.to_vec(),
                ..Default::default()
            },
            kinds: Vec::new(),
            host_key: None,
            last_pid: None,
        }
    }

    /// Takes one event into account; its hashes name what its input's file, and that process in it, interned.
    pub fn add(&mut self, seen: &Seen) {
        let (input, e, kind) = (seen.input, seen.e, seen.kind);
        let s = &mut self.s;
        let names_host = e.args.hostname.is_some() || kind.names_host;
        if names_host {
            self.host_key = None;
        }
        if e.ph == Phase::Metadata {
            s.metadata += 1;
            let args = || {
                e.args
                    .other
                    .iter()
                    .map(|(k, v)| (k.to_string(), arg_text(v)))
            };
            match e.name.as_str() {
                HEADER_EVENT => s.headers.push(args().collect()),
                CLOSING_EVENT => s.closings.push(args().collect()),
                _ => {}
            }
            return;
        }
        let host_key = (input, e.pid, e.args.hhash);
        if names_host || self.host_key != Some(host_key) {
            if let Some(h) = seen.strings.host_of_in(input, e)
                && !s.hosts.iter().any(|k| k == h)
            {
                s.hosts.push(h.to_owned());
            }
            self.host_key = (!names_host).then_some(host_key);
        }
        if self.last_pid != Some(e.pid) {
            s.pids.insert(e.pid);
            self.last_pid = Some(e.pid);
        }
        s.first_ns = Some(s.first_ns.map_or(e.ts_ns, |f| f.min(e.ts_ns)));
        s.last_ns = s.last_ns.max(e.end_ns());
        let id = seen.id as usize;
        if self.kinds.len() <= id {
            self.kinds.resize(id + 1, None);
        }
        let stats = self.kinds[id].get_or_insert_default();
        let bytes = transferred_as(kind.size, e);
        stats.count += 1;
        stats.bytes += bytes.unwrap_or(0);
        stats.time_ns += e.dur_ns;
        if kind.call {
            s.add_call(seen, kind.direction, kind.size, bytes);
        }
    }

    /// The summary, with the events per layer and operation summed from each kind's (`kinds`, the pass's), and
    /// `read`, what was read.
    pub fn finish(mut self, read: ReadStats, kinds: &Kinds) -> TraceSummary {
        let s = &mut self.s;
        for (id, stats) in self.kinds.into_iter().enumerate() {
            let Some(stats) = stats else { continue };
            let kind = kinds.get(id as u32);
            *s.events
                .entry(kind.cat.to_string())
                .or_default()
                .entry(kind.ph.as_byte() as char)
                .or_default() += stats.count;
            let o = s
                .ops
                .entry(kind.cat.clone())
                .or_default()
                .entry(kind.op.clone())
                .or_default();
            o.count += stats.count;
            o.bytes += stats.bytes;
            o.time_ns += stats.time_ns;
        }
        s.read = read;
        self.s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Args;

    fn call(name: &str, file: &str, ts_ns: u64, ret: i64) -> Event {
        Event {
            id: None,
            name: name.into(),
            cat: "sys".into(),
            ph: Phase::Complete,
            pid: 1,
            tid: 1,
            ts_ns,
            dur_ns: 10,
            args: Args {
                fname: Some(file.to_owned()),
                ret: Some(ret),
                ..Args::default()
            },
        }
    }

    #[test]
    fn files_take_bytes_from_calls_and_the_sequential_share_from_the_matrix() {
        let (mut s, mut pass) = (Summarizer::new(&[]), Pass::default());
        for (i, (op, f)) in [
            ("read", "/a"),
            ("read", "/a"),
            ("write", "/b"),
            ("close", "/a"),
        ]
        .into_iter()
        .enumerate()
        {
            s.add(&pass.see(0, &call(op, f, i as u64 * 100, 4096)));
        }
        let mut s = s.finish(ReadStats::default(), &pass.kinds);
        let m = FeatureMatrix {
            file: ["/a", "/a", "/b", "/c"]
                .map(|f| Some(f.to_owned()))
                .to_vec(),
            sequential: vec![Some(true), Some(false), None, Some(true)],
            ..FeatureMatrix::default()
        };
        s.add_sequential(&m);
        let a = &s.files["sys"]["/a"];
        assert_eq!((a.reads, a.bytes_read, a.ops, a.time_ns), (2, 8192, 3, 30));
        assert_eq!(a.sequential_share(), Some(0.5));
        let b = &s.files["sys"]["/b"];
        assert_eq!(
            (b.writes, b.bytes_written, b.sequential_share()),
            (1, 4096, None)
        );
        assert_eq!(s.size_histogram[0][2], 2);
        assert_eq!(s.top_sizes(1), [(4096, Direction::Read, 2)]);
    }
}
