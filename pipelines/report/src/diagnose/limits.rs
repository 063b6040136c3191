//! The machine's limits in the findings: a limit dc-trace recorded with the trace ([`datasets::limits`]) that the job
//! ran into is named as the cause, with its value and the file that sets it.
//!
//! A limit held the job when its counters moved between the start and the end of the run: a device throttle when
//! the cgroup's I/O in that direction on that device ran at [`HELD_SHARE`] of the limit or more (over the traced
//! interval), a CPU quota when `cpu.stat` counted throttled periods, a memory limit when it was hit. Then the time
//! of the calls that wait for that resource is the limit's: a throttled device's reads wait above the device when
//! they are direct, but for the page when they are buffered (blk-throttle holds readahead's bios and a kworker
//! dispatches them later, so the reader sees itself waiting for a page, not for a request), so both become
//! `block` / `throttled_above_device`. Inputs without limits keep their findings, and [`note`] says so once.
//!
//! Each second stays claimed once ([`crate::diagnose::ledger`]): a throttle takes over the findings that already
//! claimed the waits it caused, and a finding over the job claims only the I/O time no other finding claimed.

use std::collections::BTreeMap;

use datasets::limits::{BlockQueue, Cgroup, CgroupVersion, DiskStat, Limits, Moment};

use features::FeatureMatrix;

use crate::diagnose::finding::parse_cause_key;
use crate::diagnose::job::WallSplit;
use crate::diagnose::kinds::{Kind, KindTable};
use crate::diagnose::ledger::Gain;
use crate::diagnose::scan::{BLOCK, JobScan, SCHED};
use crate::diagnose::thresholds::{DIRTY_LIMIT_FILLS, PAGE_IN_BETWEEN_CALLS_SHARE};
use crate::diagnose::{Finding, Reason, Scope};
use crate::summary::Direction;
use datasets::vocab::layer::{MM, PAGE_CACHE, WRITEBACK};

/// A throttle held the job when the job's rate reached this share of it. blk-throttle lets a cgroup run at its limit
/// and no faster, so a job held by it runs at about the limit; one that ran at half of it or less spent most of its
/// time elsewhere, and the throttle is not what to change first.
pub const HELD_SHARE: f64 = 0.5;

/// One limit the job ran into, with the numbers that show it.
#[derive(Clone, Debug, PartialEq)]
pub enum Held {
    /// A device throttle: `what` is `read_bps`, `write_bps`, `read_iops` or `write_iops`.
    Device {
        direction: Direction,
        what: &'static str,
        device: String,
        limit: u64,
        /// The cgroup's rate in that direction over the run (bytes or requests per second).
        rate: f64,
        /// The file that sets it.
        setting: String,
    },
    Cpu {
        quota_us: u64,
        period_us: u64,
        throttled: u64,
        throttled_ns: u64,
        /// The run's length: throttled time summed over CPUs can exceed it.
        span_ns: u64,
        setting: String,
    },
    Memory {
        limit_bytes: u64,
        hits: u64,
        setting: String,
    },
}

/// The start and end readings of each input that has both, and the readings that could not be read back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    pub runs: Vec<(Limits, Limits)>,
    pub errors: Vec<String>,
}

impl Recorded {
    /// Pairs each input's start reading with its end reading.
    pub fn of(readings: &[(u32, Result<Limits, String>)]) -> Recorded {
        let mut out = Recorded::default();
        let mut starts: BTreeMap<u32, &Limits> = BTreeMap::new();
        for (input, r) in readings {
            match r {
                Err(e) => out.errors.push(format!("input {input}: {e}")),
                Ok(l) if l.at == Moment::Start => {
                    starts.insert(*input, l);
                }
                Ok(end) => match starts.remove(input) {
                    Some(start) => out.runs.push((start.clone(), end.clone())),
                    None => out
                        .errors
                        .push(format!("input {input}: an end reading without a start")),
                },
            }
        }
        for input in starts.keys() {
            out.errors
                .push(format!("input {input}: a start reading without an end"));
        }
        out
    }
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB/s", bytes / (1u64 << 20) as f64)
}

impl Held {
    /// What a person reads: the limit, what the job did against it, and the setting to change.
    pub fn sentence(&self) -> String {
        match self {
            Held::Device {
                direction,
                what,
                device,
                limit,
                rate,
                setting,
            } => {
                let verb = match direction {
                    Direction::Read => "Reads",
                    Direction::Write => "Writes",
                };
                let (ran, lim) = if what.ends_with("bps") {
                    (mib(*rate), mib(*limit as f64))
                } else {
                    (format!("{rate:.0} IOPS"), format!("{limit} IOPS"))
                };
                format!(
                    "{verb} ran at {ran}, the cgroup's {what} limit on {device} is {lim}: raise or remove it ({setting}), or run the job outside that cgroup."
                )
            }
            Held::Cpu {
                quota_us,
                period_us,
                throttled,
                throttled_ns,
                span_ns,
                setting,
            } => format!(
                "Throttled {throttled} times for {:.1} s (summed over CPUs, in a {:.1} s run) by {} ({quota_us} µs of CPU per {period_us} µs): raise or remove the quota ({setting}).",
                *throttled_ns as f64 / 1e9,
                *span_ns as f64 / 1e9,
                setting.rsplit('/').next().unwrap_or(setting)
            ),
            Held::Memory {
                limit_bytes,
                hits,
                setting,
            } => format!(
                "The cgroup's memory limit of {:.1} MiB was hit {hits} times: raise it above the working set ({setting}).",
                *limit_bytes as f64 / (1u64 << 20) as f64
            ),
        }
    }
}

fn same_cgroup<'a>(start: &'a Limits, end: &Cgroup) -> Option<&'a Cgroup> {
    start.cgroups.iter().find(|c| c.dir == end.dir)
}

/// The limits each run ran into.
pub fn held(rec: &Recorded) -> Vec<Held> {
    let mut out = Vec::new();
    for (start, end) in &rec.runs {
        let secs = end.ts_ns.saturating_sub(start.ts_ns) as f64 / 1e9;
        for cg in &end.cgroups {
            let Some(before) = same_cgroup(start, cg) else {
                continue;
            };
            let v1 = |f: &str, v2: &str| cg.setting(f, v2);
            for limit in &cg.io_limits {
                let io = |c: &Cgroup| c.io.iter().find(|i| i.device == limit.device).cloned();
                let (Some(now), then) = (io(cg), io(before).unwrap_or_default()) else {
                    continue;
                };
                let cases = [
                    (
                        Direction::Read,
                        "read_bps",
                        limit.read_bps,
                        now.read_bytes.saturating_sub(then.read_bytes),
                    ),
                    (
                        Direction::Write,
                        "write_bps",
                        limit.write_bps,
                        now.write_bytes.saturating_sub(then.write_bytes),
                    ),
                    (
                        Direction::Read,
                        "read_iops",
                        limit.read_iops,
                        now.reads.saturating_sub(then.reads),
                    ),
                    (
                        Direction::Write,
                        "write_iops",
                        limit.write_iops,
                        now.writes.saturating_sub(then.writes),
                    ),
                ];
                for (direction, what, lim, done) in cases {
                    let Some(lim) = lim.filter(|l| *l > 0) else {
                        continue;
                    };
                    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
                    if done > 0 && rate >= HELD_SHARE * lim as f64 {
                        out.push(Held::Device {
                            direction,
                            what,
                            device: limit.device.clone(),
                            limit: lim,
                            rate,
                            setting: v1(&format!("blkio.throttle.{what}_device"), "io.max"),
                        });
                    }
                }
            }
            if let (Some(cpu), Some(cpu0)) = (&cg.cpu, &before.cpu)
                && let Some(quota_us) = cpu.quota_us
                && cpu.nr_throttled > cpu0.nr_throttled
            {
                out.push(Held::Cpu {
                    quota_us,
                    period_us: cpu.period_us,
                    throttled: cpu.nr_throttled - cpu0.nr_throttled,
                    throttled_ns: cpu.throttled_ns.saturating_sub(cpu0.throttled_ns),
                    span_ns: end.ts_ns.saturating_sub(start.ts_ns),
                    setting: v1("cpu.cfs_quota_us", "cpu.max"),
                });
            }
            if let (Some(m), Some(m0)) = (&cg.memory, &before.memory)
                && let Some(limit_bytes) = m.limit_bytes
                && let (Some(h), Some(h0)) = (m.hits(), m0.hits())
                && h > h0
            {
                out.push(Held::Memory {
                    limit_bytes,
                    hits: h - h0,
                    setting: match cg.version {
                        CgroupVersion::V1 => cg.setting("memory.limit_in_bytes", ""),
                        CgroupVersion::V2 => cg.setting("", "memory.max"),
                    },
                });
            }
        }
    }
    out
}

/// The reasons a call waiting for a throttled device is diagnosed with when the throttle is not known.
fn waits_for_device(reason: Reason, direction: Direction) -> bool {
    match reason {
        Reason::DeviceBound
        | Reason::ThrottledAboveDevice
        | Reason::QueueDepth
        | Reason::IoWait => true,
        Reason::ReadaheadMiss => direction == Direction::Read,
        Reason::WritebackWait | Reason::DirtyThrottling | Reason::JournalWait => {
            direction == Direction::Write
        }
        _ => false,
    }
}

/// Whether calls of `kind` move data in `direction` (a sync writes; a copy between files reads its source too; an
/// open, a stat or a directory read reads directories and inodes).
fn moves(kind: &Kind, direction: Direction) -> bool {
    kind.direction() == Some(direction)
        || (direction == Direction::Write && datasets::vocab::op::flushes(&kind.op))
        || (direction == Direction::Read && datasets::vocab::op::looks_up(&kind.op))
        || datasets::vocab::op::copies(&kind.op)
}

/// The evidence key prefix of a device limit a finding cites (`limit_read_bps`).
const LIMIT_EVIDENCE: &str = "limit_";
/// The evidence key of a CPU quota a finding cites.
const QUOTA_EVIDENCE: &str = "cpu_quota_us";
/// The evidence key of other processes' share of a shared device's requests ([`shared`]).
const SHARED_EVIDENCE: &str = "device_others_share";
/// The evidence key of a memory limit a finding cites.
const MEMORY_EVIDENCE: &str = "memory_limit_bytes";
/// The evidence key of the pages a memory limit made the job read again ([`memory`]).
const REFAULT_EVIDENCE: &str = "refaulted_pages";
/// The evidence key of the share of the pages the job's faults between calls added that a memory limit made it read
/// again: that share of its waits for I/O between calls is the limit's ([`claim_waits_between_calls`]).
const REFAULT_OUTSIDE_EVIDENCE: &str = "refaulted_share_between_calls";
/// The evidence key of the lookups' waits for blocks under writeback that a small `vm.dirty_bytes` kept running
/// ([`lookups_behind_writeback`]).
pub const WRITEBACK_HELD_EVIDENCE: &str = "lookup_waits_under_writeback_ns";

/// Whether `f` names a recorded limit, or other processes on the job's device, as what held the job.
pub fn cites_limit(f: &Finding) -> bool {
    f.evidence.keys().any(|k| {
        k.starts_with(LIMIT_EVIDENCE)
            || k == QUOTA_EVIDENCE
            || k == SHARED_EVIDENCE
            || k == MEMORY_EVIDENCE
            || k == WRITEBACK_HELD_EVIDENCE
    })
}

/// Whether `f`, citing a recorded limit, took over the waits of `reason`: a device throttle those that wait for the
/// device in its direction ([`throttled`]), a CPU quota the waits for a CPU, a memory limit the reads' waits for
/// the pages it made them read again ([`memory`]).
pub fn took_over(f: &Finding, reason: Reason) -> bool {
    f.evidence
        .keys()
        .any(|k| match k.strip_prefix(LIMIT_EVIDENCE) {
            Some(what) if what.starts_with("read_") => waits_for_device(reason, Direction::Read),
            Some(what) if what.starts_with("write_") => waits_for_device(reason, Direction::Write),
            _ if k == SHARED_EVIDENCE => waits_for_shared(reason),
            _ if k == REFAULT_EVIDENCE => waits_for_page(reason),
            _ if k == REFAULT_OUTSIDE_EVIDENCE || k == WRITEBACK_HELD_EVIDENCE => {
                reason == Reason::IoWait
            }
            _ => k == QUOTA_EVIDENCE && reason == Reason::CpuContention,
        })
}

fn add_evidence(e: &mut BTreeMap<String, f64>, h: &Held) {
    match h {
        Held::Device {
            what, limit, rate, ..
        } => {
            e.insert(format!("{LIMIT_EVIDENCE}{what}"), *limit as f64);
            e.insert(format!("cgroup_{what}"), *rate);
        }
        Held::Cpu {
            quota_us,
            period_us,
            throttled,
            throttled_ns,
            ..
        } => {
            e.insert(QUOTA_EVIDENCE.into(), *quota_us as f64);
            e.insert("cpu_period_us".into(), *period_us as f64);
            e.insert("nr_throttled".into(), *throttled as f64);
            e.insert("throttled_ns".into(), *throttled_ns as f64);
        }
        Held::Memory {
            limit_bytes, hits, ..
        } => {
            e.insert("memory_limit_bytes".into(), *limit_bytes as f64);
            e.insert("memory_limit_hits".into(), *hits as f64);
        }
    }
}

