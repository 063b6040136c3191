//! Application patterns, as Drishti and DFAnalyzer find them: small requests, random access, misaligned offsets
//! and sizes, metadata-heavy work, a sync after every few writes, imbalance across processes or threads, the same
//! bytes read again, and STDIO instead of POSIX. From the calls (the feature matrix) and, where the trace was read,
//! its offsets ([`JobScan`]). Each pattern claims the time its cause adds, from a [`Ledger`] of the calls' time,
//! before the layers name what is left; each states what removing it would gain, computed from the same trace.

use std::collections::BTreeMap;

use datasets::vocab::op::{flushes, moves_items};
use features::{FeatureKind, FeatureMatrix};

use crate::diagnose::finding::cause_key;
use crate::diagnose::kinds::{Kind, KindTable};
use crate::diagnose::layers::causes;
use crate::diagnose::ledger::{Gain, Ledger, per_call_fit};
use crate::diagnose::scan::{Activity, JobScan, Life, Thread};
use crate::diagnose::thresholds::{
    FLOOR_MIN_CALLS, IMBALANCE_MIN_CALLS, IMBALANCE_PEER_CALLS, IMBALANCE_SHARE, METADATA_SHARE,
    MISALIGNED_SHARE, PATTERN_MIN_GAIN_SHARE, RANDOM_MIN_COUNT, RANDOM_REFERENCE_MIN, RANDOM_SHARE,
    REREAD_SHARE, SMALL_REQUEST_BYTES, SMALL_REQUEST_MIN_COUNT, SMALL_REQUEST_SHARE, STDIO_SHARE,
    SYNC_MIN_CALLS, SYNCS_PACED_SHARE, WRITES_PER_SYNC,
};
use crate::diagnose::{Files, Finding, Reason, Scope, evidence};
use crate::summary::{Direction, direction};

pub use datasets::vocab::layer::APP as APP_LAYER;
use datasets::vocab::layer::{LOCK, MM, SCHED, WRITEBACK};

/// A thread's time off the CPU while runnable, in a call: `sched::offcpu_R`.
const OFFCPU_RUNNABLE: &str = "offcpu_R";

/// The gate every pattern passes: removing it would save at least [`PATTERN_MIN_GAIN_SHARE`] of the I/O time.
/// The pattern then claims `claim_ns` of `rows` (what is left of it, less, for a pattern that costs speed, the waits
/// the machine's contention caused), and its gain is bounded by what it claimed.
struct Emit<'a> {
    m: &'a FeatureMatrix,
    ledger: &'a mut Ledger,
    /// Per row, its waits that no access pattern causes ([`contention`]).
    contention: Vec<f64>,
    /// Per row, its waits for pages the page cache had let go of ([`JobScan::refault_waits`]).
    refault_waits: &'a [f64],
    io_ns: f64,
    /// Whether another source (Darshan's counters) already states a pattern for this scope.
    restated: &'a dyn Fn(Reason, &Scope) -> bool,
    out: Vec<Finding>,
}

impl Emit<'_> {
    fn push(
        &mut self,
        (reason, scope): (Reason, Scope),
        rows: &[usize],
        claim_ns: f64,
        gain: Gain,
        ev: BTreeMap<String, f64>,
    ) {
        let min = PATTERN_MIN_GAIN_SHARE * self.io_ns;
        if (self.restated)(reason, &scope) {
            return;
        }
        // A pattern priced by the speed it costs (random offsets, misalignment) does not take its calls' waits
        // that no offset causes; one whose calls would go away with it (a sync per write) takes them all.
        // Bytes read again wait for the device only where the cache let go of them: those waits are the memory's
        // (a limit the job hit names them), not the reading's.
        let waits: f64 = match reason {
            Reason::RandomAccess | Reason::Misaligned => {
                rows.iter().map(|&r| self.contention[r]).sum()
            }
            Reason::Reread => rows.iter().map(|&r| self.refault_waits[r]).sum(),
            _ => 0.0,
        };
        let claim_ns = claim_ns.min(self.ledger.left(rows) - waits);
        if gain.ns <= 0.0 || gain.ns < min || claim_ns < min {
            return;
        }
        let claimed = self.ledger.claim(rows, claim_ns);
        let gain = Gain {
            ns: gain.ns.min(claimed),
            ..gain
        };
        // Only a kind of call is said with its files: a file, a process or the job says what it is.
        let files = matches!(scope, Scope::Calls(_))
            .then(|| Files::of(self.m, rows))
            .flatten();
        self.out.push(Finding {
            files,
            ..Finding::new(APP_LAYER, reason, scope, claimed, self.io_ns, ev, gain)
        });
    }
}

