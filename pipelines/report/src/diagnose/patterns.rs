//! Application patterns, as Drishti and DFAnalyzer find them: small requests, random access, misaligned offsets
//! and sizes, metadata-heavy work, a sync after every few writes, imbalance across processes or threads, the same
//! bytes read again, and STDIO instead of POSIX. From the calls (the feature matrix) and, where the trace was read,
//! its offsets ([`JobScan`]).

use std::collections::BTreeMap;

use datasets::vocab::op::{flushes, moves_items};
use features::{FeatureKind, FeatureMatrix};

use crate::diagnose::kinds::KindTable;
use crate::diagnose::scan::JobScan;
use crate::diagnose::thresholds::{
    IMBALANCE_MIN_CALLS, IMBALANCE_SHARE, METADATA_SHARE, MISALIGNED_SHARE, RANDOM_SHARE,
    REREAD_SHARE, SMALL_REQUEST_BYTES, SMALL_REQUEST_SHARE, STDIO_SHARE, SYNC_MIN_CALLS,
    WRITES_PER_SYNC,
};
use crate::diagnose::{Finding, Reason, Scope, evidence};
use crate::trace_report::summary::{Direction, direction};

pub use datasets::vocab::layer::APP as APP_LAYER;

/// What a pattern's calls cost. With layers traced inside the calls, their own time (`self_ns`): the time they
/// spend in a layer is that layer's finding (a sync's journal wait is `jbd2`'s, a small read's device time
/// `block`'s). Without layers, their whole time.
fn cost(m: &FeatureMatrix, rows: impl Iterator<Item = usize>) -> f64 {
    let layered = m
        .features
        .iter()
        .any(|c| c.kind == FeatureKind::ExclusiveNs);
    rows.map(|r| if layered { m.self_ns[r] } else { m.dur_ns[r] } as f64)
        .sum()
}

fn is_metadata(op: &str) -> bool {
    direction(op).is_none() && !flushes(op)
}

pub fn findings(
    m: &FeatureMatrix,
    table: &KindTable,
    scan: Option<&JobScan>,
    io_ns: f64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let f = |reason, scope, cost: f64, ev| Finding::new(APP_LAYER, reason, scope, cost, io_ns, ev);
    let calls_in = |d: Direction| -> u64 {
        table
            .kinds
            .iter()
            .filter(|(k, _)| k.direction() == Some(d))
            .map(|(_, s)| s.calls())
            .sum()
    };
    for (kind, s) in &table.kinds {
        let Some(d) = kind.direction() else { continue };
        let n = s.calls() as f64;
        let small = s
            .rows
            .iter()
            .filter(|&&r| m.size[r].is_some_and(|b| b >= 0 && (b as u64) < SMALL_REQUEST_BYTES))
            .count() as f64;
        let share = small / calls_in(d).max(1) as f64;
        if small == n && share >= SMALL_REQUEST_SHARE {
            out.push(f(
                Reason::SmallRequests,
                Scope::Calls(kind.clone()),
                cost(m, s.rows.iter().copied()),
                evidence([
                    ("calls", n),
                    ("share_of_direction_calls", share),
                    ("mean_size_bytes", s.bytes as f64 / s.sized.max(1) as f64),
                    ("threshold_bytes", SMALL_REQUEST_BYTES as f64),
                ]),
            ));
        }
        let known: Vec<usize> = s
            .rows
            .iter()
            .copied()
            .filter(|&r| m.sequential[r].is_some())
            .collect();
        let random: Vec<usize> = known
            .iter()
            .copied()
            .filter(|&r| m.sequential[r] == Some(false))
            .collect();
        if !known.is_empty() {
            let share = random.len() as f64 / known.len() as f64;
            if share >= RANDOM_SHARE {
                out.push(f(
                    Reason::RandomAccess,
                    Scope::Calls(kind.clone()),
                    cost(m, random.iter().copied()),
                    evidence([
                        ("calls_with_offsets", known.len() as f64),
                        ("random_calls", random.len() as f64),
                        ("random_share", share),
                    ]),
                ));
            }
        }
    }
    let meta: Vec<usize> = (0..m.n_rows()).filter(|&r| is_metadata(&m.op[r])).collect();
    let meta_ns: f64 = meta.iter().map(|&r| m.dur_ns[r] as f64).sum();
    if io_ns > 0.0 && meta_ns / io_ns >= METADATA_SHARE {
        out.push(f(
            Reason::MetadataHeavy,
            Scope::Job,
            cost(m, meta.iter().copied()),
            evidence([
                ("metadata_calls", meta.len() as f64),
                ("share_of_io_time", meta_ns / io_ns),
            ]),
        ));
    }
    out.extend(syncs(m, io_ns));
    out.extend(imbalance(m, io_ns));
    let stdio: Vec<usize> = (0..m.n_rows()).filter(|&r| moves_items(&m.op[r])).collect();
    let bytes = |rows: &mut dyn Iterator<Item = usize>| -> f64 {
        rows.filter_map(|r| m.size[r].filter(|b| *b > 0))
            .map(|b| b as f64)
            .sum()
    };
    let stdio_bytes = bytes(&mut stdio.iter().copied());
    let all_bytes = bytes(&mut (0..m.n_rows()).filter(|&r| direction(&m.op[r]).is_some()));
    if all_bytes > 0.0 && stdio_bytes / all_bytes >= STDIO_SHARE {
        out.push(f(
            Reason::StdioInsteadOfPosix,
            Scope::Job,
            cost(m, stdio.iter().copied()),
            evidence([
                ("stdio_calls", stdio.len() as f64),
                ("share_of_bytes", stdio_bytes / all_bytes),
            ]),
        ));
    }
    if let Some(scan) = scan {
        out.extend(from_scan(scan, io_ns));
    }
    out
}