/// A finding over the job that `h` explains: `ns` of waits it holds and removing `h` saves, citing it.
fn over_the_job(layer: &str, reason: Reason, ns: f64, io_ns: f64, h: &Held) -> Finding {
    let mut e = BTreeMap::new();
    add_evidence(&mut e, h);
    let mut f = Finding::new(
        layer,
        reason,
        Scope::Job,
        ns,
        io_ns,
        e,
        Gain::wait_removed(ns),
    );
    f.recommendation = h.sentence();
    f
}

/// Names in `findings` the limits the job ran into: the device waits of the calls a throttle slowed become one
/// `block` / `throttled_above_device` finding per kind of call, citing the throttle; a CPU quota that throttled the
/// job and a memory limit it hit become findings over the job. `scan` is the job's, with the limits recorded, its
/// requests per device and the pages it read again; `refault_waits` is [`JobScan::refault_waits`].
pub fn apply(
    findings: &mut Vec<Finding>,
    table: &KindTable,
    io_ns: f64,
    scan: &JobScan,
    writes_back: bool,
    refault_waits: &[f64],
    others_io: &[f64],
) {
    let rec = &Recorded::of(&scan.limits);
    readahead(findings, rec);
    dirty(findings, table, io_ns, rec, others_io);
    for h in held(rec) {
        match &h {
            Held::Device { direction, .. } => {
                throttled(findings, table, io_ns, &h, *direction);
                take_from_patterns(findings, io_ns, &h, *direction);
            }
            Held::Cpu {
                throttled_ns,
                span_ns,
                ..
            } => {
                // A call's wait for a CPU (runnable, not running) is the quota's too: it cites it, and the job's
                // finding claims only the throttled time those waits did not, out of what no finding claimed.
                let mut cited = 0.0;
                for c in findings
                    .iter_mut()
                    .filter(|c| c.reason == Reason::CpuContention)
                {
                    add_evidence(&mut c.evidence, &h);
                    c.recommendation = h.sentence();
                    cited += c.cost_ns as f64;
                }
                let ns = ((*throttled_ns).min(*span_ns) as f64 - cited)
                    .min(unclaimed(findings, io_ns))
                    .max(0.0);
                findings.push(over_the_job(SCHED, Reason::CpuContention, ns, io_ns, &h));
            }
            Held::Memory { .. } => memory(findings, table, io_ns, &h, scan, refault_waits),
        }
    }
    // After the throttles: a device's requests a throttle held and a kworker dispatched are not the job's in the
    // trace, and they are the throttle's, which its findings cite.
    if let Some(s) = shared(rec, &scan.device_io, writes_back).first() {
        share_device(findings, io_ns, s);
    }
}

/// A memory limit the job hit: one finding over the job, citing it, that takes the findings of its reclaim
/// (`mm` / `memory_pressure` per kind of call) and, from the waits for pages of the calls that read (buffered reads,
/// copies, and lookups, which read directory and inode blocks through the block device's cache), the share of pages
/// the trace saw the cache let go of before they were read again ([`JobScan::refault_waits`]). With memory above the
/// working set those pages would have stayed cached: their waits are the gain. A read's other misses (pages read for
/// the first time) stay the device's.
fn memory(
    findings: &mut Vec<Finding>,
    table: &KindTable,
    io_ns: f64,
    h: &Held,
    scan: &JobScan,
    refault_waits: &[f64],
) {
    let refaults = &scan.refaults;
    let mut refaulted = 0u64;
    let mut added = 0.0;
    let mut waits = 0.0;
    // What no finding had claimed of those waits (a kind below every finding's floor) is claimed only out of the
    // job's unclaimed time; what is taken from a finding moves from it to this one.
    let free = unclaimed(findings, io_ns);
    let mut short = 0.0;
    for (kind, s) in table
        .kinds
        .iter()
        .filter(|(k, _)| moves(k, Direction::Read))
    {
        let r: u64 = (s.rows.iter())
            .map(|&row| u64::from(refaults.get(row).copied().unwrap_or(0)))
            .sum();
        let pages: f64 = (s.rows.iter())
            .map(|&row| f64::from(scan.pages_added.get(row).copied().unwrap_or(0)))
            .sum();
        if r == 0 || pages <= 0.0 {
            continue;
        }
        let take: f64 = (s.rows.iter())
            .map(|&row| refault_waits.get(row).copied().unwrap_or(0.0))
            .sum();
        let left = take_cost(
            findings.iter_mut().filter(|f| {
                (f.layer == PAGE_CACHE || f.layer == BLOCK)
                    && waits_for_page(f.reason)
                    && f.scope == Scope::Calls(kind.clone())
            }),
            take,
        );
        refaulted += r;
        added += pages;
        waits += take - left;
        short += left;
    }
    // The same bytes read again claimed their calls' time first, the waits for these pages with it.
    let moved = take_pattern_waits(findings, |p| p == Reason::Reread, waits_for_page, short);
    waits += moved + (short - moved).min(free);
    let reclaim = take_waits(findings, |f| f.reason == Reason::MemoryPressure);
    let cost: f64 = waits + reclaim.iter().map(|f| f.cost_ns as f64).sum::<f64>();
    let gain: f64 = waits + reclaim.iter().map(|f| f.gain_ns as f64).sum::<f64>();
    let mut f = over_the_job(MM, Reason::MemoryPressure, cost, io_ns, h);
    if let Some(r) = reclaim.first() {
        f.evidence.extend(r.evidence.clone());
        add_evidence(&mut f.evidence, h);
    }
    if refaulted > 0 {
        f.evidence.insert(REFAULT_EVIDENCE.into(), refaulted as f64);
        f.evidence.insert("pages_added".into(), added);
        f.evidence.insert("refault_wait_ns".into(), waits);
        f.gain_method = Gain::new(
            gain,
            "evicted_pages_kept",
            format!(
                "The {refaulted} pages the limit let go of and the job read again ({:.0}% of the {added:.0} pages its reads added) kept cached: their reads' waits for the device ({:.3} ms) removed, and the reclaim's own time.",
                100.0 * refaulted as f64 / added,
                waits / 1e6
            ),
        )
        .method;
    }
    if scan.refaults_outside_calls > 0 {
        f.evidence.insert(
            REFAULT_OUTSIDE_EVIDENCE.into(),
            scan.refaults_outside_calls as f64 / scan.pages_added_outside_calls.max(1) as f64,
        );
    }
    f.gain_ns = (gain.round() as u64).min(f.cost_ns);
    findings.push(f);
}

/// Whether a cause is a read's wait for pages the cache did not hold: readahead's, or the device's speed.
fn waits_for_page(reason: Reason) -> bool {
    matches!(reason, Reason::ReadaheadMiss | Reason::DeviceBound)
}

/// The findings of writes that slept for dirty pages, one per kind of call, become one over the job when several
/// kinds slept: one machine setting (`vm.dirty_bytes` or `vm.dirty_ratio`) held them all, and raising it removes every
/// one of those sleeps, so one finding gains them all (the sum of their gains). It cites the setting when the trace
/// recorded it.
fn dirty(
    findings: &mut Vec<Finding>,
    table: &KindTable,
    io_ns: f64,
    rec: &Recorded,
    others_io: &[f64],
) {
    let slept =
        |f: &Finding| f.reason == Reason::DirtyThrottling && matches!(f.scope, Scope::Calls(_));
    let gains: u64 = findings
        .iter()
        .filter(|f| slept(f))
        .map(|f| f.gain_ns)
        .sum();
    let mut merged = take_waits(findings, slept);
    let setting = rec.runs.last().map(|(_, end)| &end.dirty);
    let limit = setting.and_then(|d| d.dirty_bytes).filter(|&b| b > 0);
    let lookups = limit
        .map(|b| lookups_behind_writeback(findings, table, b, others_io))
        .unwrap_or(0.0);
    if lookups > 0.0 {
        let f = match merged.first_mut() {
            Some(f) => f,
            None => {
                merged.push(Finding::new(
                    WRITEBACK,
                    Reason::DirtyThrottling,
                    Scope::Job,
                    0.0,
                    io_ns,
                    BTreeMap::new(),
                    Gain::wait_removed(0.0),
                ));
                &mut merged[0]
            }
        };
        f.cost_ns += lookups.round() as u64;
        f.evidence.insert(WRITEBACK_HELD_EVIDENCE.into(), lookups);
        f.gain_method = Gain::new(
            gains as f64 + lookups,
            "wait_removed",
            format!(
                "The writes' sleeps for dirty pages ({:.3} ms) and the lookups' waits for blocks under writeback ({:.3} ms) removed: writeback runs all along only because the job's writes fill vm.dirty_bytes.",
                gains as f64 / 1e6,
                lookups / 1e6
            ),
        )
        .method;
    }
    let gains = gains + lookups.round() as u64;
    for f in &mut merged {
        f.gain_ns = gains.min(f.cost_ns);
        match setting.map(|d| (d.dirty_bytes.filter(|&b| b > 0), d.dirty_ratio)) {
            Some((Some(b), _)) => {
                f.evidence.insert("vm_dirty_bytes".into(), b as f64);
                f.recommendation = format!(
                    "{}: vm.dirty_bytes is {:.1} MiB, which the job's writes fill at once: raise it (/proc/sys/vm/dirty_bytes, or set it to 0 and use dirty_ratio), write with O_DIRECT, or pace writes with sync_file_range.",
                    if f.evidence.contains_key(WRITEBACK_HELD_EVIDENCE) {
                        "Writeback ran all through the job and held the blocks its lookups read"
                    } else {
                        "Writers slept for dirty pages"
                    },
                    b as f64 / (1u64 << 20) as f64
                );
            }
            Some((None, Some(r))) => {
                f.evidence.insert("vm_dirty_ratio".into(), r as f64);
                f.recommendation = format!(
                    "Writers slept for dirty pages: vm.dirty_ratio is {r}% of the memory the kernel counts as available (of the cgroup's, under a memory limit): raise it (/proc/sys/vm/dirty_ratio), write with O_DIRECT, or pace writes with sync_file_range."
                );
            }
            _ => {}
        }
    }
    findings.extend(merged);
}

/// The waits for I/O of the job's lookups (opens, stats, directory reads) that sent no request of their own, when
/// its buffered writes filled `limit` (`vm.dirty_bytes`) at least [`DIRTY_LIMIT_FILLS`] times: writeback then runs
/// all through the job, and a lookup that finds a directory or inode block locked for its write waits for it. Taken
/// from the lookups' `io_wait` findings; returns what was taken.
fn lookups_behind_writeback(
    findings: &mut [Finding],
    table: &KindTable,
    limit: u64,
    others_io: &[f64],
) -> f64 {
    let written: f64 = (table.kinds.iter())
        .filter(|(k, _)| k.is_buffered_data() && k.direction() == Some(Direction::Write))
        .map(|(_, s)| s.bytes as f64)
        .sum();
    if written < DIRTY_LIMIT_FILLS * limit as f64 {
        return 0.0;
    }
    let mut taken = 0.0;
    for (kind, s) in (table.kinds.iter()).filter(|(k, _)| datasets::vocab::op::looks_up(&k.op)) {
        let waited: f64 = (s.rows.iter())
            .map(|&r| others_io.get(r).copied().unwrap_or(0.0))
            .sum();
        let left = take_cost(
            (findings.iter_mut())
                .filter(|f| f.reason == Reason::IoWait && f.scope == Scope::Calls(kind.clone())),
            waited,
        );
        taken += waited - left;
    }
    taken
}

/// Takes `ns` of cost out of `findings`, in order, each giving at most its cost and keeping a gain of at most what
/// it has left; returns what none of them had.
fn take_cost<'a>(findings: impl Iterator<Item = &'a mut Finding>, ns: f64) -> f64 {
    let mut left = ns;
    for f in findings {
        let t = left.min(f.cost_ns as f64);
        f.cost_ns -= t.round() as u64;
        f.gain_ns = f.gain_ns.min(f.cost_ns);
        left -= t;
    }
    left
}

/// The kernel's default readahead window (`VM_READAHEAD_PAGES`, 128 KiB): a device set below it reads ahead less
/// than a stock kernel would, or not at all.
pub const DEFAULT_READAHEAD_KB: u64 = 128;

/// What the recorded devices' settings say of readahead.
enum Readahead<'a> {
    /// No device's setting was recorded.
    Unknown,
    /// The device that reads ahead least, below [`DEFAULT_READAHEAD_KB`], and its setting.
    Low(&'a BlockQueue, u64),
    /// Every device reads ahead at least the default; the least of them.
    On(u64),
}

fn readahead_of(rec: &Recorded) -> Readahead<'_> {
    let known: Vec<(&BlockQueue, u64)> = (rec.runs.iter())
        .flat_map(|(_, end)| &end.devices)
        .filter_map(|d| Some((d, d.read_ahead_kb?)))
        .collect();
    match known.iter().min_by_key(|(_, kb)| *kb) {
        None => Readahead::Unknown,
        Some((d, kb)) if *kb < DEFAULT_READAHEAD_KB => Readahead::Low(d, *kb),
        Some((_, kb)) => Readahead::On(*kb),
    }
}