/// Per row, the time it waited for what other work held: dirty-page throttling, a lock, memory reclaim, or a CPU
/// (preempted or woken but not yet running). A pattern's calls may be slow for these reasons too, and then the
/// pattern is not what made them slow: random or misaligned buffered writes paused by dirty throttling are paused
/// whatever their offsets.
fn contention(m: &FeatureMatrix) -> Vec<f64> {
    let mut out = vec![0.0; m.n_rows()];
    for c in &m.features {
        let waits = match c.kind {
            FeatureKind::ExclusiveNs => [WRITEBACK, LOCK, MM].contains(&c.layer.as_str()),
            FeatureKind::TimeNs => c.layer == SCHED && c.name == OFFCPU_RUNNABLE,
            FeatureKind::Count => false,
        };
        if waits {
            for (o, v) in out.iter_mut().zip(&c.values) {
                *o += v;
            }
        }
    }
    out
}

fn is_metadata(op: &str) -> bool {
    direction(op).is_none() && !flushes(op)
}

fn dur(m: &FeatureMatrix, rows: &[usize]) -> f64 {
    rows.iter().map(|&r| m.dur_ns[r] as f64).sum()
}

fn bytes(m: &FeatureMatrix, rows: &[usize]) -> f64 {
    rows.iter()
        .filter_map(|&r| m.size[r].filter(|b| *b > 0))
        .map(|b| b as f64)
        .sum()
}

/// Nanoseconds per byte of `rows`, when they moved any.
fn ns_per_byte(m: &FeatureMatrix, rows: &[usize]) -> Option<f64> {
    let b = bytes(m, rows);
    (b > 0.0).then(|| dur(m, rows) / b)
}

/// The application's patterns, root causes first: each claims its time before the next, and before the layers.
pub fn findings(
    m: &FeatureMatrix,
    table: &KindTable,
    scan: Option<&JobScan>,
    refault_waits: &[f64],
    io_ns: f64,
    ledger: &mut Ledger,
    restated: &dyn Fn(Reason, &Scope) -> bool,
) -> Vec<Finding> {
    let mut e = Emit {
        m,
        ledger,
        contention: contention(m),
        refault_waits,
        io_ns,
        restated,
        out: Vec::new(),
    };
    syncs(m, table, scan, &mut e);
    metadata(m, &mut e);
    stdio(m, &mut e);
    small_requests(m, &mut e);
    random_access(m, &mut e);
    if let Some(scan) = scan {
        from_scan(m, table, scan, &mut e);
    }
    imbalance(m, &mut e);
    e.out
}

/// Whether the syncs `rows` (in time order) answer requests: between its consecutive syncs, the thread slept until
/// something woke it (outside its calls, or until another thread of the job woke it) more than once every other
/// sync. A database's server commits each transaction when its client asks; nothing in the server batches what it
/// has not received. An application that commits each row of input it already holds syncs without waiting in
/// between. The sleeps are counted, not the gaps that hold one: a server whose client runs on the same CPU often
/// finds the next request already sent, having waited for it runnable while the client held the CPU, and sleeps
/// in fewer gaps (42-80% of pgbench's, run to run), more than once in those.
fn paced_by_requests(m: &FeatureMatrix, rows: &[usize], lives: &BTreeMap<Thread, Life>) -> bool {
    let (mut gaps, mut sleeps) = (0usize, 0usize);
    for pair in rows.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let thread = (m.pid[a], m.tid[a]);
        if thread != (m.pid[b], m.tid[b]) {
            continue;
        }
        let (from, to) = (m.ts_ns[a] + m.dur_ns[a], m.ts_ns[b]);
        gaps += 1;
        let Some(life) = lives.get(&thread) else {
            continue;
        };
        let first = life.partition_point(|x| x.1 <= from);
        sleeps += life[first..]
            .iter()
            .take_while(|x| x.0 < to)
            .filter(|x| matches!(x.2, Activity::Off('S') | Activity::JobWait))
            .count();
    }
    gaps > 0 && sleeps as f64 > gaps as f64 * SYNCS_PACED_SHARE
}

