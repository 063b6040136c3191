//! Kernel layers: each kind of call's time, split by layer (the matrix's exclusive columns and `self_ns`), named by
//! a reason. A layer's time goes to one reason, or is shared among several in proportion to the inclusive time of
//! the layer's events that point to each: in `sched`, `offcpu_R` (runnable, not running) is CPU contention and
//! `offcpu_D` an I/O wait; a wait filed under the layer it waited in (`block::offcpu_D@__iomap_dio_rw`) is that
//! layer's; `mm`'s direct reclaim is memory pressure and its `balance_dirty_pages` dirty throttling.

use std::collections::{BTreeMap, HashMap};

use features::{FeatureKind, FeatureMatrix};

use crate::diagnose::kinds::{Kind, KindStats, KindTable};
use crate::diagnose::ledger::Gain;
use crate::diagnose::scan::{BLOCK, DEVICE_PREFIX, JobScan, SCHED};
use crate::diagnose::thresholds::{
    ABOVE_DEVICE_RATIO, KIND_SHARE_MIN, REASON_SHARE_MIN, TAG_WAIT_SHARE, TOP_EVENTS,
};
use crate::diagnose::{Files, Finding, Reason, Scope};
use crate::summary::Direction;
use datasets::vocab::layer::MM;

/// How the call's own time (`self_ns`) is named as a layer.
pub const SELF_LAYER: &str = "self";
/// The prefix of an off-CPU wait's stack frame, as features names it (`ext4::offcpu@__ext4_iget`).
const OFFCPU_FRAME: &str = "offcpu@";
/// The prefix of an on-CPU sample's stack frame (`mm::oncpu@exc_page_fault`).
const ONCPU_FRAME: &str = "oncpu@";
/// The count of a layer's own samples: the CPU ran its code.
const ONCPU: &str = "oncpu";
/// The block layer's wait for a request tag: the device's queue is full.
pub const TAG_WAIT: &str = "offcpu_D@blk_mq_get_tag";

/// A share of a kind's time: the layer that holds it and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    pub layer: String,
    pub reason: Reason,
    pub ns: f64,
}

fn base_reason(layer: &str) -> Reason {
    match layer {
        "irq" => Reason::IrqTime,
        BLOCK | "bio" => Reason::DeviceBound,
        "jbd2" => Reason::JournalWait,
        "lock" => Reason::LockContention,
        "mm" => Reason::MemoryPressure,
        "writeback" => Reason::WritebackWait,
        "readahead" | "filemap" | "page_cache" | "os_cache" => Reason::ReadaheadMiss,
        "iomap" | "ext4" | "fs" | "vfs" | "kernel" => Reason::KernelCpu,
        "sched" => Reason::IoWait,
        _ => Reason::LayerTime,
    }
}

/// The reason an event of `layer` named `name` points to.
fn event_reason(layer: &str, name: &str) -> Reason {
    let base = base_reason(layer);
    // The pause itself, or a wait in it (`writeback::offcpu_D@balance_dirty_pages`); a wait the reclaim of memory
    // throttled (`mm::offcpu_D@reclaim_throttle`), whatever layer the tracer filed it under.
    if name.contains("balance_dirty_pages") {
        return Reason::DirtyThrottling;
    }
    if is_reclaim(name) {
        return Reason::MemoryPressure;
    }
    // A frame of a wait of unknown state: off the CPU, so not the layer's CPU time.
    if name.starts_with(OFFCPU_FRAME) {
        return match base {
            Reason::KernelCpu | Reason::LayerTime => Reason::IoWait,
            b => b,
        };
    }
    if let Some(state) = name.strip_prefix("offcpu_") {
        return match (state.chars().next(), base) {
            // A kernel worker held the CPU doing the layer's work for the job (`offcpu_R@vmpressure_work_fn`).
            (Some('R'), Reason::MemoryPressure | Reason::WritebackWait | Reason::JournalWait)
                if state.contains('@') =>
            {
                base
            }
            (Some('R'), _) => Reason::CpuContention,
            (Some('D'), Reason::KernelCpu | Reason::LayerTime) => Reason::IoWait,
            (Some('D'), b) => b,
            (_, Reason::KernelCpu | Reason::LayerTime | Reason::IoWait) => Reason::SleepWait,
            (_, b) => b,
        };
    }
    if name.contains("fault") {
        return Reason::PageFaults;
    }
    // On the CPU, a layer runs its own code: the page cache looks pages up and copies them (a miss is its wait, not
    // its CPU), and the memory layer, outside a reclaim, faults pages in.
    match base {
        Reason::ReadaheadMiss if name.starts_with(ONCPU_FRAME) => Reason::KernelCpu,
        Reason::MemoryPressure if name.starts_with(ONCPU_FRAME) => Reason::PageFaults,
        b => b,
    }
}

