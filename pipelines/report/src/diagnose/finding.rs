//! A finding and its parts (why, what it concerns, what it claims and would gain), and their order: the leaf that
//! every rule module ([`super::layers`], [`super::patterns`], [`super::darshan`], [`super::limits`]) fills and
//! [`super::findings`] gathers.

use std::collections::{BTreeMap, HashMap};

use datasets::vocab::layer::APP as APP_LAYER;
use features::FeatureMatrix;
use serde::{Deserialize, Serialize};

use crate::diagnose::kinds::Kind;
use crate::diagnose::ledger::{Gain, GainMethod};

/// The evidence key under which a pattern records the time of a layer's reason inside its calls
/// (`cause:block/throttled_above_device_ns`).
pub fn cause_key(layer: &str, reason: Reason) -> String {
    format!("cause:{layer}/{}_ns", reason.slug())
}

/// The layer and reason of a [`cause_key`], if `key` is one.
pub fn parse_cause_key(key: &str) -> Option<(&str, Reason)> {
    let (layer, slug) = key
        .strip_prefix("cause:")?
        .strip_suffix("_ns")?
        .split_once('/')?;
    Some((layer, Reason::from_slug(slug)?))
}

/// Why time was spent: a stable slug in the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    DeviceBound,
    ThrottledAboveDevice,
    /// Waiting for a free request in a full device queue (`nr_requests`).
    QueueDepth,
    /// Waiting for a device that other processes kept busy: most of its requests over the run were theirs.
    SharedDevice,
    CpuContention,
    LockContention,
    DirtyThrottling,
    WritebackWait,
    JournalWait,
    MemoryPressure,
    ReadaheadMiss,
    /// Off-CPU in D state with no layer named (a trace without wait stacks).
    IoWait,
    /// Off-CPU sleeping (S) or stopped.
    SleepWait,
    IrqTime,
    /// Running file-system, VFS or other kernel code.
    KernelCpu,
    /// Faulting in pages outside any reclaim: memory the calls touch for the first time (a fresh buffer).
    PageFaults,
    /// The call's own time in a buffered read or write: copying between the page cache and the user's buffer.
    MemoryCopy,
    /// The call's own time in any other call.
    CallOverhead,
    /// On-CPU time between I/O calls.
    Compute,
    /// Time of a layer no rule knows.
    LayerTime,
    SmallRequests,
    RandomAccess,
    Misaligned,
    MetadataHeavy,
    FsyncHeavy,
    Imbalance,
    Reread,
    StdioInsteadOfPosix,
    /// The tracer's own cost: what its probes added to the traced processes, which an untraced run does not pay.
    TracerCost,
}

impl Reason {
    pub fn slug(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .expect("a unit variant serializes to its name")
    }

    /// The reason a slug names, if any.
    pub fn from_slug(slug: &str) -> Option<Reason> {
        serde_json::from_value(serde_json::Value::String(slug.to_owned())).ok()
    }

    /// Whether it names something outside the job's own work that held it back: a limit, a competitor for the
    /// device, a CPU or a lock, a setting. A healthy run has none. The device's own speed, the calls' own work and
    /// the waits for the job's own writes and journal are what any run of the job does.
    pub fn is_cause(self) -> bool {
        matches!(
            self,
            Reason::ThrottledAboveDevice
                | Reason::QueueDepth
                | Reason::SharedDevice
                | Reason::CpuContention
                | Reason::LockContention
                | Reason::DirtyThrottling
                | Reason::MemoryPressure
                | Reason::ReadaheadMiss
        )
    }

    /// Whether it names an application pattern: a way of doing I/O the application could change.
    pub fn is_pattern(self) -> bool {
        matches!(
            self,
            Reason::SmallRequests
                | Reason::RandomAccess
                | Reason::Misaligned
                | Reason::MetadataHeavy
                | Reason::FsyncHeavy
                | Reason::Imbalance
                | Reason::Reread
                | Reason::StdioInsteadOfPosix
        )
    }

