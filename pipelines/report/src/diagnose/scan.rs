//! One pass over the traces for what the feature matrix does not keep: each thread's time outside its I/O calls
//! (on-CPU, and off-CPU by state), the byte ranges read from each file (the same bytes read again), offsets'
//! alignment, and Darshan's counter records.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::Result;
use datasets::limits::Limits;
use datasets::read::{ReadOptions, ReadStats};
use datasets::strings::StringTable;
use datasets::{ArgValue, Event, Phase};
use features::FeatureMatrix;
use features::syscall::op_name;

use crate::diagnose::thresholds::ALIGNMENT_BYTES;
use crate::trace_report::summary::{CALL_LAYERS, Direction, direction, each_event, transferred};

pub use datasets::vocab::layer::{BLOCK, SCHED};
/// The prefix of the block layer's requests' time on the device (`block_device_read`, ...).
pub const DEVICE_PREFIX: &str = "block_device";
/// The `cat` of Darshan's counter records.
pub const DARSHAN: &str = "darshan";

/// A thread: (pid, tid).
pub type Thread = (u64, u64);

/// The off-CPU state of a thread woken by another thread of the job: waiting for the job itself.
pub const JOB_WAIT: &str = "job";

/// One thread's time from its first event to its last.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadTime {
    pub first_ns: u64,
    pub last_ns: u64,
    /// Time inside its I/O calls (the matrix's rows).
    pub in_calls_ns: u64,
    /// Off-CPU time outside its calls, by state (`D`, `S`, `R`, ...).
    pub offcpu_outside_ns: BTreeMap<String, u64>,
}

impl ThreadTime {
    pub fn span_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }

    /// On-CPU time outside its calls: what is neither in a call nor off-CPU.
    pub fn on_cpu_outside_ns(&self) -> u64 {
        self.span_ns()
            .saturating_sub(self.in_calls_ns)
            .saturating_sub(self.offcpu_outside_ns.values().sum())
    }
}

/// What was read from one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileReads {
    pub bytes: u64,
    pub time_ns: u64,
    /// Disjoint byte ranges read, start → end.
    ranges: BTreeMap<u64, u64>,
}

impl FileReads {
    fn add(&mut self, start: u64, len: u64) {
        let (mut lo, mut hi) = (start, start + len);
        let overlapping: Vec<(u64, u64)> = self
            .ranges
            .range(..=hi)
            .rev()
            .take_while(|(_, e)| **e >= lo)
            .map(|(s, e)| (*s, *e))
            .collect();
        for (s, e) in overlapping {
            self.ranges.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.ranges.insert(lo, hi);
    }

    /// Distinct bytes read.
    pub fn distinct(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }

    /// Bytes read more than once.
    pub fn reread(&self) -> u64 {
        self.bytes.saturating_sub(self.distinct())
    }
}

/// Alignment of the data calls whose offset is known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Alignment {
    pub calls: u64,
    pub misaligned: u64,
    pub misaligned_ns: u64,
    pub misaligned_bytes: u64,
    pub aligned_ns: u64,
    pub aligned_bytes: u64,
}

/// One Darshan counter record: its module (`POSIX`, `STDIO`, ...), file, rank and counters.
#[derive(Clone, Debug, PartialEq)]
pub struct DarshanRecord {
    pub module: String,
    pub file: Option<String>,
    pub rank: i64,
    pub counters: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, Default)]
pub struct JobScan {
    pub threads: BTreeMap<(u64, u64), ThreadTime>,
    /// Reads with an offset, per file.
    pub reads: BTreeMap<String, FileReads>,
    pub alignment: Alignment,
    pub darshan: Vec<DarshanRecord>,
    /// Whether any off-CPU interval was seen (the trace has the sched layer).
    pub has_sched: bool,
    /// Per row of the matrix, the block requests its call sent to the device (`block_device_*` intervals inside
    /// it).
    pub device_requests: Vec<u32>,
    pub read: ReadStats,
    /// The limits dc-trace recorded ([`datasets::limits`]), per input, in file order.
    pub limits: Vec<(u32, Result<Limits, String>)>,
    /// Per thread, its calls' merged intervals.
    calls: HashMap<(u64, u64), Vec<(u64, u64)>>,
    /// Per thread, its rows: (start, end, row), by start.
    rows: HashMap<Thread, Vec<(u64, u64, usize)>>,
    strings: StringTable,
}

impl JobScan {
    /// Reads the traces once; `matrix` holds their I/O calls (its rows) for the time between them.
    pub fn run(
        paths: &[PathBuf],
        opts: ReadOptions,
        matrix: &FeatureMatrix,
        mut progress: impl FnMut(&ReadStats),
    ) -> Result<JobScan> {
        let mut s = JobScan::with_calls(matrix);
        s.read = each_event(paths, opts, |input, e| s.add(input, e), &mut progress)?;
        Ok(s)
    }

