//! The pipeline file: workloads to trace, and the tracer, feature and model options.
//!
//! Every error is a [`datasets::InputError`]: it names the file, the line and the field
//! (`workload[1].iobench.buffer_size[2]`).

use std::path::Path;

use datasets::InputError;
use datasets::input::Toml;
use features::BuildOptions;
use models::RankOptions;
use serde::Deserialize;
use tracer::options::TracerOptions;

mod workload;

pub use workload::{IoBenchSweep, Workload, WorkloadKind};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `dc-trace collect`'s options, files relative to the pipeline file; whom to trace and where
    /// the trace goes are the pipeline's own.
    #[serde(default)]
    pub tracer: TracerOptions,
    #[serde(default)]
    /// `dc-features build`'s options; the runs are the pipeline's own.
    pub features: BuildOptions,
    #[serde(default)]
    /// `dc-model rank`'s options; constant columns are left out unless `drop_constant = false`.
    pub model: RankOptions,
    #[serde(rename = "workload")]
    pub workloads: Vec<Workload>,
}

impl Pipeline {
    /// Reads a pipeline file to run, with the probe set it names.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = read(path)?;
        let p = Self::parse(&text, path)?;
        if let Some(probes) = &p.tracer.probes
            && let Err(e) = std::fs::metadata(probes)
        {
            return Err(Toml::new(&text, path).field_error(
                "tracer.probes",
                format!("cannot read the probe set {}: {e}", probes.display()),
            ));
        }
        Ok(p)
    }

    /// Reads the copy of a pipeline file that a report directory was made with; the files it
    /// names, relative to the original, are not looked for.
    pub fn load_saved(path: &Path) -> Result<Self, InputError> {
        Self::parse(&read(path)?, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self, InputError> {
        let toml = Toml::new(text, path);
        let mut p: Pipeline = toml.parse()?;
        // The file's values were checked as they were read; this holds whatever the model adds to them.
        p.model.validate().map_err(|e| model_error(text, path, e))?;
        p.tracer.relative_to(path.parent().unwrap_or(Path::new("")));
        if p.workloads.is_empty() {
            return Err(InputError::new(
                path,
                None,
                Some("workload"),
                "the pipeline has no [[workload]]",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, w) in p.workloads.iter().enumerate() {
            if !seen.insert(&w.name) {
                return Err(InputError::new(
                    path,
                    toml.line_of_field(&format!("workload[{i}]")),
                    Some(&format!("workload[{i}].name")),
                    format!("workload name `{}` is used twice", w.name),
                ));
            }
        }
        Ok(p)
    }
}

fn read(path: &Path) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|e| {
        InputError::new(
            path,
            None,
            None,
            format!("cannot read the pipeline file: {e}"),
        )
    })
}

/// A `[model]` option refused by the models' own check, at the line that sets it.
fn model_error(text: &str, path: &Path, e: models::ModelError) -> InputError {
    let (field, message) = match e {
        models::ModelError::Option { option, reason } => (format!("model.{option}"), reason),
        other => ("model".to_string(), other.to_string()),
    };
    Toml::new(text, path).field_error(&field, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::iobench::Op;
    use report::size::ByteSize;
    use tracer::{KernelProbeMode, ModeKind};

    fn err(text: &str) -> String {
        Pipeline::parse(text, Path::new("p.toml"))
            .unwrap_err()
            .to_string()
    }

    const BENCH: &str = "name = \"t\"\n[[workload]]\nname = \"b\"\n[workload.iobench]\nop = [\"read\", \"write\"]\nbuffer_size = [\"4KiB\", 65536]\ntotal_size = \"1MiB\"\ndirect = [false, true]\n";

    #[test]
    fn parses_a_benchmark_sweep() {
        let p = Pipeline::parse(BENCH, Path::new("p.toml")).unwrap();
        assert_eq!(p.model, RankOptions::default());
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
            "p.toml:10: field `tracer.layers`: unknown layer `disk` (layers: sys, libc, app, block, page_cache, fs, writeback, sched, irq, lock, mm, iomap, jbd2, kernel, oncpu)"
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
    fn a_probe_set_is_found_beside_the_pipeline_file_or_refused_with_its_line_when_run() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let set = "../tracer/src/layers/probesets/default.toml";
        let text = format!(
            "{BENCH}[tracer]\nlayers = [\"sys\", \"kernel\"]\nprobes = \"{set}\"\nstrict = true\n"
        );
        let p = Pipeline::parse(&text, &dir.join("p.toml")).unwrap();
        assert_eq!(p.tracer.probes, Some(dir.join(set)));
        assert!(p.tracer.strict);
        let file = tempfile::tempdir().unwrap();
        let pipeline = file.path().join("p.toml");
        std::fs::write(&pipeline, text.replace("default.toml", "nope.toml")).unwrap();
        let e = Pipeline::load(&pipeline).unwrap_err().to_string();
        let want = format!(
            "{}:11: field `tracer.probes`: cannot read the probe set {}: No such file or directory",
            pipeline.display(),
            file.path().join(set.replace("default", "nope")).display()
        );
        assert!(e.starts_with(&want), "{e}");
        // A report directory's copy is read without its probe set, which stays beside the original.
        assert!(Pipeline::load_saved(&pipeline).is_ok());
    }

    #[test]
    fn tracer_files_are_relative_to_the_pipeline_file() {
        let text = format!(
            "{BENCH}[tracer]\nkernel_layers = \"k.toml\"\nwait_table = \"/abs/w.toml\"\noffcpu_stacks = false\n"
        );
        let p = Pipeline::parse(&text, Path::new("/p/d/p.toml")).unwrap();
        assert_eq!(p.tracer.kernel_layers, Some("/p/d/k.toml".into()));
        assert_eq!(p.tracer.wait_table, Some("/abs/w.toml".into()));
        let o = crate::pipeline::run::collect_options(&p, "t.pfw".into(), vec!["true".into()]);
        assert_eq!(o.kernel_layers, Some("/p/d/k.toml".into()));
        assert!(!o.offcpu_stacks);
        assert_eq!(o.existing, datasets::output::Existing::Replace);
    }

    #[test]
    fn tracer_modes_are_the_tracer_types() {
        let p = Pipeline::parse(
            &format!("{BENCH}[tracer]\nmode = \"profile\"\nkernel_probes = \"kprobe\"\n"),
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.tracer.mode, ModeKind::Profile);
        assert_eq!(p.tracer.kernel_probes, KernelProbeMode::Kprobe);
        assert_eq!(
            err(&format!("{BENCH}[tracer]\nkernel_probes = \"kprobes\"\n")),
            "p.toml:10: field `tracer.kernel_probes`: unknown variant `kprobes`, expected one of `auto`, `kprobe-multi`, `fentry`, `kprobe`, `off`"
        );
        assert_eq!(
            err(&format!("{BENCH}[tracer]\nmode = \"sample\"\n")),
            "p.toml:10: field `tracer.mode`: unknown variant `sample`, expected `trace` or `profile`"
        );
        assert_eq!(
            err(&format!("{BENCH}[model]\nimportance = \"split\"\n")),
            "p.toml:10: field `model.importance`: unknown variant `split`, expected one of `shap`, `gain`, `permutation`"
        );
    }

    /// Whom `dc-trace collect` traces, where the trace and its summary go and whether they replace
    /// a file are each run's, chosen by the pipeline.
    const PER_RUN: [&str; 7] = [
        "output",
        "pids",
        "cgroup",
        "all",
        "summary_json",
        "force",
        "command",
    ];

    #[test]
    fn every_collect_option_is_settable_in_tracer_and_reads_as_the_flag_with_its_default() {
        use clap::{ArgAction, CommandFactory, Parser};
        use tracer::cli::{Cli, Command};
        let from_flags = |flags: &[String]| {
            let argv = ["dc-trace", "collect", "--all"]
                .into_iter()
                .map(String::from)
                .chain(flags.iter().cloned());
            let Command::Collect(args) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("not collect")
            };
            format!("{:?}", args.tracer)
        };
        let from_file = |table: &str| {
            let text = format!("{BENCH}[tracer]\n{table}\n");
            let p = Pipeline::parse(&text, Path::new("p.toml")).unwrap_or_else(|e| panic!("{e}"));
            format!("{:?}", p.tracer)
        };
        let default = from_flags(&[]);
        assert_eq!(from_file(""), default);
        assert_eq!(format!("{:?}", TracerOptions::default()), default);
        let samples = [
            ("interval", "5ms"),
            ("duration", "2s"),
            ("layers", "sys,block"),
            ("uprobes", "/bin/ls:^main$"),
            ("kernel_functions", "vfs_read"),
            ("kernel_layers", "k.toml"),
            ("probes", "set.toml"),
            ("queue_mib", "7"),
            ("flush_interval", "3s"),
            ("wait_table", "w.toml"),
            ("sample_hz", "99"),
        ];
        let mut checked = Vec::new();
        let cli = Cli::command();
        for arg in cli.find_subcommand("collect").unwrap().get_arguments() {
            let id = arg.get_id().as_str();
            if PER_RUN.contains(&id) {
                continue;
            }
            let flag = format!("--{}", arg.get_long().unwrap());
            let (flags, table) = match arg.get_action() {
                ArgAction::SetTrue => (vec![flag], format!("{id} = true")),
                ArgAction::SetFalse => (vec![flag], format!("{id} = false")),
                action => {
                    let defaults = arg.get_default_values();
                    let value = match arg
                        .get_possible_values()
                        .iter()
                        .find(|v| !defaults.iter().any(|d| v.get_name() == d.to_str().unwrap()))
                    {
                        Some(v) => v.get_name().to_string(),
                        None => samples
                            .iter()
                            .find(|(s, _)| *s == id)
                            .unwrap_or_else(|| panic!("no sample value for `{id}`"))
                            .1
                            .to_string(),
                    };
                    let toml = if value.parse::<u64>().is_ok() {
                        value.clone()
                    } else {
                        format!("'{value}'")
                    };
                    let toml = match action {
                        ArgAction::Append => format!("[{toml}]"),
                        _ => toml,
                    };
                    (vec![flag, value], format!("{id} = {toml}"))
                }
            };
            let set = from_flags(&flags);
            assert_ne!(set, default, "{id}");
            assert_eq!(from_file(&table), set, "{table}");
            checked.push(id);
        }
        checked.sort();
        assert_eq!(
            checked,
            [
                "duration",
                "flush_interval",
                "interval",
                "kernel_functions",
                "kernel_layers",
                "kernel_probes",
                "layers",
                "mode",
                "offcpu_stacks",
                "own_cost",
                "probes",
                "queue_mib",
                "sample_hz",
                "skip_missing_uprobes",
                "strict",
                "uprobes",
                "wait_table",
            ]
        );
    }

    #[test]
    fn every_example_and_test_pipeline_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = ["examples", "tests/data"]
            .iter()
            .flat_map(|d| std::fs::read_dir(dir.join(d)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        assert!(files.iter().any(|f| f.ends_with("examples/fio.toml")));
        for f in &files {
            Pipeline::load(f).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn unaligned_direct_buffer_is_rejected_at_the_workload() {
        assert_eq!(
            err(&BENCH.replace("65536", "1000")),
            "p.toml:2: field `workload[0]`: workload `b`: direct I/O needs the buffer size to be a multiple of 4KiB, not 1000B"
        );
    }

    #[test]
    fn bad_file_regex_names_the_field() {
        let e = err(&format!("{BENCH}[features]\nfile_regex = '('\n"));
        assert!(
            e.starts_with("p.toml:10: field `features.file_regex`: invalid regular expression: "),
            "{e}"
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
    fn model_and_features_are_the_libraries_own_options() {
        let text = format!(
            "{BENCH}[model]\nsplit = \"random\"\ndrop_constant = false\n[model.gbm]\nn_estimators = 50\n[features]\nmode = \"notebook\"\nrow_layers = [\"posix\"]\n"
        );
        let p = Pipeline::parse(&text, Path::new("p.toml")).unwrap();
        assert_eq!(
            p.model,
            RankOptions {
                split: models::SplitKind::Random,
                drop_constant: false,
                gbm: models::gbm::GbmParams {
                    n_estimators: 50,
                    ..Default::default()
                },
                ..Default::default()
            }
        );
        assert_eq!(p.features.mode, features::Mode::Notebook);
        assert_eq!(p.features.row_layers, ["posix"]);
        assert_eq!(p.features.ops, BuildOptions::default().ops);
        let e = err(&format!("{BENCH}[model.gbm]\ndepth = 3\n"));
        assert!(
            e.starts_with("p.toml:10: field `model.gbm.depth`: unknown field `depth`"),
            "{e}"
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
    fn a_model_value_out_of_bounds_is_refused_at_its_line() {
        assert_eq!(
            err(&format!(
                "{BENCH}[model]\nfolds = 3\n[model.gbm]\nn_estimators = 1000000000\n"
            )),
            "p.toml:12: field `model.gbm.n_estimators`: 1000000000 is not in [1, 100000]: every tree is kept in memory and costs a pass over the rows (scikit-learn's default is 100)"
        );
    }

    #[test]
    fn a_model_option_the_models_refuse_is_named_where_the_file_sets_it() {
        let text = format!("{BENCH}[model]\nfolds = 3\n[model.gbm]\nmax_depth = 4\n");
        let refused = |option: &str| {
            model_error(
                &text,
                Path::new("p.toml"),
                models::ModelError::Option {
                    option: option.to_string(),
                    reason: "refused".to_string(),
                },
            )
            .to_string()
        };
        assert_eq!(
            refused("gbm.max_depth"),
            "p.toml:12: field `model.gbm.max_depth`: refused"
        );
        assert_eq!(refused("folds"), "p.toml:10: field `model.folds`: refused");
        assert_eq!(
            refused("gbm.learning_rate"),
            "p.toml:11: field `model.gbm.learning_rate`: refused"
        );
        assert_eq!(refused("seed"), "p.toml:9: field `model.seed`: refused");
    }

    #[test]
    fn an_applications_fields_are_checked_where_the_file_sets_them() {
        let app = "name = \"t\"\n[[workload]]\nname = \"c\"\ncommand = [\"db\", \"{app_dir}/x\"]\n";
        let p = Pipeline::parse(
            &format!(
                "{app}user = \"postgres\"\nstart = [\"s\", \"{{app_dir}}\"]\nstop = [\"t\"]\n"
            ),
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.workloads[0].app.user.as_deref(), Some("postgres"));
        assert_eq!(
            err(&format!(
                "{app}metrics = [{{ name = \"x\", regex = 'tps (\\d+)' }}]\n"
            )),
            "p.toml:5: field `workload[0].metrics[0].regex`: `tps (\\d+)` has no `(?P<value>...)` group for the figure"
        );
        assert!(
            err(&format!(
                "{app}roles = [\n  {{ role = \"x\", comm = '(' }},\n]\n"
            ))
            .starts_with("p.toml:6: field `workload[0].roles[0].comm`: regex parse error")
        );
        assert_eq!(
            err(&format!("{app}roles = [{{ role = \"x\" }}]\n")),
            "p.toml:2: field `workload[0]`: workload `c`: role `x` needs a `comm` or a `cmdline` pattern"
        );
        assert_eq!(
            err(&format!("{app}stop = [\"t\"]\n")),
            "p.toml:2: field `workload[0]`: workload `c`: `stop` stops what `start` started; give `start` too"
        );
        // `{app_dir}` exists only for an application's run.
        assert_eq!(
            err(app),
            "p.toml:2: field `workload[0]`: workload `c`: placeholder `{app_dir}` is neither in `sweep` nor one of {pipeline_dir}, {work_dir}, {run_dir}"
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
