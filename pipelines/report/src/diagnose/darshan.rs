//! Findings from Darshan's counter records, Drishti's way: the POSIX module's access-size histogram, sequential
//! and consecutive counts, alignment and per-operation time, the STDIO module's bytes, the fastest and slowest
//! rank of shared files, and bytes read beyond a file's extent. Their layer is the module; their cost is the
//! module's time the share stands for (Darshan keeps time per file and operation, not per request). Each rule
//! compares as Drishti does (strictly above its threshold); where ours differs, the README's "Drishti side by
//! side" says how (`pipelines/report/tests/drishti.rs` checks both).

use std::collections::BTreeMap;

use crate::diagnose::kinds::Kind;
use crate::diagnose::ledger::Gain;
use crate::diagnose::scan::DarshanRecord;
use crate::diagnose::thresholds::{
    IMBALANCE_SHARE, METADATA_SHARE, MISALIGNED_SHARE, RANDOM_MIN_COUNT, RANDOM_SHARE,
    REREAD_SHARE, SMALL_REQUEST_MIN_COUNT, SMALL_REQUEST_SHARE, STDIO_SHARE,
};
use crate::diagnose::{Finding, Reason, Scope, evidence};

/// The histogram bins below [`crate::diagnose::thresholds::SMALL_REQUEST_BYTES`].
const SMALL_BINS: [&str; 5] = ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M"];

/// Counters summed over the records of one module.
fn totals(records: &[DarshanRecord], module: &str) -> BTreeMap<String, f64> {
    let mut t: BTreeMap<String, f64> = BTreeMap::new();
    for r in records.iter().filter(|r| r.module == module) {
        for (k, v) in &r.counters {
            // Darshan writes -1 for a counter it did not keep.
            if *v > 0.0 {
                *t.entry(k.clone()).or_default() += v;
            }
        }
    }
    t
}

/// The I/O time Darshan's counters record: POSIX and STDIO read, write and metadata time, in nanoseconds.
pub fn io_ns(records: &[DarshanRecord]) -> f64 {
    let mut s = 0.0;
    for (module, prefix) in [("POSIX", "POSIX"), ("STDIO", "STDIO")] {
        let t = totals(records, module);
        for op in ["READ", "WRITE", "META"] {
            s += t
                .get(&format!("{prefix}_F_{op}_TIME"))
                .copied()
                .unwrap_or(0.0);
        }
    }
    s * 1e9
}

/// Darshan keeps time per module and operation, not per request: a finding's gain is at most the time it stands for.
fn bound(ns: f64) -> Gain {
    Gain::new(
        ns,
        "counter_time_bound",
        "At most the module's time these operations stand for: Darshan's counters keep time per operation, not per request, so nothing finer is known.",
    )
}

/// The counters' findings, each claiming its time once from the operations' time left after `taken` (the time the
/// calls' findings, from DXT segments, already claimed per operation: `READ`, `WRITE`, `META`).
pub fn findings(records: &[DarshanRecord], taken: &BTreeMap<&str, f64>) -> Vec<Finding> {
    claim_once(stated(records), records, taken)
}

