//! One pass over the traces for what the feature matrix does not keep: each thread's time outside its I/O calls
//! (on-CPU, and off-CPU by state), what each thread did at each instant ([`JobScan::activities`], for the job's
//! wall-clock time), the byte ranges read from each file (the same bytes read again), offsets' alignment, and
//! Darshan's counter records.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use compact_str::CompactString;
use datasets::limits::{DiskStat, Limits};
use datasets::read::{ReadOptions, ReadStats};
use datasets::vocab::WokenIn;
use datasets::vocab::layer::{MM, PAGE_CACHE, READAHEAD, SYS};
use datasets::{ArgValue, Event};
use features::matrix::O_DSYNC;
use features::{FeatureKind, FeatureMatrix};

use crate::diagnose::thresholds::ALIGNMENT_BYTES;
use crate::pass::{Pass, Role, Seen};
use crate::summary::{Direction, each_event, transferred};

pub use crate::pass::{DARSHAN, DEVICE_PREFIX};
pub use datasets::vocab::layer::{BLOCK, SCHED};

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

/// What a thread did over an interval of its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    /// Inside a call: the matrix's row (the innermost one where calls nest).
    Call(usize),
    /// On-CPU outside its calls.
    OnCpu,
    /// Off-CPU outside its calls, in a state: the first letter of `offcpu_{state}` (`R`, `D`, `S`, `T`, `o` for
    /// `other`).
    Off(char),
    /// On-CPU outside its calls from a page fault to the wait for I/O that follows it: the fault reading its page in
    /// (a file read through its mapping), not the program's own work.
    PageIn,
    /// On-CPU outside its calls reclaiming memory (`mm` / `memcg_reclaim`, `direct_reclaim`): a memory cgroup's
    /// limit, or the machine's memory, made the thread free pages before it could add one.
    Reclaim,
    /// Asleep (S), in a call or not, until another thread of the job woke it, or runnable (R) while another thread
    /// of the job held its CPU: waiting for the job itself, which was working meanwhile.
    JobWait,
}

impl Activity {
    /// Whether a thread doing this holds the job up (in a call, on a CPU, waiting for one or for I/O), else it is
    /// idle: asleep outside the job's work.
    pub fn works(self) -> bool {
        matches!(
            self,
            Activity::Call(_)
                | Activity::OnCpu
                | Activity::PageIn
                | Activity::Reclaim
                | Activity::Off('R')
                | Activity::Off('D')
        )
    }
}

/// A thread's life as disjoint intervals in order: start, end, what it did.
pub type Life = Vec<(u64, u64, Activity)>;

/// `life` with the on-CPU time outside calls (a page-in's too) that a memory reclaim spans (`spans`, apart and by
/// start) marked
/// as [`Activity::Reclaim`].
fn reclaimed(life: Life, spans: &[(u64, u64)]) -> Life {
    if spans.is_empty() {
        return life;
    }
    let mut out = Vec::with_capacity(life.len());
    for (a, b, act) in life {
        if !matches!(act, Activity::OnCpu | Activity::PageIn) {
            out.push((a, b, act));
            continue;
        }
        let mut at = a;
        let from = spans.partition_point(|s| s.1 <= a);
        for &(s, e) in spans[from..].iter().take_while(|s| s.0 < b) {
            let (s, e) = (s.max(at), e.min(b));
            if e <= s {
                continue;
            }
            if s > at {
                out.push((at, s, act));
            }
            out.push((s, e, Activity::Reclaim));
            at = e;
        }
        if b > at {
            out.push((at, b, act));
        }
    }
    out
}

/// `life` with its on-CPU time outside calls from a page fault (`faults`, in order) to the end of its reading the page
/// in as [`Activity::PageIn`]: to a wait for I/O that follows the stretch's last fault at once, or to the end of the
/// device reads the thread itself issued (`reads`, by start) from the fault on, before its next one. A device that
/// serves a read while the CPU waits (a virtual machine's exit to its host) leaves the thread on its CPU, with no
/// wait to follow.
fn page_ins(life: Life, faults: &[u64], reads: &[(u64, u64)]) -> Life {
    if faults.is_empty() {
        return life;
    }
    let mut out = Vec::with_capacity(life.len());
    for (i, &(a, b, act)) in life.iter().enumerate() {
        if act != Activity::OnCpu {
            out.push((a, b, act));
            continue;
        }
        let waits_next = life
            .get(i + 1)
            .is_some_and(|n| n.0 == b && n.2 == Activity::Off('D'));
        let (lo, hi) = (
            faults.partition_point(|&f| f < a),
            faults.partition_point(|&f| f < b),
        );
        let mut at = a;
        for (j, &f) in faults[lo..hi].iter().enumerate() {
            let next = faults.get(lo + j + 1).copied().filter(|&n| n < b);
            let served = reads[reads.partition_point(|r| r.0 < f)..]
                .iter()
                .take_while(|r| r.0 < next.unwrap_or(b))
                .map(|r| r.1.min(b))
                .max();
            let end = match next {
                None if waits_next => Some(b),
                _ => served,
            };
            let start = f.max(at);
            if let Some(end) = end.filter(|&e| e > start) {
                if start > at {
                    out.push((at, start, Activity::OnCpu));
                }
                out.push((start, end, Activity::PageIn));
                at = end;
            }
        }
        if b > at {
            out.push((at, b, Activity::OnCpu));
        }
    }
    out
}

