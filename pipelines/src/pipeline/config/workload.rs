//! One `[[workload]]`: the built-in benchmark or a command, and the values it is swept over.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use report::size::ByteSize;
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::apps::{App, AppTracer, Metric, RoleRule};
use crate::bench::iobench::{Call, IoBenchOptions, Op};

/// One workload: the built-in benchmark or a command, with the values it is swept over.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawWorkload")]
pub struct Workload {
    pub name: String,
    pub kind: WorkloadKind,
    /// Runs of every sweep point (for the benchmark, iterations happen inside one run instead).
    pub repeat: u32,
    /// The programs, service and roles of a real application (`crate::apps`); empty for a plain command.
    pub app: App,
}

#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadKind {
    IoBench(IoBenchSweep),
    /// Arguments with `{name}` placeholders, filled from `sweep` and from `{pipeline_dir}` (the pipeline
    /// file's folder), `{work_dir}` (scratch space, removed after tracing) and `{run_dir}` (the run's folder).
    Command {
        command: Vec<String>,
        sweep: BTreeMap<String, Vec<String>>,
    },
}

/// The benchmark's options; `op`, `call`, `direct`, `buffer_size` and `fsync` take one value or a list to sweep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoBenchSweep {
    #[serde(deserialize_with = "one_or_many")]
    pub op: Vec<Op>,
    #[serde(default = "plain", deserialize_with = "one_or_many")]
    pub call: Vec<Call>,
    #[serde(default = "single_false", deserialize_with = "one_or_many")]
    pub direct: Vec<bool>,
    #[serde(deserialize_with = "one_or_many")]
    pub buffer_size: Vec<ByteSize>,
    pub total_size: ByteSize,
    #[serde(default = "single_false", deserialize_with = "one_or_many")]
    pub fsync: Vec<bool>,
    #[serde(default = "one")]
    pub iterations: u32,
    #[serde(default)]
    pub drop_caches: bool,
}

fn plain() -> Vec<Call> {
    vec![Call::Plain]
}
fn single_false() -> Vec<bool> {
    vec![false]
}
fn one() -> u32 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: String,
    #[serde(default)]
    iobench: Option<IoBenchSweep>,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default, deserialize_with = "sweep_table")]
    sweep: BTreeMap<String, Vec<String>>,
    #[serde(default = "one")]
    repeat: u32,
    #[serde(default)]
    packages: BTreeMap<String, String>,
    #[serde(default)]
    setup: Vec<Vec<String>>,
    #[serde(default)]
    start: Option<Vec<String>>,
    #[serde(default)]
    stop: Option<Vec<String>>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    roles: Vec<RoleRule>,
    #[serde(default)]
    metrics: Vec<Metric>,
    #[serde(default)]
    app_tracer: Option<AppTracer>,
}

impl TryFrom<RawWorkload> for Workload {
    type Error = String;

    fn try_from(raw: RawWorkload) -> Result<Self, String> {
        let name = raw.name;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "workload name `{name}` must be non-empty ASCII letters, digits, `-` or `_`"
            ));
        }
        if raw.repeat == 0 {
            return Err(format!("workload `{name}`: repeat must be at least 1"));
        }
        let app = App {
            packages: raw.packages,
            setup: raw.setup,
            start: raw.start,
            stop: raw.stop,
            user: raw.user,
            roles: raw.roles,
            metrics: raw.metrics,
            app_tracer: raw.app_tracer,
        };
        check_app(&name, &app)?;
        let kind = match (raw.iobench, raw.command) {
            (Some(b), None) => {
                if app.is_app() {
                    return Err(format!(
                        "workload `{name}`: `setup`, `start`, `stop`, `user`, `packages`, `roles`, `metrics` and `app_tracer` are for a `command`"
                    ));
                }
                if !raw.sweep.is_empty() {
                    return Err(format!(
                        "workload `{name}`: `sweep` is for commands; list values in `iobench` instead"
                    ));
                }
                b.check().map_err(|e| format!("workload `{name}`: {e}"))?;
                WorkloadKind::IoBench(b)
            }
            (None, Some(command)) => {
                if command.is_empty() || command[0].is_empty() {
                    return Err(format!("workload `{name}`: command must name a program"));
                }
                let builtin: &[&str] = if app.is_app() {
                    &APP_PLACEHOLDERS
                } else {
                    &BUILTIN_PLACEHOLDERS
                };
                for arg in std::iter::once(&command).chain(app.commands()).flatten() {
                    for key in placeholders(arg) {
                        if !raw.sweep.contains_key(key) && !builtin.contains(&key) {
                            return Err(format!(
                                "workload `{name}`: placeholder `{{{key}}}` is neither in `sweep` nor one of {}",
                                builtin
                                    .iter()
                                    .map(|p| format!("{{{p}}}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ));
                        }
                    }
                }
                WorkloadKind::Command {
                    command,
                    sweep: raw.sweep,
                }
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "workload `{name}` has both `iobench` and `command`; give one"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "workload `{name}` needs an `iobench` table or a `command` list"
                ));
            }
        };
        Ok(Workload {
            name,
            kind,
            repeat: raw.repeat,
            app,
        })
    }
}

