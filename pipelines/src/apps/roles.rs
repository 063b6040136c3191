//! Who does the I/O: each call's role, from its thread's name when the call started (the trace's `thread_name`
//! metadata, the features' `thread` column) and its process's command line, which services such as PostgreSQL
//! rewrite to say what a process does ("postgres: walwriter") and which no trace event carries: that alone is
//! sampled from the cgroup while the run is traced. And the report's table of calls by role and by what they were on.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use features::FeatureMatrix;
use report::trace_report::breakdown::Breakdown;
use serde::{Deserialize, Serialize};

use super::{RoleRule, role_of};
use crate::pipeline::records::RunRecord;

/// How often the cgroup's processes are listed: a process that lives less than this may go without its command line.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// The role of a call whose thread the trace never named and that no rule matched.
const UNNAMED: &str = "unnamed";

/// One process of a run, as `runs/<id>/processes.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: u64,
    /// The process's command line as last seen.
    pub cmdline: String,
}

/// Lists the cgroup's processes until [`Sampler::finish`].
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<BTreeMap<u64, ProcessInfo>>>,
}

impl Sampler {
    pub fn start(cgroup: PathBuf) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut seen = BTreeMap::new();
            while !flag.load(Ordering::Relaxed) {
                for pid in tracer::procfs::cgroup_pids(&cgroup).unwrap_or_default() {
                    sample(pid, &mut seen);
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            seen
        });
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) -> Vec<ProcessInfo> {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take().expect("joined once");
        handle.join().unwrap_or_default().into_values().collect()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn sample(pid: u32, seen: &mut BTreeMap<u64, ProcessInfo>) {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return;
    };
    let cmdline = String::from_utf8_lossy(&cmdline)
        .replace('\0', " ")
        .trim()
        .to_string();
    let pid = u64::from(pid);
    // A process forked by a service shows its parent's command line until it sets its own; the last one seen is
    // the one it worked under.
    if !cmdline.is_empty() || !seen.contains_key(&pid) {
        seen.insert(pid, ProcessInfo { pid, cmdline });
    }
}

/// What a call was on, so that socket and pipe traffic is kept apart from file I/O. "no file" is an fd the
/// tracer did not see made (a signalfd, an eventfd, a socket from `socket`/`accept`).
pub fn target_kind(file: Option<&str>) -> &'static str {
    match file {
        None => "no file",
        Some(f) if f.starts_with("socket:") => "socket",
        Some(f) if f.starts_with("pipe:") => "pipe",
        Some(f) if f.starts_with("anon_inode:") => "other",
        Some(f) if f.starts_with("/dev/") => "device",
        Some(_) => "file",
    }
}

/// Each row's role: `None` for a row of a run that is not a real application's; else the first of its workload's
/// `rules` that its thread's name (the `thread` column) and its process's sampled command line match, else the
/// thread's name.
pub fn roles(
    out: &Path,
    runs: &[RunRecord],
    rules: &BTreeMap<String, Vec<RoleRule>>,
    matrix: &FeatureMatrix,
) -> Vec<Option<String>> {
    let mut cmdlines: HashMap<(&str, u64), String> = HashMap::new();
    let mut app_runs: HashMap<&str, &[RoleRule]> = HashMap::new();
    for r in runs {
        let file = out.join("runs").join(&r.spec.id).join("processes.json");
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let Ok(processes) = serde_json::from_str::<Vec<ProcessInfo>>(&text) else {
            continue;
        };
        let rules = rules.get(&r.spec.workload).map_or(&[][..], Vec::as_slice);
        app_runs.insert(&r.spec.id, rules);
        cmdlines.extend(
            processes
                .into_iter()
                .map(|p| ((r.spec.id.as_str(), p.pid), p.cmdline)),
        );
    }
    (0..matrix.n_rows())
        .map(|row| {
            let run = matrix.run[row].as_deref()?;
            let rules = app_runs.get(run)?;
            let comm = matrix.thread[row].as_deref();
            let cmdline = cmdlines
                .get(&(run, matrix.pid[row]))
                .map_or("", String::as_str);
            let role = role_of(rules, comm.unwrap_or_default(), cmdline);
            Some(if role.is_empty() {
                UNNAMED.into()
            } else {
                role
            })
        })
        .collect()
}