    /// What a person can do about it.
    pub fn recommendation(self) -> &'static str {
        match self {
            Reason::DeviceBound => {
                "The device is the limit: issue fewer, larger requests, keep more of them in flight (a deeper queue, asynchronous I/O), or use a faster device."
            }
            Reason::ThrottledAboveDevice => {
                "Requests wait above the device longer than the device serves them: check the cgroup's io.max/blkio throttle, the I/O scheduler and nr_requests, and competing I/O."
            }
            Reason::QueueDepth => {
                "Requests wait for a free slot in the device's queue: raise its nr_requests (/sys/block/DEV/queue/nr_requests), or keep fewer requests in flight at once."
            }
            Reason::SharedDevice => {
                "Other processes' requests keep the device busy: move them or the job to another device, or give the job priority over them (its cgroup's io.weight or io.prio.class, or ionice -c3 for the others)."
            }
            Reason::CpuContention => {
                "The thread was runnable but not running: give the I/O thread a CPU of its own (taskset, cpuset) or reduce competing load."
            }
            Reason::LockContention => {
                "Threads wait for a kernel lock (an inode's rwsem, for instance): write to separate files or regions, or serialize in the application with larger writes."
            }
            Reason::DirtyThrottling => {
                "Writers are throttled for dirty pages: raise dirty_bytes/dirty_ratio, write with O_DIRECT, or pace writes with sync_file_range."
            }
            Reason::WritebackWait => {
                "Calls wait for pages under writeback: avoid rewriting pages being written back, or flush earlier and in the background."
            }
            Reason::JournalWait => {
                "Calls wait for journal commits: sync less often (batch fsyncs), use fdatasync, or put the journal on a faster device."
            }
            Reason::MemoryPressure => {
                "Calls reclaim memory: raise the memory limit above the working set, or read less at once."
            }
            Reason::ReadaheadMiss => {
                "Reads wait for pages read in on demand: read sequentially in larger requests, raise read_ahead_kb, or use posix_fadvise(SEQUENTIAL/WILLNEED)."
            }
            Reason::IoWait => {
                "Calls sleep uninterruptibly for a reason the trace does not name: trace with off-CPU stacks (dc-trace's default) to find the layer."
            }
            Reason::SleepWait => {
                "Calls sleep (S state): check what they wait for (pipes, sockets, futexes) in the top events."
            }
            Reason::IrqTime => {
                "Interrupts take the I/O thread's CPU: move device interrupts to other CPUs (irqbalance, smp_affinity) or pin the thread away from them."
            }
            Reason::KernelCpu => {
                "Time runs in file-system and VFS code: fewer, larger calls amortize it."
            }
            Reason::PageFaults => {
                "Calls fault in pages of memory touched for the first time, such as a freshly allocated buffer: reuse buffers between calls, or populate them once up front (MAP_POPULATE, MADV_POPULATE_WRITE) or with huge pages."
            }
            Reason::MemoryCopy => {
                "The call's own time is the copy through the page cache: larger requests, or O_DIRECT for large streaming I/O, avoid part of it."
            }
            Reason::CallOverhead => "The call's own time dominates: make fewer calls.",
            Reason::Compute => {
                "The time is spent between I/O calls, on the CPU: the job is not I/O-bound there; overlap I/O with it."
            }
            Reason::LayerTime => "This layer carries the time: see its top events.",
            Reason::SmallRequests => {
                "Aggregate small requests into larger ones (at least 1 MiB): buffer in the application or use collective I/O."
            }
            Reason::RandomAccess => {
                "Access is random: sort or batch requests by offset, or read whole regions once."
            }
            Reason::Misaligned => {
                "Align offsets and sizes to 4 KiB (the page and file-system block)."
            }
            Reason::MetadataHeavy => {
                "Metadata calls take much of the time: open each file once, cache stat results, use fewer, larger files."
            }
            Reason::FsyncHeavy => {
                "A sync follows every few writes (or every write, to a file opened O_SYNC or O_DSYNC): sync once per batch of writes, or at the end."
            }
            Reason::Imbalance => {
                "Some processes or threads do much more I/O than others: balance the work, or give stragglers less."
            }
            Reason::Reread => {
                "The same bytes are read again: keep them in memory, or read them once."
            }
            Reason::StdioInsteadOfPosix => {
                "STDIO moves much of the data: use POSIX read/write (or MPI-IO) with large buffers instead."
            }
            Reason::TracerCost => {
                "Nothing to change in the job: this is the tracer's own cost per recorded event, which a run nobody traces does not pay."
            }
        }
    }
}

