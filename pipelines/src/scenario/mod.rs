//! `dc-pipeline scenario FILE`: a workload run plain (the baseline) and with one bottleneck injected (the
//! candidate), both traced, then diagnosed run against run; the file names the cause the diagnosis must find. Each
//! run's workload runs again untraced, several times, for the time the cause costs a job nobody traces.
//!
//! [`inject`] makes the change and the cgroups both runs share; [`restore`] puts everything back, even after a
//! SIGKILL. The report directory holds `runs/{baseline,candidate}/trace.pfw.gz`, dc-report's `report.html` of the
//! comparison, `data/diagnosis.json` (dc-report's JSON) and `data/scenario.json` (the verdict).

pub mod error;
pub mod inject;
pub mod restore;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use datasets::InputError;
use datasets::input::Toml;
use datasets::output::Existing;
use report::diagnose::compare::Cause;
use report::diagnose::json::Diagnosis;
use report::diagnose::patterns::APP_LAYER;
use report::diagnose::{Reason, Scope};
use report::trace_report::{self, TraceReportOptions};
use serde::{Deserialize, Serialize};

use crate::scenario::error::{Error, Result, io_at};
use crate::scenario::inject::{Disk, Inject, Injector};
use crate::scenario::restore::Journal;

/// The cause a scenario injects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub layer: String,
    pub reason: Reason,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScratchFs {
    Ext4,
}

/// A scenario file. Commands are shell scripts; `{dir}` in them is the scratch directory.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Run once, untraced, before both runs (making the files the workload reads).
    #[serde(default)]
    pub setup: Option<String>,
    /// Run untraced before each traced run (dropping a file's cached pages).
    #[serde(default)]
    pub before: Option<String>,
    /// The traced workload.
    pub workload: String,
    /// `ext4`: the scratch directory is a fresh journalled ext4 on a loop device instead of a directory of the
    /// output's file system (whose journal, if any, the scenario does not control).
    #[serde(default)]
    pub scratch: Option<ScratchFs>,
    pub inject: Inject,
    /// The cause the diagnosis must name; none for a healthy scenario (`inject.kind = "none"`).
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// In a healthy scenario, no finding that names a cause ([`Reason::is_cause`]) or an application pattern may claim
/// more than this share of the job's wall-clock time (issue 37: "no application-pattern finding above 5% of the
/// job").
pub const HEALTHY_SHARE: f64 = 0.05;

/// Whether a comparison's cause is one in a healthy scenario's sense: a cause ([`Reason::is_cause`]) or an
/// application pattern. Two runs of a healthy job may still differ by more than the comparison's noise share in what
/// any run does: the device's speed (a cold read from a disk whose host cache held more the second time), the
/// program's own computation; the comparison says so, and that names no cause.
pub fn names_a_cause(c: &Cause) -> bool {
    c.reason.is_cause() || c.reason.is_pattern()
}

/// The findings that name a cause or an application pattern claiming more than [`HEALTHY_SHARE`] of the job's
/// wall-clock time (of its I/O time for an input without one): in a healthy run, each is a false cause.
///
/// A finding over a kind of call claims the calls' time summed over every call; where calls ran together (requests in
/// flight at once, threads in calls at once) that sum exceeds the wall-clock time they took. Its claim on the job's
/// wall-clock time is its time times the job's time in calls on the wall clock over the calls' summed time, as the
/// job's `wall_in_calls_ns` shares each instant among the calls in flight then.
pub fn false_causes(d: &Diagnosis) -> Vec<Expect> {
    let wall = d.job.as_ref().and_then(|j| j.wall_ns);
    let in_calls = d.job.as_ref().map_or(1.0, |j| match j.wall_in_calls_ns {
        Some(w) if j.io_time_ns > 0 => (w as f64 / j.io_time_ns as f64).min(1.0),
        _ => 1.0,
    });
    d.findings
        .iter()
        .filter(|f| f.reason.is_cause() || f.layer == APP_LAYER)
        .filter(|f| match wall {
            Some(w) => {
                let on_wall = match f.scope {
                    Scope::Calls(_) => f.cost_ns as f64 * in_calls,
                    _ => f.cost_ns as f64,
                };
                on_wall > HEALTHY_SHARE * w as f64
            }
            None => f.share > HEALTHY_SHARE,
        })
        .map(|f| Expect {
            layer: f.layer.clone(),
            reason: f.reason,
        })
        .collect()
}

