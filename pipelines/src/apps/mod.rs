//! Real applications as workloads: what a `[[workload]]` says about the programs it needs, the commands that
//! prepare and start a service, the roles of its processes and threads, and the application's own metrics.
//!
//! A run of such a workload ([`service`]) checks that every program is installed, makes a private directory
//! (`{app_dir}`) and a cgroup, runs `setup` untraced, then traces `dc-pipeline serve` ([`serve`]), which starts
//! the service and then becomes the client, so the service's whole process tree is traced; `stop` runs after
//! the trace, and whatever is left in the cgroup is killed, on success, failure or Ctrl-C alike. While it is
//! traced, the command lines of the cgroup's processes are sampled; with the threads' names in the trace they give
//! each call its role ([`roles`]), which the report groups by.

pub mod error;
pub mod metrics;
pub mod roles;
pub mod serve;
pub mod service;

use std::collections::BTreeMap;
use std::fmt;

use regex::Regex;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

/// What a workload needs besides its command; empty for a plain command.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct App {
    /// Program → the Debian package that installs it, named when the program is missing.
    pub packages: BTreeMap<String, String>,
    /// Commands run in order before the trace, untraced (create a database, load its data).
    pub setup: Vec<Vec<String>>,
    /// The service, started inside the trace before the command, so its process tree is traced.
    pub start: Option<Vec<String>>,
    /// Stops the service after the trace (and after a failure); what it leaves is killed.
    pub stop: Option<Vec<String>>,
    /// When dc-pipeline runs as root, every command of the workload runs as this user.
    pub user: Option<String>,
    /// Names of the workload's processes and threads, first match wins; unmatched threads go by their name.
    pub roles: Vec<RoleRule>,
    /// The application's own figures, read from the command's standard output and error.
    pub metrics: Vec<Metric>,
    /// The application's own tracer, which `dc-pipeline overhead` measures beside dc-trace.
    pub app_tracer: Option<AppTracer>,
}

impl App {
    /// Whether the workload runs through [`service`] (a plain command runs as it always did).
    pub fn is_app(&self) -> bool {
        *self != App::default()
    }

    /// Every command list, for the placeholder check.
    pub fn commands(&self) -> impl Iterator<Item = &Vec<String>> {
        self.setup.iter().chain(&self.start).chain(&self.stop)
    }
}

/// An application's own tracer (DLIO's DFTracer), switched by its environment: `dc-pipeline overhead` runs
/// the application with `on` and with `off`; `dc-pipeline run` leaves the environment as it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppTracer {
    pub name: String,
    pub on: BTreeMap<String, String>,
    pub off: BTreeMap<String, String>,
}

/// A role: the threads whose name (`comm`) or process command line (`cmdline`, where services such as
/// PostgreSQL write what each process does) match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleRule {
    pub role: String,
    #[serde(default)]
    pub comm: Option<Pattern>,
    #[serde(default)]
    pub cmdline: Option<Pattern>,
}

impl RoleRule {
    pub fn matches(&self, comm: &str, cmdline: &str) -> bool {
        self.comm.as_ref().is_none_or(|p| p.0.is_match(comm))
            && self.cmdline.as_ref().is_none_or(|p| p.0.is_match(cmdline))
    }
}

/// An application figure: each match of `regex` in the command's output is one value, captured by the group
/// `value` (a number, with an optional `k` or `M`), labelled by the group `label` when there is one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    pub name: String,
    #[serde(deserialize_with = "metric_regex")]
    pub regex: Pattern,
}

/// A regular expression, checked when the pipeline file is read.
#[derive(Clone, Debug)]
pub struct Pattern(pub Regex);

impl PartialEq for Pattern {
    fn eq(&self, o: &Self) -> bool {
        self.0.as_str() == o.0.as_str()
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Regex::new(&s).map(Pattern).map_err(de::Error::custom)
    }
}

fn metric_regex<'de, D: Deserializer<'de>>(d: D) -> Result<Pattern, D::Error> {
    let p = Pattern::deserialize(d)?;
    if !p.0.capture_names().any(|n| n == Some("value")) {
        return Err(de::Error::custom(format!(
            "`{}` has no `(?P<value>...)` group for the figure",
            p.0.as_str()
        )));
    }
    Ok(p)
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// The role of a thread under `rules`: the first rule it matches, else its own name.
pub fn role_of(rules: &[RoleRule], comm: &str, cmdline: &str) -> String {
    rules
        .iter()
        .find(|r| r.matches(comm, cmdline))
        .map(|r| r.role.clone())
        .unwrap_or_else(|| comm.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::pipeline::config::{Pipeline, WorkloadKind};

    #[test]
    fn the_shipped_application_pipelines_parse_with_their_services_and_roles() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        for (name, start, roles) in [
            ("fio-examples", false, 0),
            ("pgbench", true, 7),
            ("rocksdb", false, 2),
        ] {
            let p = Pipeline::load(&dir.join(format!("{name}.toml"))).unwrap();
            let w = &p.workloads[0];
            assert!(matches!(w.kind, WorkloadKind::Command { .. }), "{name}");
            assert!(w.app.is_app(), "{name}");
            assert_eq!(w.app.start.is_some(), start, "{name}");
            assert_eq!(w.app.stop.is_some(), start, "{name}");
            assert_eq!(w.app.roles.len(), roles, "{name}");
            assert!(!w.app.metrics.is_empty(), "{name}");
        }
    }

    #[test]
    fn dlio_trains_as_an_application_with_dftracer_and_reads_dlios_samples_per_second() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let p = Pipeline::load(&dir.join("dlio-unet3d.toml")).unwrap();
        let [generate, train] = &p.workloads[..] else {
            panic!("dlio-unet3d.toml has {} workloads", p.workloads.len())
        };
        assert!(!generate.app.is_app());
        let t = train.app.app_tracer.as_ref().unwrap();
        assert_eq!(t.name, "DFTracer");
        assert_eq!(t.on["DFTRACER_ENABLE"], "1");
        assert_eq!(t.off["DFTRACER_ENABLE"], "0");
        // DLIO 2.0.0's line on standard error, from a run here.
        let err = "[METRIC] Training Accelerator Utilization [AU] (%): 96.5567 (0.2152)\n[METRIC] Training Throughput (samples/second): 6.1382 (2.7321)\n[METRIC] Training I/O Throughput (MB/second): 6.1382 (2.7321)\n";
        let v = super::metrics::read(&train.app.metrics, err);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].name.as_str(), v[0].value), ("samples/s", 6.1382));
    }
}