/// A sync after every few writes claims the syncs' whole time: the journal commits and device flushes inside them
/// are its evidence, not findings of their own. Synced once per file instead, the job keeps one sync per file at
/// the median time of its syncs. A write to a file opened with O_SYNC or O_DSYNC ([`JobScan::synced_writes`]) is a
/// sync of its own: it claims its time beyond its own code (the copy stays the write's). Syncs that answer requests
/// ([`paced_by_requests`]) are not the application's to batch: their time stays with the layers they waited in.
fn syncs(m: &FeatureMatrix, table: &KindTable, scan: Option<&JobScan>, e: &mut Emit) {
    // The threads' lives cost a pass over every interval: taken only once a file is synced often enough to ask.
    let mut lives: Option<BTreeMap<Thread, Life>> = None;
    let mut per: BTreeMap<Scope, (u64, Vec<usize>)> = BTreeMap::new();
    let synced = |r: usize| scan.is_some_and(|s| s.synced_writes.get(r) == Some(&true));
    for r in 0..m.n_rows() {
        let scope = match &m.file[r] {
            Some(path) => Scope::File { path: path.clone() },
            None => Scope::Process { pid: m.pid[r] },
        };
        let op = m.op[r].as_str();
        let x = per.entry(scope).or_default();
        if direction(op) == Some(Direction::Write) {
            x.0 += 1;
            if synced(r) {
                x.1.push(r);
            }
        } else if flushes(op) {
            x.1.push(r);
        }
    }
    for (scope, (w, mut rows)) in per {
        let s = rows.len() as u64;
        if s < SYNC_MIN_CALLS || w as f64 / s as f64 > WRITES_PER_SYNC {
            continue;
        }
        rows.sort_by_key(|&r| m.ts_ns[r]);
        let lives = lives.get_or_insert_with(|| {
            scan.map(JobScan::activities)
                .into_iter()
                .flatten()
                .collect()
        });
        if paced_by_requests(m, &rows, lives) {
            continue;
        }
        let sync_ns = |r: usize| match synced(r) {
            true => m.dur_ns[r].saturating_sub(m.self_ns[r]) as f64,
            false => m.dur_ns[r] as f64,
        };
        let mut times: Vec<f64> = rows.iter().map(|&r| sync_ns(r)).collect();
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let total: f64 = times.iter().sum();
        let synced_writes = rows.iter().filter(|&&r| synced(r)).count();
        let mut ev = evidence([
            ("writes", w as f64),
            ("syncs", s as f64),
            ("synced_writes", synced_writes as f64),
            ("writes_per_sync", w as f64 / s as f64),
            ("sync_ns_median", median),
        ]);
        add_causes(&mut ev, m, table, &rows, 1.0);
        let gain = Gain::new(
            total - median,
            "syncs_batched",
            format!(
                "The {s} syncs replaced by one at their median time ({:.1} µs): {:.1} µs of {:.1} µs saved.",
                median / 1e3,
                (total - median) / 1e3,
                total / 1e3
            ),
        );
        e.push((Reason::FsyncHeavy, scope), &rows, total, gain, ev);
    }
}