/// What a finding concerns.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    Job,
    /// A kind of call.
    Calls(Kind),
    File {
        path: String,
    },
    Process {
        pid: u64,
    },
    Thread {
        pid: u64,
        tid: u64,
    },
}

impl Scope {
    pub fn label(&self) -> String {
        match self {
            Scope::Job => "the job".into(),
            Scope::Calls(k) => k.label(),
            Scope::File { path } => path.clone(),
            Scope::Process { pid } => format!("process {pid}"),
            Scope::Thread { pid, tid } => format!("thread {pid}/{tid}"),
        }
    }
}

/// The most files a finding lists by name ([`Files::top`]).
pub const TOP_FILES: usize = 10;

/// The files a finding's calls touch, as the feature matrix's `file` column names them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Files {
    /// The finding's calls.
    pub calls: u64,
    /// Those of them that name a file.
    pub with_file: u64,
    /// The distinct files they name.
    pub distinct: u64,
    /// The files with the most calls, at most [`TOP_FILES`], most calls first (then by path), full paths.
    pub top: Vec<FileCalls>,
}

/// A file and the calls of a finding on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCalls {
    pub path: String,
    pub calls: u64,
}

impl Files {
    /// The files `rows` of `m` name; none when no row names one.
    pub fn of(m: &FeatureMatrix, rows: &[usize]) -> Option<Files> {
        let mut per: HashMap<&str, u64, foldhash::fast::RandomState> = HashMap::default();
        for path in rows.iter().filter_map(|&r| m.file[r].as_deref()) {
            *per.entry(path).or_default() += 1;
        }
        if per.is_empty() {
            return None;
        }
        let distinct = per.len() as u64;
        let mut top: Vec<(&str, u64)> = per.into_iter().collect();
        top.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        Some(Files {
            calls: rows.len() as u64,
            with_file: top.iter().map(|(_, n)| n).sum(),
            distinct,
            top: (top.into_iter().take(TOP_FILES))
                .map(|(path, calls)| FileCalls {
                    path: path.to_owned(),
                    calls,
                })
                .collect(),
        })
    }
}

/// One thing to fix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub layer: String,
    pub reason: Reason,
    pub scope: Scope,
    /// The time it claims: no other finding claims the same time.
    pub cost_ns: u64,
    /// `cost_ns` over the job's I/O time ([`SHARE_OF`]).
    pub share: f64,
    /// The time the job would save if the cause were removed, at most `cost_ns`.
    pub gain_ns: u64,
    pub gain_method: GainMethod,
    /// The numbers behind it, by name.
    pub evidence: BTreeMap<String, f64>,
    pub recommendation: String,
    /// The files its calls touch, for a finding on a kind of call whose calls name any; absent from a diagnosis
    /// written before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Files>,
    /// For a finding over the job made of several kinds of call's findings (one throttle, one shared device, one
    /// setting held them all), those kinds: its time is their calls'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<Kind>,
}

impl Finding {
    pub fn new(
        layer: &str,
        reason: Reason,
        scope: Scope,
        cost_ns: f64,
        io_ns: f64,
        evidence: BTreeMap<String, f64>,
        gain: Gain,
    ) -> Finding {
        let cost_ns = cost_ns.max(0.0).round() as u64;
        Finding {
            gain_ns: (gain.ns.round() as u64).min(cost_ns),
            gain_method: gain.method,
            layer: layer.to_owned(),
            reason,
            scope,
            cost_ns,
            share: if io_ns > 0.0 {
                cost_ns as f64 / io_ns
            } else {
                0.0
            },
            evidence,
            recommendation: reason.recommendation().to_owned(),
            files: None,
            kinds: Vec::new(),
        }
    }

