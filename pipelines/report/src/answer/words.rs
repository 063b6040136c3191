//! A finding in words: its scope as a phrase ("4 KiB O_DIRECT reads of /data/x (24,576 calls)"), one sentence that
//! says what the time is, and the numbers of its evidence a person reads first, each in its unit and named. The
//! evidence keys are the JSON's ([`crate::diagnose`]'s rule modules write them); a key this module does not know
//! stays in the JSON and in the page's disclosure.

use std::borrow::Cow;

use crate::answer::model::Number;
use crate::answer::units::{bytes, count, duration, mib_per_s, percent, plain};
use crate::diagnose::kinds::Kind;
use crate::diagnose::{Files, Finding, Reason, Scope};
use crate::summary::SIZE_BINS;

/// The share of a kind's calls that must name a file for its phrase to name files: below, the files would speak
/// for a minority of the calls.
pub const NAMED_SHARE: f64 = 0.5;
/// The share of the calls naming a file that one file must hold for the phrase to name it alone: "nearly all".
pub const ONE_FILE_SHARE: f64 = 0.9;
/// The share that the file with the most calls must hold to be named beside a count of the others; below, the
/// phrase names only how many files there are.
pub const TOP_FILE_SHARE: f64 = 0.5;
/// The longest path a phrase shows whole; a longer one keeps its last components.
pub const PATH_CHARS: usize = 40;

/// A finding's sentence and its numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Phrase {
    pub sentence: String,
    pub numbers: Vec<Number>,
}

/// What a reason's time is, as the end of "… spend 71% of their time ___".
pub fn doing(reason: Reason, layer: &str) -> String {
    match reason {
        Reason::DeviceBound => "on the device",
        Reason::ThrottledAboveDevice => "queued in the block layer above the device",
        Reason::QueueDepth => "waiting for a free slot in the device's queue",
        Reason::SharedDevice => "waiting for a device other processes kept busy",
        Reason::CpuContention => "waiting for a CPU while runnable",
        Reason::LockContention => "waiting for a kernel lock",
        Reason::DirtyThrottling => "throttled for dirty pages",
        Reason::WritebackWait => "waiting for pages under writeback",
        Reason::JournalWait => "waiting for journal commits",
        Reason::MemoryPressure => "reclaiming memory",
        Reason::ReadaheadMiss => "waiting for pages read in on demand",
        Reason::IoWait => "asleep in an uninterruptible wait the trace does not name",
        Reason::SleepWait => "asleep, waiting for a pipe, socket, futex or timer",
        Reason::IrqTime => "in interrupts",
        Reason::KernelCpu => return format!("running kernel code in the {layer} layer"),
        Reason::PageFaults => "faulting in pages of memory touched for the first time",
        Reason::MemoryCopy => "copying data through the page cache",
        Reason::CallOverhead => "in the calls' own code",
        Reason::Compute => "computing between I/O calls",
        Reason::LayerTime => return format!("in the {layer} layer"),
        Reason::SmallRequests => "in small requests",
        Reason::RandomAccess => "in random access",
        Reason::Misaligned => "in misaligned requests",
        Reason::MetadataHeavy => "in metadata calls",
        Reason::FsyncHeavy => "syncing after every few writes",
        Reason::Imbalance => "waiting for the slowest process or thread",
        Reason::Reread => "reading the same bytes again",
        Reason::StdioInsteadOfPosix => "in STDIO calls",
        Reason::TracerCost => "in the tracer's own probes",
    }
    .to_owned()
}

/// A reason's time under its layer, for the comparison's cause: "block time on the device".
pub fn reason(reason: Reason, layer: &str) -> String {
    format!("{layer} time {}", doing(reason, layer))
}

/// An application pattern as a noun, for the verdict.
fn pattern(reason: Reason) -> Option<&'static str> {
    Some(match reason {
        Reason::SmallRequests => "small requests",
        Reason::RandomAccess => "random access",
        Reason::Misaligned => "misaligned requests",
        Reason::MetadataHeavy => "metadata calls",
        Reason::FsyncHeavy => "a sync after every few writes",
        Reason::Imbalance => "processes or threads with unequal I/O",
        Reason::Reread => "the same bytes read again",
        Reason::StdioInsteadOfPosix => "STDIO instead of POSIX calls",
        _ => return None,
    })
}

