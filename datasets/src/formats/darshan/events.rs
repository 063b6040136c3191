//! A Darshan log as events: one metadata event for the job, one counter event per module
//! record (a profile: `ts` 0), one complete event per DXT segment.

use super::log::{DxtRecord, Log, Module};
use crate::formats::args::put;
use crate::{ArgValue, Event, Phase};

/// The `cat` of the job's metadata event and of the counter records.
pub const CAT: &str = "darshan";

fn event(name: &str, cat: &str, ph: Phase, pid: u64) -> Event {
    Event {
        pid,
        ..Event::new(name, cat, ph)
    }
}

fn list(items: impl IntoIterator<Item = String>) -> ArgValue {
    ArgValue::Json(serde_json::Value::from(items.into_iter().collect::<Vec<_>>()).to_string())
}

/// Seconds since the job started, as nanoseconds.
fn ns(seconds: f64) -> u64 {
    (seconds * 1e9).round().max(0.0) as u64
}

/// A rank as a pid: records shared by all ranks (rank -1) go to pid 0, their `rank` arg says so.
fn pid(rank: i64) -> u64 {
    u64::try_from(rank).unwrap_or(0)
}

fn job_event(log: &Log) -> Event {
    let mut e = event("darshan_job", CAT, Phase::Metadata, 0);
    let j = &log.job;
    put(&mut e, "log_version", ArgValue::Str(log.version.clone()));
    put(&mut e, "exe", ArgValue::Str(log.exe.clone()));
    for (k, v) in [
        ("uid", j.uid),
        ("jobid", j.jobid),
        ("nprocs", j.nprocs),
        ("start_time_sec", j.start_time_sec),
        ("start_time_nsec", j.start_time_nsec),
        ("end_time_sec", j.end_time_sec),
        ("end_time_nsec", j.end_time_nsec),
    ] {
        put(&mut e, k, ArgValue::Int(v));
    }
    for (k, v) in &j.metadata {
        put(&mut e, &format!("metadata.{k}"), ArgValue::Str(v.clone()));
    }
    let mounts = log
        .mounts
        .iter()
        .map(|m| format!("{}\t{}", m.fs_type, m.path));
    put(&mut e, "mounts", list(mounts));
    let partial = log.modules.iter().filter(|m| m.partial);
    put(&mut e, "partial_modules", list(partial.map(module_name)));
    let unread = log.modules.iter().filter(|m| !m.read);
    put(&mut e, "modules_not_read", list(unread.map(module_name)));
    e
}

fn module_name(m: &Module) -> String {
    m.name
        .map_or_else(|| format!("module {}", m.index), str::to_owned)
}

fn segment_events(log: &Log, r: &DxtRecord, out: &mut Vec<Event>) {
    let cat = if r.module == "DXT_POSIX" {
        "POSIX"
    } else {
        "MPIIO"
    };
    let fname = log.names.get(&r.id).cloned();
    for (op, segs) in [("write", &r.writes), ("read", &r.reads)] {
        for s in segs {
            let mut e = event(op, cat, Phase::Complete, pid(r.rank));
            e.tid = s.thread.unwrap_or(0);
            e.ts_ns = ns(s.start);
            e.dur_ns = ns(s.end).saturating_sub(e.ts_ns);
            e.args.fname = fname.clone();
            e.args.hostname = Some(r.hostname.clone());
            e.args.size = Some(s.length);
            e.args.offset = (s.offset >= 0).then_some(s.offset);
            put(&mut e, "rank", ArgValue::Int(r.rank));
            out.push(e);
        }
    }
}

/// The log's events: the job first, then the counter records in log order, then the DXT
/// segments in time order.
pub fn events(log: &Log) -> Vec<Event> {
    let mut out = vec![job_event(log)];
    for r in &log.records {
        let mut e = event(r.module, CAT, Phase::Counter, pid(r.rank));
        e.args.fname = log.names.get(&r.id).cloned();
        put(&mut e, "rank", ArgValue::Int(r.rank));
        for &(k, v) in &r.counters {
            put(&mut e, k, ArgValue::Int(v));
        }
        for &(k, v) in &r.fcounters {
            put(&mut e, k, ArgValue::Float(v));
        }
        out.push(e);
    }
    let mut segments = Vec::new();
    for r in &log.dxt {
        segment_events(log, r, &mut segments);
    }
    segments.sort_by_key(|e| (e.ts_ns, e.pid, e.tid));
    out.extend(segments);
    out
}