/// A run's time by (layer, reason), as its findings name it: with readahead on, a buffered read's wait for pages
/// is the device's speed on a cold cache (`device_bound`), not a readahead miss ([`readahead`]). So two runs of a
/// healthy cold read, one on a slower device, differ by the device.
pub fn name_waits_for_pages(parts: &mut BTreeMap<(String, Reason), f64>, rec: &Recorded) {
    if !matches!(readahead_of(rec), Readahead::On(_)) {
        return;
    }
    let missed: Vec<(String, Reason)> = (parts.keys())
        .filter(|(_, r)| *r == Reason::ReadaheadMiss)
        .cloned()
        .collect();
    for key in missed {
        let ns = parts.remove(&key).unwrap_or(0.0);
        *parts.entry((key.0, Reason::DeviceBound)).or_default() += ns;
    }
}

/// Buffered reads that waited for pages the cache did not hold are `readahead_miss` only when a recorded device
/// reads ahead less than [`DEFAULT_READAHEAD_KB`]: then they cite it and name the setting. With every device at
/// the default or above, readahead is working and the pages were simply not cached yet: the reads waited for the
/// device at its speed (`device_bound`), and raising readahead would not help.
fn readahead(findings: &mut [Finding], rec: &Recorded) {
    let ra = readahead_of(rec);
    for f in findings
        .iter_mut()
        .filter(|f| f.reason == Reason::ReadaheadMiss)
    {
        match ra {
            Readahead::Unknown => return,
            Readahead::Low(d, kb) => {
                f.evidence.insert("read_ahead_kb".into(), kb as f64);
                f.recommendation = format!(
                    "Readahead is {kb} KiB on {} ({}), below the kernel's default of {DEFAULT_READAHEAD_KB} KiB, and reads wait for every page they ask for: raise /sys/block/{}/queue/read_ahead_kb (blockdev --setra).",
                    d.name, d.device, d.name
                );
            }
            Readahead::On(kb) => {
                f.evidence.insert("read_ahead_kb".into(), kb as f64);
                f.reason = Reason::DeviceBound;
                let gain = Gain::new(
                    0.0,
                    "cold_cache",
                    format!(
                        "Readahead was on ({kb} KiB or more on every device): these pages were read at the device's speed, and only data already cached or a faster device would save the wait."
                    ),
                );
                f.gain_ns = 0;
                f.gain_method = gain.method;
                f.recommendation = format!(
                    "The page cache did not hold these pages yet, and readahead ({kb} KiB or more) already reads ahead: the reads waited for the device at its speed. Keep the data cached between runs (or read it once), or use a faster device."
                );
            }
        }
    }
}

/// Per kind of call moving data in `direction`, its findings that wait for the device become one, citing `h`; a
/// trace whose calls have no layer findings gets one over the job with what is left of every such call's time,
/// at most what no finding claimed. Removing the throttle removes the wait, so the merged findings gain their cost.
fn throttled(
    findings: &mut Vec<Finding>,
    table: &KindTable,
    io_ns: f64,
    h: &Held,
    direction: Direction,
) {
    let mut merged = take_waits(findings, |f| {
        matches!(&f.scope, Scope::Calls(kind) if moves(kind, direction))
            && waits_for_device(f.reason, direction)
    });
    if merged.is_empty() {
        let ns: f64 = table
            .kinds
            .iter()
            .filter(|(k, _)| moves(k, direction))
            .map(|(_, s)| s.dur_ns as f64)
            .sum::<f64>()
            .min(unclaimed(findings, io_ns));
        if ns > 0.0 {
            merged.push(Finding::new(
                BLOCK,
                Reason::ThrottledAboveDevice,
                Scope::Job,
                ns,
                io_ns,
                BTreeMap::new(),
                Gain::wait_removed(ns),
            ));
        }
    }
    for mut f in merged {
        f.layer = BLOCK.to_owned();
        f.reason = Reason::ThrottledAboveDevice;
        f.gain_ns = f.cost_ns;
        f.gain_method = Gain::wait_removed(0.0).method;
        add_evidence(&mut f.evidence, h);
        f.recommendation = h.sentence();
        findings.push(f);
    }
}

/// Takes the findings of kinds of call that `waits` picks out of `findings`: one per kind, its layers' findings
/// merged, or one over the job when several kinds waited ([`one_finding`]), which a limit or a neighbour then claims.
fn take_waits(findings: &mut Vec<Finding>, waits: impl Fn(&Finding) -> bool) -> Vec<Finding> {
    let mut merged: Vec<Finding> = Vec::new();
    findings.retain(|f| {
        if !waits(f) {
            return true;
        }
        match merged.iter_mut().find(|m| m.scope == f.scope) {
            Some(m) => {
                m.cost_ns += f.cost_ns;
                m.share += f.share;
                // The block layer's numbers (requests, time on the device) are the ones that show the cause.
                if f.layer == BLOCK {
                    m.evidence.extend(f.evidence.clone());
                }
            }
            None => merged.push(f.clone()),
        }
        false
    });
    if merged.len() > 1 {
        merged = vec![one_finding(merged)];
    }
    merged
}

/// A pattern's calls that waited for a throttled device waited for the throttle too: a sync-per-commit pattern's
/// under a write throttle, the same bytes read again under a read throttle. The pattern claimed their time first,
/// with the waits inside as its `cause:LAYER/REASON_ns` evidence. Those waits move to the throttle's finding, which
/// names the limit the job ran into with the time it held the job; the pattern keeps the rest of its calls' time
/// (the device's own, the calls' own work), and its gain at most that.
fn take_from_patterns(findings: &mut Vec<Finding>, io_ns: f64, h: &Held, direction: Direction) {
    let pattern = match direction {
        Direction::Write => Reason::FsyncHeavy,
        Direction::Read => Reason::Reread,
    };
    let moved = take_pattern_waits(
        findings,
        |p| p == pattern,
        |r| waits_for_device(r, direction),
        f64::INFINITY,
    );
    if moved <= 0.0 {
        return;
    }
    let Held::Device { what, .. } = h else {
        return;
    };
    let key = format!("{LIMIT_EVIDENCE}{what}");
    match findings
        .iter_mut()
        .find(|f| f.reason == Reason::ThrottledAboveDevice && f.evidence.contains_key(&key))
    {
        Some(t) => {
            t.cost_ns += moved.round() as u64;
            t.gain_ns += moved.round() as u64;
        }
        None => findings.push(over_the_job(
            BLOCK,
            Reason::ThrottledAboveDevice,
            moved,
            io_ns,
            h,
        )),
    }
}

/// Takes out of the findings of each `pattern` the waits inside their calls (their `cause:LAYER/REASON_ns` evidence)
/// whose reason `moves`, `cap` at most in all; returns what it took. A pattern keeps the rest of its time, and its
/// gain at most that; the waits it keeps stay in its evidence.
fn take_pattern_waits(
    findings: &mut [Finding],
    pattern: impl Fn(Reason) -> bool,
    moves: impl Fn(Reason) -> bool,
    cap: f64,
) -> f64 {
    let mut moved = 0.0;
    for f in findings.iter_mut().filter(|f| pattern(f.reason)) {
        let waits: Vec<(String, f64)> = (f.evidence.iter())
            .filter_map(|(k, v)| {
                let (_, reason) = parse_cause_key(k)?;
                moves(reason).then(|| (k.clone(), *v))
            })
            .collect();
        let all: f64 = waits.iter().map(|(_, v)| v).sum();
        let take = all.min(f.cost_ns as f64).min(cap - moved);
        if take <= 0.0 {
            continue;
        }
        f.cost_ns -= take.round() as u64;
        f.gain_ns = f.gain_ns.min(f.cost_ns);
        for (k, v) in waits {
            let kept = v - take * v / all;
            if kept > 0.0 {
                f.evidence.insert(k, kept);
            } else {
                f.evidence.remove(&k);
            }
        }
        moved += take;
    }
    moved
}

/// The findings of several kinds of call that one throttle held, as one over the job: removing the throttle removes
/// every one of their waits, so one finding gains them all. Its per-call numbers are the means over all their calls.
fn one_finding(kinds: Vec<Finding>) -> Finding {
    let calls = |f: &Finding| f.evidence.get("calls").copied().unwrap_or(0.0);
    let all: f64 = kinds.iter().map(calls).sum();
    let mut evidence = BTreeMap::new();
    if all > 0.0 {
        evidence.insert("calls".to_owned(), all);
        for f in &kinds {
            for (k, v) in f.evidence.iter().filter(|(k, _)| k.ends_with("_per_call")) {
                *evidence.entry(k.clone()).or_default() += v * calls(f) / all;
            }
        }
    }
    let mut out = kinds[0].clone();
    out.kinds = (kinds.iter())
        .flat_map(|f| match &f.scope {
            Scope::Calls(k) => vec![k.clone()],
            _ => f.kinds.clone(),
        })
        .collect();
    out.scope = Scope::Job;
    out.files = None;
    out.cost_ns = kinds.iter().map(|f| f.cost_ns).sum();
    out.share = kinds.iter().map(|f| f.share).sum();
    out.evidence = evidence;
    out
}

/// What one system call's record cost a traced process, by the calibrations of the scan's runs
/// ([`datasets::limits::CallCost::ns_per_event`], from each run's end reading): the lowest of them. A calibration
/// measured while the machine was busy reads high (on the 2-core machine, 415 to 1,376 ns in runs minutes apart),
/// and a cost set too high takes a real change for the tracer's. None unless every run that dc-trace closed
/// measured it.
pub fn record_price(scan: &JobScan) -> Option<f64> {
    let ends: BTreeMap<u32, &Limits> = (scan.limits.iter())
        .filter_map(|(input, l)| match l {
            Ok(l) if l.at == Moment::End => Some((*input, l)),
            _ => None,
        })
        .collect();
    if scan.records.is_empty() {
        return None;
    }
    (scan.records.keys())
        .map(|input| ends.get(input)?.per_call.as_ref()?.ns_per_event())
        .try_fold(f64::INFINITY, |low, p| p.map(|p| low.min(p)))
}

/// The tracer's own cost in a scan's runs at `price` a record ([`record_price`]): the system calls' records of the
/// runs dc-trace closed. A kernel event's record inside a call costs a run of one program, not the two of a call's
/// entry and exit that the calibration times: GNU tar's 10 KiB records traced added 144,000 records against 1 MiB
/// records, 124,000 of them kernel events inside its calls, and its change traced (+0.078 s) was its change
/// untraced (+0.08 s). Those records are not priced.
pub fn tracer_ns(scan: &JobScan, price: f64) -> f64 {
    (scan.records.keys())
        .map(|input| scan.call_records.get(input).copied().unwrap_or(0) as f64 * price)
        .sum()
}

/// The job's wait for a CPU between calls ([`crate::diagnose::between`]) is what a CPU quota's throttling left
/// outside the calls: the quota's finding over the job gives it its evidence and its recommendation, and goes.
/// When the trace recorded the tracer's own eBPF time, the quota rationed that too; an untraced run, needing that
/// much less CPU, waits that time (period / quota − 1) less: the gain is the traced wait less that.
pub fn cite_quota(findings: &mut Vec<Finding>, scan: &JobScan) {
    cite_quota_only(findings);
    let tracer_ns: f64 = (Recorded::of(&scan.limits).runs.iter())
        .filter_map(|(_, end)| end.tracer)
        .map(|t| t.bpf_run_ns as f64)
        .sum();
    if tracer_ns > 0.0
        && let Some(f) = findings
            .iter_mut()
            .find(|f| f.scope == Scope::Job && f.evidence.contains_key(QUOTA_EVIDENCE))
    {
        take_out_tracer(f, tracer_ns);
    }
}

/// `f`'s gain, less what the quota it cites made the tracer's `tracer_ns` of CPU wait.
fn take_out_tracer(f: &mut Finding, tracer_ns: f64) {
    let (quota, period) = (f.evidence[QUOTA_EVIDENCE], f.evidence["cpu_period_us"]);
    let waited = tracer_ns * (period / quota - 1.0).max(0.0);
    let gain = (f.gain_ns as f64 - waited).max(0.0);
    f.evidence.insert("tracer_bpf_ns".into(), tracer_ns);
    f.gain_method.how = format!(
        "{} Less the tracer's own eBPF time, {:.3} ms, which the quota rationed too: an untraced run waits {:.3} ms \
         less (period / quota − 1 times it).",
        f.gain_method.how,
        tracer_ns / 1e6,
        (f.gain_ns as f64 - gain) / 1e6
    );
    f.gain_ns = gain.round() as u64;
}

fn cite_quota_only(findings: &mut Vec<Finding>) {
    let is_quota = |f: &Finding| {
        f.scope == Scope::Job
            && f.reason == Reason::CpuContention
            && f.gain_method.slug != crate::diagnose::between::METHOD
            && f.evidence.contains_key(QUOTA_EVIDENCE)
    };
    let Some(q) = findings.iter().position(is_quota) else {
        return;
    };
    let quota = findings.remove(q);
    if let Some(w) = findings
        .iter_mut()
        .find(|f| f.gain_method.slug == crate::diagnose::between::METHOD)
    {
        w.evidence.extend(quota.evidence);
        w.recommendation = quota.recommendation;
    }
}