/// Whether an event of the memory layer is a reclaim's: its interval (`direct_reclaim`, `memcg_reclaim`), a wait
/// it throttled, or a frame of vmscan's.
fn is_reclaim(name: &str) -> bool {
    [
        "reclaim",
        "shrink_",
        "try_to_free_",
        "compact",
        "swap",
        "kswapd",
    ]
    .iter()
    .any(|f| name.contains(f))
}

/// A layer's own time on the CPU: its samples (`oncpu`, the CPU ran its code) times the sample period, which any of
/// its frames gives as its time over its count. Nothing for a trace without samples.
fn own_cpu(table: &KindTable, s: &KindStats, layer: &str) -> f64 {
    let counts: HashMap<&str, f64> = table.counts(s, layer).collect();
    let Some(own) = counts.get(ONCPU) else {
        return 0.0;
    };
    table
        .events(s, layer)
        .find_map(|(name, ns)| {
            let n = *counts.get(name)?;
            (name.starts_with(ONCPU_FRAME) && n > 0.0).then(|| own * ns / n)
        })
        .unwrap_or(0.0)
}

/// A layer's time on the CPU by reason, from its frames. A frame's samples include every frame under it, so a
/// reclaim inside a page fault (a memory limit met while faulting a page in) is in both: in the memory layer, the
/// reclaim keeps its time, and the faults take what the outermost fault frame holds beyond the outermost reclaim
/// frame. Elsewhere the frames share it by their time.
fn split_cpu(table: &KindTable, s: &KindStats, layer: &str, cpu: f64) -> Vec<(Reason, f64)> {
    let frames: Vec<(Reason, f64)> = table
        .events(s, layer)
        .filter(|(n, _)| n.starts_with(ONCPU_FRAME))
        .map(|(n, ns)| (event_reason(layer, n), ns))
        .collect();
    let outermost = |r: Reason| {
        frames
            .iter()
            .filter(|(x, _)| *x == r)
            .map(|(_, ns)| *ns)
            .fold(0.0, f64::max)
    };
    if layer == MM {
        let reclaim = outermost(Reason::MemoryPressure);
        let faults = if reclaim > 0.0 {
            (outermost(Reason::PageFaults) - reclaim).clamp(0.0, cpu)
        } else {
            cpu
        };
        return vec![
            (Reason::PageFaults, faults),
            (Reason::MemoryPressure, cpu - faults),
        ];
    }
    proportional(frames, cpu, event_reason(layer, ONCPU_FRAME))
}

/// `ns` shared among reasons in proportion to their weights; all of it to `otherwise` when none weighs.
fn proportional(weights: Vec<(Reason, f64)>, ns: f64, otherwise: Reason) -> Vec<(Reason, f64)> {
    let mut by_reason: Vec<(Reason, f64)> = Vec::new();
    for (r, w) in weights {
        match by_reason.iter_mut().find(|(x, _)| *x == r) {
            Some((_, v)) => *v += w,
            None => by_reason.push((r, w)),
        }
    }
    let total: f64 = by_reason.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return vec![(otherwise, ns)];
    }
    by_reason.sort_by_key(|w| w.0);
    by_reason
        .into_iter()
        .map(|(r, w)| (r, ns * w / total))
        .collect()
}