/// What the counters state, each finding at the whole time it stands for.
pub fn stated(records: &[DarshanRecord]) -> Vec<Finding> {
    let io = io_ns(records);
    let p = totals(records, "POSIX");
    let get = |k: &str| p.get(k).copied().unwrap_or(0.0);
    let mut out = Vec::new();
    let f = |reason, scope, cost: f64, ev| {
        Finding::new("POSIX", reason, scope, cost, io, ev, bound(cost))
    };
    for (dir, ops) in [("READ", "READS"), ("WRITE", "WRITES")] {
        let scope = Scope::Calls(Kind {
            op: dir.to_lowercase(),
            mode: None,
            size_class: None,
        });
        let total = get(&format!("POSIX_{ops}"));
        if total <= 0.0 {
            continue;
        }
        let time = get(&format!("POSIX_F_{dir}_TIME")) * 1e9;
        let small: f64 = SMALL_BINS
            .iter()
            .map(|b| get(&format!("POSIX_SIZE_{dir}_{b}")))
            .sum();
        if small / total > SMALL_REQUEST_SHARE && small > SMALL_REQUEST_MIN_COUNT {
            out.push(f(
                Reason::SmallRequests,
                scope.clone(),
                time * small / total,
                evidence([
                    ("small_requests", small),
                    ("requests", total),
                    ("share", small / total),
                ]),
            ));
        }
        let random = total - get(&format!("POSIX_SEQ_{ops}"));
        if random / total > RANDOM_SHARE && random > RANDOM_MIN_COUNT {
            out.push(f(
                Reason::RandomAccess,
                scope,
                time * random / total,
                evidence([
                    ("random_requests", random),
                    ("requests", total),
                    ("share", random / total),
                ]),
            ));
        }
    }
    let ops = get("POSIX_READS") + get("POSIX_WRITES");
    let data_ns = (get("POSIX_F_READ_TIME") + get("POSIX_F_WRITE_TIME")) * 1e9;
    let misaligned = get("POSIX_FILE_NOT_ALIGNED");
    if ops > 0.0 && misaligned / ops > MISALIGNED_SHARE {
        out.push(f(
            Reason::Misaligned,
            Scope::Job,
            data_ns * (misaligned / ops).min(1.0),
            evidence([
                ("file_not_aligned", misaligned),
                ("operations", ops),
                ("share", misaligned / ops),
            ]),
        ));
    }
    let meta = get("POSIX_F_META_TIME") * 1e9;
    if io > 0.0 && meta / io >= METADATA_SHARE {
        out.push(f(
            Reason::MetadataHeavy,
            Scope::Job,
            meta,
            evidence([("meta_time_s", meta * 1e-9)]),
        ));
    }
    let s = totals(records, "STDIO");
    let stdio_bytes = s.get("STDIO_BYTES_READ").copied().unwrap_or(0.0)
        + s.get("STDIO_BYTES_WRITTEN").copied().unwrap_or(0.0);
    let m = totals(records, "MPI-IO");
    let mpiio_bytes = m.get("MPIIO_BYTES_READ").copied().unwrap_or(0.0)
        + m.get("MPIIO_BYTES_WRITTEN").copied().unwrap_or(0.0);
    let mut posix_bytes = get("POSIX_BYTES_READ") + get("POSIX_BYTES_WRITTEN");
    // MPI-IO's bytes pass through POSIX and are counted there too, unless POSIX recorded fewer.
    if posix_bytes >= mpiio_bytes {
        posix_bytes -= mpiio_bytes;
    }
    let all = stdio_bytes + posix_bytes + mpiio_bytes;
    if all > 0.0 && stdio_bytes / all > STDIO_SHARE {
        let time: f64 = ["READ", "WRITE", "META"]
            .iter()
            .map(|op| s.get(&format!("STDIO_F_{op}_TIME")).copied().unwrap_or(0.0))
            .sum::<f64>()
            * 1e9;
        out.push(Finding::new(
            "STDIO",
            Reason::StdioInsteadOfPosix,
            Scope::Job,
            time,
            io,
            evidence([
                ("stdio_bytes", stdio_bytes),
                ("bytes", all),
                ("share_of_bytes", stdio_bytes / all),
            ]),
            bound(time),
        ));
    }
    for r in records.iter().filter(|r| r.module == "POSIX" && r.rank < 0) {
        let c = |k: &str| r.counters.get(k).copied().unwrap_or(0.0);
        let (slow, fast) = (
            c("POSIX_F_SLOWEST_RANK_TIME"),
            c("POSIX_F_FASTEST_RANK_TIME"),
        );
        let file_time = c("POSIX_F_READ_TIME") + c("POSIX_F_WRITE_TIME") + c("POSIX_F_META_TIME");
        let imbalance = (slow - fast).abs() / file_time;
        if file_time > 0.0 && imbalance > IMBALANCE_SHARE {
            out.push(f(
                Reason::Imbalance,
                Scope::File {
                    path: r.file.clone().unwrap_or_default(),
                },
                (slow - fast) * 1e9,
                evidence([
                    ("slowest_rank", c("POSIX_SLOWEST_RANK")),
                    ("slowest_rank_time_s", slow),
                    ("fastest_rank_time_s", fast),
                    ("file_time_s", file_time),
                    ("imbalance", imbalance),
                ]),
            ));
        }
    }
    out.extend(rereads(records, io));
    out
}