/// A device is shared when other processes did at least this share of its work over the run ([`Shared::share`]):
/// more than the job itself. Measured on the 2-core machine (2026-11-28): dd, Python, fio and sqlite3 beside two to
/// four O_DIRECT readers, 0.72–0.89 of the requests (fio's four jobs at depths 4–32: 0.40 of the requests, most of
/// the bytes); healthy runs and runs under a cgroup throttle 0–0.25, from the machine's daemons and the tracer's
/// output, with fewer than [`SHARED_DEVICE_MIN_REQUESTS`] requests whenever above 0.2.
pub const SHARED_DEVICE_SHARE: f64 = 0.5;
/// ... and at least this many requests, so that a few writes by a daemon beside a short job are not a neighbour.
pub const SHARED_DEVICE_MIN_REQUESTS: u64 = 100;

/// A device the job used while other processes sent it most of its requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Shared {
    /// Its name (`vda`) and `MAJ:MIN`.
    pub name: String,
    pub device: String,
    /// Other processes' requests and bytes over the run: the device's counters' change less the job's requests, its
    /// writes as [`Shared::writes`] says (none when uncounted).
    pub others: DiskStat,
    pub job: DiskStat,
    /// Where the others' writes come from.
    pub writes: OthersWrites,
}

/// Where other processes' writes on a shared device are counted from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OthersWrites {
    /// The device's counters less the job's requests: the job's writes all reach the device as its own requests.
    Device,
    /// What other processes submitted themselves, as dc-trace counted it: the job's writes reach the device through
    /// writeback (flusher threads and jbd2, whose requests the job's trace does not hold), which the device's
    /// counters cannot tell from a neighbour's, and which is done by kernel threads, which that count leaves out.
    Submitted,
    /// Not counted: the job writes back and the trace holds no count of the others' own (a trace by a dc-trace
    /// before it, or without its block layer), so only reads are compared.
    Uncounted,
    /// Reads and writes alike are what other processes submitted themselves: the job's requests go through a loop,
    /// device-mapper or md device, whose kernel thread sends them on to the disks under it, and the disks' counters
    /// cannot tell those from a neighbour's.
    Stacked,
}

/// Whether a device (by its name in `/sys/block`) passes its requests on to other devices: loop, device-mapper, md.
fn is_stacked(name: &str) -> bool {
    ["loop", "dm-", "md"].iter().any(|p| name.starts_with(p))
}

impl Shared {
    fn requests(d: &DiskStat) -> u64 {
        d.reads + d.writes
    }

    fn bytes(d: &DiskStat) -> u64 {
        d.read_bytes + d.write_bytes
    }

    /// Other processes' share of the device's work over the run: of its requests, or of its bytes when that is
    /// more (a request's time on the device grows with its size, so a neighbour's few large requests can take
    /// more of it than the job's many small ones). The job's own requests count whole, writes too: those its trace
    /// holds are its own, whichever way they went.
    pub fn share(&self) -> f64 {
        let part = |others: u64, job: u64| {
            let all = (others + job) as f64;
            if all > 0.0 { others as f64 / all } else { 0.0 }
        };
        part(Shared::requests(&self.others), Shared::requests(&self.job))
            .max(part(Shared::bytes(&self.others), Shared::bytes(&self.job)))
    }

    /// What a person reads: how much of the device the others took, and what to change.
    pub fn sentence(&self) -> String {
        format!(
            "Other processes did {:.0}% of the {}work of {} ({}) while the job ran: {} requests, {:.1} MiB{}, against the job's {} requests, {:.1} MiB. Move them or the job to another device, or give the job priority over them (its cgroup's io.weight or io.prio.class, ionice -c3 for the others).",
            self.share() * 100.0,
            if self.writes == OthersWrites::Uncounted {
                "reading "
            } else {
                ""
            },
            self.name,
            self.device,
            Shared::requests(&self.others),
            Shared::bytes(&self.others) as f64 / (1u64 << 20) as f64,
            match self.writes {
                OthersWrites::Submitted => {
                    " (their writes as they submitted them; writeback by kernel threads, which may be the job's, not counted)"
                }
                OthersWrites::Stacked => {
                    " (as they submitted them: the job's requests reach this device through a loop or device-mapper device's kernel thread, not counted)"
                }
                OthersWrites::Device | OthersWrites::Uncounted => "",
            },
            Shared::requests(&self.job),
            Shared::bytes(&self.job) as f64 / (1u64 << 20) as f64,
        )
    }
}

/// Whether the job's writes reach a device through writeback, in requests its trace does not hold (flusher threads',
/// jbd2's): a sync, or a buffered write or copy into a file on a file system (not a device node such as
/// `/dev/null`, `/proc`, `/sys`, a pipe or a socket).
pub fn writes_back(m: &FeatureMatrix) -> bool {
    let on_a_file_system = |path: &str| {
        path.starts_with('/')
            && !["/dev/", "/proc/", "/sys/"]
                .iter()
                .any(|p| path.starts_with(p))
    };
    (0..m.n_rows()).any(|i| {
        let op = m.op[i].as_str();
        datasets::vocab::op::flushes(op)
            || (datasets::vocab::op::direction(op) == Some(Direction::Write)
                && m.direct[i] != Some(true)
                && m.file[i].as_deref().is_some_and(on_a_file_system))
    })
}

/// The devices the job sent requests to whose counters say that other processes sent them most of theirs
/// ([`SHARED_DEVICE_SHARE`]), the most shared first. `job_io` is the job's requests per device, from its trace.
pub fn shared(
    rec: &Recorded,
    job_io: &BTreeMap<String, DiskStat>,
    writes_back: bool,
) -> Vec<Shared> {
    let mut out = Vec::new();
    for (start, end) in &rec.runs {
        let stacked = (end.devices.iter()).any(|d| {
            is_stacked(&d.name)
                && job_io
                    .get(&d.device)
                    .is_some_and(|j| Shared::requests(j) > 0)
        });
        for d in &end.devices {
            let before = start.devices.iter().find(|b| b.device == d.device);
            let (Some(a), Some(b), Some(job)) = (
                before.and_then(|b| b.stat),
                d.stat,
                job_io.get(&d.device).copied(),
            ) else {
                continue;
            };
            let dev = a.since(&b);
            let less_job = DiskStat {
                reads: dev.reads.saturating_sub(job.reads),
                read_bytes: dev.read_bytes.saturating_sub(job.read_bytes),
                writes: dev.writes.saturating_sub(job.writes),
                write_bytes: dev.write_bytes.saturating_sub(job.write_bytes),
                io_ticks_ms: dev.io_ticks_ms,
            };
            let submitted = |sub: DiskStat| DiskStat {
                io_ticks_ms: dev.io_ticks_ms,
                ..sub
            };
            let under_stack = stacked && !is_stacked(&d.name);
            let (writes, others) = match (under_stack, writes_back, d.submitted_by_others) {
                (true, _, Some(sub)) => (OthersWrites::Stacked, submitted(sub)),
                (true, _, None) => continue,
                (false, false, _) => (OthersWrites::Device, less_job),
                (false, true, Some(sub)) => (
                    OthersWrites::Submitted,
                    DiskStat {
                        writes: sub.writes,
                        write_bytes: sub.write_bytes,
                        ..less_job
                    },
                ),
                (false, true, None) => (
                    OthersWrites::Uncounted,
                    DiskStat {
                        writes: 0,
                        write_bytes: 0,
                        ..less_job
                    },
                ),
            };
            let s = Shared {
                name: d.name.clone(),
                device: d.device.clone(),
                others,
                job,
                writes,
            };
            if Shared::requests(&s.job) > 0
                && Shared::requests(&s.others) >= SHARED_DEVICE_MIN_REQUESTS
                && s.share() >= SHARED_DEVICE_SHARE
            {
                out.push(s);
            }
        }
    }
    out.sort_by(|a, b| b.share().total_cmp(&a.share()));
    out
}

/// The reasons of a wait for a device that another process's requests lengthen.
fn waits_for_shared(reason: Reason) -> bool {
    matches!(
        reason,
        Reason::DeviceBound | Reason::ThrottledAboveDevice | Reason::QueueDepth | Reason::IoWait
    )
}

/// The findings that wait for the device, not already citing a limit, become one `block` / `shared_device`
/// finding: each kind's, or one over the job when several kinds waited. The calls of a sync-per-commit pattern, or
/// of bytes read again, that waited for the device waited for the others too: those waits move from the pattern to
/// it, as to a throttle's.
/// Without the others the device serves only the job: its waits shrink by the others' share of the requests.
fn share_device(findings: &mut Vec<Finding>, io_ns: f64, s: &Shared) {
    let mut merged = take_waits(findings, |f| {
        matches!(f.scope, Scope::Calls(_)) && waits_for_shared(f.reason) && !cites_limit(f)
    });
    let moved = take_pattern_waits(
        findings,
        |p| matches!(p, Reason::FsyncHeavy | Reason::Reread),
        waits_for_shared,
        f64::INFINITY,
    );
    if moved > 0.0 {
        match merged.first_mut() {
            Some(f) => f.cost_ns += moved.round() as u64,
            None => merged.push(Finding::new(
                BLOCK,
                Reason::SharedDevice,
                Scope::Job,
                moved,
                io_ns,
                BTreeMap::new(),
                Gain::wait_removed(moved),
            )),
        }
    }
    let share = s.share();
    for mut f in merged {
        f.layer = BLOCK.to_owned();
        f.reason = Reason::SharedDevice;
        let gain = Gain::new(
            f.cost_ns as f64 * share,
            "neighbours_removed",
            format!(
                "The waits for the device shortened by the share of its requests other processes sent ({:.0}%): without them it serves only the job.",
                share * 100.0
            ),
        );
        f.gain_ns = gain.ns as u64;
        f.gain_method = gain.method;
        f.evidence.insert(SHARED_EVIDENCE.into(), share);
        f.evidence.insert(
            "device_others_requests".into(),
            Shared::requests(&s.others) as f64,
        );
        f.evidence.insert(
            "device_others_bytes".into(),
            Shared::bytes(&s.others) as f64,
        );
        f.evidence.insert(
            "device_job_requests".into(),
            Shared::requests(&s.job) as f64,
        );
        f.recommendation = s.sentence();
        findings.push(f);
    }
}

/// The evidence key of the job's waits for I/O between its calls that a device limit or neighbour took.
pub const IO_WAIT_BETWEEN_CALLS: &str = "io_wait_between_calls_ns";

/// The job's waits for I/O outside its calls (D state: page faults on mapped files, such as a program's own binary
/// and libraries read cold, or a mapped data file, with the faults' time reading pages in) wait for the same device
/// as its calls: a finding that took over the calls' device waits, citing a device limit or other processes on the
/// device, takes them too; a memory limit takes the share of them that faulted back pages it had let go of. It
/// claims their time (the threads', which every share then divides by: the returned amount) and gains their part of
/// the job's wall-clock time.
pub fn claim_waits_between_calls(
    findings: &mut [Finding],
    split: &WallSplit,
    scan: &JobScan,
) -> f64 {
    let Some(f) = findings
        .iter_mut()
        .find(|f| cites_limit(f) && took_over(f, Reason::IoWait))
    else {
        return 0.0;
    };
    let part = f
        .evidence
        .get(REFAULT_OUTSIDE_EVIDENCE)
        .copied()
        .unwrap_or(1.0);
    let (wall_ns, threads_ns) = waits_between_calls(split, scan);
    let wall_ns = part * wall_ns;
    if wall_ns <= 0.0 {
        return 0.0;
    }
    let cost_ns = (part * threads_ns).max(wall_ns);
    f.cost_ns += cost_ns.round() as u64;
    f.gain_ns += wall_ns.round() as u64;
    f.evidence.insert(IO_WAIT_BETWEEN_CALLS.into(), cost_ns);
    f.gain_method.how = format!(
        "{} With the waits for I/O between its calls (page faults on mapped files) it caused: {:.3} ms more of the job's wall-clock time.",
        f.gain_method.how,
        wall_ns / 1e6
    );
    cost_ns
}

/// The job's waits for I/O between its calls and its faults' time reading pages in there ([`WallSplit::page_in_ns`]):
/// their part of the wall-clock time, and the threads' time.
fn waits_between_calls(split: &WallSplit, scan: &JobScan) -> (f64, f64) {
    let part = |key: (&str, Reason)| {
        (split.between_calls)
            .get(&(key.0.to_owned(), key.1))
            .copied()
            .unwrap_or(0.0)
    };
    let wall_ns = part((SCHED, Reason::IoWait)) + part((PAGE_CACHE, Reason::ReadaheadMiss));
    let threads_ns = (scan.threads.values())
        .filter_map(|t| t.offcpu_outside_ns.get("D"))
        .map(|ns| *ns as f64)
        .sum::<f64>()
        + split.page_in_ns;
    (wall_ns, threads_ns)
}