/// Walks every thread's life at once: `each(dt, open)` for every stretch of `dt` ns between two consecutive edges,
/// with what every thread alive then was doing (empty where none was).
pub fn sweep(lives: &[(Thread, Life)], mut each: impl FnMut(f64, &[Activity])) {
    // (instant, −1 closing before +1 opening at the same instant, activity).
    let mut edges: Vec<(u64, i32, Activity)> = Vec::new();
    for (_, life) in lives {
        for &(a, b, act) in life {
            edges.push((a, 1, act));
            edges.push((b, -1, act));
        }
    }
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    let mut open: Vec<Activity> = Vec::new();
    let mut prev: Option<u64> = None;
    for (at, step, act) in edges {
        if let Some(p) = prev.filter(|p| at > *p) {
            each((at - p) as f64, &open);
        }
        prev = Some(at);
        if step > 0 {
            open.push(act);
        } else if let Some(i) = open.iter().position(|a| *a == act) {
            open.swap_remove(i);
        }
    }
}

/// One off-CPU interval: start, end, state letter, and the thread it waited for: its waker (S) or the CPU's holder
/// (R).
type OffCpu = (u64, u64, char, Option<Thread>);

/// Whether an off-CPU interval of thread `key` in state `letter` waited for the job itself: asleep (S) until `other`
/// woke it, or runnable (R) while `other` held its CPU, `other` being another thread of the job (`of_job`). Not D: a
/// D wait ends at an I/O's completion, whose interrupt names whichever thread it interrupted.
fn waits_for_job(
    letter: char,
    other: Option<Thread>,
    key: Thread,
    of_job: impl Fn(&Thread) -> bool,
) -> bool {
    matches!(letter, 'S' | 'R') && other.is_some_and(|w| w != key && of_job(&w))
}

/// What was read from one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileReads {
    pub bytes: u64,
    pub time_ns: u64,
    /// Disjoint byte ranges read, start → end.
    ranges: BTreeMap<u64, u64>,
}