/// The operations' time each finding draws on: its direction's, the data's, the metadata's, STDIO's or all of
/// POSIX's.
fn pools(f: &Finding) -> &'static [&'static str] {
    match (&f.reason, &f.scope) {
        (Reason::SmallRequests | Reason::RandomAccess, Scope::Calls(k)) if k.op == "read" => {
            &["READ"]
        }
        (Reason::SmallRequests | Reason::RandomAccess, _) => &["WRITE"],
        (Reason::Reread, _) => &["READ"],
        (Reason::Misaligned, _) => &["READ", "WRITE"],
        (Reason::MetadataHeavy, _) => &["META"],
        (Reason::StdioInsteadOfPosix, _) => &["STDIO"],
        _ => &["READ", "WRITE", "META"],
    }
}

/// Each second of the counters' time claimed once: in the order found, a finding takes its cost from what is left
/// of its operations' time, in proportion to it.
fn claim_once(
    found: Vec<Finding>,
    records: &[DarshanRecord],
    taken: &BTreeMap<&str, f64>,
) -> Vec<Finding> {
    let io = io_ns(records);
    let (posix, stdio) = (totals(records, "POSIX"), totals(records, "STDIO"));
    let time = |t: &BTreeMap<String, f64>, k: &str| t.get(k).copied().unwrap_or(0.0) * 1e9;
    let mut left: BTreeMap<&str, f64> = ["READ", "WRITE", "META"]
        .into_iter()
        .map(|op| {
            let t = time(&posix, &format!("POSIX_F_{op}_TIME"));
            (op, (t - taken.get(op).copied().unwrap_or(0.0)).max(0.0))
        })
        .collect();
    left.insert(
        "STDIO",
        ["READ", "WRITE", "META"]
            .iter()
            .map(|op| time(&stdio, &format!("STDIO_F_{op}_TIME")))
            .sum(),
    );
    found
        .into_iter()
        .map(|f| {
            let keys = pools(&f);
            let avail: f64 = keys.iter().map(|k| left[k]).sum();
            let part = if avail > 0.0 {
                (f.cost_ns as f64 / avail).min(1.0)
            } else {
                0.0
            };
            for k in keys {
                *left.get_mut(k).expect("every pool") *= 1.0 - part;
            }
            let cost = avail * part;
            Finding::new(
                &f.layer,
                f.reason,
                f.scope,
                cost,
                io,
                f.evidence,
                bound(cost),
            )
        })
        .collect()
}

/// A file (on one rank, or shared) whose bytes read exceed its highest offset read: the excess was read again.
fn rereads(records: &[DarshanRecord], io: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.module == "POSIX") {
        let c = |k: &str| r.counters.get(k).copied().unwrap_or(-1.0);
        let (bytes, extent) = (c("POSIX_BYTES_READ"), c("POSIX_MAX_BYTE_READ") + 1.0);
        let share = (bytes - extent) / bytes;
        // A counter Darshan did not keep is -1, an extent of 0.
        if bytes > 0.0 && extent > 0.0 && share >= REREAD_SHARE {
            out.push(Finding::new(
                "POSIX",
                Reason::Reread,
                Scope::File {
                    path: r.file.clone().unwrap_or_default(),
                },
                c("POSIX_F_READ_TIME") * 1e9 * share,
                io,
                evidence([
                    ("rank", r.rank as f64),
                    ("bytes_read", bytes),
                    ("max_byte_read", extent - 1.0),
                    ("reread_share", share),
                ]),
                bound(c("POSIX_F_READ_TIME") * 1e9 * share),
            ));
        }
    }
    out
}