fn syncs(m: &FeatureMatrix, io_ns: f64) -> Vec<Finding> {
    let mut per: BTreeMap<Scope, (u64, u64, Vec<usize>)> = BTreeMap::new();
    for r in 0..m.n_rows() {
        let scope = match &m.file[r] {
            Some(path) => Scope::File { path: path.clone() },
            None => Scope::Process { pid: m.pid[r] },
        };
        let op = m.op[r].as_str();
        let e = per.entry(scope).or_default();
        if direction(op) == Some(Direction::Write) {
            e.0 += 1;
        } else if flushes(op) {
            e.1 += 1;
            e.2.push(r);
        }
    }
    per.into_iter()
        .filter(|(_, (w, s, _))| *s >= SYNC_MIN_CALLS && *w as f64 / *s as f64 <= WRITES_PER_SYNC)
        .map(|(scope, (w, s, rows))| {
            Finding::new(
                APP_LAYER,
                Reason::FsyncHeavy,
                scope,
                cost(m, rows.into_iter()),
                io_ns,
                evidence([
                    ("writes", w as f64),
                    ("syncs", s as f64),
                    ("writes_per_sync", w as f64 / s as f64),
                ]),
            )
        })
        .collect()
}

/// Processes, or the threads of a one-process job, by their data calls' time.
fn imbalance(m: &FeatureMatrix, io_ns: f64) -> Option<Finding> {
    let mut pids: Vec<u64> = m.pid.clone();
    pids.sort_unstable();
    pids.dedup();
    let by_process = pids.len() > 1;
    let mut per: BTreeMap<(u64, u64), (u64, f64)> = BTreeMap::new();
    for r in (0..m.n_rows()).filter(|&r| direction(&m.op[r]).is_some()) {
        let key = if by_process {
            (m.pid[r], 0)
        } else {
            (m.pid[r], m.tid[r])
        };
        let e = per.entry(key).or_default();
        e.0 += 1;
        e.1 += m.dur_ns[r] as f64;
    }
    per.retain(|_, (n, _)| *n >= IMBALANCE_MIN_CALLS);
    if per.len() < 2 {
        return None;
    }
    let (slowest, (_, max)) = per.iter().max_by(|a, b| a.1.1.total_cmp(&b.1.1))?;
    let min = per.values().map(|v| v.1).fold(f64::INFINITY, f64::min);
    let mean = per.values().map(|v| v.1).sum::<f64>() / per.len() as f64;
    let share = (max - min) / max;
    (share >= IMBALANCE_SHARE).then(|| {
        let scope = if by_process {
            Scope::Process { pid: slowest.0 }
        } else {
            Scope::Thread {
                pid: slowest.0,
                tid: slowest.1,
            }
        };
        Finding::new(
            APP_LAYER,
            Reason::Imbalance,
            scope,
            max - mean,
            io_ns,
            evidence([
                (
                    if by_process { "processes" } else { "threads" },
                    per.len() as f64,
                ),
                ("slowest_ns", *max),
                ("fastest_ns", min),
                ("mean_ns", mean),
                ("imbalance", share),
            ]),
        )
    })
}

fn from_scan(scan: &JobScan, io_ns: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, f) in &scan.reads {
        let share = f.reread() as f64 / f.bytes.max(1) as f64;
        if f.reread() > 0 && share >= REREAD_SHARE {
            out.push(Finding::new(
                APP_LAYER,
                Reason::Reread,
                Scope::File { path: path.clone() },
                f.time_ns as f64 * share,
                io_ns,
                evidence([
                    ("bytes_read", f.bytes as f64),
                    ("distinct_bytes", f.distinct() as f64),
                    ("reread_share", share),
                ]),
            ));
        }
    }
    let a = &scan.alignment;
    if a.calls > 0 && a.misaligned as f64 / a.calls as f64 >= MISALIGNED_SHARE {
        out.push(Finding::new(
            APP_LAYER,
            Reason::Misaligned,
            Scope::Job,
            a.misaligned_ns as f64,
            io_ns,
            evidence([
                ("calls_with_offsets", a.calls as f64),
                ("misaligned_calls", a.misaligned as f64),
                ("misaligned_share", a.misaligned as f64 / a.calls as f64),
            ]),
        ));
    }
    out
}