fn starts(table: &KindTable, s: &KindStats, layer: &str, prefix: &str) -> f64 {
    table
        .events(s, layer)
        .filter(|(n, _)| n.starts_with(prefix))
        .map(|(_, v)| v)
        .sum()
}

/// The block layer's time above the device: queued before issue, or waiting off-CPU beyond the device's time.
fn above_device(table: &KindTable, s: &KindStats, excl: f64) -> (f64, f64) {
    let device = starts(table, s, BLOCK, DEVICE_PREFIX).min(excl);
    (device, excl - device)
}

fn split(
    table: &KindTable,
    kind: &Kind,
    s: &KindStats,
    layer: &str,
    excl: f64,
) -> Vec<(Reason, f64)> {
    let buffered = |d: Direction| kind.is_buffered_data() && kind.direction() == Some(d);
    if layer == BLOCK {
        // The tag wait is the thread's own off-CPU time, so it is measured against the block time; the device's
        // time sums requests in flight together and can exceed it. It is the queue's whatever the rest is: an
        // asynchronous submitter (libaio, io_uring) sleeps for a free slot for part of its requests' time, beside
        // their time on the device.
        let tag = starts(table, s, BLOCK, TAG_WAIT).min(excl);
        if tag > excl * TAG_WAIT_SHARE {
            return vec![(Reason::QueueDepth, excl)];
        }
        let rest = excl - tag;
        let (device, above) = above_device(table, s, rest);
        let reason = if above > device * ABOVE_DEVICE_RATIO {
            Reason::ThrottledAboveDevice
        } else if buffered(Direction::Read)
            || (kind.is_buffered_data() && datasets::vocab::op::copies(&kind.op))
        {
            // A buffered read waits for the device only for pages the cache did not hold; so does a copy between
            // files, which reads its source through the page cache and leaves its writes dirty in it.
            Reason::ReadaheadMiss
        } else {
            Reason::DeviceBound
        };
        return [(Reason::QueueDepth, tag), (reason, rest)]
            .into_iter()
            .filter(|(_, ns)| *ns > 0.0)
            .collect();
    }
    // The layer's own CPU time, measured by its samples, is named by its frames; the rest (its intervals and waits)
    // by its other events. Weighed together, the nested frames of the CPU time outweighed a wait.
    let on_cpu = |name: &str| name.starts_with(ONCPU_FRAME);
    let frame = |name: &str| name.starts_with(OFFCPU_FRAME);
    let has_waits = table
        .events(s, layer)
        .any(|(name, ns)| !on_cpu(name) && ns > 0.0);
    let cpu = if !table.events(s, layer).any(|(name, _)| on_cpu(name)) {
        0.0
    } else if has_waits {
        own_cpu(table, s, layer).min(excl)
    } else {
        excl
    };
    // A wait's stack frames (`offcpu@FUNCTION`) span the same time as the wait itself (`offcpu_D@...`, filed under
    // the layer of the function that waited): weighed beside it, the frames of an ext4 inode read's wait for its
    // buffer made four fifths of it on-CPU file-system time. They weigh only where the layer holds nothing else.
    let only_frames = !table
        .events(s, layer)
        .any(|(name, ns)| !frame(name) && !on_cpu(name) && ns > 0.0);
    let mut weights: Vec<(Reason, f64)> = Vec::new();
    for (name, ns) in table
        .events(s, layer)
        .filter(|(n, _)| !on_cpu(n) && (only_frames || !frame(n)))
    {
        let mut r = event_reason(layer, name);
        // A write or a sync waits on a page-cache folio while it is written back, not read in; a copy between
        // files (copy_file_range, sendfile, splice) is a write that reads its source in first.
        if r == Reason::ReadaheadMiss
            && !datasets::vocab::op::copies(&kind.op)
            && (buffered(Direction::Write) || datasets::vocab::op::flushes(&kind.op))
        {
            r = Reason::WritebackWait;
        }
        weights.push((r, ns));
    }
    let mut out = if cpu > 0.0 {
        split_cpu(table, s, layer, cpu)
    } else {
        Vec::new()
    };
    if excl > cpu {
        out.extend(proportional(weights, excl - cpu, base_reason(layer)));
    }
    out.retain(|(_, ns)| *ns > 0.0);
    out
}