/// The main cause in a few words, for the verdict.
pub fn cause(f: &Finding) -> String {
    let scope = what(f);
    match pattern(f.reason) {
        Some(p) if f.scope == Scope::Job => p.to_owned(),
        Some(p) if matches!(f.scope, Scope::Calls(_)) => format!("{p} among {scope}"),
        Some(p) => format!("{p} ({scope})"),
        None => format!("{scope} {}", doing(f.reason, &f.layer)),
    }
}

/// A Darshan size bin's label in units: `1K-10K` → `1–10 KiB`.
fn size_class(label: &str) -> String {
    let bound = |i: usize| SIZE_BINS.get(i).map(|(hi, _)| *hi);
    let Some(i) = SIZE_BINS.iter().position(|(_, l)| *l == label) else {
        return label.to_owned();
    };
    match (i.checked_sub(1).and_then(bound), bound(i)) {
        (_, Some(u64::MAX)) | (_, None) => {
            format!("{} or more", bytes(bound(i - 1).unwrap_or(0) as f64))
        }
        (None, Some(hi)) => format!("under {}", bytes(hi as f64)),
        (Some(lo), Some(hi)) => {
            let (lo, hi) = (bytes(lo as f64), bytes(hi as f64));
            // `1–10 KiB` rather than `1 KiB–10 KiB`.
            match (lo.split_once(' '), hi.split_once(' ')) {
                (Some((n, a)), Some((_, b))) if a == b => format!("{n}–{hi}"),
                _ => format!("{lo}–{hi}"),
            }
        }
    }
}

/// A kind of call as a plural noun: `4 KiB O_DIRECT reads`, `buffered writes of 1–4 MiB`, `openat calls`.
fn kinds(k: &Kind, mean_bytes: Option<f64>) -> String {
    if k.direction().is_none() {
        return format!("calls to {}", k.op);
    }
    let mode = match k.mode.as_deref() {
        Some("direct") => "O_DIRECT ",
        Some("buffered") => "buffered ",
        _ => "",
    };
    match (mean_bytes, &k.size_class) {
        (Some(b), _) if b >= 1.0 && b.fract() == 0.0 && (b as u64).is_multiple_of(1024) => {
            format!("{} {mode}{}s", bytes(b), k.op)
        }
        (_, Some(class)) => format!("{mode}{}s of {}", k.op, size_class(class)),
        _ => format!("{mode}{}s", k.op),
    }
}

/// What a finding concerns, as a phrase: its scope and the files its calls touch ([`of_files`]; the diagnosis
/// names them for a kind of call only).
fn what(f: &Finding) -> String {
    let what = scope(&f.scope, get(f, "bytes_per_call"));
    match f.files.as_ref().and_then(of_files) {
        Some(files) => format!("{what} {files}"),
        None => what,
    }
}

/// The files a kind's calls touch, as the end of its phrase: `of /data/x` when one holds at least
/// [`ONE_FILE_SHARE`] of the calls that name a file, `of /data/x and 3 other files` when the first holds at least
/// [`TOP_FILE_SHARE`], else `of 12 files`; none when fewer than [`NAMED_SHARE`] of the calls name a file.
fn of_files(files: &Files) -> Option<String> {
    let top = files.top.first()?;
    let named = files.with_file as f64;
    if named < NAMED_SHARE * files.calls as f64 {
        return None;
    }
    let share = top.calls as f64 / named;
    let path = short_path(&top.path);
    Some(if share >= ONE_FILE_SHARE {
        format!("of {path}")
    } else if share >= TOP_FILE_SHARE {
        let others = files.distinct - 1;
        format!(
            "of {path} and {} other file{}",
            count(others as f64),
            if others == 1 { "" } else { "s" }
        )
    } else {
        format!("of {} files", count(files.distinct as f64))
    })
}