    /// What identifies it across runs.
    pub fn key(&self) -> (String, Reason, Scope) {
        (self.layer.clone(), self.reason, self.scope.clone())
    }
}

/// Evidence from (name, value) pairs.
pub fn evidence<const N: usize>(items: [(&str, f64); N]) -> BTreeMap<String, f64> {
    items
        .into_iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// What a finding's `share` is a share of: the job's time, that is its I/O time, every call's duration summed over
/// all its threads (for Darshan's counters, the POSIX and STDIO modules' read, write and metadata time), and the
/// threads' wait for a CPU between calls when a finding names it ([`crate::diagnose::between`]).
pub const SHARE_OF: &str = "job_time";

/// What to fix first: the findings that would gain most first (`gain_ns`), then, at equal gain (none, for the ones
/// that only say where the time goes: the calls' own work, the device at its speed), most costly first. Copying
/// 128 MiB through the page cache costs more than 4 KiB requests add, but only the requests can be changed; and a
/// sleep that another thread of the job ended costs the calls its whole length but gains almost none of it, where
/// a limit that made the job read evicted pages again gains every such read's wait. An application pattern (small
/// requests, an fsync after every write) costs a kind's own call time, which the `self` finding of the same kind
/// claims too: at equal gain and cost the pattern comes first, because it says what to change in the application.
/// Other ties go by layer, reason and scope, so the order is stable.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.gain_ns
            .cmp(&a.gain_ns)
            .then_with(|| b.cost_ns.cmp(&a.cost_ns))
            .then_with(|| (b.layer == APP_LAYER).cmp(&(a.layer == APP_LAYER)))
            .then_with(|| a.key().cmp(&b.key()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::ledger::Gain;

    /// An application pattern and a layer finding that claim the same time: the pattern comes first whatever the
    /// layer's name (`aio` sorts before `app`), and a costlier finding still comes before both.
    #[test]
    fn at_equal_cost_an_application_pattern_comes_before_a_layer() {
        let f = |layer, reason, cost| {
            Finding::new(
                layer,
                reason,
                Scope::Job,
                cost,
                100.0,
                BTreeMap::new(),
                Gain::inherent(),
            )
        };
        let mut findings = vec![
            f("aio", Reason::LayerTime, 40.0),
            f(APP_LAYER, Reason::SmallRequests, 40.0),
            f("self", Reason::MemoryCopy, 50.0),
        ];
        sort(&mut findings);
        let order: Vec<(&str, Reason)> = findings
            .iter()
            .map(|f| (f.layer.as_str(), f.reason))
            .collect();
        assert_eq!(
            order,
            [
                ("self", Reason::MemoryCopy),
                (APP_LAYER, Reason::SmallRequests),
                ("aio", Reason::LayerTime),
            ]
        );
    }

    /// A finding whose cause can be removed comes before a costlier one that only says where the time goes, and one
    /// that would gain more before one that costs more but would gain almost nothing (a pipe's reader asleep while
    /// its writer works, 1 of its 90 ns not the job's).
    #[test]
    fn what_can_be_fixed_comes_before_what_only_describes_the_time() {
        let f = |layer, reason, cost, gain: Gain| {
            Finding::new(
                layer,
                reason,
                Scope::Job,
                cost,
                100.0,
                BTreeMap::new(),
                gain,
            )
        };
        let mut findings = vec![
            f("self", Reason::MemoryCopy, 60.0, Gain::inherent()),
            f(
                APP_LAYER,
                Reason::SmallRequests,
                20.0,
                Gain::new(20.0, "x", ""),
            ),
            f(
                "sched",
                Reason::CpuContention,
                10.0,
                Gain::wait_removed(10.0),
            ),
            f("sched", Reason::SleepWait, 90.0, Gain::new(1.0, "x", "")),
        ];
        sort(&mut findings);
        let order: Vec<Reason> = findings.iter().map(|f| f.reason).collect();
        assert_eq!(
            order,
            [
                Reason::SmallRequests,
                Reason::CpuContention,
                Reason::SleepWait,
                Reason::MemoryCopy
            ]
        );
    }
}