/// Totals of one role on one kind of target.
#[derive(Default)]
struct Totals {
    on: &'static str,
    pids: BTreeSet<u64>,
    tids: BTreeSet<u64>,
    bytes: i64,
}

/// One line of the "Who does the I/O" table: the calls of one role on one kind of target.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleRow {
    pub role: String,
    pub on: &'static str,
    pub processes: usize,
    pub threads: usize,
    pub calls: u64,
    pub bytes: i64,
    pub time_ms: f64,
    pub mean_us: f64,
    /// The three layers that hold most of the calls' time, with their shares (`block 65%`).
    pub where_time_goes: String,
}

/// The table's rows, most time first, of the rows that have a role ([`roles`]); empty when none has.
pub fn table(matrix: &FeatureMatrix, roles: &[Option<String>]) -> Vec<RoleRow> {
    let key = |row: usize| -> Option<(&str, &'static str)> {
        let role = roles[row].as_deref()?;
        Some((role, target_kind(matrix.file[row].as_deref())))
    };
    let b = Breakdown::of(matrix, |row| {
        let (role, on) = key(row)?;
        Some(format!("{role}\0{on}"))
    });
    let mut totals: HashMap<String, Totals> = HashMap::new();
    for row in 0..matrix.n_rows() {
        let Some((role, on)) = key(row) else {
            continue;
        };
        let t = totals
            .entry(format!("{role}\0{on}"))
            .or_insert_with(|| Totals {
                on,
                ..Totals::default()
            });
        t.pids.insert(matrix.pid[row]);
        t.tids.insert(matrix.tid[row]);
        t.bytes += matrix.size[row].unwrap_or(0).max(0);
    }
    let mut rows: Vec<RoleRow> = b
        .groups
        .iter()
        .map(|g| {
            let t = &totals[&g.label];
            let mut shares: Vec<(f64, &str)> = g
                .mean_ns
                .iter()
                .zip(&b.layers)
                .map(|(v, l)| (*v / g.mean_dur_ns.max(1.0), l.as_str()))
                .filter(|(v, _)| *v >= 0.005)
                .collect();
            shares.sort_by(|x, y| y.0.total_cmp(&x.0));
            let role = g.label.split('\0').next().unwrap_or_default();
            RoleRow {
                role: role.to_string(),
                on: t.on,
                processes: t.pids.len(),
                threads: t.tids.len(),
                calls: g.calls,
                bytes: t.bytes,
                time_ms: g.mean_dur_ns * g.calls as f64 / 1e6,
                mean_us: g.mean_dur_ns / 1e3,
                where_time_goes: shares
                    .iter()
                    .take(3)
                    .map(|(v, l)| format!("{l} {:.0}%", v * 100.0))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })
        .collect();
    rows.sort_by(|x, y| y.time_ms.total_cmp(&x.time_ms));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::Pattern;

    #[test]
    fn calls_on_sockets_and_pipes_are_kept_apart_from_files() {
        assert_eq!(target_kind(Some("/tmp/x/base/1/2")), "file");
        assert_eq!(target_kind(Some("socket:[1234]")), "socket");
        assert_eq!(target_kind(Some("pipe:[99]")), "pipe");
        assert_eq!(target_kind(None), "no file");
    }

    #[test]
    fn the_first_matching_rule_names_a_thread_else_its_own_name() {
        let rule = |role: &str, cmdline: &str| RoleRule {
            role: role.into(),
            comm: None,
            cmdline: Some(Pattern(regex::Regex::new(cmdline).unwrap())),
        };
        let rules = [
            rule("walwriter", "^postgres: walwriter"),
            rule("backend", r"^postgres: \S+ \S+ \[local\]"),
        ];
        assert_eq!(
            role_of(&rules, "postgres", "postgres: walwriter "),
            "walwriter"
        );
        assert_eq!(
            role_of(
                &rules,
                "postgres",
                "postgres: postgres pgbench [local] UPDATE"
            ),
            "backend"
        );
        assert_eq!(role_of(&rules, "rocksdb:low", "db_bench"), "rocksdb:low");
    }
}