fn check_app(name: &str, app: &App) -> Result<(), String> {
    for (field, c) in app
        .setup
        .iter()
        .map(|c| ("setup", c))
        .chain(app.start.iter().map(|c| ("start", c)))
        .chain(app.stop.iter().map(|c| ("stop", c)))
    {
        if c.first().is_none_or(|p| p.is_empty()) {
            return Err(format!(
                "workload `{name}`: every `{field}` command must name a program"
            ));
        }
    }
    if app.stop.is_some() && app.start.is_none() {
        return Err(format!(
            "workload `{name}`: `stop` stops what `start` started; give `start` too"
        ));
    }
    if app.user.as_deref() == Some("") {
        return Err(format!("workload `{name}`: `user` is empty"));
    }
    if let Some(r) = app
        .roles
        .iter()
        .find(|r| r.comm.is_none() && r.cmdline.is_none())
    {
        return Err(format!(
            "workload `{name}`: role `{}` needs a `comm` or a `cmdline` pattern",
            r.role
        ));
    }
    Ok(())
}

/// Placeholders every command may use besides its sweep keys.
const BUILTIN_PLACEHOLDERS: [&str; 3] = ["pipeline_dir", "work_dir", "run_dir"];
/// An application's commands may also use its private directory, made for each run.
const APP_PLACEHOLDERS: [&str; 4] = ["pipeline_dir", "work_dir", "run_dir", "app_dir"];

/// The `{name}` placeholders in `arg`.
fn placeholders(arg: &str) -> impl Iterator<Item = &str> {
    arg.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(k, _)| k))
}

impl IoBenchSweep {
    fn check(&self) -> Result<(), String> {
        for (field, empty) in [
            ("op", self.op.is_empty()),
            ("call", self.call.is_empty()),
            ("direct", self.direct.is_empty()),
            ("buffer_size", self.buffer_size.is_empty()),
            ("fsync", self.fsync.is_empty()),
        ] {
            if empty {
                return Err(format!("`iobench.{field}` lists no value"));
            }
        }
        for &direct in &self.direct {
            for b in &self.buffer_size {
                let mut o = IoBenchOptions::new(PathBuf::new(), Op::Read, self.total_size.0, b.0);
                o.direct = direct;
                o.iterations = self.iterations;
                o.check()?;
            }
        }
        Ok(())
    }
}

fn one_or_many<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a value or a list of values")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(v) = seq.next_element()? {
                out.push(v);
            }
            Ok(out)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<T>, E> {
            T::deserialize(de::value::StrDeserializer::<E>::new(v)).map(|t| vec![t])
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<T>, E> {
            T::deserialize(de::value::I64Deserializer::<E>::new(v)).map(|t| vec![t])
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<T>, E> {
            T::deserialize(de::value::U64Deserializer::<E>::new(v)).map(|t| vec![t])
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Vec<T>, E> {
            T::deserialize(de::value::BoolDeserializer::<E>::new(v)).map(|t| vec![t])
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// Sweep values may be strings or integers; commands see them as text.
fn sweep_table<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Int(i64),
        Text(String),
    }
    let table: BTreeMap<String, Vec<Scalar>> = BTreeMap::deserialize(d)?;
    let mut out = BTreeMap::new();
    for (k, vs) in table {
        if vs.is_empty() {
            return Err(de::Error::custom(format!("sweep `{k}` lists no value")));
        }
        out.insert(
            k,
            vs.into_iter()
                .map(|v| match v {
                    Scalar::Int(i) => i.to_string(),
                    Scalar::Text(s) => s,
                })
                .collect(),
        );
    }
    Ok(out)
}
