//! The pipeline file: workloads to trace, and the tracer, feature and model options.
//!
//! Every error names the file, the line and the field (`workload[1].iobench.buffer_size[2]`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::iobench::{IoBenchOptions, Op};
use crate::size::ByteSize;

#[derive(Debug, thiserror::Error)]
pub struct PipelineError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tracer: TracerSection,
    #[serde(default)]
    pub features: FeaturesSection,
    #[serde(default)]
    pub model: ModelSection,
    #[serde(rename = "workload")]
    pub workloads: Vec<Workload>,
}

/// What `tracer::collect` is asked for; every value is checked against the tracer's own parsers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracerSection {
    #[serde(default)]
    pub mode: TraceMode,
    /// The aggregation interval of profile mode (`100ms`, `1s`).
    #[serde(default, deserialize_with = "duration")]
    pub interval: Option<String>,
    /// Stop tracing a run after this long (`30s`); the command runs to its end when absent.
    #[serde(default, deserialize_with = "duration")]
    pub duration: Option<String>,
    /// Layer names (`sys`, `block`, ...); empty means every layer.
    #[serde(default, deserialize_with = "layers")]
    pub layers: Vec<String>,
    /// `PATH:REGEX` of user functions to trace.
    #[serde(default, deserialize_with = "uprobes")]
    pub uprobes: Vec<String>,
    #[serde(default)]
    pub kernel_probes: KernelProbes,
    /// Kernel functions by name or regex; empty means the tracer's default list.
    #[serde(default)]
    pub kernel_functions: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceMode {
    #[default]
    Trace,
    Profile,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelProbes {
    #[default]
    Auto,
    Fentry,
    Kprobe,
    Off,
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    tracer::options::parse_duration(&s).map_err(de::Error::custom)?;
    Ok(Some(s))
}

fn layers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for l in &v {
        l.parse::<tracer::Layer>().map_err(de::Error::custom)?;
    }
    Ok(v)
}

fn uprobes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for u in &v {
        tracer::UprobeSpec::parse(u).map_err(de::Error::custom)?;
    }
    Ok(v)
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeaturesSection {
    /// System call names that become rows; empty keeps the features crate's default list.
    #[serde(default)]
    pub ops: Vec<String>,
    /// Keep only rows whose file name matches this regular expression.
    #[serde(default, deserialize_with = "regex_string")]
    pub file_regex: Option<String>,
    #[serde(default)]
    pub counts: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Importance {
    Shap,
    Gain,
    Permutation,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// `bandwidth`, `duration`, `size`, or a feature column.
    #[serde(default = "default_target")]
    pub target: String,
    #[serde(default = "default_cumulative", deserialize_with = "fraction")]
    pub cumulative: f64,
    #[serde(default = "default_importance")]
    pub importance: Importance,
    #[serde(default = "default_folds")]
    pub folds: usize,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "default_test_fraction", deserialize_with = "fraction")]
    pub test_fraction: f64,
    /// Layers to rank; empty means every layer.
    #[serde(default)]
    pub layers: Vec<String>,
    /// Leave out feature columns that are constant over the rows (features a layer never saw there).
    #[serde(default = "yes")]
    pub drop_constant: bool,
}

fn default_target() -> String {
    "bandwidth".into()
}
fn default_cumulative() -> f64 {
    0.95
}
fn default_importance() -> Importance {
    Importance::Shap
}
fn default_folds() -> usize {
    5
}
fn yes() -> bool {
    true
}
fn default_test_fraction() -> f64 {
    0.2
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            target: default_target(),
            cumulative: default_cumulative(),
            importance: default_importance(),
            folds: default_folds(),
            seed: 0,
            test_fraction: default_test_fraction(),
            layers: Vec::new(),
            drop_constant: true,
        }
    }
}