/// A path as a line shows it: whole up to [`PATH_CHARS`] characters, else `…/` and as many of its last components
/// as fit (the file's own name, whole, at least).
fn short_path(path: &str) -> Cow<'_, str> {
    if path.chars().count() <= PATH_CHARS {
        return path.into();
    }
    let trimmed = path.trim_end_matches('/');
    // A file at the root, or a relative name alone, has nothing to leave out.
    let Some(mut start) = trimmed.rfind('/').map(|i| i + 1).filter(|&s| s > 1) else {
        return path.into();
    };
    for (i, _) in trimmed[..start - 1].rmatch_indices('/') {
        if trimmed[i + 1..].chars().count() + "…/".chars().count() > PATH_CHARS {
            break;
        }
        start = i + 1;
    }
    format!("…/{}", &trimmed[start..]).into()
}

/// The files a finding's calls touch, full paths, most calls first: `Files: /data/x (68 calls), /data/y (2 calls)
/// and 5 more.`
pub fn file_list(files: &Files) -> String {
    let listed: Vec<String> = (files.top.iter())
        .map(|f| {
            let calls = if f.calls == 1 { "call" } else { "calls" };
            format!("{} ({} {calls})", f.path, count(f.calls as f64))
        })
        .collect();
    let more = files.distinct - files.top.len() as u64;
    if more == 0 {
        format!("Files: {}.", listed.join(", "))
    } else {
        format!(
            "Files: {} and {} more.",
            listed.join(", "),
            count(more as f64)
        )
    }
}