/// The layer a reason's time is named under, when one mechanism's time lands in two layers by which interval is
/// innermost at each instant: the dirty-throttling pause (`mm::balance_dirty_pages`) and the sleep in it
/// (`writeback::offcpu_D@balance_dirty_pages`) are named under `writeback`, where the wait table files the sleep; a
/// buffered read's wait for a page it missed (`page_cache::offcpu_D@folio_wait_bit_common`) and the device time of
/// reading it in (`block`) under `page_cache`.
fn home_layer(layer: &str, reason: Reason) -> &str {
    match (layer, reason) {
        ("mm", Reason::DirtyThrottling) => "writeback",
        (BLOCK, Reason::ReadaheadMiss) => "page_cache",
        _ => layer,
    }
}

/// A kind's time as causes: every exclusive layer, then the call's own time. They add up to the kind's time.
pub fn causes(table: &KindTable, kind: &Kind, s: &KindStats) -> Vec<Cause> {
    let mut out: Vec<Cause> = Vec::new();
    for (layer, excl) in table.exclusive(s) {
        for (reason, ns) in split(table, kind, s, &layer, excl) {
            let layer = home_layer(&layer, reason);
            match out
                .iter_mut()
                .find(|c| c.layer == layer && c.reason == reason)
            {
                Some(c) => c.ns += ns,
                None => out.push(Cause {
                    layer: layer.to_owned(),
                    reason,
                    ns,
                }),
            }
        }
    }
    out.push(Cause {
        layer: SELF_LAYER.into(),
        reason: if kind.is_buffered_data() {
            Reason::MemoryCopy
        } else {
            Reason::CallOverhead
        },
        ns: s.self_ns as f64,
    });
    out
}

/// The numbers behind a layer's finding.
fn layer_evidence(
    table: &KindTable,
    s: &KindStats,
    c: &Cause,
    scan: Option<&JobScan>,
) -> BTreeMap<String, f64> {
    let n = s.calls() as f64;
    let span_ns = s.span_ns() as f64;
    let mut e = BTreeMap::new();
    e.insert("calls".into(), n);
    e.insert("mean_ns".into(), s.mean_ns());
    e.insert("ns_per_call".into(), c.ns / n);
    e.insert("share_of_calls_time".into(), c.ns / s.dur_ns.max(1) as f64);
    if span_ns > 0.0 {
        e.insert("calls_per_s".into(), n * 1e9 / span_ns);
    }
    if s.sized > 0 {
        e.insert("bytes_per_call".into(), s.bytes as f64 / s.sized as f64);
    }
    if let Some(mibs) = s.bandwidth_mibs() {
        e.insert("mib_per_s".into(), mibs);
    }
    match c.layer.as_str() {
        BLOCK => {
            let excl: f64 = table
                .exclusive(s)
                .iter()
                .filter(|(l, _)| l == BLOCK)
                .map(|(_, v)| v)
                .sum();
            let (device, above) = above_device(table, s, excl);
            e.insert("device_ns_per_call".into(), device / n);
            e.insert("above_device_ns_per_call".into(), above / n);
            e.insert(
                "tag_wait_ns_per_call".into(),
                starts(table, s, BLOCK, TAG_WAIT) / n,
            );
            e.insert(
                "queue_ns_per_call".into(),
                starts(table, s, BLOCK, "block_queue") / n,
            );
            let requests: Option<u32> =
                scan.map(|sc| s.rows.iter().map(|&r| sc.device_requests[r]).sum());
            if span_ns > 0.0 {
                // Little's law: the mean number of requests on the device while the calls ran.
                e.insert(
                    "queue_depth".into(),
                    starts(table, s, BLOCK, DEVICE_PREFIX) / span_ns,
                );
                if let Some(n) = requests {
                    e.insert("device_requests".into(), n as f64);
                    e.insert("iops".into(), n as f64 * 1e9 / span_ns);
                }
            }
        }
        "readahead" | "filemap" | "page_cache" | "os_cache" => {
            for layer in ["page_cache", "filemap", "readahead"] {
                for (name, v) in table.counts(s, layer) {
                    if name.contains("add_to_page_cache") {
                        // An event adds a folio; the scan counts its pages.
                        let pages = scan.map_or(v, |sc| {
                            s.rows.iter().map(|&r| f64::from(sc.pages_added[r])).sum()
                        });
                        e.insert("pages_added_per_call".into(), pages / n);
                    } else if name.contains("_ra") {
                        *e.entry("readahead_per_call".into()).or_insert(0.0) += v / n;
                    }
                }
            }
        }
        _ => {}
    }
    let mut top: Vec<(&str, f64)> = table.events(s, &c.layer).collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    for (name, v) in top.into_iter().take(TOP_EVENTS) {
        e.insert(format!("event:{name}:ns_per_call"), v / n);
    }
    e
}