/// The job's waits for I/O between its calls, when its faults there added pages to the page cache
/// ([`JobScan::pages_added_outside_calls`]): a mapped file read through its mapping, a binary or library paged in.
/// They are waits for pages, the page cache's, as a read's are ([`name_waits_for_pages`] then names them by the
/// devices' readahead).
pub fn name_page_ins_between_calls(split: &mut WallSplit, scan: &JobScan) {
    if scan.pages_added_outside_calls == 0 {
        return;
    }
    let key = (SCHED.to_owned(), Reason::IoWait);
    let Some(ns) = split.between_calls.remove(&key) else {
        return;
    };
    let page_in = (PAGE_CACHE.to_owned(), Reason::ReadaheadMiss);
    *split.between_calls.entry(page_in.clone()).or_default() += ns;
    if let Some(part) = split.parts.get_mut(&key) {
        *part -= ns;
        if *part <= 0.0 {
            split.parts.remove(&key);
        }
    }
    *split.parts.entry(page_in).or_default() += ns;
}

/// A mapped file read through its mapping with readahead below the kernel's default: each page fault between the
/// job's calls reads in and waits for the one page it asked for. When those faults and waits hold at least
/// [`PAGE_IN_BETWEEN_CALLS_SHARE`] of the job's wall-clock time and no limit took them
/// ([`claim_waits_between_calls`]), they become one `page_cache` / `readahead_miss` finding over the job citing the
/// device's setting, whose gain is their part of the wall-clock time. Returns the threads' time it claims, which
/// every share then divides by.
pub fn readahead_between_calls(
    findings: &mut Vec<Finding>,
    split: &WallSplit,
    scan: &JobScan,
) -> f64 {
    let rec = Recorded::of(&scan.limits);
    let Readahead::Low(d, kb) = readahead_of(&rec) else {
        return 0.0;
    };
    if scan.pages_added_outside_calls == 0
        || findings
            .iter()
            .any(|f| cites_limit(f) && took_over(f, Reason::IoWait))
    {
        return 0.0;
    }
    let (wall_ns, threads_ns) = waits_between_calls(split, scan);
    if wall_ns < PAGE_IN_BETWEEN_CALLS_SHARE * split.wall_ns as f64 || wall_ns <= 0.0 {
        return 0.0;
    }
    let cost_ns = threads_ns.max(wall_ns);
    let mut e = BTreeMap::new();
    e.insert("read_ahead_kb".to_owned(), kb as f64);
    e.insert(
        "pages_added_between_calls".to_owned(),
        scan.pages_added_outside_calls as f64,
    );
    e.insert(IO_WAIT_BETWEEN_CALLS.to_owned(), cost_ns);
    let gain = Gain::new(
        wall_ns,
        "wait_removed",
        format!(
            "The waits for pages between the job's calls removed: {:.3} ms of its wall-clock time.",
            wall_ns / 1e6
        ),
    );
    let mut f = Finding::new(
        PAGE_CACHE,
        Reason::ReadaheadMiss,
        Scope::Job,
        cost_ns,
        cost_ns,
        e,
        gain,
    );
    f.recommendation = format!(
        "The job's page faults between its calls read a mapped file one page at a time: readahead is {kb} KiB on {} ({}), below the kernel's default of {DEFAULT_READAHEAD_KB} KiB. Raise /sys/block/{}/queue/read_ahead_kb (blockdev --setra), or madvise(MADV_SEQUENTIAL or MADV_WILLNEED) the mapping.",
        d.name, d.device, d.name
    );
    findings.push(f);
    cost_ns
}

/// The I/O time no finding claimed.
fn unclaimed(findings: &[Finding], io_ns: f64) -> f64 {
    (io_ns - findings.iter().map(|f| f.cost_ns as f64).sum::<f64>()).max(0.0)
}