/// What a scope concerns, as a phrase.
pub fn scope(s: &Scope, mean_bytes: Option<f64>) -> String {
    match s {
        Scope::Job => "the job".into(),
        Scope::Calls(k) => kinds(k, mean_bytes),
        Scope::File { path } => path.clone(),
        Scope::Process { pid } => format!("process {pid}"),
        Scope::Thread { pid, tid } => format!("thread {tid} of process {pid}"),
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// How an evidence number reads.
#[derive(Clone, Copy)]
enum Unit {
    Ns,
    Us,
    Seconds,
    Count,
    Share,
    Bytes,
    BytesPerS,
    MibPerS,
    Plain,
}

impl Unit {
    fn format(self, v: f64) -> String {
        match self {
            Unit::Ns => duration(v),
            Unit::Us => duration(v * 1e3),
            Unit::Seconds => duration(v * 1e9),
            Unit::Count => count(v),
            Unit::Share => percent(v),
            Unit::Bytes => bytes(v),
            Unit::BytesPerS => format!("{}/s", bytes(v)),
            Unit::MibPerS => mib_per_s(v),
            Unit::Plain => plain(v),
        }
    }
}

/// The evidence a person reads first, in order: its key, its unit and its name in words.
const NUMBERS: &[(&str, Unit, &str)] = &[
    (
        "tag_wait_ns_per_call",
        Unit::Ns,
        "per call waiting for a queue slot",
    ),
    (
        "above_device_ns_per_call",
        Unit::Ns,
        "per call queued above the device",
    ),
    ("device_ns_per_call", Unit::Ns, "per call on the device"),
    ("ns_per_call", Unit::Ns, "per call in this cause"),
    ("sync_ns_median", Unit::Ns, "per sync (median)"),
    ("slowest_ns", Unit::Ns, "of I/O in the slowest"),
    ("fastest_ns", Unit::Ns, "of I/O in the fastest"),
    (
        "slowest_rank_time_s",
        Unit::Seconds,
        "of I/O in the slowest rank",
    ),
    (
        "fastest_rank_time_s",
        Unit::Seconds,
        "of I/O in the fastest rank",
    ),
    ("meta_time_s", Unit::Seconds, "in metadata calls"),
    ("mib_per_s", Unit::MibPerS, "while in the calls"),
    ("bytes_per_call", Unit::Bytes, "per call on average"),
    (
        "mean_size_bytes",
        Unit::Bytes,
        "per small request on average",
    ),
    ("calls", Unit::Count, "calls"),
    ("calls_saved", Unit::Count, "calls fewer at 1 MiB each"),
    (
        "queue_depth",
        Unit::Plain,
        "requests on the device on average",
    ),
    ("iops", Unit::Count, "device requests per second"),
    (
        "repeated_calls",
        Unit::Count,
        "metadata calls repeating an earlier one",
    ),
    ("stdio_calls", Unit::Count, "STDIO calls"),
    ("limit_read_bps", Unit::BytesPerS, "cgroup read limit"),
    ("limit_write_bps", Unit::BytesPerS, "cgroup write limit"),
    (
        "limit_read_iops",
        Unit::Count,
        "reads per second cgroup limit",
    ),
    (
        "limit_write_iops",
        Unit::Count,
        "writes per second cgroup limit",
    ),
    (
        "device_others_share",
        Unit::Share,
        "of the device's requests were other processes'",
    ),
    (
        "device_others_requests",
        Unit::Count,
        "requests by other processes",
    ),
    (
        "device_others_bytes",
        Unit::Bytes,
        "moved by other processes",
    ),
    ("cpu_quota_us", Unit::Us, "CPU quota per period"),
    ("throttled_ns", Unit::Ns, "throttled by the CPU quota"),
    ("memory_limit_bytes", Unit::Bytes, "memory limit"),
    (
        "memory_limit_hits",
        Unit::Count,
        "times at the memory limit",
    ),
    ("distinct_bytes", Unit::Bytes, "distinct bytes read"),
    ("requests", Unit::Count, "requests"),
    ("operations", Unit::Count, "operations"),
    ("mean_ns", Unit::Ns, "mean call time"),
    ("calls_per_s", Unit::Count, "calls per second"),
    ("share_of_calls_time", Unit::Share, "of the calls' time"),
    ("share_of_wall", Unit::Share, "of the job's wall-clock time"),
    ("cpu_wait_in_calls_ns", Unit::Ns, "of it inside calls"),
];

/// The most numbers a finding shows besides its time.
const MORE_NUMBERS: usize = 3;

/// A sentence, and the evidence keys it already says (not shown again among the numbers).
type Said = (String, Vec<&'static str>);

/// A finding's evidence number, when finite.
fn get(f: &Finding, key: &str) -> Option<f64> {
    f.evidence.get(key).copied().filter(|v| v.is_finite())
}

/// "90% of buffered writes (900 of 1,000) are smaller than 1 MiB."
fn share_of(kinds: &str, (n, of, share): (f64, f64, f64), said: &str) -> String {
    format!(
        "{} of {kinds} ({} of {}) {said}.",
        capital(&percent(share)),
        count(n),
        count(of)
    )
}

/// Three evidence numbers, when all are there.
fn three(f: &Finding, [a, b, c]: [&str; 3]) -> Option<(f64, f64, f64)> {
    Some((get(f, a)?, get(f, b)?, get(f, c)?))
}

/// The files of a pattern's own calls, said after its share of a direction's calls (which the files do not
/// describe): `; the small ones are of /data/x`; nothing when the phrase would name none.
fn theirs(f: &Finding, which: &str) -> String {
    f.files
        .as_ref()
        .and_then(of_files)
        .map_or_else(String::new, |files| {
            format!("; the {which} ones are {files}")
        })
}

fn small_requests(f: &Finding, what: &str) -> Option<Said> {
    if let (Some(n), Some(sh)) = (
        get(f, "small_requests_in_direction"),
        get(f, "share_of_direction_calls"),
    ) {
        let below = get(f, "threshold_bytes")
            .map_or("small".into(), |t| format!("smaller than {}", bytes(t)));
        let of = n / sh.max(f64::MIN_POSITIVE);
        let said = format!("are {below}{}", theirs(f, "small"));
        let text = share_of(what, (n, of, sh), &said);
        return Some((text, vec!["calls", "mean_size_bytes"]));
    }
    let counts = three(f, ["small_requests", "requests", "share"])?;
    Some((share_of(what, counts, "are small"), vec!["requests"]))
}

fn random_access(f: &Finding, what: &str) -> Option<Said> {
    let native = [
        "random_in_direction",
        "calls_with_offsets_in_direction",
        "random_share",
    ];
    if let Some(counts) = three(f, native) {
        let kinds = format!("{what} with known offsets");
        let said = format!(
            "do not start where the previous one ended{}",
            theirs(f, "random")
        );
        return Some((share_of(&kinds, counts, &said), vec![]));
    }
    let counts = three(f, ["random_requests", "requests", "share"])?;
    Some((
        share_of(what, counts, "are not sequential"),
        vec!["requests"],
    ))
}

fn misaligned(f: &Finding) -> Option<Said> {
    let native = ["misaligned_calls", "calls_with_offsets", "misaligned_share"];
    if let Some(counts) = three(f, native) {
        let said = "are not aligned to 4 KiB";
        return Some((share_of("the calls with offsets", counts, said), vec![]));
    }
    let counts = three(f, ["file_not_aligned", "operations", "share"])?;
    let said = "are not aligned to the file system's blocks";
    Some((share_of("the operations", counts, said), vec!["operations"]))
}

fn imbalance(f: &Finding, what: &str) -> Option<Said> {
    let (slow, mean) = (get(f, "slowest_ns")?, get(f, "mean_ns")?);
    let (n, who) = get(f, "processes")
        .map(|n| (n, "processes"))
        .or_else(|| get(f, "threads").map(|n| (n, "threads")))?;
    let text = format!(
        "{} spends {} in I/O, against {} on average over the {} {who} that ran together.",
        capital(what),
        duration(slow),
        duration(mean),
        count(n)
    );
    Some((text, vec!["slowest_ns", "mean_ns"]))
}

/// The application patterns, each from its own evidence. `what` is the scope alone: a pattern's share of a
/// direction's calls says the files of its own calls apart ([`theirs`]).
fn pattern_sentence(f: &Finding, what: &str) -> Option<Said> {
    let text = match f.reason {
        Reason::SmallRequests => return small_requests(f, what),
        Reason::RandomAccess => return random_access(f, what),
        Reason::Misaligned => return misaligned(f),
        Reason::Imbalance => return imbalance(f, what),
        Reason::FsyncHeavy => format!(
            "{} syncs after every {} writes ({} syncs).",
            capital(what),
            plain(get(f, "writes_per_sync")?),
            count(get(f, "syncs")?)
        ),
        Reason::MetadataHeavy => format!(
            "{} metadata calls take {} of the I/O time.",
            count(get(f, "metadata_calls")?),
            percent(get(f, "share_of_io_time")?)
        ),
        Reason::StdioInsteadOfPosix => format!(
            "STDIO calls move {} of the bytes.",
            percent(get(f, "share_of_bytes")?)
        ),
        Reason::Reread => format!(
            "{} of the {} read from {what} is read again.",
            capital(&percent(get(f, "reread_share")?)),
            bytes(get(f, "bytes_read")?)
        ),
        _ => return None,
    };
    Some((text, vec![]))
}

/// A finding's sentence: a pattern from its evidence; a layer's as the share of its calls' time the reason holds;
/// anything else as its time.
fn sentence(f: &Finding) -> Said {
    if let Some(said) = pattern_sentence(f, &scope(&f.scope, get(f, "bytes_per_call"))) {
        return said;
    }
    let what = what(f);
    let doing = doing(f.reason, &f.layer);
    match (get(f, "share_of_calls_time"), get(f, "calls"), &f.scope) {
        (Some(sh), Some(n), Scope::Calls(_)) => (
            format!(
                "{} ({} {}) spend {} of their time {doing}.",
                capital(&what),
                count(n),
                if n == 1.0 { "call" } else { "calls" },
                percent(sh)
            ),
            vec!["share_of_calls_time", "calls"],
        ),
        _ => (
            format!(
                "{}: {} {doing}{}, {} of the job's time.",
                capital(&what),
                duration(f.cost_ns as f64),
                match (between_calls(f), get(f, "cpu_wait_in_calls_ns")) {
                    (true, Some(_)) => " between its calls and in them",
                    (true, None) => " between its calls",
                    _ => "",
                },
                percent(f.share)
            ),
            vec![],
        ),
    }
}

/// Whether `f` is the job's wait for a CPU between its calls, which is no I/O time.
fn between_calls(f: &Finding) -> bool {
    f.gain_method.slug == crate::diagnose::between::METHOD
}

/// A finding said: its sentence, its time and share, and up to [`MORE_NUMBERS`] more numbers of its evidence.
pub fn said(f: &Finding) -> Phrase {
    let (sentence, used) = sentence(f);
    let mut numbers = vec![Number {
        value: duration(f.cost_ns as f64),
        name: format!(
            "{} ({} of the job's)",
            if between_calls(f) {
                "waiting for a CPU"
            } else {
                "of I/O time"
            },
            percent(f.share)
        ),
    }];
    numbers.extend(
        NUMBERS
            .iter()
            .filter(|(k, ..)| !used.contains(k))
            .filter_map(|(k, unit, name)| {
                let v = f
                    .evidence
                    .get(*k)
                    .copied()
                    .filter(|v| v.is_finite() && *v != 0.0)?;
                Some(Number {
                    value: unit.format(v),
                    name: (*name).to_owned(),
                })
            }),
    );
    // A number that reads as one shown before it says nothing new (the mean call time of calls all in one cause).
    let mut seen = Vec::new();
    numbers.retain(|n| {
        let new = !seen.contains(&n.value);
        seen.push(n.value.clone());
        new
    });
    numbers.truncate(1 + MORE_NUMBERS);
    Phrase { sentence, numbers }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::ledger::Gain;
    use crate::diagnose::{FileCalls, evidence};

    fn direct_reads(class: &str) -> Kind {
        Kind {
            op: "read".into(),
            mode: Some("direct".into()),
            size_class: Some(class.into()),
        }
    }

    /// The files of `calls` calls, `with_file` of them naming one of `distinct` files, the first ones with these
    /// calls.
    fn files(calls: u64, with_file: u64, distinct: u64, top: &[(&str, u64)]) -> Files {
        Files {
            calls,
            with_file,
            distinct,
            top: (top.iter())
                .map(|&(path, calls)| FileCalls {
                    path: path.into(),
                    calls,
                })
                .collect(),
        }
    }

    #[test]
    fn a_layer_finding_reads_as_its_calls_and_the_share_of_their_time() {
        let f = Finding::new(
            "block",
            Reason::QueueDepth,
            Scope::Calls(direct_reads("1K-10K")),
            7.1e9,
            10e9,
            evidence([
                ("calls", 24_576.0),
                ("share_of_calls_time", 0.71),
                ("bytes_per_call", 4096.0),
                ("tag_wait_ns_per_call", 72_786.002),
                ("mib_per_s", 12.5),
                ("mean_ns", 400_000.0),
            ]),
            Gain::wait_removed(7.1e9),
        );
        let p = said(&f);
        assert_eq!(
            p.sentence,
            "4 KiB O_DIRECT reads (24,576 calls) spend 71% of their time waiting for a free slot in the device's queue."
        );
        let numbers: Vec<String> = p.numbers.iter().map(Number::text).collect();
        assert_eq!(
            numbers,
            [
                "7.10 s of I/O time (71% of the job's)",
                "72.8 µs per call waiting for a queue slot",
                "12.5 MiB/s while in the calls",
                "4 KiB per call on average",
            ]
        );
        assert_eq!(
            cause(&f),
            "4 KiB O_DIRECT reads waiting for a free slot in the device's queue"
        );
        // Nearly all of them on one file: the phrase names it, in the sentence and in the cause.
        let on_one = Finding {
            files: Some(files(
                24_576,
                24_576,
                2,
                &[("/data/x", 24_000), ("/data/y", 576)],
            )),
            ..f
        };
        assert_eq!(
            said(&on_one).sentence,
            "4 KiB O_DIRECT reads of /data/x (24,576 calls) spend 71% of their time waiting for a free slot in the device's queue."
        );
        assert_eq!(
            cause(&on_one),
            "4 KiB O_DIRECT reads of /data/x waiting for a free slot in the device's queue"
        );
    }

    #[test]
    fn a_kind_names_one_file_the_first_of_several_or_how_many() {
        // 90% on one file is nearly all; 89% is the first of several.
        assert_eq!(
            of_files(&files(
                100,
                100,
                3,
                &[("/d/a", 90), ("/d/b", 9), ("/d/c", 1)]
            ))
            .unwrap(),
            "of /d/a"
        );
        assert_eq!(
            of_files(&files(100, 100, 4, &[("/d/a", 89), ("/d/b", 9)])).unwrap(),
            "of /d/a and 3 other files"
        );
        assert_eq!(
            of_files(&files(10, 10, 2, &[("/d/a", 5), ("/d/b", 5)])).unwrap(),
            "of /d/a and 1 other file"
        );
        // No file holds half: only how many.
        assert_eq!(
            of_files(&files(1_200, 1_200, 1_200, &[("/d/a", 1)])).unwrap(),
            "of 1,200 files"
        );
        // The shares are of the calls that name a file, and only when most of them do.
        assert_eq!(
            of_files(&files(100, 50, 1, &[("/d/a", 50)])).unwrap(),
            "of /d/a"
        );
        assert_eq!(of_files(&files(100, 49, 1, &[("/d/a", 49)])), None);
    }

    #[test]
    fn a_long_path_keeps_its_last_components() {
        let long = "/grand/projects/radix-io/usr/snyder/dlio/train/img_130_of_168.npz";
        assert_eq!(short_path(long), "…/snyder/dlio/train/img_130_of_168.npz");
        assert!(short_path(long).chars().count() <= PATH_CHARS);
        assert_eq!(short_path("/data/x"), "/data/x");
        // The file's name stays whole, however long.
        let name = "n".repeat(PATH_CHARS + 5);
        assert_eq!(short_path(&format!("/data/{name}")), format!("…/{name}"));
        assert_eq!(short_path(&format!("/{name}")), format!("/{name}"));
        assert_eq!(
            short_path(&format!("{long}/")),
            "…/snyder/dlio/train/img_130_of_168.npz"
        );
    }

    #[test]
    fn the_page_lists_the_files_in_full() {
        let long = "/grand/projects/radix-io/usr/snyder/dlio/train/img_130_of_168.npz";
        assert_eq!(
            file_list(&files(10, 10, 3, &[(long, 9), ("/d/b", 1)])),
            format!("Files: {long} (9 calls), /d/b (1 call) and 1 more.")
        );
        assert_eq!(
            file_list(&files(1, 1, 1, &[("/d/b", 1)])),
            "Files: /d/b (1 call)."
        );
    }

    #[test]
    fn a_size_class_reads_in_units_when_the_mean_is_not_whole() {
        assert_eq!(
            scope(&Scope::Calls(direct_reads("100K-1M")), Some(300_000.5)),
            "O_DIRECT reads of 100 KiB–1 MiB"
        );
        assert_eq!(
            scope(&Scope::Calls(direct_reads("1K-10K")), None),
            "O_DIRECT reads of 1–10 KiB"
        );
        assert_eq!(size_class("0-100"), "under 100 B");
        assert_eq!(size_class("1G+"), "1 GiB or more");
        assert_eq!(
            scope(&Scope::Thread { pid: 7, tid: 9 }, None),
            "thread 9 of process 7"
        );
    }

    #[test]
    fn a_pattern_reads_as_what_the_application_does() {
        let way = Kind {
            op: "write".into(),
            mode: Some("buffered".into()),
            size_class: None,
        };
        let f = Finding::new(
            "app",
            Reason::SmallRequests,
            Scope::Calls(way),
            2e6,
            10e6,
            evidence([
                ("calls", 900.0),
                ("small_requests_in_direction", 900.0),
                ("share_of_direction_calls", 0.9),
                ("mean_size_bytes", 512.0),
                ("calls_saved", 899.0),
                ("threshold_bytes", 1048576.0),
            ]),
            Gain::wait_removed(1e6),
        );
        let p = said(&f);
        assert_eq!(
            p.sentence,
            "90% of buffered writes (900 of 1,000) are smaller than 1 MiB."
        );
        assert_eq!(
            p.numbers.iter().map(Number::text).collect::<Vec<_>>(),
            [
                "2.00 ms of I/O time (20% of the job's)",
                "899 calls fewer at 1 MiB each",
            ]
        );
        assert_eq!(cause(&f), "small requests among buffered writes");
        // The files are the small writes', not the direction's.
        let on_one = Finding {
            files: Some(files(900, 900, 1, &[("/data/x", 900)])),
            ..f
        };
        assert_eq!(
            said(&on_one).sentence,
            "90% of buffered writes (900 of 1,000) are smaller than 1 MiB; the small ones are of /data/x."
        );
        assert_eq!(
            cause(&on_one),
            "small requests among buffered writes of /data/x"
        );
    }
}