    /// A scan that knows the calls of `matrix`, before any event.
    pub fn with_calls(matrix: &FeatureMatrix) -> JobScan {
        let mut s = JobScan {
            device_requests: vec![0; matrix.n_rows()],
            ..Default::default()
        };
        for row in 0..matrix.n_rows() {
            let key = (matrix.pid[row], matrix.tid[row]);
            let (ts, dur) = (matrix.ts_ns[row], matrix.dur_ns[row]);
            s.calls.entry(key).or_default().push((ts, ts + dur));
            s.rows.entry(key).or_default().push((ts, ts + dur, row));
            s.threads.entry(key).or_insert(ThreadTime {
                first_ns: ts,
                last_ns: ts + dur,
                ..Default::default()
            });
        }
        for v in s.rows.values_mut() {
            v.sort_unstable();
        }
        for (key, v) in &mut s.calls {
            v.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
            for &(a, b) in v.iter() {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            let t = s.threads.get_mut(key).expect("inserted with the calls");
            t.in_calls_ns = merged.iter().map(|(a, b)| b - a).sum();
            t.first_ns = merged[0].0;
            t.last_ns = merged[merged.len() - 1].1;
            *v = merged;
        }
        s
    }

    /// The part of `[ts, end)` inside the calls of thread `key`.
    fn in_calls(&self, key: (u64, u64), ts: u64, end: u64) -> u64 {
        let Some(v) = self.calls.get(&key) else {
            return 0;
        };
        let first = v.partition_point(|(_, b)| *b <= ts);
        v[first..]
            .iter()
            .take_while(|(a, _)| *a < end)
            .map(|(a, b)| end.min(*b) - ts.max(*a))
            .sum()
    }

    /// The row whose call holds `[ts, end)` on thread `key`.
    fn row_of(&self, key: (u64, u64), ts: u64, end: u64) -> Option<usize> {
        let v = self.rows.get(&key)?;
        let i = v.partition_point(|(a, _, _)| *a <= ts).checked_sub(1)?;
        let (_, b, row) = v[i];
        (end <= b).then_some(row)
    }

    /// Takes one event of input `input` into account.
    pub fn add(&mut self, input: u32, e: &Event) {
        self.strings.insert_event_in(input, e);
        if let Some(l) = Limits::from_event(e) {
            self.limits.push((input, l.map_err(|err| err.to_string())));
            return;
        }
        if e.ph == Phase::Counter && e.cat == DARSHAN {
            self.add_darshan(e);
            return;
        }
        if e.ph != Phase::Complete {
            return;
        }
        let key = (e.pid, e.tid);
        if let Some(t) = self.threads.get_mut(&key) {
            t.first_ns = t.first_ns.min(e.ts_ns);
            t.last_ns = t.last_ns.max(e.end_ns());
        }
        if e.cat == SCHED
            && let Some(state) = e.name.strip_prefix("offcpu_")
        {
            self.has_sched = true;
            // Asleep until another thread of the job woke it (a shell waiting for its child, a join): the time
            // is that thread's, counted where it was spent, so it is kept apart as `JOB_WAIT`. Only S: a D wait
            // ends at an I/O's completion, whose interrupt names whichever thread it interrupted.
            let arg = |k: &str| match e.args.get(k) {
                Some(datasets::event::ArgValue::Int(v)) => u64::try_from(*v).ok(),
                _ => None,
            };
            let state = match (arg("waker_pid"), arg("waker_tid")) {
                (Some(p), Some(t))
                    if state.starts_with('S')
                        && (p, t) != key
                        && self.threads.contains_key(&(p, t)) =>
                {
                    JOB_WAIT.to_owned()
                }
                _ => state.split('@').next().unwrap_or(state).to_owned(),
            };
            let outside = e.dur_ns - self.in_calls(key, e.ts_ns, e.end_ns());
            if let Some(t) = self.threads.get_mut(&key) {
                *t.offcpu_outside_ns.entry(state).or_default() += outside;
            }
            return;
        }
        if e.cat == BLOCK && e.name.starts_with(DEVICE_PREFIX) {
            if let Some(row) = self.row_of(key, e.ts_ns, e.end_ns()) {
                self.device_requests[row] += 1;
            }
            return;
        }
        if !CALL_LAYERS.contains(&e.cat.as_str()) {
            return;
        }
        let Some(dir) = direction(op_name(&e.name)) else {
            return;
        };
        let (Some(offset), Some(len)) = (e.args.offset.filter(|o| *o >= 0), transferred(e)) else {
            return;
        };
        let offset = offset as u64;
        self.alignment.calls += 1;
        if !offset.is_multiple_of(ALIGNMENT_BYTES) || !len.is_multiple_of(ALIGNMENT_BYTES) {
            self.alignment.misaligned += 1;
            self.alignment.misaligned_ns += e.dur_ns;
            self.alignment.misaligned_bytes += len;
        } else {
            self.alignment.aligned_ns += e.dur_ns;
            self.alignment.aligned_bytes += len;
        }
        if dir != Direction::Read || len == 0 {
            return;
        }
        let Some(file) = self.strings.file_of_in(input, e) else {
            return;
        };
        if !self.reads.contains_key(file) {
            self.reads.insert(file.to_owned(), FileReads::default());
        }
        let f = self.reads.get_mut(file).expect("inserted above");
        f.bytes += len;
        f.time_ns += e.dur_ns;
        f.add(offset, len);
    }

    fn add_darshan(&mut self, e: &Event) {
        let rank = match e.args.get("rank") {
            Some(ArgValue::Int(r)) => *r,
            _ => -1,
        };
        let counters = e
            .args
            .other
            .iter()
            .filter_map(|(k, v)| match v {
                ArgValue::Int(i) => Some((k.to_string(), *i as f64)),
                ArgValue::Float(f) => Some((k.to_string(), *f)),
                _ => None,
            })
            .collect();
        self.darshan.push(DarshanRecord {
            module: e.name.to_string(),
            file: e.args.fname.clone(),
            rank,
            counters,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_reads_count_their_bytes_once() {
        let mut f = FileReads::default();
        for (s, l) in [(0, 100), (50, 100), (300, 10), (140, 170), (1000, 1)] {
            f.bytes += l;
            f.add(s, l);
        }
        assert_eq!(f.distinct(), 311);
        assert_eq!(f.reread(), 70);
    }
}