/// One workload: the built-in benchmark or a command, with the values it is swept over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawWorkload", into = "RawWorkload")]
pub struct Workload {
    pub name: String,
    pub kind: WorkloadKind,
    /// Runs of every sweep point (for the benchmark, iterations happen inside one run instead).
    pub repeat: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorkloadKind {
    IoBench(IoBenchSweep),
    /// Arguments with `{name}` placeholders, filled from `sweep` and from `{pipeline_dir}` (the pipeline
    /// file's folder), `{work_dir}` (scratch space, removed after tracing) and `{run_dir}` (the run's folder).
    Command {
        command: Vec<String>,
        sweep: BTreeMap<String, Vec<String>>,
    },
}

/// The benchmark's options; `op`, `direct`, `buffer_size` and `fsync` take one value or a list to sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoBenchSweep {
    #[serde(deserialize_with = "one_or_many")]
    pub op: Vec<Op>,
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

fn single_false() -> Vec<bool> {
    vec![false]
}
fn one() -> u32 {
    1
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iobench: Option<IoBenchSweep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "sweep_table"
    )]
    sweep: BTreeMap<String, Vec<String>>,
    #[serde(default = "one")]
    repeat: u32,
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
        let kind = match (raw.iobench, raw.command) {
            (Some(b), None) => {
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
                for arg in &command {
                    for key in placeholders(arg) {
                        if !raw.sweep.contains_key(key) && !BUILTIN_PLACEHOLDERS.contains(&key) {
                            return Err(format!(
                                "workload `{name}`: placeholder `{{{key}}}` is neither in `sweep` nor one of {}",
                                BUILTIN_PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
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
        })
    }
}

impl From<Workload> for RawWorkload {
    fn from(w: Workload) -> Self {
        let (iobench, command, sweep) = match w.kind {
            WorkloadKind::IoBench(b) => (Some(b), None, BTreeMap::new()),
            WorkloadKind::Command { command, sweep } => (None, Some(command), sweep),
        };
        RawWorkload {
            name: w.name,
            iobench,
            command,
            sweep,
            repeat: w.repeat,
        }
    }
}

/// Placeholders every command may use besides its sweep keys.
pub const BUILTIN_PLACEHOLDERS: [&str; 3] = ["pipeline_dir", "work_dir", "run_dir"];

/// The `{name}` placeholders in `arg`.
pub fn placeholders(arg: &str) -> impl Iterator<Item = &str> {
    arg.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(k, _)| k))
}

impl IoBenchSweep {
    fn check(&self) -> Result<(), String> {
        for (field, empty) in [
            ("op", self.op.is_empty()),
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

fn regex_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    regex::Regex::new(&s)
        .map_err(|e| de::Error::custom(format!("invalid regular expression: {e}")))?;
    Ok(Some(s))
}

fn fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v > 0.0 && v < 1.0 || v == 1.0 {
        Ok(v)
    } else {
        Err(de::Error::custom(format!("{v} is not in (0, 1]")))
    }
}

impl Pipeline {
    pub fn load(path: &Path) -> Result<Self, PipelineError> {
        let text = std::fs::read_to_string(path).map_err(|e| PipelineError {
            file: path.to_owned(),
            line: None,
            field: None,
            message: format!("cannot read the pipeline file: {e}"),
        })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self, PipelineError> {
        let de = toml::Deserializer::parse(text).map_err(|e| error_at(text, path, None, &e))?;
        let p: Pipeline = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            error_at(text, path, (field != ".").then_some(field), e.inner())
        })?;
        if p.workloads.is_empty() {
            return Err(PipelineError {
                file: path.to_owned(),
                line: None,
                field: Some("workload".into()),
                message: "the pipeline has no [[workload]]".into(),
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, w) in p.workloads.iter().enumerate() {
            if !seen.insert(&w.name) {
                return Err(PipelineError {
                    file: path.to_owned(),
                    line: line_of_nth(text, "[[workload]]", i),
                    field: Some(format!("workload[{i}].name")),
                    message: format!("workload name `{}` is used twice", w.name),
                });
            }
        }
        Ok(p)
    }
}

fn error_at(text: &str, path: &Path, field: Option<String>, e: &toml::de::Error) -> PipelineError {
    PipelineError {
        file: path.to_owned(),
        line: e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1),
        field,
        message: e.message().trim().to_string(),
    }
}

fn line_of_nth(text: &str, header: &str, n: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(header))
        .nth(n)
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Pipeline::parse(text, Path::new("p.toml"))
            .unwrap_err()
            .to_string()
    }

    const BENCH: &str = "name = \"t\"\n[[workload]]\nname = \"b\"\n[workload.iobench]\nop = [\"read\", \"write\"]\nbuffer_size = [\"4KiB\", 65536]\ntotal_size = \"1MiB\"\ndirect = [false, true]\n";

    #[test]
    fn parses_a_benchmark_sweep() {
        let p = Pipeline::parse(BENCH, Path::new("p.toml")).unwrap();
        assert_eq!(p.model, ModelSection::default());
        let WorkloadKind::IoBench(b) = &p.workloads[0].kind else {
            panic!("not a benchmark")
        };
        assert_eq!(b.op, vec![Op::Read, Op::Write]);
        assert_eq!(b.buffer_size, vec![ByteSize(4096), ByteSize(65536)]);
        assert_eq!(b.fsync, vec![false]);
        assert_eq!(b.iterations, 1);
    }

    #[test]
    fn scalar_stands_for_a_one_value_sweep() {
        let p = Pipeline::parse(
            &BENCH.replace("[\"read\", \"write\"]", "\"write\""),
            Path::new("p.toml"),
        )
        .unwrap();
        let WorkloadKind::IoBench(b) = &p.workloads[0].kind else {
            panic!("not a benchmark")
        };
        assert_eq!(b.op, vec![Op::Write]);
    }

    #[test]
    fn bad_size_names_file_line_and_field() {
        assert_eq!(
            err(&BENCH.replace("65536", "\"64KQ\"")),
            "p.toml:6: field `workload[0].iobench.buffer_size[1]`: invalid size `64KQ`: write bytes as a number with an optional suffix K, KiB, M, MiB, G or GiB"
        );
    }

    #[test]
    fn tracer_values_use_the_tracer_parsers() {
        assert_eq!(
            err(&format!("{BENCH}[tracer]\nlayers = [\"sys\", \"disk\"]\n")),
            "p.toml:10: field `tracer.layers`: unknown layer `disk` (layers: sys, libc, app, block, page_cache, fs, writeback, sched, irq, lock, mm, iomap, jbd2, kernel)"
        );
        assert_eq!(
            err(&format!("{BENCH}[tracer]\nduration = \"2x\"\n")),
            "p.toml:10: field `tracer.duration`: duration `2x`: unknown unit `x` (ns, us, ms, s, m)"
        );
    }

    #[test]
    fn unknown_field_and_bad_enum() {
        assert!(
            err(&BENCH.replace("direct =", "drect ="))
                .starts_with("p.toml:8: field `workload[0].iobench.drect`: unknown field `drect`")
        );
        assert!(
            err(&BENCH.replace("\"write\"", "\"wirte\"")).starts_with(
                "p.toml:5: field `workload[0].iobench.op[1]`: unknown variant `wirte`"
            )
        );
    }

    #[test]
    fn unaligned_direct_buffer_is_rejected_at_the_workload() {
        assert_eq!(
            err(&BENCH.replace("65536", "1000")),
            "p.toml:2: field `workload[0]`: workload `b`: direct I/O needs the buffer size to be a multiple of 4KiB, not 1000B"
        );
    }

    #[test]
    fn syntax_error_has_a_line() {
        assert!(err("name = \"t\"\n\n[[workload]\n").starts_with("p.toml:3: "));
    }

    #[test]
    fn command_placeholders_must_be_known() {
        let text = "name = \"t\"\n[[workload]]\nname = \"c\"\ncommand = [\"dd\", \"bs={bs}\", \"of={work_dir}/x\"]\n[workload.sweep]\nbs = [\"4k\", 8192]\n";
        let p = Pipeline::parse(text, Path::new("p.toml")).unwrap();
        let WorkloadKind::Command { sweep, .. } = &p.workloads[0].kind else {
            panic!("not a command")
        };
        assert_eq!(sweep["bs"], vec!["4k".to_string(), "8192".to_string()]);
        assert_eq!(
            err(&text.replace("bs = ", "size = ")),
            "p.toml:2: field `workload[0]`: workload `c`: placeholder `{bs}` is neither in `sweep` nor one of {pipeline_dir}, {work_dir}, {run_dir}"
        );
    }

    #[test]
    fn model_fraction_and_duplicate_names() {
        assert_eq!(
            err(&format!("{BENCH}[model]\ncumulative = 1.5\n")),
            "p.toml:10: field `model.cumulative`: 1.5 is not in (0, 1]"
        );
        let twice = format!("{BENCH}{}", &BENCH[11..]);
        assert_eq!(
            err(&twice),
            "p.toml:9: field `workload[1].name`: workload name `b` is used twice"
        );
    }

    #[test]
    fn missing_file_is_named() {
        let e = Pipeline::load(Path::new("/nonexistent/p.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/nonexistent/p.toml: cannot read the pipeline file"),
            "{e}"
        );
    }
}