impl Scenario {
    /// Reads a scenario file; an error names the file, the line and the field.
    pub fn load(path: &Path) -> Result<Scenario, InputError> {
        let text = fs::read_to_string(path).map_err(|e| {
            InputError::new(path, None, None, format!("cannot read the scenario: {e}"))
        })?;
        let toml = Toml::new(&text, path);
        let s: Scenario = toml.parse()?;
        if let Inject::CpuQuota { cpus } = s.inject
            && !inject::quota_fits(cpus)
        {
            return Err(toml.field_error(
                "inject.cpus",
                format!(
                    "{cpus} CPUs is no quota the kernel takes: at least {} (1 ms of each 100 ms period)",
                    inject::CPUS_MIN
                ),
            ));
        }
        match (&s.inject, &s.expect) {
            (Inject::None, Some(_)) => Err(toml.field_error(
                "expect",
                "a healthy scenario (inject.kind = \"none\") injects no cause to expect: remove [expect]",
            )),
            (Inject::None, None) | (_, Some(_)) => Ok(s),
            (_, None) => Err(toml.field_error(
                "expect",
                format!(
                    "missing: the cause `{}` injects (layer and reason), or inject.kind = \"none\" for a healthy run",
                    s.inject.kind()
                ),
            )),
        }
    }

    /// The candidate's workload.
    fn candidate(&self) -> &str {
        match &self.inject {
            Inject::Workload { command } => command,
            _ => &self.workload,
        }
    }
}

pub struct ScenarioOptions {
    pub file: PathBuf,
    pub out: PathBuf,
    /// dc-pipeline itself: the guardian runs as `EXE restore JOURNAL`.
    pub exe: PathBuf,
    pub progress: bool,
    /// How many times each run's workload runs untraced ([`Untraced`]); at least 1.
    pub untraced_runs: usize,
}

/// What the diagnosis named, against what was injected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub scenario: String,
    /// None for a healthy scenario: the comparison must name no cause ([`names_a_cause`]), and no finding may name
    /// one above [`HEALTHY_SHARE`].
    pub expected: Option<Expect>,
    /// The comparison's cause, and the share of the added time it carries.
    pub cause: Option<Expect>,
    pub cause_share: Option<f64>,
    /// The candidate's first finding: the one whose fix would gain most.
    pub top_finding: Option<Expect>,
    /// A healthy scenario's findings that name a cause or an application pattern above [`HEALTHY_SHARE`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub false_causes: Vec<Expect>,
    /// For a healthy scenario: the comparison named no cause ([`names_a_cause`]).
    pub named_by_comparison: bool,
    /// For a healthy scenario: no finding names a false cause.
    pub named_by_top_finding: bool,
    /// Each run's workload again, untraced: what the cause costs a job nobody traces, against which a finding's
    /// predicted gain is checked (the tracer's cost per call is in both traced runs, and more calls pay it more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced: Option<Untraced>,
}

/// The workload's wall-clock time in each run, untraced: the median of several runs of each, since one run of a
/// job of a second moves by a tenth of a second between two runs on the same machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Untraced {
    pub baseline_ns: u64,
    pub candidate_ns: u64,
    /// Every run's time, in the order they ran.
    #[serde(default)]
    pub baseline_runs_ns: Vec<u64>,
    #[serde(default)]
    pub candidate_runs_ns: Vec<u64>,
}

