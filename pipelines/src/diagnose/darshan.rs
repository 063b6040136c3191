//! Findings from Darshan's counter records, Drishti's way: the POSIX module's access-size histogram, sequential
//! and consecutive counts, alignment and per-operation time, the STDIO module's bytes, and the fastest and slowest
//! rank of shared files. Their layer is the module; their cost is the module's time the share stands for (Darshan
//! keeps time per file and operation, not per request).

use std::collections::BTreeMap;

use crate::diagnose::kinds::Kind;
use crate::diagnose::scan::DarshanRecord;
use crate::diagnose::thresholds::{
    IMBALANCE_SHARE, METADATA_SHARE, MISALIGNED_SHARE, RANDOM_SHARE, SMALL_REQUEST_SHARE,
    STDIO_SHARE,
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

pub fn findings(records: &[DarshanRecord]) -> Vec<Finding> {
    let io = io_ns(records);
    let p = totals(records, "POSIX");
    let get = |k: &str| p.get(k).copied().unwrap_or(0.0);
    let mut out = Vec::new();
    let f = |reason, scope, cost: f64, ev| Finding::new("POSIX", reason, scope, cost, io, ev);
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
        if small / total >= SMALL_REQUEST_SHARE {
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
        if random / total >= RANDOM_SHARE {
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
    if ops > 0.0 && misaligned / ops >= MISALIGNED_SHARE {
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
    let all = stdio_bytes + get("POSIX_BYTES_READ") + get("POSIX_BYTES_WRITTEN");
    if all > 0.0 && stdio_bytes / all >= STDIO_SHARE {
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
                ("share_of_bytes", stdio_bytes / all),
            ]),
        ));
    }
    for r in records.iter().filter(|r| r.module == "POSIX" && r.rank < 0) {
        let c = |k: &str| r.counters.get(k).copied().unwrap_or(0.0);
        let (slow, fast) = (
            c("POSIX_F_SLOWEST_RANK_TIME"),
            c("POSIX_F_FASTEST_RANK_TIME"),
        );
        if slow > 0.0 && (slow - fast) / slow >= IMBALANCE_SHARE {
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
                    ("imbalance", (slow - fast) / slow),
                ]),
            ));
        }
    }
    out
}