/// The note for inputs without limits, said once: none recorded, or recorded but unreadable.
pub fn note(scan: Option<&JobScan>) -> Option<String> {
    let rec = scan.map(|s| Recorded::of(&s.limits)).unwrap_or_default();
    if !rec.errors.is_empty() {
        return Some(format!(
            "The limits recorded with the trace could not all be used ({}): findings cite only those read.",
            rec.errors.join("; ")
        ));
    }
    rec.runs.is_empty().then(|| {
        "No limits were recorded with these inputs (a trace by an older dc-trace, or another tool's format): the \
         findings do not cite cgroup throttles, CPU quotas, memory limits or the devices' settings."
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under a quota of 0.2 CPU (20 ms in each 100 ms), each millisecond of the tracer's own CPU time made the traced
    /// job wait four more: 59 ms of eBPF time take 236 ms off a 706 ms gain, and the method says so.
    #[test]
    fn a_quota_gain_leaves_out_what_the_tracer_made_the_job_wait() {
        let evidence = BTreeMap::from([
            (QUOTA_EVIDENCE.to_owned(), 20_000.0),
            ("cpu_period_us".to_owned(), 100_000.0),
        ]);
        let mut f = Finding::new(
            SCHED,
            Reason::CpuContention,
            Scope::Job,
            706e6,
            1e9,
            evidence,
            Gain::new(706e6, "cpu_wait_between_calls", "The wait removed."),
        );
        take_out_tracer(&mut f, 59e6);
        assert_eq!(f.gain_ns, 470_000_000);
        assert_eq!(f.cost_ns, 706_000_000);
        assert_eq!(f.evidence["tracer_bpf_ns"], 59e6);
        assert!(
            f.gain_method
                .how
                .ends_with("an untraced run waits 236.000 ms less (period / quota − 1 times it)."),
            "{}",
            f.gain_method.how
        );
        // A quota of a whole CPU or more rations nothing the tracer adds to one thread.
        f.evidence.insert(QUOTA_EVIDENCE.to_owned(), 200_000.0);
        take_out_tracer(&mut f, 59e6);
        assert_eq!(f.gain_ns, 470_000_000);
    }
    use datasets::limits::{CpuLimit, IoCounters, IoLimit, MemoryLimit};
    use datasets::vocab::layer::APP as APP_LAYER;
    use datasets::vocab::layer::EXT4;

    fn reading(at: Moment, ts_ns: u64, read_bytes: u64, throttled: u64) -> Limits {
        Limits {
            at,
            ts_ns,
            cgroups: vec![Cgroup {
                version: CgroupVersion::V1,
                controllers: "blkio".into(),
                path: "/job".into(),
                dir: "/sys/fs/cgroup/blkio/job".into(),
                io_limits: vec![IoLimit {
                    device: "254:0".into(),
                    read_bps: Some(8 << 20),
                    write_iops: Some(100),
                    ..IoLimit::default()
                }],
                io: vec![IoCounters {
                    device: "254:0".into(),
                    read_bytes,
                    writes: 3,
                    ..IoCounters::default()
                }],
                cpu: Some(CpuLimit {
                    quota_us: Some(10_000),
                    period_us: 100_000,
                    nr_periods: 0,
                    nr_throttled: throttled,
                    throttled_ns: throttled * 10_000_000,
                }),
                memory: Some(MemoryLimit {
                    limit_bytes: None,
                    failcnt: Some(throttled),
                    ..MemoryLimit::default()
                }),
            }],
            devices: vec![],
            dirty: Default::default(),
            mounts: vec![],
            errors: vec![],
            tracer: None,
            per_call: None,
        }
    }

    /// Opens, stats and directory reads read directories and inodes (a read throttle holds them); a sync writes.
    #[test]
    fn lookups_read_directories_and_inodes() {
        let kind = |op: &str| Kind {
            op: op.into(),
            mode: None,
            size_class: None,
        };
        for op in ["newfstatat", "getdents64", "openat"] {
            assert!(moves(&kind(op), Direction::Read), "{op}");
            assert!(!moves(&kind(op), Direction::Write), "{op}");
        }
        assert!(moves(&kind("fdatasync"), Direction::Write));
        assert!(!moves(&kind("fdatasync"), Direction::Read));
    }

    /// A write throttle held a database's fdatasync (10 calls, 100 µs above the device each) and its checkpoint's
    /// fsync (30 calls, 200 µs each): one finding over the job claims and gains both, 1 + 6 ms, at 175 µs a call.
    #[test]
    fn one_throttle_over_several_kinds_of_call_is_one_finding() {
        let sync = |op: &str, calls: f64, above: f64| {
            Finding::new(
                BLOCK,
                Reason::ThrottledAboveDevice,
                Scope::Calls(Kind {
                    op: op.into(),
                    mode: None,
                    size_class: None,
                }),
                calls * above,
                10e6,
                crate::diagnose::evidence([
                    ("calls", calls),
                    ("above_device_ns_per_call", above),
                    ("queue_depth", 1.0),
                ]),
                Gain::wait_removed(calls * above),
            )
        };
        let f = one_finding(vec![
            sync("fdatasync", 10.0, 100e3),
            sync("fsync", 30.0, 200e3),
        ]);
        assert_eq!(f.scope, Scope::Job);
        let ops: Vec<&str> = f.kinds.iter().map(|k| k.op.as_str()).collect();
        assert_eq!(ops, ["fdatasync", "fsync"]);
        assert_eq!(f.cost_ns, 7_000_000);
        assert!((f.share - 0.7).abs() < 1e-12, "{}", f.share);
        assert_eq!(f.evidence["calls"], 40.0);
        assert!((f.evidence["above_device_ns_per_call"] - 175e3).abs() < 1e-6);
        assert!(!f.evidence.contains_key("queue_depth"));
    }

    /// 16 MiB read in 2 s under an 8 MiB/s limit: held, at 8.0 MiB/s. The write IOPS limit saw no new writes, and
    /// the memory cgroup sets no limit: neither is named.
    #[test]
    fn a_throttle_the_counters_reached_is_held() {
        let rec = Recorded::of(&[
            (0, Ok(reading(Moment::Start, 1_000_000_000, 1 << 20, 5))),
            (0, Ok(reading(Moment::End, 3_000_000_000, 17 << 20, 417))),
        ]);
        let h = held(&rec);
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(
            h[0].sentence(),
            "Reads ran at 8.0 MiB/s, the cgroup's read_bps limit on 254:0 is 8.0 MiB/s: raise or remove it \
             (/sys/fs/cgroup/blkio/job/blkio.throttle.read_bps_device), or run the job outside that cgroup."
        );
        assert_eq!(
            h[1].sentence(),
            "Throttled 412 times for 4.1 s (summed over CPUs, in a 2.0 s run) by cpu.cfs_quota_us (10000 µs of CPU \
             per 100000 µs): raise or remove the quota (/sys/fs/cgroup/blkio/job/cpu.cfs_quota_us)."
        );
    }

    /// The same bytes over 10 s: 1.6 MiB/s against 8, so the throttle did not hold the job.
    #[test]
    fn a_throttle_far_above_the_rate_is_not_held() {
        let rec = Recorded::of(&[
            (0, Ok(reading(Moment::Start, 0, 1 << 20, 0))),
            (0, Ok(reading(Moment::End, 10_000_000_000, 17 << 20, 0))),
        ]);
        assert_eq!(held(&rec), []);
    }

    /// A run's limits, with readahead at `kb` on its disk.
    fn readahead_limits(kb: u64) -> Vec<(u32, Result<Limits, String>)> {
        let mut end = reading(Moment::End, 2, 0, 0);
        end.devices = vec![BlockQueue {
            name: "vda".into(),
            device: "254:0".into(),
            read_ahead_kb: Some(kb),
            ..BlockQueue::default()
        }];
        vec![(0, Ok(reading(Moment::Start, 1, 0, 0))), (0, Ok(end))]
    }

    /// Python reading a cold file through `mmap` with readahead at 0 KiB: its faults between its calls added 512
    /// pages, read them in for 0.8 ms and waited 3 ms for them over two threads, 2.5 ms of a 10 ms run. They are one
    /// `page_cache` / `readahead_miss` finding over the job, citing the setting and gaining the 2.5 ms; a
    /// comparison's split names the waits so too. At the kernel's default window, or with no page added between
    /// calls, there is no finding.
    #[test]
    fn waits_for_pages_between_calls_with_readahead_off_are_a_readahead_miss() {
        let scan = |kb: u64, pages: u64| {
            let mut scan = JobScan::default();
            scan.limits = readahead_limits(kb);
            scan.pages_added_outside_calls = pages;
            for (tid, ns) in [(1, 1_000_000), (2, 2_000_000)] {
                scan.threads.insert(
                    (1, tid),
                    crate::diagnose::scan::ThreadTime {
                        offcpu_outside_ns: BTreeMap::from([("D".to_owned(), ns)]),
                        ..Default::default()
                    },
                );
            }
            scan
        };
        let io_wait = (SCHED.to_owned(), Reason::IoWait);
        let page_in = (PAGE_CACHE.to_owned(), Reason::ReadaheadMiss);
        let split = WallSplit {
            wall_ns: 10_000_000,
            between_calls: BTreeMap::from([(io_wait.clone(), 2e6), (page_in.clone(), 0.5e6)]),
            parts: BTreeMap::from([(io_wait.clone(), 2.5e6), (page_in.clone(), 0.5e6)]),
            page_in_ns: 0.8e6,
            ..WallSplit::default()
        };
        let mut f = vec![];
        assert_eq!(
            readahead_between_calls(&mut f, &split, &scan(0, 512)),
            3.8e6
        );
        assert_eq!(
            (f[0].layer.as_str(), f[0].reason, &f[0].scope),
            (PAGE_CACHE, Reason::ReadaheadMiss, &Scope::Job)
        );
        assert_eq!((f[0].cost_ns, f[0].gain_ns), (3_800_000, 2_500_000));
        assert_eq!(
            (
                f[0].evidence["read_ahead_kb"],
                f[0].evidence["pages_added_between_calls"]
            ),
            (0.0, 512.0)
        );
        assert!(
            f[0].recommendation
                .contains("/sys/block/vda/queue/read_ahead_kb"),
            "{}",
            f[0].recommendation
        );
        for scan in [scan(8192, 512), scan(0, 0)] {
            let mut f = vec![];
            assert_eq!(readahead_between_calls(&mut f, &split, &scan), 0.0);
            assert_eq!(f, []);
        }
        let mut named = split.clone();
        name_page_ins_between_calls(&mut named, &scan(0, 512));
        assert_eq!(
            named.parts,
            BTreeMap::from([(io_wait.clone(), 0.5e6), (page_in.clone(), 2.5e6)])
        );
        assert_eq!(named.between_calls, BTreeMap::from([(page_in, 2.5e6)]));
    }

    /// Cold buffered reads waiting for their pages: with readahead at 0 KiB on the disk they are `readahead_miss`
    /// and cite it; at the machine's 8 MiB they waited for the device at its speed, and readahead is not named.
    #[test]
    fn a_wait_for_pages_is_readahead_only_below_the_default_window() {
        let with_readahead = |kb: u64| Recorded::of(&readahead_limits(kb));
        let waiting = || {
            vec![Finding::new(
                "page_cache",
                Reason::ReadaheadMiss,
                Scope::Job,
                100.0,
                200.0,
                BTreeMap::new(),
                Gain::wait_removed(100.0),
            )]
        };
        let mut off = waiting();
        readahead(&mut off, &with_readahead(0));
        assert_eq!(off[0].reason, Reason::ReadaheadMiss);
        assert_eq!(off[0].evidence["read_ahead_kb"], 0.0);
        assert!(
            off[0]
                .recommendation
                .contains("/sys/block/vda/queue/read_ahead_kb"),
            "{}",
            off[0].recommendation
        );
        let mut on = waiting();
        readahead(&mut on, &with_readahead(8192));
        assert_eq!(
            (on[0].reason, on[0].gain_ns, on[0].gain_method.slug.as_str()),
            (Reason::DeviceBound, 0, "cold_cache")
        );
        let mut unknown = waiting();
        readahead(&mut unknown, &Recorded::default());
        assert_eq!(unknown, waiting());

        // A run's time by cause, as the comparison splits it, names the waits the same way.
        let parts = || {
            BTreeMap::from([
                (("page_cache".to_owned(), Reason::ReadaheadMiss), 5.0),
                (("page_cache".to_owned(), Reason::DeviceBound), 2.0),
                (("block".to_owned(), Reason::DeviceBound), 1.0),
            ])
        };
        let named = |rec: &Recorded| {
            let mut p = parts();
            name_waits_for_pages(&mut p, rec);
            p
        };
        assert_eq!(
            named(&with_readahead(8192)),
            BTreeMap::from([
                (("page_cache".to_owned(), Reason::DeviceBound), 7.0),
                (("block".to_owned(), Reason::DeviceBound), 1.0),
            ])
        );
        assert_eq!(named(&with_readahead(0)), parts());
        assert_eq!(named(&Recorded::default()), parts());
    }

    #[test]
    fn unpaired_and_bad_readings_are_named() {
        let rec = Recorded::of(&[
            (0, Ok(reading(Moment::Start, 0, 0, 0))),
            (1, Ok(reading(Moment::End, 0, 0, 0))),
            (
                2,
                Err("dc_limits event at ts 5 ns: field `args.limits.at`: bad".into()),
            ),
        ]);
        assert_eq!(rec.runs, []);
        assert_eq!(
            rec.errors,
            [
                "input 1: an end reading without a start",
                "input 2: dc_limits event at ts 5 ns: field `args.limits.at`: bad",
                "input 0: a start reading without an end",
            ]
        );
    }

    fn disk(at: Moment, stat: DiskStat) -> Limits {
        let mut l = reading(at, 0, 0, 0);
        l.devices = vec![BlockQueue {
            name: "vda".into(),
            device: "254:0".into(),
            stat: Some(stat),
            ..BlockQueue::default()
        }];
        l
    }

    fn stat(reads: u64, writes: u64) -> DiskStat {
        DiskStat {
            reads,
            read_bytes: reads << 20,
            writes,
            write_bytes: writes << 12,
            io_ticks_ms: 0,
        }
    }

    /// The device served 1,000 reads and 400 writes over the run; the job's trace holds 200 of the reads: the
    /// others sent 800 + 400 of 1,400, or 800 of 1,000 reads when the job's own writes go through writeback. With
    /// 300 of the reads the job's, 100 others' writes are under the minimum when writes do not count.
    #[test]
    fn other_processes_requests_are_the_devices_less_the_jobs() {
        let rec = Recorded::of(&[
            (0, Ok(disk(Moment::Start, stat(5_000, 7_000)))),
            (0, Ok(disk(Moment::End, stat(6_000, 7_400)))),
        ]);
        let job = |reads: u64| BTreeMap::from([("254:0".to_owned(), stat(reads, 0))]);
        let s = &shared(&rec, &job(200), false)[0];
        assert_eq!((s.others.reads, s.others.writes), (800, 400));
        assert_eq!(s.others.read_bytes, 800 << 20);
        assert!((s.share() - 1200.0 / 1400.0).abs() < 1e-12);
        assert_eq!(
            s.sentence(),
            "Other processes did 86% of the work of vda (254:0) while the job ran: 1200 requests, 801.6 MiB, against \
             the job's 200 requests, 200.0 MiB. Move them or the job to another device, or give the job priority \
             over them (its cgroup's io.weight or io.prio.class, ionice -c3 for the others)."
        );
        let reads_only = &shared(&rec, &job(200), true)[0];
        assert!((reads_only.share() - 0.8).abs() < 1e-12);
        assert!(
            reads_only
                .sentence()
                .contains("did 80% of the reading work of vda")
        );
        // 700 others' reads of 1,000: shared; 0 left when the job's trace holds all 1,000.
        assert_eq!(shared(&rec, &job(300), true).len(), 1);
        assert_eq!(shared(&rec, &job(1_000), true), []);
        // Half of 150 requests are others', under the minimum of 100.
        let small = Recorded::of(&[
            (0, Ok(disk(Moment::Start, stat(0, 0)))),
            (0, Ok(disk(Moment::End, stat(150, 0)))),
        ]);
        assert_eq!(shared(&small, &job(75), false), []);
        // A job whose requests are all its syncs' writes beside others' reads: counted against its own writes, 300
        // requests of 4 KiB against 1,000 of 1 MiB.
        let writer = BTreeMap::from([("254:0".to_owned(), stat(0, 300))]);
        let s = &shared(&rec, &writer, true)[0];
        assert_eq!(s.others.reads, 1_000);
        let bytes = 1_000.0 * 1_048_576.0 / (1_000.0 * 1_048_576.0 + 300.0 * 4096.0);
        assert!((s.share() - bytes).abs() < 1e-12, "{}", s.share());
        assert!(s.sentence().contains("against the job's 300 requests"));
        // A device the job sent nothing to is not the job's, however busy.
        assert_eq!(shared(&rec, &BTreeMap::new(), false), []);
        // 150 others' requests of 1 MiB against the job's 1,000 of 4 KiB: 13% of the requests, but 97% of the bytes.
        let few_large = Recorded::of(&[
            (0, Ok(disk(Moment::Start, stat(0, 0)))),
            (0, Ok(disk(Moment::End, stat(150, 1_000)))),
        ]);
        let small_writes = BTreeMap::from([("254:0".to_owned(), stat(0, 1_000))]);
        let s = &shared(&few_large, &small_writes, false)[0];
        assert!((s.share() - 150.0 * 256.0 / (150.0 * 256.0 + 1_000.0)).abs() < 1e-12);
    }

    /// A job whose files are on a loop device: its 300 reads go to loop0, whose kernel thread reads the image on vda,
    /// so vda's 1,000 reads over the run are the job's own, not a neighbour's. vda's others are then what other
    /// processes submitted themselves: none, or 900 reads, and loop0's are its counters less the job's.
    #[test]
    fn under_a_loop_device_others_are_what_they_submitted() {
        let with = |submitted: Option<DiskStat>| {
            let at = |m, vda: DiskStat, loop0: DiskStat| {
                let mut l = disk(m, vda);
                l.devices[0].submitted_by_others = submitted;
                l.devices.push(BlockQueue {
                    name: "loop0".into(),
                    device: "7:0".into(),
                    stat: Some(loop0),
                    ..BlockQueue::default()
                });
                l
            };
            Recorded::of(&[
                (0, Ok(at(Moment::Start, stat(0, 0), stat(0, 0)))),
                (0, Ok(at(Moment::End, stat(1_000, 0), stat(300, 0)))),
            ])
        };
        let job = BTreeMap::from([
            ("7:0".to_owned(), stat(300, 0)),
            ("254:0".to_owned(), stat(5, 0)),
        ]);
        assert_eq!(shared(&with(Some(stat(0, 0))), &job, false), []);
        assert_eq!(shared(&with(None), &job, false), []);
        let s = &shared(&with(Some(stat(900, 0))), &job, false)[0];
        assert_eq!(
            (s.device.as_str(), s.writes, s.others.reads),
            ("254:0", OthersWrites::Stacked, 900)
        );
        assert!(
            s.sentence()
                .contains("through a loop or device-mapper device"),
            "{}",
            s.sentence()
        );
        // Without the loop device, vda's reads less the job's are others'.
        let direct = BTreeMap::from([("254:0".to_owned(), stat(5, 0))]);
        assert_eq!(
            shared(&with(Some(stat(0, 0))), &direct, false)[0]
                .others
                .reads,
            995
        );
    }

    /// A job that writes back (a database's syncs, buffered writes) beside processes writing directly: the device's
    /// 7,400 writes hold the job's writeback too, so the others' writes are those dc-trace saw them submit, 2,000 bios
    /// of 1 MiB; a trace without that count compares reads only, and finds the 10 others' reads no neighbour.
    #[test]
    fn beside_a_job_that_writes_back_others_writes_are_what_they_submitted() {
        let with = |submitted: Option<DiskStat>| {
            let mut end = disk(Moment::End, stat(1_010, 7_400));
            end.devices[0].submitted_by_others = submitted;
            Recorded::of(&[(0, Ok(disk(Moment::Start, stat(1_000, 0)))), (0, Ok(end))])
        };
        let syncs = BTreeMap::from([("254:0".to_owned(), stat(0, 300))]);
        let submitted = DiskStat {
            writes: 2_000,
            write_bytes: 2_000 << 20,
            ..DiskStat::default()
        };
        let s = &shared(&with(Some(submitted)), &syncs, true)[0];
        assert_eq!(s.writes, OthersWrites::Submitted);
        assert_eq!((s.others.reads, s.others.writes), (10, 2_000));
        let bytes =
            (10.0 + 2_000.0) * 1_048_576.0 / ((10.0 + 2_000.0) * 1_048_576.0 + 300.0 * 4096.0);
        assert!((s.share() - bytes).abs() < 1e-12, "{}", s.share());
        assert!(
            s.sentence().contains(
                "2010 requests, 2010.0 MiB (their writes as they submitted them; writeback by kernel threads, which may \
                 be the job's, not counted), against the job's 300 requests"
            ),
            "{}",
            s.sentence()
        );
        assert_eq!(shared(&with(None), &syncs, true), []);
        // Nothing submitted by others: the device's 7,100 writes beyond the job's are its own writeback.
        assert_eq!(shared(&with(Some(DiskStat::default())), &syncs, true), []);
    }

    /// Writes reach the device through writeback when buffered into a file on a file system, or synced; not when
    /// direct, or into `/dev/null` or a pipe.
    #[test]
    fn buffered_writes_into_files_and_syncs_write_back() {
        let m = |op: &str, file: Option<&str>, direct: Option<bool>| FeatureMatrix {
            op: vec!["read".into(), op.into()],
            pid: vec![1; 2],
            tid: vec![1; 2],
            ts_ns: vec![0, 10],
            dur_ns: vec![5, 5],
            file: vec![Some("/data/in".into()), file.map(String::from)],
            size: vec![Some(4096); 2],
            bandwidth_mibs: vec![None; 2],
            direct: vec![None, direct],
            sequential: vec![None; 2],
            run: vec![None; 2],
            thread: vec![None; 2],
            process: vec![None; 2],
            self_ns: vec![5, 5],
            features: vec![],
        };
        assert!(writes_back(&m("write", Some("/data/out"), Some(false))));
        assert!(writes_back(&m("pwrite64", Some("/data/out"), None)));
        assert!(writes_back(&m("copy_file_range", Some("/data/out"), None)));
        assert!(writes_back(&m("fdatasync", None, None)));
        assert!(!writes_back(&m("write", Some("/data/out"), Some(true))));
        assert!(!writes_back(&m("write", Some("/dev/null"), None)));
        assert!(!writes_back(&m("write", Some("pipe:[7]"), None)));
        assert!(!writes_back(&m("read", Some("/data/out"), None)));
    }

    /// Two kinds of read waited for a device the others mostly used: one `shared_device` finding over the job,
    /// gaining their time times the others' share; a read throttle's finding keeps its limit.
    #[test]
    fn waits_for_a_shared_device_become_one_finding() {
        let wait = |size: &str, reason: Reason, ns: f64| {
            Finding::new(
                BLOCK,
                reason,
                Scope::Calls(Kind {
                    op: "read".into(),
                    mode: None,
                    size_class: Some(size.into()),
                }),
                ns,
                10e6,
                crate::diagnose::evidence([("calls", 10.0)]),
                Gain::wait_removed(0.0),
            )
        };
        let mut throttled = wait("1M+", Reason::ThrottledAboveDevice, 1e6);
        throttled.evidence.insert("limit_read_bps".into(), 1.0);
        let mut findings = vec![
            wait("4K-64K", Reason::DeviceBound, 3e6),
            wait("64K-1M", Reason::ThrottledAboveDevice, 1e6),
            throttled.clone(),
        ];
        let s = Shared {
            name: "vda".into(),
            device: "254:0".into(),
            others: stat(750, 0),
            job: stat(250, 0),
            writes: OthersWrites::Device,
        };
        share_device(&mut findings, 10e6, &s);
        assert_eq!(findings[0], throttled);
        let f = &findings[1];
        assert_eq!(
            (f.scope.clone(), f.reason),
            (Scope::Job, Reason::SharedDevice)
        );
        assert_eq!((f.cost_ns, f.gain_ns), (4_000_000, 3_000_000));
        assert_eq!(f.gain_method.slug, "neighbours_removed");
        assert_eq!(f.evidence["device_others_share"], 0.75);
        assert_eq!(f.evidence["device_others_requests"], 750.0);
        assert_eq!(f.evidence["device_job_requests"], 250.0);
        assert!(
            cites_limit(f)
                && took_over(f, Reason::DeviceBound)
                && !took_over(f, Reason::CpuContention)
        );
        assert_eq!(findings.len(), 2);
    }

    /// db_bench's small log writes and its large table writes both slept for dirty pages under vm.dirty_bytes of
    /// 1 MiB: one finding over the job, which gains both kinds' sleeps and cites the setting; without a recorded
    /// setting, the same finding with the general advice.
    #[test]
    fn dirty_throttling_of_several_kinds_is_one_finding_citing_the_setting() {
        let slept = |size: &str, ns: f64, gain: f64| {
            Finding::new(
                "writeback",
                Reason::DirtyThrottling,
                Scope::Calls(Kind {
                    op: "write".into(),
                    mode: Some("buffered".into()),
                    size_class: Some(size.into()),
                }),
                ns,
                10e6,
                crate::diagnose::evidence([("calls", 10.0)]),
                Gain::new(gain, "x", "y"),
            )
        };
        let with = |bytes: Option<u64>| {
            let mut end = reading(Moment::End, 2, 0, 0);
            end.dirty.dirty_bytes = bytes;
            Recorded::of(&[(0, Ok(reading(Moment::Start, 1, 0, 0))), (0, Ok(end))])
        };
        let mut findings = vec![slept("1K-10K", 3e6, 2e6), slept("100K-1M", 5e6, 4e6)];
        let none = KindTable {
            columns: Vec::new(),
            kinds: Vec::new(),
        };
        dirty(&mut findings, &none, 10e6, &with(Some(1 << 20)), &[]);
        assert_eq!(findings.len(), 1);
        let f = &findings[0];
        assert_eq!(
            (f.scope.clone(), f.reason, f.cost_ns, f.gain_ns),
            (Scope::Job, Reason::DirtyThrottling, 8_000_000, 6_000_000)
        );
        assert_eq!(f.evidence["vm_dirty_bytes"], 1_048_576.0);
        assert!(
            f.recommendation
                .starts_with("Writers slept for dirty pages: vm.dirty_bytes is 1.0 MiB"),
            "{}",
            f.recommendation
        );
        let mut unknown = vec![slept("1K-10K", 3e6, 2e6), slept("100K-1M", 5e6, 4e6)];
        dirty(&mut unknown, &none, 10e6, &Recorded::default(), &[]);
        assert_eq!((unknown.len(), unknown[0].gain_ns), (1, 6_000_000));
        assert_eq!(
            unknown[0].recommendation,
            Reason::DirtyThrottling.recommendation()
        );
    }

    /// GNU tar extracted 50 MiB under vm.dirty_bytes of 1 MiB: its writes never slept for dirty pages, but its
    /// opens waited 30 ms for directory blocks under writeback, 6 ms of it in an open that read a block itself.
    /// The 24 ms that no request of the opens' own explains become one finding over the job that cites the setting
    /// and took over the waits for I/O; the opens keep the rest. Under a limit the writes fill less than twice, or
    /// with none recorded, the opens keep it all.
    #[test]
    fn lookups_waiting_for_writeback_that_a_small_dirty_limit_keeps_running_are_the_limits() {
        let open = Kind {
            op: "openat".into(),
            mode: None,
            size_class: None,
        };
        let write = Kind {
            op: "write".into(),
            mode: Some("buffered".into()),
            size_class: Some("10K-100K".into()),
        };
        let stats = |rows: Vec<usize>, bytes: u128| crate::diagnose::kinds::KindStats {
            rows,
            bytes,
            ..Default::default()
        };
        let table = KindTable {
            columns: Vec::new(),
            kinds: vec![
                (open.clone(), stats(vec![0, 1, 2], 0)),
                (write.clone(), stats(vec![3], 50 << 20)),
            ],
        };
        let others_io = [12e6, 12e6, 0.0, 0.0];
        let waited = || {
            vec![Finding::new(
                EXT4,
                Reason::IoWait,
                Scope::Calls(open.clone()),
                30e6,
                100e6,
                BTreeMap::new(),
                Gain::wait_removed(30e6),
            )]
        };
        let with = |bytes: Option<u64>| {
            let mut end = reading(Moment::End, 2, 0, 0);
            end.dirty.dirty_bytes = bytes;
            Recorded::of(&[(0, Ok(reading(Moment::Start, 1, 0, 0))), (0, Ok(end))])
        };
        let mut findings = waited();
        dirty(
            &mut findings,
            &table,
            100e6,
            &with(Some(1 << 20)),
            &others_io,
        );
        let got: Vec<_> = (findings.iter())
            .map(|f| (f.layer.as_str(), f.reason, f.cost_ns, f.gain_ns))
            .collect();
        assert_eq!(
            got,
            [
                (EXT4, Reason::IoWait, 6_000_000, 6_000_000),
                (WRITEBACK, Reason::DirtyThrottling, 24_000_000, 24_000_000)
            ]
        );
        let f = &findings[1];
        assert_eq!(f.scope, Scope::Job);
        assert_eq!(f.evidence[WRITEBACK_HELD_EVIDENCE], 24e6);
        assert!(cites_limit(f) && took_over(f, Reason::IoWait));
        assert!(!took_over(f, Reason::DeviceBound));
        assert!(
            f.recommendation
                .starts_with("Writeback ran all through the job and held the blocks its lookups read: vm.dirty_bytes is 1.0 MiB"),
            "{}",
            f.recommendation
        );
        for rec in [with(Some(30 << 20)), with(None), Recorded::default()] {
            let mut kept = waited();
            dirty(&mut kept, &table, 100e6, &rec, &others_io);
            assert_eq!(kept, waited());
        }
    }

    /// Four buffered reads waited 8 ms for pages the cache did not hold, and 25 of the 100 pages they added were
    /// pages the cache had let go of, whose waits were 2 ms ([`JobScan::refault_waits`]); the writes' reclaim took
    /// 1 ms. Under a memory limit it hit, one finding over the job claims and gains the reclaim and those 2 ms, which
    /// the reads' own finding gives up; it cites the limit, and took over the waits for pages, not the waits for I/O
    /// between calls.
    #[test]
    fn a_memory_limit_takes_the_waits_for_pages_it_made_the_job_read_again() {
        use features::FeatureKind;
        let read = Kind {
            op: "read".into(),
            mode: Some("buffered".into()),
            size_class: Some("100K-1M".into()),
        };
        let column = |layer: &str, name: &str, kind| crate::diagnose::kinds::Column {
            layer: layer.into(),
            name: name.into(),
            kind,
        };
        let table = KindTable {
            columns: vec![
                column(PAGE_CACHE, PAGE_CACHE, FeatureKind::ExclusiveNs),
                column(
                    PAGE_CACHE,
                    "offcpu_D@folio_wait_bit_common",
                    FeatureKind::TimeNs,
                ),
            ],
            kinds: vec![(
                read.clone(),
                crate::diagnose::kinds::KindStats {
                    rows: vec![0, 1, 2, 3],
                    dur_ns: 10_000_000,
                    sums: vec![8e6, 8e6],
                    ..Default::default()
                },
            )],
        };
        let kind_finding = |layer: &str, reason, kind: Kind, ns: f64, gain: Gain| {
            Finding::new(
                layer,
                reason,
                Scope::Calls(kind),
                ns,
                20e6,
                BTreeMap::new(),
                gain,
            )
        };
        let write = Kind {
            op: "write".into(),
            ..read.clone()
        };
        let mut findings = vec![
            kind_finding(
                PAGE_CACHE,
                Reason::DeviceBound,
                read.clone(),
                8e6,
                Gain::inherent(),
            ),
            kind_finding(
                MM,
                Reason::MemoryPressure,
                write,
                1e6,
                Gain::wait_removed(1e6),
            ),
        ];
        let limit = Held::Memory {
            limit_bytes: 16 << 20,
            hits: 50,
            setting: "/sys/fs/cgroup/memory/job/memory.limit_in_bytes".into(),
        };
        let mut scan = JobScan::default();
        scan.refaults = vec![10, 10, 5, 0];
        scan.pages_added = vec![40, 40, 20, 0];
        let waits = [0.8e6, 0.8e6, 0.4e6, 0.0];
        memory(&mut findings, &table, 20e6, &limit, &scan, &waits);
        assert_eq!(findings.len(), 2);
        assert_eq!(
            (&findings[0].scope, findings[0].cost_ns, findings[0].gain_ns),
            (&Scope::Calls(read), 6_000_000, 0)
        );
        let f = &findings[1];
        assert_eq!(
            (f.layer.as_str(), f.reason, &f.scope, f.cost_ns, f.gain_ns),
            (
                MM,
                Reason::MemoryPressure,
                &Scope::Job,
                3_000_000,
                3_000_000
            )
        );
        assert_eq!(
            (f.evidence[REFAULT_EVIDENCE], f.evidence["pages_added"]),
            (25.0, 100.0)
        );
        assert_eq!(f.evidence[MEMORY_EVIDENCE], 16_777_216.0);
        assert_eq!(f.gain_method.slug, "evicted_pages_kept");
        assert!(cites_limit(f) && took_over(f, Reason::ReadaheadMiss));
        assert!(!took_over(f, Reason::IoWait) && !took_over(f, Reason::CpuContention));
        assert!(
            f.recommendation
                .starts_with("The cgroup's memory limit of 16.0 MiB was hit 50 times"),
            "{}",
            f.recommendation
        );

        // Without pages read again, the limit's finding is the reclaim's alone.
        let mut reclaim_only = vec![kind_finding(
            MM,
            Reason::MemoryPressure,
            Kind {
                op: "write".into(),
                mode: None,
                size_class: None,
            },
            1e6,
            Gain::wait_removed(1e6),
        )];
        memory(
            &mut reclaim_only,
            &table,
            20e6,
            &limit,
            &JobScan::default(),
            &[0.0; 4],
        );
        assert_eq!(
            (
                reclaim_only.len(),
                reclaim_only[0].cost_ns,
                reclaim_only[0].scope.clone()
            ),
            (1, 1_000_000, Scope::Job)
        );
        assert!(!reclaim_only[0].evidence.contains_key(REFAULT_EVIDENCE));

        // Faults between calls that brought back 30 of the 40 pages they added: three quarters of the job's waits
        // for I/O between calls are the limit's too.
        let mut faults = vec![];
        (scan.refaults_outside_calls, scan.pages_added_outside_calls) = (30, 40);
        memory(&mut faults, &table, 20e6, &limit, &scan, &waits);
        assert_eq!(faults[0].evidence[REFAULT_OUTSIDE_EVIDENCE], 0.75);
        assert!(took_over(&faults[0], Reason::IoWait));
    }

    /// Two runs closed with 150,000 and 40,000 records, 100,000 and 40,000 of them system calls', whose helpers
    /// measured 800 ns and 1,000 ns a record: the price is the lower, and the tracer's cost is the calls' records at
    /// it, 112 ms; an input dc-trace did not close counts none. A run that did not measure the price, or whose
    /// closing is missing, leaves it unknown.
    #[test]
    fn the_tracers_cost_is_the_calls_records_at_the_lowest_price() {
        use datasets::limits::CallCost;
        let end = |traced_ns: u64| {
            let mut l = reading(Moment::End, 10, 0, 0);
            l.per_call = Some(CallCost {
                call: "pread64(/proc/self/exe, 1 byte at 0)".into(),
                batches: 16,
                calls_per_batch: 256,
                untraced_ns: 100_000,
                traced_ns,
                events: 16 * 512,
            });
            l
        };
        let mut scan = JobScan::default();
        scan.limits = vec![
            (0, Ok(reading(Moment::Start, 0, 0, 0))),
            (0, Ok(end(100_000 + 512 * 800))),
            (1, Ok(reading(Moment::Start, 0, 0, 0))),
            (1, Ok(end(100_000 + 512 * 1000))),
        ];
        scan.records = BTreeMap::from([(0, 150_000 + 16 * 512), (1, 40_000 + 16 * 512)]);
        scan.call_records = BTreeMap::from([(0, 100_000), (1, 40_000), (2, 7)]);
        assert_eq!(record_price(&scan), Some(800.0));
        assert_eq!(tracer_ns(&scan, 800.0), 112e6);
        scan.records.insert(2, 5);
        assert_eq!(record_price(&scan), None);
        scan.records.remove(&2);
        scan.limits[3] = (1, Ok(reading(Moment::End, 10, 0, 0)));
        assert_eq!(record_price(&scan), None);
        assert_eq!(record_price(&JobScan::default()), None);
    }

    /// The same bytes read again claimed their reads' time first, 3 ms of waits for pages with it; the reads' own
    /// finding kept 1 ms. A memory limit whose refaults waited 2 ms takes that 1 ms, then 1 ms of the pattern's
    /// waits, which keeps the rest of its time and of its waits as evidence; nothing comes out of the unclaimed time.
    #[test]
    fn a_memory_limit_takes_the_waits_a_reread_pattern_claimed() {
        use features::FeatureKind;
        let read = Kind {
            op: "read".into(),
            mode: Some("buffered".into()),
            size_class: Some("1K-10K".into()),
        };
        let table = KindTable {
            columns: vec![crate::diagnose::kinds::Column {
                layer: PAGE_CACHE.into(),
                name: PAGE_CACHE.into(),
                kind: FeatureKind::ExclusiveNs,
            }],
            kinds: vec![(
                read.clone(),
                crate::diagnose::kinds::KindStats {
                    rows: vec![0, 1],
                    dur_ns: 10_000_000,
                    sums: vec![4e6],
                    ..Default::default()
                },
            )],
        };
        let mut findings = vec![
            Finding::new(
                PAGE_CACHE,
                Reason::DeviceBound,
                Scope::Calls(read),
                1e6,
                20e6,
                BTreeMap::new(),
                Gain::inherent(),
            ),
            Finding::new(
                APP_LAYER,
                Reason::Reread,
                Scope::File {
                    path: "/db/000010.sst".into(),
                },
                6e6,
                20e6,
                crate::diagnose::evidence([
                    ("cause:page_cache/readahead_miss_ns", 3e6),
                    ("cause:self/memory_copy_ns", 2e6),
                ]),
                Gain::new(6e6, "reread_removed", "the bytes read again, removed"),
            ),
        ];
        let limit = Held::Memory {
            limit_bytes: 32 << 20,
            hits: 9,
            setting: "/sys/fs/cgroup/memory/job/memory.limit_in_bytes".into(),
        };
        let mut scan = JobScan::default();
        (scan.refaults, scan.pages_added) = (vec![5, 5], vec![10, 10]);
        memory(&mut findings, &table, 20e6, &limit, &scan, &[1e6, 1e6]);
        let costs: Vec<_> = (findings.iter())
            .map(|f| (f.reason, f.cost_ns, f.gain_ns))
            .collect();
        assert_eq!(
            costs,
            [
                (Reason::DeviceBound, 0, 0),
                (Reason::Reread, 5_000_000, 5_000_000),
                (Reason::MemoryPressure, 2_000_000, 2_000_000)
            ]
        );
        assert_eq!(
            (
                findings[1].evidence["cause:page_cache/readahead_miss_ns"],
                findings[1].evidence["cause:self/memory_copy_ns"]
            ),
            (2e6, 2e6)
        );
        assert_eq!(findings[2].evidence["refault_wait_ns"], 2e6);
    }

    /// A sync per commit beside other processes' writes: the pattern had claimed its syncs' 10 ms, 7 of them waits
    /// for the device. Those move to one `shared_device` finding over the job, which gains their others' share; the
    /// pattern keeps its own 3 ms (its wait for pages under writeback is no wait for the device's queue).
    #[test]
    fn a_shared_device_takes_its_waits_from_a_pattern() {
        let mut findings = vec![Finding::new(
            APP_LAYER,
            Reason::FsyncHeavy,
            Scope::File {
                path: "/db-wal".into(),
            },
            10e6,
            20e6,
            crate::diagnose::evidence([
                ("cause:block/device_bound_ns", 7e6),
                ("cause:page_cache/writeback_wait_ns", 2e6),
                ("cause:self/call_overhead_ns", 1e6),
            ]),
            Gain::new(9.9e6, "syncs_batched", "x"),
        )];
        let s = Shared {
            name: "vda".into(),
            device: "254:0".into(),
            others: stat(0, 900),
            job: stat(0, 100),
            writes: OthersWrites::Submitted,
        };
        share_device(&mut findings, 20e6, &s);
        let (p, f) = (&findings[0], &findings[1]);
        assert_eq!((p.cost_ns, p.gain_ns), (3_000_000, 3_000_000));
        assert!(!p.evidence.contains_key("cause:block/device_bound_ns"));
        assert_eq!(
            (f.layer.as_str(), f.reason, &f.scope),
            (BLOCK, Reason::SharedDevice, &Scope::Job)
        );
        assert_eq!((f.cost_ns, f.gain_ns), (7_000_000, 6_300_000));
        assert_eq!(f.evidence["device_others_requests"], 900.0);
        assert_eq!(f.recommendation, s.sentence());
    }

    /// [`take_from_patterns`] for a held cgroup throttle of `limit` requests a second in `direction`.
    fn iops_throttle_takes(findings: &mut Vec<Finding>, direction: Direction, limit: u64) {
        let what = match direction {
            Direction::Read => "read_iops",
            Direction::Write => "write_iops",
        };
        let held = Held::Device {
            direction,
            what,
            device: "254:0".into(),
            limit,
            rate: limit as f64 - 1.0,
            setting: format!("/sys/fs/cgroup/blkio/job/blkio.throttle.{what}_device"),
        };
        take_from_patterns(findings, 20e6, &held, direction);
    }

    /// Two fio jobs read one file with O_DIRECT, each all of it, beside other processes' readers: the bytes read
    /// again claimed half the reads' time first, 10 ms, 8 of it queued behind the others' requests and 1 on the
    /// device. Both move to the `shared_device` finding; the pattern keeps its calls' own 1 ms. A read throttle takes
    /// the same waits from it, and a write throttle none.
    #[test]
    fn a_shared_device_or_a_read_throttle_takes_the_waits_of_bytes_read_again() {
        let reread = || {
            Finding::new(
                APP_LAYER,
                Reason::Reread,
                Scope::File {
                    path: "/testfile".into(),
                },
                10e6,
                20e6,
                crate::diagnose::evidence([
                    ("cause:block/throttled_above_device_ns", 8e6),
                    ("cause:block/device_bound_ns", 1e6),
                    ("cause:self/call_overhead_ns", 1e6),
                    ("reread_share", 0.5),
                ]),
                Gain::new(10e6, "reread_removed", "x"),
            )
        };
        let s = Shared {
            name: "vda".into(),
            device: "254:0".into(),
            others: stat(900, 0),
            job: stat(100, 0),
            writes: OthersWrites::Device,
        };
        let mut findings = vec![reread()];
        share_device(&mut findings, 20e6, &s);
        let (p, f) = (&findings[0], &findings[1]);
        assert_eq!((p.cost_ns, p.gain_ns), (1_000_000, 1_000_000));
        assert_eq!(
            (f.layer.as_str(), f.reason, &f.scope),
            (BLOCK, Reason::SharedDevice, &Scope::Job)
        );
        assert_eq!((f.cost_ns, f.gain_ns), (9_000_000, 8_100_000));

        let mut findings = vec![reread()];
        iops_throttle_takes(&mut findings, Direction::Write, 500);
        assert_eq!(findings, [reread()]);
        iops_throttle_takes(&mut findings, Direction::Read, 500);
        let (p, t) = (&findings[0], &findings[1]);
        assert_eq!((p.cost_ns, p.gain_ns), (1_000_000, 1_000_000));
        assert_eq!(
            (t.layer.as_str(), t.reason, t.cost_ns),
            (BLOCK, Reason::ThrottledAboveDevice, 9_000_000)
        );
        assert_eq!(t.evidence["limit_read_iops"], 500.0);
    }

    /// Two threads waited 3 ms for I/O between their calls, 2 ms of the job's wall-clock time: a read throttle's
    /// finding takes them (cost +3 ms, gain +2 ms); a CPU quota's does not.
    #[test]
    fn a_device_limit_takes_the_waits_for_io_between_calls() {
        let split = WallSplit {
            between_calls: BTreeMap::from([((SCHED.to_owned(), Reason::IoWait), 2e6)]),
            ..WallSplit::default()
        };
        let mut scan = JobScan::default();
        for (tid, ns) in [(1, 1_000_000), (2, 2_000_000)] {
            scan.threads.insert(
                (1, tid),
                crate::diagnose::scan::ThreadTime {
                    offcpu_outside_ns: BTreeMap::from([("D".to_owned(), ns), ("S".to_owned(), 5)]),
                    ..Default::default()
                },
            );
        }
        let limited = |key: &str| {
            Finding::new(
                BLOCK,
                Reason::ThrottledAboveDevice,
                Scope::Job,
                1e6,
                10e6,
                crate::diagnose::evidence([(key, 1.0)]),
                Gain::wait_removed(0.8e6),
            )
        };
        let mut quota = vec![limited(QUOTA_EVIDENCE)];
        assert_eq!(claim_waits_between_calls(&mut quota, &split, &scan), 0.0);
        assert_eq!(quota[0].cost_ns, 1_000_000);
        let mut read = vec![limited("limit_read_bps")];
        assert_eq!(claim_waits_between_calls(&mut read, &split, &scan), 3e6);
        assert_eq!((read[0].cost_ns, read[0].gain_ns), (4_000_000, 2_800_000));
        assert_eq!(read[0].evidence[IO_WAIT_BETWEEN_CALLS], 3e6);
        assert!(
            read[0]
                .gain_method
                .how
                .ends_with("2.000 ms more of the job's wall-clock time.")
        );
        // A memory limit whose faults between calls brought back a quarter of their pages takes a quarter.
        let mut memory = vec![limited(MEMORY_EVIDENCE)];
        memory[0]
            .evidence
            .insert(REFAULT_OUTSIDE_EVIDENCE.into(), 0.25);
        assert_eq!(
            claim_waits_between_calls(&mut memory, &split, &scan),
            0.75e6
        );
        assert_eq!(
            (memory[0].cost_ns, memory[0].gain_ns),
            (1_750_000, 1_300_000)
        );
    }

    /// A sync per commit under a held write throttle: the pattern had claimed 10 ms, 7 ms of it waiting above the
    /// device and 2 ms for writeback, which move to the throttle's finding; the pattern keeps 1 ms and gains at most
    /// that. Under a read throttle nothing moves.
    #[test]
    fn a_held_throttle_takes_its_waits_from_a_pattern() {
        let pattern = || {
            Finding::new(
                APP_LAYER,
                Reason::FsyncHeavy,
                Scope::File {
                    path: "/db-journal".into(),
                },
                10e6,
                20e6,
                crate::diagnose::evidence([
                    ("cause:block/throttled_above_device_ns", 7e6),
                    ("cause:page_cache/writeback_wait_ns", 2e6),
                    ("cause:self/call_overhead_ns", 1e6),
                    ("syncs", 100.0),
                ]),
                Gain::new(9.9e6, "syncs_batched", "x"),
            )
        };
        let mut findings = vec![pattern()];
        iops_throttle_takes(&mut findings, Direction::Read, 50);
        assert_eq!(findings, [pattern()]);
        iops_throttle_takes(&mut findings, Direction::Write, 50);
        let (p, t) = (&findings[0], &findings[1]);
        assert_eq!((p.cost_ns, p.gain_ns), (1_000_000, 1_000_000));
        assert!(
            !p.evidence
                .contains_key("cause:block/throttled_above_device_ns")
        );
        assert_eq!(p.evidence["cause:self/call_overhead_ns"], 1e6);
        assert_eq!(
            (t.layer.as_str(), t.reason, &t.scope),
            (BLOCK, Reason::ThrottledAboveDevice, &Scope::Job)
        );
        assert_eq!((t.cost_ns, t.gain_ns), (9_000_000, 9_000_000));
        assert_eq!(t.evidence["limit_write_iops"], 50.0);
        assert!(t.recommendation.contains("write_iops limit"));
    }
}