/// Adds to a pattern's evidence the time of `rows` by layer and reason (`cause:LAYER/REASON_ns`), times `share` (the
/// part of their time the pattern claims): a limit found later takes out the waits it caused
/// ([`crate::diagnose::limits`]). Nothing for a matrix without exclusive columns.
fn add_causes(
    ev: &mut BTreeMap<String, f64>,
    m: &FeatureMatrix,
    table: &KindTable,
    rows: &[usize],
    share: f64,
) {
    if !(table.columns.iter()).any(|c| c.kind == FeatureKind::ExclusiveNs) {
        return;
    }
    let sub = KindTable::of_rows(m, rows);
    for (kind, st) in &sub.kinds {
        for c in causes(&sub, kind, st) {
            *ev.entry(cause_key(&c.layer, c.reason)).or_default() += c.ns * share;
        }
    }
}

/// Metadata calls repeated on a file by the same process (a second `stat` or `open` of it) are what caching or
/// opening once would save; the pattern needs metadata to be [`METADATA_SHARE`] of the I/O time.
fn metadata(m: &FeatureMatrix, e: &mut Emit) {
    let meta: Vec<usize> = (0..m.n_rows()).filter(|&r| is_metadata(&m.op[r])).collect();
    let meta_ns = dur(m, &meta);
    if e.io_ns <= 0.0 || meta_ns / e.io_ns < METADATA_SHARE {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let repeats: Vec<usize> = meta
        .iter()
        .copied()
        .filter(|&r| {
            m.file[r]
                .as_ref()
                .is_some_and(|f| !seen.insert((m.pid[r], m.op[r].clone(), f.clone())))
        })
        .collect();
    // A repeat removed saves its own work; a wait for the device inside it (an inode or directory block not yet
    // read) stays with the layer that waited, where a throttle that held it is named: find under a read throttle
    // waits as long in its second stat of a file as in its first.
    let waits: Vec<&[f64]> = (m.features.iter())
        .filter(|c| c.kind == FeatureKind::TimeNs && c.name.starts_with("offcpu_D"))
        .map(|c| c.values.as_slice())
        .collect();
    let saved: f64 = (repeats.iter())
        .map(|&r| (m.dur_ns[r] as f64 - waits.iter().map(|w| w[r]).sum::<f64>()).max(0.0))
        .sum();
    let gain = Gain::new(
        saved,
        "repeats_removed",
        format!(
            "The {} metadata calls that repeat an earlier one on the same file by the same process removed, but for their waits for the device.",
            repeats.len()
        ),
    );
    let ev = evidence([
        ("metadata_calls", meta.len() as f64),
        ("repeated_calls", repeats.len() as f64),
        ("share_of_io_time", meta_ns / e.io_ns),
    ]);
    e.push(
        (Reason::MetadataHeavy, Scope::Job),
        &repeats,
        saved,
        gain,
        ev,
    );
}

/// STDIO moving [`STDIO_SHARE`] of the bytes: its calls at the POSIX calls' time per byte in the same trace.
fn stdio(m: &FeatureMatrix, e: &mut Emit) {
    let data: Vec<usize> = (0..m.n_rows())
        .filter(|&r| direction(&m.op[r]).is_some())
        .collect();
    let (std, posix): (Vec<usize>, Vec<usize>) =
        data.iter().copied().partition(|&r| moves_items(&m.op[r]));
    let (sb, all) = (bytes(m, &std), bytes(m, &data));
    if all <= 0.0 || sb / all < STDIO_SHARE {
        return;
    }
    let Some(rate) = ns_per_byte(m, &posix) else {
        return;
    };
    let saved = dur(m, &std) - sb * rate;
    let gain = Gain::new(
        saved,
        "posix_speed",
        format!(
            "The STDIO calls' bytes at the {} POSIX data calls' {rate:.3} ns per byte in this trace.",
            posix.len()
        ),
    );
    let ev = evidence([
        ("stdio_calls", std.len() as f64),
        ("share_of_bytes", sb / all),
    ]);
    e.push(
        (Reason::StdioInsteadOfPosix, Scope::Job),
        &std,
        saved,
        gain,
        ev,
    );
}

/// The data calls per direction and mode (buffered, direct, or unknown), as the scope of a pattern over them.
fn by_way(m: &FeatureMatrix) -> BTreeMap<Kind, Vec<usize>> {
    let mut out: BTreeMap<Kind, Vec<usize>> = BTreeMap::new();
    for r in 0..m.n_rows() {
        let k = Kind::of(m, r);
        if k.direction().is_some() {
            out.entry(Kind {
                size_class: None,
                ..k
            })
            .or_default()
            .push(r);
        }
    }
    out
}

fn count_in(m: &FeatureMatrix, d: Direction, keep: impl Fn(usize) -> bool) -> (f64, f64) {
    (0..m.n_rows())
        .filter(|&r| direction(&m.op[r]) == Some(d))
        .fold((0.0, 0.0), |(n, k), r| (n + 1.0, k + f64::from(keep(r))))
}

fn is_small(m: &FeatureMatrix, r: usize) -> bool {
    m.size[r].is_some_and(|b| b >= 0 && (b as u64) < SMALL_REQUEST_BYTES)
}

/// Calls that larger requests would save: on each file (per process), its calls beyond one per
/// [`SMALL_REQUEST_BYTES`] of what they moved, at most its small calls. A file read whole in one small call saves
/// nothing, nor does a call on a file the trace does not name, nor one at a random offset (`sequential` false): a
/// larger request there moves bytes the program did not ask for (a key-value store's lookups, each one block).
fn calls_saved(m: &FeatureMatrix, rows: &[usize]) -> f64 {
    let mut per: BTreeMap<(u64, &str), (f64, f64, f64)> = BTreeMap::new();
    for &r in rows.iter().filter(|&&r| m.sequential[r] != Some(false)) {
        // A call whose file the trace does not name may be the only one on its file: it saves nothing.
        let Some(file) = m.file[r].as_deref() else {
            continue;
        };
        let x = per.entry((m.pid[r], file)).or_default();
        x.0 += 1.0;
        x.1 += f64::from(is_small(m, r));
        x.2 += m.size[r].filter(|b| *b > 0).unwrap_or(0) as f64;
    }
    per.values()
        .map(|(n, small, b)| {
            (n - (b / SMALL_REQUEST_BYTES as f64).ceil().max(1.0)).clamp(0.0, *small)
        })
        .sum()
}

/// A call's own time: with layers traced, the part no layer accounts for (`self_ns`), so a wait below the call (a
/// throttle, the device) is not counted as the call's cost; without layers, its whole duration.
fn own(m: &FeatureMatrix, layered: bool, rows: &[usize]) -> f64 {
    rows.iter()
        .map(|&r| if layered { m.self_ns[r] } else { m.dur_ns[r] } as f64)
        .sum()
}

/// The own time of the cheapest kind of call in the trace (by operation, the median over at least
/// [`FLOOR_MIN_CALLS`] calls): what a call costs when it moves little or nothing, the tracer's own cost included.
fn call_floor(m: &FeatureMatrix) -> Option<(&str, f64)> {
    let mut per: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for r in 0..m.n_rows() {
        per.entry(m.op[r].as_str()).or_default().push(m.self_ns[r]);
    }
    per.into_iter()
        .filter(|(_, v)| v.len() >= FLOOR_MIN_CALLS)
        .map(|(op, mut v)| {
            let mid = v.len() / 2;
            (op, *v.select_nth_unstable(mid).1 as f64)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Small requests, Drishti's rule per direction; their gain is the calls saved, each at what a small call costs
/// beyond its bytes. With layers traced, that is the small calls' own time (a wait in a layer below is that layer's
/// cause, not the request size's): less their bytes at the own time per byte of the trace's calls of
/// [`SMALL_REQUEST_BYTES`] or more when there are any, else the intercept of a line of own time on size over calls
/// of several sizes, else the own time of the trace's cheapest kind of call ([`call_floor`]): copying a buffered
/// call's bytes takes as long in one large call. Without layers, against the large calls' time per byte, else the intercept of a least-squares
/// line of duration on size over the direction's calls.
fn small_requests(m: &FeatureMatrix, e: &mut Emit) {
    let layered = m.self_ns.iter().zip(&m.dur_ns).any(|(s, d)| s != d);
    for (way, rows) in by_way(m) {
        let d = way.direction().expect("data calls");
        let (total, small_dir) = count_in(m, d, |r| is_small(m, r));
        if !(small_dir > SMALL_REQUEST_MIN_COUNT && small_dir / total > SMALL_REQUEST_SHARE) {
            continue;
        }
        let small: Vec<usize> = rows.iter().copied().filter(|&r| is_small(m, r)).collect();
        if small.is_empty() {
            continue;
        }
        let large: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&r| m.size[r].is_some_and(|b| b as u64 >= SMALL_REQUEST_BYTES))
            .collect();
        let n = small.len() as f64;
        let saved = calls_saved(m, &rows);
        let time = if layered { "own time" } else { "time" };
        let rate = (bytes(m, &large) > 0.0).then(|| own(m, layered, &large) / bytes(m, &large));
        let (per_call, how) = match rate {
            Some(rate) => (
                (own(m, layered, &small) - bytes(m, &small) * rate) / n,
                format!(
                    "{saved:.0} calls saved at 1 MiB per call, each costing what a small call takes beyond its bytes at the {} calls of 1 MiB or more ({rate:.3} ns of {time} per byte)",
                    large.len()
                ),
            ),
            None if layered => {
                let mean = own(m, true, &small) / n;
                let pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter_map(|&r| Some((m.size[r]? as f64, m.self_ns[r] as f64)))
                    .collect();
                match (per_call_fit(&pts), call_floor(m)) {
                    (Some((a, b)), _) if a >= 0.0 && b >= 0.0 => (
                        a.min(mean),
                        format!(
                            "{saved:.0} calls saved at 1 MiB per call, each at the per-call own time of a least-squares line over the {} calls of several sizes ({a:.0} ns + {b:.4} ns per byte)",
                            pts.len()
                        ),
                    ),
                    (_, Some((op, floor))) => (
                        floor.min(mean),
                        format!(
                            "{saved:.0} calls saved at 1 MiB per call, each at the own time of the trace's cheapest kind of call ({op}, median {floor:.0} ns): what any call costs apart from the bytes it moves, which a larger request still moves"
                        ),
                    ),
                    _ => continue,
                }
            }
            None => {
                let pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter_map(|&r| Some((m.size[r]? as f64, m.dur_ns[r] as f64)))
                    .collect();
                let Some((a, b)) = per_call_fit(&pts) else {
                    continue;
                };
                (
                    a,
                    format!(
                        "{saved:.0} calls saved at 1 MiB per call, each at the per-call cost of a least-squares line over the {} calls ({a:.0} ns + {b:.4} ns per byte)",
                        pts.len()
                    ),
                )
            }
        };
        let gain = Gain::new(saved * per_call, "recommended_size", how + ".");
        let ev = evidence([
            ("calls", n),
            ("small_requests_in_direction", small_dir),
            ("share_of_direction_calls", small_dir / total),
            ("mean_size_bytes", bytes(m, &small) / n),
            ("calls_saved", saved),
            ("threshold_bytes", SMALL_REQUEST_BYTES as f64),
        ]);
        let g = gain.ns;
        e.push(
            (Reason::SmallRequests, Scope::Calls(way)),
            &small,
            g,
            gain,
            ev,
        );
    }
}

/// Random access, Drishti's rule per direction over the calls whose offsets are known; its gain is the random
/// calls at the time of the same size class's sequential calls in the trace, or at the sequential calls' time per
/// byte.
fn random_access(m: &FeatureMatrix, e: &mut Emit) {
    for (way, rows) in by_way(m) {
        let d = way.direction().expect("data calls");
        let (known, random_dir) = count_in(m, d, |r| m.sequential[r] == Some(false));
        let known_dir = known
            - (0..m.n_rows())
                .filter(|&r| direction(&m.op[r]) == Some(d) && m.sequential[r].is_none())
                .count() as f64;
        if !(random_dir > RANDOM_MIN_COUNT && random_dir / known_dir > RANDOM_SHARE) {
            continue;
        }
        let random: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&r| m.sequential[r] == Some(false))
            .collect();
        let seq: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&r| m.sequential[r] == Some(true))
            .collect();
        // Net of the waits no offset causes, so that a throttle that paused the random calls is not their cost.
        let net =
            |rows: &[usize]| dur(m, rows) - rows.iter().map(|&r| e.contention[r]).sum::<f64>();
        let seq_bytes = bytes(m, &seq);
        if seq.len() < RANDOM_REFERENCE_MIN || seq_bytes <= 0.0 {
            continue;
        }
        let rate = net(&seq) / seq_bytes;
        let mut saved = 0.0;
        let mut classes: BTreeMap<Kind, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
        for &r in &random {
            classes.entry(Kind::of(m, r)).or_default().0.push(r);
        }
        for &r in &seq {
            classes.entry(Kind::of(m, r)).or_default().1.push(r);
        }
        for (rnd, sq) in classes.values().filter(|(r, _)| !r.is_empty()) {
            saved += net(rnd)
                - if sq.len() < RANDOM_REFERENCE_MIN {
                    bytes(m, rnd) * rate
                } else {
                    rnd.len() as f64 * net(sq) / sq.len() as f64
                };
        }
        let gain = Gain::new(
            saved,
            "sequential_speed",
            format!(
                "The {} random calls at the time of the {} sequential calls of their size class in this trace (or at their {rate:.3} ns per byte).",
                random.len(),
                seq.len()
            ),
        );
        let ev = evidence([
            ("random_calls", random.len() as f64),
            ("random_in_direction", random_dir),
            ("calls_with_offsets_in_direction", known_dir),
            ("random_share", random_dir / known_dir),
        ]);
        let g = gain.ns;
        e.push(
            (Reason::RandomAccess, Scope::Calls(way)),
            &random,
            g,
            gain,
            ev,
        );
    }
}

/// One process's or thread's data calls: how many, their time, the first one's start, the last one's end, and
/// their rows.
type Group = (u64, f64, u64, u64, Vec<usize>);

/// A process's or thread's role: its name without a trailing number (`rocksdb:low0` and `rocksdb:low1` are one
/// role), none when the trace does not name it.
fn role(name: Option<&str>) -> Option<&str> {
    name.map(|n| n.trim_end_matches(|c: char| c.is_ascii_digit()))
}

/// Processes (or, in a one-process job, threads) by their data calls' time, among those of the same program (or
/// thread name) whose calls' spans overlap the slowest one's and that made a like number of data calls: ones that
/// ran one after another, did other work, or are other programs (`tar | gzip`: a pipeline's stages do different
/// work) are not imbalanced. Balanced, the slowest would take the mean. Of several roles, the one whose slowest
/// would gain most is named.
fn imbalance(m: &FeatureMatrix, e: &mut Emit) {
    let mut pids: Vec<u64> = m.pid.clone();
    pids.sort_unstable();
    pids.dedup();
    let by_process = pids.len() > 1;
    let mut per: BTreeMap<(u64, u64), (Group, Option<&str>)> = BTreeMap::new();
    for r in (0..m.n_rows()).filter(|&r| direction(&m.op[r]).is_some()) {
        let (key, name) = if by_process {
            ((m.pid[r], 0), m.process[r].as_deref())
        } else {
            ((m.pid[r], m.tid[r]), m.thread[r].as_deref())
        };
        let (x, _) = per
            .entry(key)
            .or_insert_with(|| ((0, 0.0, u64::MAX, 0, Vec::new()), role(name)));
        x.0 += 1;
        x.1 += m.dur_ns[r] as f64;
        x.2 = x.2.min(m.ts_ns[r]);
        x.3 = x.3.max(m.ts_ns[r] + m.dur_ns[r]);
        x.4.push(r);
    }
    per.retain(|_, (x, _)| x.0 >= IMBALANCE_MIN_CALLS);
    let same_role = |a: Option<&str>, b: Option<&str>| a.is_none() || b.is_none() || a == b;
    // Each group as the slowest of its peers: those of its role that ran beside it with a like number of calls.
    let worst = per
        .iter()
        .filter_map(|(key, (s, name))| {
            let peer = |x: &Group| {
                let (a, b) = (x.0.min(s.0) as f64, x.0.max(s.0) as f64);
                a >= IMBALANCE_PEER_CALLS * b
            };
            let together: Vec<f64> = per
                .values()
                .filter(|(x, n)| same_role(*n, *name) && x.2 < s.3 && s.2 < x.3 && peer(x))
                .map(|(x, _)| x.1)
                .collect();
            let max = s.1;
            if together.len() < 2 || together.iter().any(|t| *t > max) {
                return None;
            }
            let min = together.iter().copied().fold(f64::INFINITY, f64::min);
            let mean = together.iter().sum::<f64>() / together.len() as f64;
            ((max - min) / max >= IMBALANCE_SHARE).then_some((key, s, together.len(), min, mean))
        })
        .max_by(|a, b| (a.1.1 - a.4).total_cmp(&(b.1.1 - b.4)));
    let Some((slowest, s, peers, min, mean)) = worst else {
        return;
    };
    let max = s.1;
    let share = (max - min) / max;
    let scope = if by_process {
        Scope::Process { pid: slowest.0 }
    } else {
        Scope::Thread {
            pid: slowest.0,
            tid: slowest.1,
        }
    };
    let gain = Gain::new(
        max - mean,
        "balanced_to_mean",
        format!(
            "The slowest of {peers} {} that ran at the same time brought down to their mean I/O time.",
            if by_process { "processes" } else { "threads" }
        ),
    );
    let ev = evidence([
        (
            if by_process { "processes" } else { "threads" },
            peers as f64,
        ),
        ("slowest_ns", max),
        ("fastest_ns", min),
        ("mean_ns", mean),
        ("imbalance", share),
    ]);
    let rows = s.4.clone();
    e.push((Reason::Imbalance, scope), &rows, max - mean, gain, ev);
}

/// The same bytes read again (claimed from the file's reads, all of it saved), and misaligned calls at the aligned
/// calls' time per byte.
fn from_scan(m: &FeatureMatrix, table: &KindTable, scan: &JobScan, e: &mut Emit) {
    for (path, f) in &scan.reads {
        let share = f.reread() as f64 / f.bytes.max(1) as f64;
        if f.reread() == 0 || share < REREAD_SHARE {
            continue;
        }
        let rows: Vec<usize> = (0..m.n_rows())
            .filter(|&r| {
                direction(&m.op[r]) == Some(Direction::Read) && m.file[r].as_deref() == Some(path)
            })
            .collect();
        let saved = f.time_ns as f64 * share;
        let gain = Gain::new(
            saved,
            "reread_removed",
            "The reads' time in proportion to the bytes read again, removed.",
        );
        let mut ev = evidence([
            ("bytes_read", f.bytes as f64),
            ("distinct_bytes", f.distinct() as f64),
            ("reread_share", share),
        ]);
        add_causes(&mut ev, m, table, &rows, share);
        e.push(
            (Reason::Reread, Scope::File { path: path.clone() }),
            &rows,
            saved,
            gain,
            ev,
        );
    }
    let a = &scan.alignment;
    if a.calls == 0
        || (a.misaligned as f64 / a.calls as f64) < MISALIGNED_SHARE
        || a.aligned_bytes == 0
    {
        return;
    }
    let rate = a.aligned_ns as f64 / a.aligned_bytes as f64;
    let saved = a.misaligned_ns as f64 - a.misaligned_bytes as f64 * rate;
    let rows: Vec<usize> = (0..m.n_rows())
        .filter(|&r| direction(&m.op[r]).is_some() && m.sequential[r].is_some())
        .collect();
    let gain = Gain::new(
        saved,
        "aligned_speed",
        format!(
            "The {} misaligned calls' bytes at the aligned calls' {rate:.3} ns per byte in this trace.",
            a.misaligned
        ),
    );
    let ev = evidence([
        ("calls_with_offsets", a.calls as f64),
        ("misaligned_calls", a.misaligned as f64),
        ("misaligned_share", a.misaligned as f64 / a.calls as f64),
    ]);
    e.push((Reason::Misaligned, Scope::Job), &rows, saved, gain, ev);
}