/// Device time per byte of a kind's data calls.
fn device_ns_per_byte(table: &KindTable, s: &KindStats) -> Option<f64> {
    let device = starts(table, s, BLOCK, DEVICE_PREFIX);
    (device > 0.0 && s.bytes > 0).then(|| device / s.bytes as f64)
}

/// What removing a cause would save. A wait goes; block time above the device goes down to the device's; device
/// time goes down to the device's best speed per byte for the same direction elsewhere in the trace; the calls'
/// own work stays.
fn gain(table: &KindTable, kind: &Kind, s: &KindStats, c: &Cause) -> Gain {
    let block = || {
        table
            .exclusive(s)
            .iter()
            .filter(|(l, _)| l == BLOCK)
            .map(|(_, v)| v)
            .sum::<f64>()
    };
    match c.reason {
        Reason::ThrottledAboveDevice => {
            // What the wait for a request tag leaves of the block time ([`split`]).
            let block = block();
            let tag = starts(table, s, BLOCK, TAG_WAIT).min(block);
            let (_, above) = above_device(table, s, block - tag);
            Gain::new(
                above.min(c.ns),
                "wait_above_device",
                "The block layer's time above the device removed: the calls keep the device's own time.",
            )
        }
        Reason::QueueDepth => Gain::new(
            starts(table, s, BLOCK, TAG_WAIT).min(c.ns),
            "tag_wait_removed",
            "The waits for a free request slot (blk_mq_get_tag) removed.",
        ),
        Reason::DeviceBound => {
            let Some(own) = device_ns_per_byte(table, s) else {
                return Gain::new(0.0, "no_reference", "No device time per byte to compare.");
            };
            let best = table
                .kinds
                .iter()
                .filter(|(k, _)| k.direction().is_some() && k.direction() == kind.direction())
                .filter_map(|(k, x)| Some((k, device_ns_per_byte(table, x)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((k, rate)) if rate < own => Gain::new(
                    c.ns * (1.0 - rate / own),
                    "device_speed_elsewhere",
                    format!(
                        "The same bytes at the device's speed for {} in this trace: {rate:.3} ns per byte against {own:.3}.",
                        k.label()
                    ),
                ),
                _ => Gain::new(
                    0.0,
                    "device_speed_elsewhere",
                    "No calls in this trace moved their bytes faster on the device: nothing to gain short of another device.",
                ),
            }
        }
        Reason::KernelCpu
        | Reason::PageFaults
        | Reason::MemoryCopy
        | Reason::CallOverhead
        | Reason::Compute
        | Reason::LayerTime => Gain::inherent(),
        _ => Gain::wait_removed(c.ns),
    }
}

/// Per row, the time its call waited asleep (S) and runnable (R): every such wait, and those for the job, each
/// counted once ([`JobScan::wait_in_rows`]).
pub struct JobWaits {
    asleep: (HashMap<usize, f64>, HashMap<usize, f64>),
    runnable: (HashMap<usize, f64>, HashMap<usize, f64>),
}

impl JobWaits {
    pub fn of(scan: &JobScan) -> JobWaits {
        let waits = |letter| {
            (
                scan.wait_in_rows(letter, false),
                scan.job_wait_in_rows(letter),
            )
        };
        JobWaits {
            asleep: waits('S'),
            runnable: waits('R'),
        }
    }

    /// The share of the waits of `rows` behind a sleep or a wait for a CPU (`sched` / `sleep_wait`,
    /// `cpu_contention`) that waited for another thread of the job, each wait counted once: a kind's time counts a
    /// wait once in every row around it (requests in flight together). 0 for any other cause.
    pub fn job_share(&self, layer: &str, reason: Reason, rows: &[usize]) -> f64 {
        let (all, job) = match (layer, reason) {
            (SCHED, Reason::SleepWait) => &self.asleep,
            (SCHED, Reason::CpuContention) => &self.runnable,
            _ => return 0.0,
        };
        let sum = |m: &HashMap<usize, f64>| rows.iter().filter_map(|r| m.get(r)).sum::<f64>();
        let all = sum(all);
        if all <= 0.0 {
            return 0.0;
        }
        (sum(job) / all).min(1.0)
    }
}

/// A sleep or a wait for a CPU inside calls, less the part of it that waited for another thread of the job
/// ([`JobWaits::job_share`]): a write into a full pipe sleeps until its reader, in the job, empties it, and removing
/// that sleep saves nothing while the reader is the slower one.
fn without_job_waits(g: Gain, s: &KindStats, c: &Cause, job_waits: Option<&JobWaits>) -> Gain {
    let share = job_waits.map_or(0.0, |w| w.job_share(&c.layer, c.reason, &s.rows));
    if share <= 0.0 {
        return g;
    }
    let waited = c.ns * share;
    Gain::new(
        g.ns - waited,
        "job_wait_kept",
        format!(
            "{} Less {:.3} ms of it that waited for another thread of the job (woken by it, or while it held the \
             CPU), which the job spends anyway in that thread.",
            g.method.how,
            waited / 1e6
        ),
    )
}

/// Per kind of call with at least [`KIND_SHARE_MIN`] of the I/O time: its largest cause, and every other cause
/// with at least [`REASON_SHARE_MIN`] of the kind's time. None for a matrix without exclusive columns (no layer
/// was traced inside the calls: DFTracer's POSIX calls, Darshan's DXT segments).
pub fn findings(
    m: &FeatureMatrix,
    table: &KindTable,
    io_ns: f64,
    scan: Option<&JobScan>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    // Without a layer traced inside the calls, all their time is their own and says nothing about a layer.
    if !table
        .columns
        .iter()
        .any(|c| c.kind == FeatureKind::ExclusiveNs)
    {
        return out;
    }
    let job_waits = scan.map(JobWaits::of);
    for (kind, s) in &table.kinds {
        let dur = s.dur_ns as f64;
        if io_ns <= 0.0 || dur / io_ns < KIND_SHARE_MIN {
            continue;
        }
        let mut causes = causes(table, kind, s);
        causes.sort_by(|a, b| b.ns.total_cmp(&a.ns));
        let files = Files::of(m, &s.rows);
        for (i, c) in causes.iter().enumerate() {
            if c.ns <= 0.0 || (i > 0 && c.ns / dur < REASON_SHARE_MIN) {
                continue;
            }
            let mut f = Finding::new(
                &c.layer,
                c.reason,
                Scope::Calls(kind.clone()),
                c.ns,
                io_ns,
                layer_evidence(table, s, c, scan),
                without_job_waits(gain(table, kind, s, c), s, c, job_waits.as_ref()),
            );
            if let Some(a) = advice(kind, c.reason) {
                f.recommendation = a.to_owned();
            }
            f.files = files.clone();
            out.push(f);
        }
    }
    out
}

/// Advice for what `kind`'s calls waiting for `reason` can only mean, where the reason's own advice does not fit: a
/// write that is no sync call yet waits for a journal commit syncs itself.
fn advice(kind: &Kind, reason: Reason) -> Option<&'static str> {
    (reason == Reason::JournalWait
        && kind.direction() == Some(Direction::Write)
        && !datasets::vocab::op::flushes(&kind.op))
    .then_some(
        "Each write waits for a journal commit, so the writes sync themselves: the file is opened with O_SYNC or \
         O_DSYNC, the file system is mounted `sync`, or the file is `chattr +S`. Write without it and call \
         fdatasync once per batch of writes, or put the journal on a faster device.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dd oflag=dsync`'s writes wait for journal commits without a sync call; a fsync's wait keeps its own advice.
    #[test]
    fn writes_that_wait_for_the_journal_are_told_they_sync_themselves() {
        let kind = |op: &str| Kind {
            op: op.into(),
            mode: Some("buffered".into()),
            size_class: Some("1K-10K".into()),
        };
        assert!(advice(&kind("write"), Reason::JournalWait).is_some_and(|a| a.contains("O_DSYNC")));
        assert_eq!(advice(&kind("pwrite64"), Reason::DeviceBound), None);
        assert_eq!(advice(&kind("fsync"), Reason::JournalWait), None);
        assert_eq!(advice(&kind("read"), Reason::JournalWait), None);
    }

    #[test]
    fn events_name_the_reason_of_their_layer() {
        assert_eq!(event_reason("sched", "offcpu_R"), Reason::CpuContention);
        assert_eq!(event_reason("sched", "offcpu_D"), Reason::IoWait);
        assert_eq!(
            event_reason("sched", "offcpu_S@do_sys_poll"),
            Reason::SleepWait
        );
        assert_eq!(
            event_reason("jbd2", "offcpu_D@jbd2_log_wait_commit"),
            Reason::JournalWait
        );
        assert_eq!(event_reason("ext4", "offcpu_D@ext4_foo"), Reason::IoWait);
        assert_eq!(
            event_reason("mm", "balance_dirty_pages"),
            Reason::DirtyThrottling
        );
        assert_eq!(
            event_reason("writeback", "balance_dirty_pages"),
            Reason::DirtyThrottling
        );
        assert_eq!(event_reason("mm", "direct_reclaim"), Reason::MemoryPressure);
        assert_eq!(
            event_reason("mm", "offcpu_R@vmpressure_work_fn"),
            Reason::MemoryPressure
        );
        assert_eq!(
            event_reason("block", "offcpu_R@blk_mq_run_work_fn"),
            Reason::CpuContention
        );
        assert_eq!(event_reason("sched", "offcpu_R"), Reason::CpuContention);
        assert_eq!(
            event_reason("mm", "oncpu@shrink_node"),
            Reason::MemoryPressure
        );
        assert_eq!(
            event_reason("mm", "oncpu@do_anonymous_page"),
            Reason::PageFaults
        );
        assert_eq!(
            event_reason("kernel", "oncpu@asm_exc_page_fault"),
            Reason::PageFaults
        );
        assert_eq!(
            event_reason("sched", "offcpu_D@reclaim_throttle"),
            Reason::MemoryPressure
        );
        assert_eq!(
            event_reason("writeback", "offcpu_D@balance_dirty_pages"),
            Reason::DirtyThrottling
        );
        assert_eq!(
            event_reason("lock", "lock_contention"),
            Reason::LockContention
        );
        assert_eq!(event_reason("app", "x"), Reason::LayerTime);
    }
}