/// The median of `runs` (the mean of the middle two of an even number); 0 for none.
pub fn median(runs: &[u64]) -> u64 {
    let mut v = runs.to_vec();
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

impl Untraced {
    /// The time the cause added to the job.
    pub fn change_ns(&self) -> i64 {
        self.candidate_ns as i64 - self.baseline_ns as i64
    }
}

impl Verdict {
    pub fn named(&self) -> bool {
        self.named_by_comparison && self.named_by_top_finding
    }

    fn of(s: &Scenario, d: &Diagnosis) -> Verdict {
        let cause = d.comparison.as_ref().and_then(|c| c.cause.as_ref());
        let top = d.findings.first().map(|f| Expect {
            layer: f.layer.clone(),
            reason: f.reason,
        });
        let as_expect = cause.map(|c| Expect {
            layer: c.layer.clone(),
            reason: c.reason,
        });
        let false_causes = match &s.expect {
            Some(_) => Vec::new(),
            None => false_causes(d),
        };
        let (by_comparison, by_top) = match &s.expect {
            Some(e) => (as_expect.as_ref() == Some(e), top.as_ref() == Some(e)),
            None => (!cause.is_some_and(names_a_cause), false_causes.is_empty()),
        };
        Verdict {
            scenario: s.name.clone(),
            expected: s.expect.clone(),
            named_by_comparison: by_comparison,
            named_by_top_finding: by_top,
            cause: as_expect,
            cause_share: cause.map(|c| c.share),
            top_finding: top,
            false_causes,
            untraced: None,
        }
    }

    pub fn line(&self) -> String {
        let name = |e: &Option<Expect>| {
            e.as_ref().map_or("nothing".to_owned(), |e| {
                format!("{}/{}", e.layer, e.reason.slug())
            })
        };
        let expected = match &self.expected {
            Some(e) => format!("{}/{}", e.layer, e.reason.slug()),
            None => "no cause (healthy)".to_owned(),
        };
        let false_causes = if self.false_causes.is_empty() {
            String::new()
        } else {
            let named: Vec<String> = self
                .false_causes
                .iter()
                .map(|e| format!("{}/{}", e.layer, e.reason.slug()))
                .collect();
            format!(
                "; above {:.0}% of the wall-clock time: {}",
                HEALTHY_SHARE * 100.0,
                named.join(", ")
            )
        };
        let untraced = self.untraced.as_ref().map_or(String::new(), |u| {
            format!(
                " (untraced, the cause added {:+.2} s, median of {})",
                u.change_ns() as f64 / 1e9,
                u.candidate_runs_ns.len().max(1)
            )
        });
        format!(
            "{}: expected {expected}; comparison named {}{}; top finding {}{false_causes}: {}{untraced}",
            self.scenario,
            name(&self.cause),
            self.cause_share.map_or(String::new(), |s| format!(
                " ({:.1}% of the added time)",
                s * 100.0
            )),
            name(&self.top_finding),
            match (self.named(), self.expected.is_some()) {
                (true, true) => "named",
                (false, true) => "NOT named",
                (true, false) => "healthy, as it is",
                (false, false) => "NOT healthy",
            }
        )
    }
}

fn sh(script: &str, what: &'static str) -> Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .status()
        .map_err(|source| Error::Shell { what, source })?;
    if !status.success() {
        return Err(Error::ShellFailed {
            what,
            script: script.to_string(),
            status,
        });
    }
    Ok(())
}

/// Traces `script`, started in `groups` so that the trace records the limits it runs under.
fn trace(out: &Path, script: String, groups: &[PathBuf], own_cost: bool) -> Result<()> {
    if let Some(d) = out.parent() {
        fs::create_dir_all(d).map_err(io_at("creating", d))?;
    }
    let mut opts = tracer::CollectOptions::command(out, vec!["sh".into(), "-c".into(), script]);
    opts.existing = Existing::Replace;
    opts.start_in = groups.to_vec();
    opts.own_cost = own_cost;
    let summary = tracer::collect(&opts).map_err(Error::Tracer)?;
    if summary.exit_status != Some(0) {
        return Err(Error::Workload {
            status: summary.exit_status,
            trace: out.to_path_buf(),
        });
    }
    Ok(())
}

/// Runs `script` untraced, started in `groups` as a traced run is; its wall-clock time.
fn untraced(script: String, groups: &[PathBuf]) -> Result<u64> {
    let start = Instant::now();
    let status = Command::new("sh")
        .arg("-c")
        .arg(r#"for g in "$@"; do echo $$ > "$g/cgroup.procs" || exit 126; done; exec sh -c "$0""#)
        .arg(&script)
        .args(groups)
        .status()
        .map_err(Error::Untraced)?;
    let ns = start.elapsed().as_nanos() as u64;
    if !status.success() {
        return Err(Error::UntracedFailed { script, status });
    }
    Ok(ns)
}

/// Runs a scenario; returns the verdict, also written to `data/scenario.json`.
pub fn run(o: &ScenarioOptions) -> Result<Verdict> {
    let s = Scenario::load(&o.file)?;
    restore::replay_stale()?;
    fs::create_dir_all(&o.out).map_err(io_at("creating", &o.out))?;
    let out = o.out.canonicalize().map_err(io_at("resolving", &o.out))?;
    let work = out.join("work");
    if work.exists() {
        fs::remove_dir_all(&work).map_err(io_at("removing", &work))?;
    }
    fs::create_dir_all(&work).map_err(io_at("creating", &work))?;
    let data = out.join("data");
    fs::create_dir_all(&data).map_err(io_at("creating", &data))?;
    let mut journal = Journal::start(&o.exe)?;
    let image = out.join("scratch.img");
    if s.scratch == Some(ScratchFs::Ext4) {
        inject::mount_ext4(&mut journal, &image, &work)?;
    }
    let disk = Disk::of(&work)?;
    let needs = s.inject.needs(&disk);
    if !needs.exists() {
        let text = fs::read_to_string(&o.file).map_err(io_at("reading", &o.file))?;
        return Err(Toml::new(&text, &o.file)
            .field_error(
                "inject.kind",
                format!(
                    "this kernel cannot inject `{}`: {} does not exist",
                    s.inject.kind(),
                    needs.display()
                ),
            )
            .into());
    }
    let fill = |c: &str| c.replace("{dir}", &work.display().to_string());
    if let Some(setup) = &s.setup {
        sh(&fill(setup), "setup")?;
    }
    let (base, cand) = (
        out.join("runs/baseline/trace.pfw.gz"),
        out.join("runs/candidate/trace.pfw.gz"),
    );
    let mut injector = Injector::new(journal, disk, &s.inject)?;
    let before = |s: &Scenario| s.before.as_ref().map_or(Ok(()), |b| sh(&fill(b), "before"));
    before(&s)?;
    // A CPU quota rations the tracer's own time in the job too: both runs record it, for the report to take out.
    let own_cost = matches!(s.inject, Inject::CpuQuota { .. });
    trace(&base, fill(&s.workload), &injector.groups, own_cost)?;
    let times = |script: &str, injector: &Injector| -> Result<Vec<u64>> {
        (0..o.untraced_runs.max(1))
            .map(|_| {
                before(&s)?;
                untraced(fill(script), &injector.groups)
            })
            .collect()
    };
    let baseline_runs_ns = times(&s.workload, &injector)?;
    injector.apply(&s.inject, &work)?;
    before(&s)?;
    trace(&cand, fill(s.candidate()), &injector.groups, own_cost)?;
    let candidate_runs_ns = times(s.candidate(), &injector)?;
    injector.finish()?;
    let _ = fs::remove_dir_all(&work);
    let _ = fs::remove_file(&image);

    let json = out.join("data/diagnosis.json");
    trace_report::write(&TraceReportOptions {
        traces: vec![cand],
        read: Default::default(),
        output: out.join("report.html"),
        existing: Existing::Replace,
        baseline: vec![base],
        json: Some(json.clone()),
        summaries: Vec::new(),
        progress: o.progress,
    })
    .map_err(Error::Report)?;
    let text = fs::read_to_string(&json).map_err(io_at("reading", &json))?;
    let d: Diagnosis = serde_json::from_str(&text).map_err(|source| Error::Decode {
        path: json.clone(),
        source,
    })?;
    let v = Verdict {
        untraced: Some(Untraced {
            baseline_ns: median(&baseline_runs_ns),
            candidate_ns: median(&candidate_runs_ns),
            baseline_runs_ns,
            candidate_runs_ns,
        }),
        ..Verdict::of(&s, &d)
    };
    let verdict = out.join("data/scenario.json");
    let text = serde_json::to_string_pretty(&v).map_err(|source| Error::Encode {
        what: "the verdict",
        source,
    })?;
    fs::write(&verdict, text + "\n").map_err(io_at("writing", &verdict))?;
    Ok(v)
}

/// `dc-pipeline scenario`: runs it, prints the report's path and the verdict; exit 1 when the cause was not named.
pub fn main(
    file: PathBuf,
    out: PathBuf,
    progress: bool,
    untraced_runs: usize,
) -> std::process::ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("dc-pipeline: cannot find its own executable: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match run(&ScenarioOptions {
        file,
        out: out.clone(),
        exe,
        progress,
        untraced_runs,
    }) {
        Ok(v) => {
            println!("{}", out.join("report.html").display());
            println!("{}", v.line());
            if v.named() {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("dc-pipeline scenario: {}", datasets::error::chain(&e));
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_odd_or_even_number_of_runs() {
        assert_eq!(median(&[30, 10, 20]), 20);
        assert_eq!(median(&[40, 10, 30, 20]), 25);
        assert_eq!(median(&[7]), 7);
        assert_eq!(median(&[]), 0);
    }

    /// A healthy fio run (held-out round thirteen): 32 direct reads in flight through libaio, so the reads' time summed
    /// is 8 times the job's wall-clock time, and 31 times its time in calls.
    fn fio_libaio(scope: &str, wall_in_calls_ns: u64) -> Diagnosis {
        let finding = format!(
            r#"{{"layer": "sched", "reason": "cpu_contention", "scope": {scope}, "cost_ns": 581672149,
                "share": 0.166, "gain_ns": 18127663, "gain_method": {{"slug": "job_wait_kept", "how": "-"}},
                "evidence": {{}}, "recommendation": "-"}}"#
        );
        serde_json::from_str(&format!(
            r#"{{"inputs": ["candidate"], "share_of": "job_time", "findings": [{finding}],
                "job": {{"io_time_ns": 3506905679, "wall_ns": 438992455, "wall_in_calls_ns": {wall_in_calls_ns}}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_false_cause_over_calls_in_flight_together_claims_their_share_of_the_wall_clock() {
        let calls = r#"{"kind": "calls", "op": "read", "mode": "direct", "size_class": "1K-10K"}"#;
        // 581.7 ms of the reads' time × 114.3 / 3,506.9 = 19.0 ms, 4.3% of the job's 439.0 ms: under 5%.
        assert_eq!(false_causes(&fio_libaio(calls, 114266650)), []);
        // The same time in calls that never overlapped is 132% of the job.
        let serial = false_causes(&fio_libaio(calls, 3506905679));
        assert_eq!(
            serial,
            [Expect {
                layer: "sched".into(),
                reason: Reason::CpuContention
            }]
        );
        // A finding over the whole job claims its time on the wall clock as it is.
        assert_eq!(
            false_causes(&fio_libaio(r#"{"kind": "job"}"#, 114266650)),
            serial
        );
    }
}