/// The latest-starting open interval that covers `at`, dropping the ones that ended before it on the way.
fn innermost<K: Ord + Copy>(open: &mut BTreeMap<K, u64>, at: u64) -> Option<K> {
    while let Some((k, end)) = open.last_key_value() {
        if *end > at {
            return Some(*k);
        }
        let k = *k;
        open.remove(&k);
    }
    None
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

/// A complete event, for its thread's life: its thread, its interval, and that interval again when its share
/// depends on the calls.
struct Step {
    key: Thread,
    ts: u64,
    end: u64,
    timed: Option<Timed>,
}

/// An interval whose share depends on the calls: an off-CPU interval (how much of it lies outside its thread's
/// calls) or a block request on the device (which call sent it).
#[derive(Clone, Debug)]
enum Timed {
    OffCpu {
        key: Thread,
        ts: u64,
        dur: u64,
        letter: char,
        other: Option<Thread>,
        /// `offcpu_{state}` without its `@...` detail.
        state: CompactString,
    },
    Device {
        key: Thread,
        ts: u64,
        end: u64,
    },
    /// A write to a file its process last opened with O_SYNC or O_DSYNC: it returns once its data is on the device.
    SyncedWrite {
        key: Thread,
        ts: u64,
        end: u64,
    },
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
    /// Whether the trace marks the wakings in an interrupt (`woken_in`: dc-trace's irq layer, which the header's
    /// `layers` names, or any wait so marked): without that, a wakeup in an interrupt names whichever task it
    /// interrupted.
    pub marks_interrupts: bool,
    /// Whether the trace follows the block layer (the header's `layers` names it): only then does a call without
    /// requests (`device_requests` 0) show that it sent none.
    pub traces_requests: bool,
    /// Per row of the matrix, the block requests its call sent to the device (`block_device_*` intervals inside
    /// it).
    pub device_requests: Vec<u32>,
    /// Per row of the matrix, whether it is a write that syncs its data (its file opened with O_SYNC or O_DSYNC).
    pub synced_writes: Vec<bool>,
    /// Per process, the files whose latest open in it asked for synchronous writes.
    sync_opens: HashMap<u64, HashSet<String>>,
    /// Per row of the matrix, the pages its call added to the page cache that the trace saw the cache let go of
    /// earlier (evicted, as a memory limit's reclaim does): pages read from the device again ([`Page`]).
    pub refaults: Vec<u32>,
    /// Per row of the matrix, the pages its call added to the page cache: a large folio's event counts each of its
    /// pages.
    pub pages_added: Vec<u32>,
    /// Pages read in again outside every call (page faults on mapped files), and all pages added there.
    pub refaults_outside_calls: u64,
    pub pages_added_outside_calls: u64,
    /// The job's block requests per device (`MAJ:MIN`), from its `block_device_*` events; `io_ticks_ms` unused.
    pub device_io: BTreeMap<String, DiskStat>,
    pub read: ReadStats,
    /// The limits dc-trace recorded ([`datasets::limits`]), per input, in file order.
    pub limits: Vec<(u32, Result<Limits, String>)>,
    /// Per input that dc-trace closed, the records its run took from the kernel (`dc_closing`'s `records`).
    pub records: BTreeMap<u32, u64>,
    /// Per input, its system calls' records (the `sys` layer's): what the tracer's calibration prices
    /// ([`crate::diagnose::limits::tracer_ns`]).
    pub call_records: BTreeMap<u32, u64>,
    /// Per thread, its calls' merged intervals.
    calls: HashMap<(u64, u64), Vec<(u64, u64)>>,
    /// Per thread, its rows: (start, end, row), by start.
    rows: HashMap<Thread, Vec<(u64, u64, usize)>>,
    /// Per thread with calls or off-CPU intervals, its first and last instant.
    lives: HashMap<Thread, (u64, u64)>,
    /// Per thread, its off-CPU intervals.
    offcpu: HashMap<Thread, Vec<OffCpu>>,
    /// Per thread, the instants its user code faulted ([`Role::Fault`]), in order once the scan is settled.
    faults: HashMap<Thread, Vec<u64>>,
    /// Per thread, the device reads it issued ([`Role::Device`]): start and end, by start once the scan is settled.
    device_reads: HashMap<Thread, Vec<(u64, u64)>>,
    /// Per thread, its memory reclaims (`mm` intervals whose name says reclaim): start and end, by start and apart
    /// once the scan is settled.
    reclaims: HashMap<Thread, Vec<(u64, u64)>>,
    /// The name of each task that woke a traced thread, as the sched layer gave it.
    wakers: HashMap<Thread, String>,
    /// Pages the cache let go of, not added back yet.
    evicted: HashSet<Page>,
    /// Each device (`s_dev`) met, by its number in [`Page`].
    devices: HashMap<CompactString, u32>,
    /// Where each folio was added, until the calls are known: thread, instant, its pages, and how many of them were
    /// read again.
    added_at: Vec<(Thread, u64, u32, u32)>,
}

/// A page of a file: its device (numbered in [`JobScan::devices`]), inode and index in the file.
type Page = (u32, u64, u64);

/// Past any kernel's largest page cache folio (`MAX_PAGECACHE_ORDER`): an order above it is not a folio's.
const MAX_FOLIO_ORDER: u64 = 20;

impl JobScan {
    /// Reads the traces once; `matrix` holds their I/O calls (its rows) for the time between them.
    pub fn run(
        paths: &[PathBuf],
        opts: ReadOptions,
        matrix: &FeatureMatrix,
        mut progress: impl FnMut(&ReadStats),
    ) -> Result<JobScan, datasets::Error> {
        let (mut s, mut pass) = (JobScan::with_calls(matrix), Pass::default());
        s.read = each_event(
            paths,
            opts,
            |input, e| s.add(&pass.see(input, e)),
            &mut progress,
        )?;
        s.settle();
        Ok(s)
    }

    /// A scan that knows the calls of `matrix`, before any event.
    pub fn with_calls(matrix: &FeatureMatrix) -> JobScan {
        let mut s = JobScan {
            device_requests: vec![0; matrix.n_rows()],
            synced_writes: vec![false; matrix.n_rows()],
            refaults: vec![0; matrix.n_rows()],
            pages_added: vec![0; matrix.n_rows()],
            ..Default::default()
        };
        for row in 0..matrix.n_rows() {
            let key = (matrix.pid[row], matrix.tid[row]);
            let (ts, dur) = (matrix.ts_ns[row], matrix.dur_ns[row]);
            s.calls.entry(key).or_default().push((ts, ts + dur));
            s.rows.entry(key).or_default().push((ts, ts + dur, row));
            let life = s.lives.entry(key).or_insert((ts, ts + dur));
            *life = (life.0.min(ts), life.1.max(ts + dur));
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

    /// Per row of the matrix, the time its call spent in state `letter` waiting for the job itself
    /// ([`waits_for_job`]): `S` asleep until another of the job's threads woke it (a write into a pipe its reader
    /// empties), `R` runnable while another held the CPU. The job spends that time anyway, in the other thread.
    pub fn job_wait_in_rows(&self, letter: char) -> HashMap<usize, f64> {
        self.wait_in_rows(letter, true)
    }

    /// Per row of the matrix, the time its call spent in state `letter`, each wait counted once, in the innermost
    /// row around it; only the waits for the job itself when `job_only`.
    pub fn wait_in_rows(&self, letter: char, job_only: bool) -> HashMap<usize, f64> {
        let mut out: HashMap<usize, f64> = HashMap::new();
        for (key, offs) in &self.offcpu {
            let Some(rows) = self.rows.get(key) else {
                continue;
            };
            for &(a, b, state, other) in offs.iter().filter(|o| o.2 == letter) {
                if job_only && !waits_for_job(state, other, *key, |w| self.lives.contains_key(w)) {
                    continue;
                }
                // The innermost row around the wait is the latest to start that has not ended.
                let started = rows.partition_point(|r| r.0 <= a);
                if let Some(&(_, end, row)) = rows[..started].iter().rev().find(|r| r.1 > a) {
                    *out.entry(row).or_default() += (b.min(end) - a) as f64;
                }
            }
        }
        out
    }

    /// The calls' sleeps (D and S, inside a row) that a task outside the job ended, by the task's name (a kernel
    /// thread such as jbd2, or another program); kworkers are one name. A wakeup in an interrupt is no task's.
    pub fn sleeps_ended_outside(&self) -> BTreeMap<String, f64> {
        let mut outside = BTreeMap::new();
        for (key, offs) in &self.offcpu {
            let Some(rows) = self.rows.get(key) else {
                continue;
            };
            for &(a, b, _, other) in offs.iter().filter(|o| matches!(o.2, 'D' | 'S')) {
                let started = rows.partition_point(|r| r.0 <= a);
                let Some(&(_, end, _)) = rows[..started].iter().rev().find(|r| r.1 > a) else {
                    continue;
                };
                if let Some(w) = other.filter(|w| w != key && !self.lives.contains_key(w)) {
                    let name = self.wakers.get(&w).map_or("?", String::as_str);
                    let name = if name.starts_with("kworker/") {
                        "kworker"
                    } else {
                        name
                    };
                    *outside.entry(name.to_owned()).or_default() += (b.min(end) - a) as f64;
                }
            }
        }
        outside
    }

    /// What each thread with calls or off-CPU intervals did from its first instant to its last, as disjoint
    /// intervals in order, by thread. Time neither in a call nor off-CPU is on-CPU; an off-CPU interval in a call is
    /// the call's, unless it waits for the job. A sleep counts as waiting for the job when the sched layer names a
    /// waker that is another thread of the job; sched_waking runs in the waker's context, and a timer's or an
    /// interrupt's wakeup names the thread it interrupted, so a timer sleep can count as such a wait too. A wait for a
    /// CPU counts as one when the sched layer names the thread that held the CPU last, and it is of the job.
    pub fn activities(&self) -> Vec<(Thread, Life)> {
        let mut keys: Vec<Thread> = self.lives.keys().copied().collect();
        keys.sort_unstable();
        keys.into_iter()
            .map(|key| {
                let (first, last) = self.lives[&key];
                let rows = self.rows.get(&key).map(Vec::as_slice).unwrap_or(&[]);
                let mut offs = self.offcpu.get(&key).cloned().unwrap_or_default();
                offs.sort_unstable_by_key(|o| (o.0, o.1));
                let mut cuts: Vec<u64> = vec![first, last];
                cuts.extend(rows.iter().flat_map(|(a, b, _)| [*a, *b]));
                cuts.extend(offs.iter().flat_map(|(a, b, ..)| [*a, *b]));
                cuts.sort_unstable();
                cuts.dedup();
                // Open intervals by start, with their end: the innermost covering one is the latest to start
                // whose end is still ahead.
                let (mut open_rows, mut open_offs) = (BTreeMap::new(), BTreeMap::new());
                let (mut next_row, mut next_off) = (0, 0);
                let mut out: Life = Vec::new();
                for w in cuts.windows(2) {
                    let (a, b) = (w[0], w[1]);
                    while next_row < rows.len() && rows[next_row].0 <= a {
                        let (s, e, r) = rows[next_row];
                        open_rows.insert((s, r), e);
                        next_row += 1;
                    }
                    while next_off < offs.len() && offs[next_off].0 <= a {
                        open_offs.insert((offs[next_off].0, next_off), offs[next_off].1);
                        next_off += 1;
                    }
                    let row = innermost(&mut open_rows, a).map(|(_, r)| r);
                    let off = innermost(&mut open_offs, a).map(|(_, i)| offs[i]);
                    let act = match (off, row) {
                        (Some((.., state, other)), _)
                            if waits_for_job(state, other, key, |w| self.lives.contains_key(w)) =>
                        {
                            Activity::JobWait
                        }
                        (_, Some(r)) => Activity::Call(r),
                        (Some((.., state, _)), None) => Activity::Off(state),
                        (None, None) => Activity::OnCpu,
                    };
                    match out.last_mut() {
                        Some(l) if l.2 == act && l.1 == a => l.1 = b,
                        _ => out.push((a, b, act)),
                    }
                }
                let faults = self.faults.get(&key).map_or(&[][..], Vec::as_slice);
                let reads = self.device_reads.get(&key).map_or(&[][..], Vec::as_slice);
                let reclaims = self.reclaims.get(&key).map_or(&[][..], Vec::as_slice);
                (key, reclaimed(page_ins(out, faults, reads), reclaims))
            })
            .collect()
    }

    /// Takes one event into account.
    pub fn add(&mut self, seen: &Seen) {
        if let Some(step) = self.take(seen) {
            if let Some(t) = self.threads.get_mut(&step.key) {
                t.first_ns = t.first_ns.min(step.ts);
                t.last_ns = t.last_ns.max(step.end);
            }
            if let Some(life) = self.lives.get_mut(&step.key) {
                *life = (life.0.min(step.ts), life.1.max(step.end));
            }
            if let Some(timed) = step.timed {
                self.place(timed);
            }
        }
    }

    /// What of an event needs no calls, by its kind's role: limits, Darshan's records, and the reads and alignment of
    /// the data calls. A complete event is given back, for its thread's life, with its interval when that needs the
    /// calls.
    fn take(&mut self, seen: &Seen) -> Option<Step> {
        let e = seen.e;
        if seen.kind.cat == SYS {
            *self.call_records.entry(seen.input).or_default() += 1;
        }
        if seen.kind.cat == MM && seen.kind.name.contains("reclaim") && e.dur_ns > 0 {
            (self.reclaims.entry((e.pid, e.tid)).or_default()).push((e.ts_ns, e.ts_ns + e.dur_ns));
        }
        match &seen.kind.role {
            Role::Limits => {
                if let Some(l) = Limits::from_event(e) {
                    self.limits
                        .push((seen.input, l.map_err(|err| err.to_string())));
                }
                return None;
            }
            Role::Closing => {
                if let Some(ArgValue::Int(n)) = e.args.get("records") {
                    *self.records.entry(seen.input).or_default() += u64::try_from(*n).unwrap_or(0);
                }
                return None;
            }
            Role::Darshan => {
                self.add_darshan(e);
                return None;
            }
            Role::Page { added } => {
                self.add_page(e, *added);
                return None;
            }
            Role::Fault => {
                self.faults.entry((e.pid, e.tid)).or_default().push(e.ts_ns);
                return None;
            }
            _ => {}
        }
        if seen.kind.header
            && let Some(ArgValue::Str(layers)) = e.args.get("layers")
        {
            self.marks_interrupts |= layers.split(',').any(|l| l == "irq");
            self.traces_requests |= layers.split(',').any(|l| l == BLOCK);
        }
        let timed = match &seen.kind.role {
            Role::Limits
            | Role::Closing
            | Role::Darshan
            | Role::Page { .. }
            | Role::Fault
            | Role::Other => {
                return None;
            }
            // Asleep until another thread of the job woke it (a shell waiting for its child, a join), or runnable
            // while another thread of the job held the CPU (a server whose client runs on its CPU): the time is
            // that thread's, counted where it was spent, so it is kept apart as `JOB_WAIT` ([`waits_for_job`]).
            Role::OffCpu { letter, state } => {
                let arg = |k: &str| match e.args.get(k) {
                    Some(ArgValue::Int(v)) => u64::try_from(*v).ok(),
                    _ => None,
                };
                let (pid, tid) = match letter {
                    'R' => ("held_by_pid", "held_by_tid"),
                    _ => ("waker_pid", "waker_tid"),
                };
                let mut other = arg(pid).zip(arg(tid));
                // A waking in an interrupt names the task it interrupted, which did nothing for this one: the
                // device's completion or the timer did.
                if let Some(ArgValue::Str(c)) = e.args.get("woken_in") {
                    self.marks_interrupts = true;
                    if *letter != 'R'
                        && !WokenIn::parse(c).is_some_and(WokenIn::is_the_interrupted_tasks)
                    {
                        other = None;
                    }
                }
                if *letter != 'R'
                    && let (Some(w), Some(ArgValue::Str(comm))) = (other, e.args.get("waker_comm"))
                {
                    self.wakers.entry(w).or_insert_with(|| comm.to_string());
                }
                Some(Timed::OffCpu {
                    key: (e.pid, e.tid),
                    ts: e.ts_ns,
                    dur: e.dur_ns,
                    letter: *letter,
                    other,
                    state: state.clone(),
                })
            }
            Role::Device => {
                self.add_request(e);
                if e.name.strip_prefix(DEVICE_PREFIX) == Some("_read") {
                    (self.device_reads.entry((e.pid, e.tid)).or_default())
                        .push((e.ts_ns, e.end_ns()));
                }
                Some(Timed::Device {
                    key: (e.pid, e.tid),
                    ts: e.ts_ns,
                    end: e.end_ns(),
                })
            }
            Role::Data(dir) => {
                self.add_data(seen, *dir);
                self.synced(seen, *dir)
            }
            Role::Span => {
                self.add_open(seen);
                None
            }
        };
        Some(Step {
            key: (e.pid, e.tid),
            ts: e.ts_ns,
            end: e.end_ns(),
            timed,
        })
    }

    /// An interval whose share depends on the calls.
    fn place(&mut self, timed: Timed) {
        match timed {
            Timed::OffCpu {
                key,
                ts,
                dur,
                letter,
                other,
                state,
            } => {
                let end = ts.saturating_add(dur);
                self.has_sched = true;
                let life = self.lives.entry(key).or_insert((ts, end));
                *life = (life.0.min(ts), life.1.max(end));
                self.offcpu
                    .entry(key)
                    .or_default()
                    .push((ts, end, letter, other));
                let state = if waits_for_job(letter, other, key, |t| self.threads.contains_key(t)) {
                    JOB_WAIT.to_owned()
                } else {
                    state.into()
                };
                let outside = dur - self.in_calls(key, ts, end);
                if let Some(t) = self.threads.get_mut(&key) {
                    *t.offcpu_outside_ns.entry(state).or_default() += outside;
                }
            }
            Timed::Device { key, ts, end } => {
                if let Some(row) = self.row_of(key, ts, end) {
                    self.device_requests[row] += 1;
                }
            }
            Timed::SyncedWrite { key, ts, end } => {
                if let Some(row) = self.row_of(key, ts, end) {
                    self.synced_writes[row] = true;
                }
            }
        }
    }

    /// An open of a file: whether it asks for synchronous writes, for the writes that follow in its process.
    fn add_open(&mut self, seen: &Seen) {
        let e = seen.e;
        if !datasets::vocab::op::opens(&seen.kind.op) {
            return;
        }
        let flags = match e.args.get("flags") {
            Some(ArgValue::Int(f)) => *f,
            _ => return,
        };
        let Some(file) = seen.strings.file_of_in(seen.input, e) else {
            return;
        };
        if flags & O_DSYNC != 0 {
            (self.sync_opens.entry(e.pid).or_default()).insert(file.to_owned());
        } else if let Some(files) = self.sync_opens.get_mut(&e.pid) {
            files.remove(file);
        }
    }

    /// A write of a call layer to a file its process's latest open asked to sync.
    fn synced(&self, seen: &Seen, dir: Direction) -> Option<Timed> {
        let e = seen.e;
        if dir != Direction::Write || self.sync_opens.is_empty() {
            return None;
        }
        let file = seen.strings.file_of_in(seen.input, e)?;
        (self.sync_opens.get(&e.pid))
            .is_some_and(|files| files.contains(file))
            .then_some(Timed::SyncedWrite {
                key: (e.pid, e.tid),
                ts: e.ts_ns,
                end: e.end_ns(),
            })
    }

    /// A folio added to the page cache or let go of: `1 << order` pages from `index` (one page where the kernel gives
    /// no order). A page added after the trace saw it let go of was read again: its call (or the job, outside every
    /// call) counts a refault. Pages are kept one by one, since a range may come back in folios of another size. The
    /// kernel's own refault counter is per cgroup and says nothing of which call waited.
    fn add_page(&mut self, e: &Event, added: bool) {
        let int = |k: &str| match e.args.get(k) {
            Some(ArgValue::Int(v)) => u64::try_from(*v).ok(),
            _ => None,
        };
        let pages = 1u64 << int("order").unwrap_or(0).min(MAX_FOLIO_ORDER);
        let (Some(ArgValue::Str(dev)), Some(ino), Some(index)) =
            (e.args.get("s_dev"), int("i_ino"), int("index"))
        else {
            // A page of no known file was added all the same; it cannot be told read again.
            if added {
                self.added_at
                    .push(((e.pid, e.tid), e.ts_ns, pages as u32, 0));
            }
            return;
        };
        let n = self.devices.len() as u32;
        let dev = match self.devices.get(dev.as_str()) {
            Some(d) => *d,
            None => *self.devices.entry(dev.as_str().into()).or_insert(n),
        };
        let range = index..index.saturating_add(pages);
        if added {
            let again = range
                .filter(|&i| self.evicted.remove(&(dev, ino, i)))
                .count();
            self.added_at
                .push(((e.pid, e.tid), e.ts_ns, pages as u32, again as u32));
        } else {
            self.evicted.extend(range.map(|i| (dev, ino, i)));
        }
    }

    /// Per row of `m` (the matrix whose calls this scan knows), its waits for pages (the exclusive time of the
    /// page-cache layers and of the block layer) times the share of the page-cache additions of its group in `groups`
    /// (its kind of call) that the page cache had let go of before ([`JobScan::refaults`]). The share is the group's,
    /// not the row's: a call often waits for pages an earlier call's readahead added, and adds none itself.
    pub fn refault_waits<'a>(
        &self,
        m: &FeatureMatrix,
        groups: impl IntoIterator<Item = &'a [usize]>,
    ) -> Vec<f64> {
        let mut out = vec![0.0; m.n_rows()];
        if !self.refaults.iter().any(|r| *r > 0) {
            return out;
        }
        for c in &m.features {
            let page_layer = [PAGE_CACHE, READAHEAD, BLOCK].contains(&c.layer.as_str());
            if c.kind == FeatureKind::ExclusiveNs && page_layer {
                for (o, v) in out.iter_mut().zip(&c.values) {
                    *o += v;
                }
            }
        }
        let mut share = vec![0.0; out.len()];
        for rows in groups {
            let count = |v: &[u32]| -> f64 { rows.iter().map(|&r| f64::from(v[r])).sum() };
            let added = count(&self.pages_added);
            if added > 0.0 {
                let s = (count(&self.refaults) / added).min(1.0);
                rows.iter().for_each(|&r| share[r] = s);
            }
        }
        for (o, s) in out.iter_mut().zip(share) {
            *o *= s;
        }
        out
    }

    /// Per row of the matrix, its waits for I/O (its `offcpu_D` intervals) when it sent no request to a device: the
    /// call waited for I/O that another task sent, writeback's or another program's. All zero unless the trace
    /// follows the block layer ([`JobScan::traces_requests`]).
    pub fn waits_for_others_io(&self, m: &FeatureMatrix) -> Vec<f64> {
        let mut out = vec![0.0; m.n_rows()];
        if !self.traces_requests {
            return out;
        }
        for c in (m.features.iter())
            .filter(|c| c.kind == FeatureKind::TimeNs && c.name.starts_with("offcpu_D"))
        {
            for (o, v) in out.iter_mut().zip(&c.values) {
                *o += v;
            }
        }
        for (o, sent) in out.iter_mut().zip(&self.device_requests) {
            if *sent > 0 {
                *o = 0.0;
            }
        }
        out
    }

    /// What needs every event and the calls: the pages read again placed ([`JobScan::place_refaults`]), and each
    /// thread's faults in order, once, for every [`JobScan::activities`].
    fn settle(&mut self) {
        self.place_refaults();
        for faults in self.faults.values_mut() {
            faults.sort_unstable();
        }
        for reads in self.device_reads.values_mut() {
            reads.sort_unstable();
        }
        // A reclaim nested in another (a cgroup's inside a direct one) is one interval: `reclaimed` needs them apart.
        for spans in self.reclaims.values_mut() {
            spans.sort_unstable();
            spans.dedup_by(|next, prev| {
                let overlaps = next.0 <= prev.1;
                if overlaps {
                    prev.1 = prev.1.max(next.1);
                }
                overlaps
            });
        }
    }

    /// Counts each page read again for the call it was read in, once the calls are known, and outside every call
    /// the pages added and those read again.
    fn place_refaults(&mut self) {
        for (key, ts, pages, again) in std::mem::take(&mut self.added_at) {
            match self.row_of(key, ts, ts) {
                Some(row) => {
                    self.refaults[row] += again;
                    self.pages_added[row] += pages;
                }
                None => {
                    self.pages_added_outside_calls += u64::from(pages);
                    self.refaults_outside_calls += u64::from(again);
                }
            }
        }
    }

    /// A block request on its device, by direction: `block_device_read` or `_write` with `args.dev` and `size`.
    fn add_request(&mut self, e: &Event) {
        let Some(ArgValue::Str(dev)) = e.args.get("dev") else {
            return;
        };
        let bytes = e.args.size.and_then(|b| u64::try_from(b).ok()).unwrap_or(0);
        // A trace's requests go to a device or two: the key is copied only for a device not seen yet.
        if !self.device_io.contains_key(dev.as_str()) {
            self.device_io.insert(dev.clone(), DiskStat::default());
        }
        let io = self
            .device_io
            .get_mut(dev.as_str())
            .expect("inserted above");
        match e.name.strip_prefix(DEVICE_PREFIX) {
            Some("_read") => (io.reads, io.read_bytes) = (io.reads + 1, io.read_bytes + bytes),
            Some("_write") => (io.writes, io.write_bytes) = (io.writes + 1, io.write_bytes + bytes),
            _ => {}
        }
    }

    /// A data call's offset and length: its alignment, and for a read, the bytes it read of its file.
    fn add_data(&mut self, seen: &Seen, dir: Direction) {
        let e = seen.e;
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
        let Some(file) = seen.strings.file_of_in(seen.input, e) else {
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

/// One thread's complete events: from its first to its last, and from its first off-CPU interval on (the life of a
/// thread without calls starts there).
#[derive(Clone, Copy)]
struct Spans {
    key: Thread,
    all: (u64, u64),
    since_offcpu: Option<(u64, u64)>,
}

fn widen(span: &mut (u64, u64), ts: u64, end: u64) {
    *span = (span.0.min(ts), span.1.max(end));
}

/// A [`JobScan`] read before the calls are known, in the same pass as the calls' features: what needs the calls (the
/// off-CPU intervals and the device's requests) is kept, in order, and placed once they are
/// ([`PendingScan::finish`]). The result is the scan [`JobScan::run`] gives.
#[derive(Default)]
pub struct PendingScan {
    scan: JobScan,
    spans: Vec<Spans>,
    /// Thread → its index in `spans`; the last one met is looked up first, events come in runs of one thread.
    index: HashMap<Thread, usize, foldhash::fast::RandomState>,
    last: Option<(Thread, usize)>,
    timed: Vec<Timed>,
}

impl PendingScan {
    /// Takes one event into account.
    pub fn add(&mut self, seen: &Seen) {
        let Some(step) = self.scan.take(seen) else {
            return;
        };
        let (key, ts, end) = (step.key, step.ts, step.end);
        let i = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let i = *self.index.entry(key).or_insert_with(|| {
                    self.spans.push(Spans {
                        key,
                        all: (ts, end),
                        since_offcpu: None,
                    });
                    self.spans.len() - 1
                });
                self.last = Some((key, i));
                i
            }
        };
        let spans = &mut self.spans[i];
        widen(&mut spans.all, ts, end);
        if let Some(since) = &mut spans.since_offcpu {
            widen(since, ts, end);
        }
        if let Some(timed) = step.timed {
            if matches!(timed, Timed::OffCpu { .. }) && spans.since_offcpu.is_none() {
                spans.since_offcpu = Some((ts, end));
            }
            self.timed.push(timed);
        }
    }

    /// The scan, now that `matrix` holds the calls; `read` is what the pass read.
    pub fn finish(self, matrix: &FeatureMatrix, read: ReadStats) -> JobScan {
        // Every field named, so that a new one is carried over or rebuilt by choice.
        let JobScan {
            reads,
            alignment,
            darshan,
            limits,
            records,
            call_records,
            device_io,
            marks_interrupts,
            traces_requests,
            wakers,
            added_at,
            faults,
            device_reads,
            reclaims,
            // Rebuilt from the calls, placed below, or needed only while the events are read.
            threads: _,
            has_sched: _,
            device_requests: _,
            synced_writes: _,
            sync_opens: _,
            refaults: _,
            pages_added: _,
            refaults_outside_calls: _,
            pages_added_outside_calls: _,
            read: _,
            calls: _,
            rows: _,
            lives: _,
            offcpu: _,
            evicted: _,
            devices: _,
        } = self.scan;
        let mut s = JobScan {
            reads,
            alignment,
            darshan,
            limits,
            records,
            call_records,
            device_io,
            marks_interrupts,
            traces_requests,
            wakers,
            added_at,
            faults,
            device_reads,
            reclaims,
            ..JobScan::with_calls(matrix)
        };
        s.settle();
        s.read = read;
        for spans in &self.spans {
            let (ts, end) = spans.all;
            if let Some(t) = s.threads.get_mut(&spans.key) {
                t.first_ns = t.first_ns.min(ts);
                t.last_ns = t.last_ns.max(end);
            }
            if let Some(life) = s.lives.get_mut(&spans.key) {
                widen(life, ts, end);
            }
        }
        for timed in self.timed {
            s.place(timed);
        }
        for spans in self.spans {
            if !s.threads.contains_key(&spans.key)
                && let Some(since) = spans.since_offcpu
            {
                s.lives.insert(spans.key, since);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four reads of one kind: the first added two pages the cache had let go of, and read ahead two more that
    /// the second waited for; the last two added fresh pages. Half the kind's pages were read again, so half of
    /// every read's waits for pages are the refaults', the second's too, which added none; a `vfs` column is no
    /// wait for a page, and a row of no kind has no share.
    fn column(
        layer: &str,
        name: &str,
        kind: FeatureKind,
        values: Vec<f64>,
    ) -> features::matrix::FeatureColumn {
        features::matrix::FeatureColumn {
            column: features::matrix::FeatureColumn::column_name(layer, name, kind),
            layer: layer.into(),
            name: name.into(),
            kind,
            values,
        }
    }

    /// Calls of `op`, one thread's, one every 10 ns, with `features` (whose length is the number of calls).
    fn calls(op: &str, features: Vec<features::matrix::FeatureColumn>) -> FeatureMatrix {
        let n = features[0].values.len();
        FeatureMatrix {
            op: vec![op.into(); n],
            pid: vec![1; n],
            tid: vec![1; n],
            ts_ns: (0..n as u64).map(|i| i * 10).collect(),
            dur_ns: vec![8; n],
            file: vec![Some("/data/db".into()); n],
            size: vec![Some(4096); n],
            bandwidth_mibs: vec![None; n],
            direct: vec![Some(false); n],
            sequential: vec![None; n],
            run: vec![None; n],
            thread: vec![None; n],
            process: vec![None; n],
            self_ns: vec![1; n],
            features,
        }
    }

    /// A thread on its CPU from 0 to 100 reclaimed memory from 20 to 30 and from 90 to 120, across a page-in from 80
    /// to 100 and into a call: the reclaims outside the call are `Reclaim`, the rest keeps its activity.
    #[test]
    fn reclaims_outside_calls_are_their_own_activity() {
        let life = vec![
            (0, 80, Activity::OnCpu),
            (80, 100, Activity::PageIn),
            (100, 150, Activity::Call(0)),
        ];
        assert_eq!(
            reclaimed(life.clone(), &[(20, 30), (90, 120)]),
            [
                (0, 20, Activity::OnCpu),
                (20, 30, Activity::Reclaim),
                (30, 80, Activity::OnCpu),
                (80, 90, Activity::PageIn),
                (90, 100, Activity::Reclaim),
                (100, 150, Activity::Call(0)),
            ]
        );
        assert_eq!(reclaimed(life.clone(), &[]), life);
        assert!(Activity::Reclaim.works());
        let mut scan = JobScan::default();
        scan.reclaims
            .insert((1, 1), vec![(50, 60), (10, 40), (20, 30), (40, 45)]);
        scan.settle();
        assert_eq!(scan.reclaims[&(1, 1)], [(10, 45), (50, 60)]);
    }

    /// Three opens waited for I/O: the first and the third sent no request (a directory block under writeback), the
    /// second read its block itself. A wait's stack frame and on-CPU time are no waits. Without the block layer
    /// traced, no call is known to have sent nothing.
    #[test]
    fn the_waits_of_calls_that_sent_no_request_are_for_others_io() {
        let time = |layer: &str, name: &str, values: Vec<f64>| {
            column(layer, name, FeatureKind::TimeNs, values)
        };
        let m = calls(
            "openat",
            vec![
                time("ext4", "offcpu_D@__ext4_find_entry", vec![5.0, 7.0, 0.0]),
                time(SCHED, "offcpu_D", vec![1.0, 0.0, 2.0]),
                time("ext4", "offcpu@__ext4_find_entry", vec![5.0, 7.0, 0.0]),
                time("ext4", "oncpu@ext4_lookup", vec![3.0; 3]),
            ],
        );
        let scan = JobScan {
            traces_requests: true,
            device_requests: vec![0, 1, 0],
            ..JobScan::default()
        };
        assert_eq!(scan.waits_for_others_io(&m), [6.0, 0.0, 2.0]);
        let untraced = JobScan {
            traces_requests: false,
            ..scan
        };
        assert_eq!(untraced.waits_for_others_io(&m), [0.0; 3]);
    }

    #[test]
    fn a_kinds_share_of_pages_read_again_prices_each_of_its_reads_waits() {
        let n = 5;
        let m = calls(
            "read",
            vec![
                column(
                    PAGE_CACHE,
                    "",
                    FeatureKind::ExclusiveNs,
                    vec![4.0, 6.0, 2.0, 2.0, 8.0],
                ),
                column(
                    BLOCK,
                    "",
                    FeatureKind::ExclusiveNs,
                    vec![2.0, 0.0, 0.0, 2.0, 0.0],
                ),
                column("vfs", "", FeatureKind::ExclusiveNs, vec![5.0; n]),
            ],
        );
        let scan = JobScan {
            refaults: vec![4, 0, 0, 0, 3],
            pages_added: vec![4, 0, 2, 2, 3],
            ..JobScan::default()
        };
        let rows = [0usize, 1, 2, 3];
        assert_eq!(
            scan.refault_waits(&m, [&rows[..]]),
            [3.0, 3.0, 1.0, 2.0, 0.0]
        );
        let none = JobScan {
            refaults: vec![0; n],
            ..scan
        };
        assert_eq!(none.refault_waits(&m, [&rows[..]]), [0.0; 5]);
    }

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

    /// Python reading through a mapping: it faults at 12 and 40, each time in the middle of its own work, and the
    /// first fault waits for its page from 20. The CPU time from 12 to 20 is the fault's; the second fault waits for
    /// nothing (its page was cached), and a wait in a call is the call's.
    #[test]
    fn on_cpu_time_from_a_fault_to_its_wait_is_the_page_in() {
        use Activity::{Call, OnCpu, PageIn};
        let life = vec![
            (0, 20, OnCpu),
            (20, 30, Activity::Off('D')),
            (30, 50, OnCpu),
            (50, 60, Call(0)),
            (60, 70, Activity::Off('D')),
        ];
        assert_eq!(
            page_ins(life.clone(), &[12, 40, 55], &[]),
            [
                (0, 12, OnCpu),
                (12, 20, PageIn),
                (20, 30, Activity::Off('D')),
                (30, 50, OnCpu),
                (50, 60, Call(0)),
                (60, 70, Activity::Off('D')),
            ]
        );
        assert_eq!(page_ins(life.clone(), &[], &[]), life);
    }

    /// The same on a device that serves a read while the CPU waits: no wait follows either fault, but each issued reads
    /// of its own (12–30; 52–70 and 75–80), and the time to the end of the last is the page-in.
    #[test]
    fn on_cpu_time_from_a_fault_to_the_end_of_its_own_read_is_the_page_in() {
        use Activity::{Call, OnCpu, PageIn};
        let life = vec![(0, 100, OnCpu), (100, 110, Call(0))];
        assert_eq!(
            page_ins(life.clone(), &[10, 50], &[(12, 30), (52, 70), (75, 80)]),
            [
                (0, 10, OnCpu),
                (10, 30, PageIn),
                (30, 50, OnCpu),
                (50, 80, PageIn),
                (80, 100, OnCpu),
                (100, 110, Call(0)),
            ]
        );
    }

    /// A folio of `1 << order` pages from `index` of inode 5 on 8:0, added or let go of at `ts`.
    fn folio(added: bool, ts: u64, index: i64, order: Option<i64>) -> Event {
        let name = if added {
            "mm_filemap_add_to_page_cache"
        } else {
            "mm_filemap_delete_from_page_cache"
        };
        let mut e = Event::new(name, PAGE_CACHE, datasets::Phase::Instant);
        (e.pid, e.tid, e.ts_ns) = (1, 1, ts);
        e.args.other = vec![
            ("s_dev".into(), ArgValue::Str("8:0".into())),
            ("i_ino".into(), ArgValue::Int(5)),
            ("index".into(), ArgValue::Int(index)),
        ];
        if let Some(o) = order {
            e.args.other.push(("order".into(), ArgValue::Int(o)));
        }
        e
    }

    /// The cache lets go of a 16-page folio at 0 and a 4-page one at 32; the job reads back page 3 alone, a 4-page
    /// folio at 8, a 64-page one at 0 (which holds the 11 pages of the first still let go of, and the second), and
    /// a page of a kernel that gives no order. Each page counts once, whatever the folio it came back in.
    #[test]
    fn a_large_folio_counts_each_of_its_pages_added_and_read_again() {
        let mut s = JobScan::default();
        s.add_page(&folio(false, 1, 0, Some(4)), false);
        s.add_page(&folio(false, 2, 32, Some(2)), false);
        s.add_page(&folio(true, 3, 3, Some(0)), true);
        s.add_page(&folio(true, 4, 8, Some(2)), true);
        s.add_page(&folio(true, 5, 0, Some(6)), true);
        s.add_page(&folio(true, 6, 100, None), true);
        s.place_refaults();
        assert_eq!(
            (s.pages_added_outside_calls, s.refaults_outside_calls),
            (1 + 4 + 64 + 1, 1 + 4 + (16 - 1 - 4) + 4)
        );
        assert!(s.evicted.is_empty());
    }
}
