//! `dc-pipeline overhead`: what tracing costs an application by its own measure.
//!
//! Each run of each workload with `metrics` is run in several setups: untraced, traced with the pipeline's
//! layers and, when the workload names its own tracer (`app_tracer`, DLIO's DFTracer), under that tracer alone
//! and under both. One round runs every other setup once, each on a fresh setup and each between two untraced
//! attempts, and every other round runs them in reverse order. On a machine whose load changes by the minute
//! (other builds on two cores), an attempt is compared with the untraced runs next to it in time rather than
//! with a baseline minutes away: its ratio is its figure over their mean, and a setup's is the median of its
//! attempts' ratios. The table gives each setup's median, range and that ratio.
//!
//! `--per-layer` traces with the pipeline's layers, with the sys layer alone, and with the sys layer plus each
//! other layer, one at a time. With the sys layer on, the tracepoint layers record only inside traced calls, as
//! in every pipeline; a layer alone would record every event of the application's processes, a setup no
//! pipeline uses. Each row against the sys-alone row is what one layer adds.
//!
//! Workloads without `metrics` run once, untraced and in order, before the measured ones: they prepare what
//! later ones use (DLIO's dataset).

pub mod error;
pub mod report;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use datasets::output::{self, Existing};
use tracer::{Layer, LayerSelection};

use crate::apps::App;
use crate::apps::metrics::{self, MetricValue};
use crate::apps::service::Service;
use crate::overhead::error::{Error, Result, io_at};
use crate::pipeline::config::Pipeline;
use crate::pipeline::plan::{self, Layout, RunKind, RunSpec};
use report::{Attempt, Overhead, OverheadReport};

pub struct OverheadOptions {
    pub pipeline: PathBuf,
    /// Where each attempt's output, trace and the table (`overhead.json`, `overhead.md`) go.
    pub out: PathBuf,
    pub rounds: u32,
    /// One traced setup per layer instead of one with the pipeline's layers.
    pub per_layer: bool,
    /// The dc-pipeline executable, which runs `serve`.
    pub exe: PathBuf,
}

/// One way of running the application.
#[derive(Clone, Debug, PartialEq)]
struct Setup {
    name: String,
    /// dc-trace's layers; `None` is not traced by dc-trace.
    layers: Option<LayerSelection>,
    /// Whether the application's own tracer is on.
    app_tracer: bool,
}

/// Runs the measurements; returns the Markdown tables, also written to `out/overhead.md`.
pub fn overhead(opts: &OverheadOptions) -> Result<String> {
    let p = Pipeline::load(&opts.pipeline)?;
    fs::create_dir_all(&opts.out).map_err(io_at("creating", &opts.out))?;
    let out = opts
        .out
        .canonicalize()
        .map_err(io_at("resolving", &opts.out))?;
    let dir = opts
        .pipeline
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let pipeline_dir = dir.canonicalize().map_err(io_at("resolving", dir))?;
    let layout = Layout {
        out: out.clone(),
        pipeline_dir,
    };
    let work = layout.work_dir();
    fs::create_dir_all(&work).map_err(io_at("creating", &work))?;
    let mut load = (f64::INFINITY, f64::NEG_INFINITY);
    let mut rows = Vec::new();
    for spec in plan::runs(&p, &layout) {
        let app = match &spec.kind {
            RunKind::App { app, .. } if !app.metrics.is_empty() => app,
            RunKind::IoBench(_) => continue,
            _ => {
                eprintln!("dc-pipeline overhead: {} (preparing, untraced)", spec.id);
                let plain = Setup {
                    name: "untraced".into(),
                    layers: None,
                    app_tracer: false,
                };
                attempt(&p, &spec, &plain, &layout, &out.join(&spec.id), &opts.exe)?;
                continue;
            }
        };
        let setups = setups(&p, app, opts.per_layer);
        let mut figures: BTreeMap<(String, String), Vec<Vec<Attempt>>> = BTreeMap::new();
        for round in 0..opts.rounds {
            let mut seq = Vec::new();
            for (k, i) in order(setups.len(), round).into_iter().enumerate() {
                let s = &setups[i];
                let dir = format!("{}-r{round}-{k:02}-{}", spec.id, slug(&s.name));
                let l = load_average()?;
                load = (load.0.min(l), load.1.max(l));
                eprintln!(
                    "dc-pipeline overhead: {} round {round}: {} (load average {l:.2})",
                    spec.id, s.name
                );
                let values =
                    attempt(&p, &spec, s, &layout, &out.join(&dir), &opts.exe).map_err(|e| {
                        Error::Attempt {
                            id: spec.id.clone(),
                            setup: s.name.clone(),
                            source: Box::new(e),
                        }
                    })?;
                seq.push((i, dir, values));
            }
            for (k, (i, dir, values)) in seq.iter().enumerate() {
                for v in values {
                    // Against the untraced attempts just before and after: the machine's load then.
                    let ratio = (*i != 0).then(|| {
                        let around: Vec<f64> = [k - 1, k + 1]
                            .iter()
                            .flat_map(|&j| &seq[j].2)
                            .filter(|u| u.name == v.name && u.label == v.label)
                            .map(|u| u.value)
                            .collect();
                        v.value / (around.iter().sum::<f64>() / around.len() as f64)
                    });
                    figures
                        .entry((v.name.clone(), v.label.clone()))
                        .or_insert_with(|| (0..setups.len()).map(|_| Vec::new()).collect())[*i]
                        .push(Attempt {
                            dir: dir.clone(),
                            value: v.value,
                            ratio,
                        });
                }
            }
        }
        for ((name, label), by_setup) in figures {
            for (i, (s, attempts)) in setups.iter().zip(by_setup).enumerate() {
                let v: Vec<f64> = attempts.iter().map(|a| a.value).collect();
                let ratios: Vec<f64> = attempts.iter().filter_map(|a| a.ratio).collect();
                rows.push(Overhead {
                    run: spec.id.clone(),
                    name: name.clone(),
                    label: label.clone(),
                    setup: s.name.clone(),
                    layers: s.layers.as_ref().map(layer_names).unwrap_or_default(),
                    app_tracer: s.app_tracer,
                    median: median(&v),
                    min: v.iter().copied().fold(f64::NAN, f64::min),
                    max: v.iter().copied().fold(f64::NAN, f64::max),
                    ratio: if i == 0 { 1.0 } else { median(&ratios) },
                    values: attempts,
                });
            }
        }
    }
    if rows.is_empty() {
        return Err(Error::NoMetrics {
            pipeline: opts.pipeline.clone(),
        });
    }
    let report = OverheadReport {
        rounds: opts.rounds,
        load_average: load,
        rows,
    };
    output::write(
        out.join("overhead.json"),
        Existing::Replace,
        serde_json::to_string_pretty(&report).map_err(Error::Encode)? + "\n",
    )?;
    let table = report::markdown(&report);
    output::write(out.join("overhead.md"), Existing::Replace, table.clone())?;
    Ok(table)
}

/// The setups of an application, untraced first.
fn setups(p: &Pipeline, app: &App, per_layer: bool) -> Vec<Setup> {
    let all = p.tracer.layers.clone();
    let mut traced = vec![("dc-trace".to_string(), all.clone())];
    if per_layer {
        let base: Vec<Layer> = all.0.iter().copied().filter(|&l| l == Layer::Sys).collect();
        if !base.is_empty() {
            traced.push(("dc-trace: sys".into(), LayerSelection::only(&base)));
        }
        for &l in all.0.iter().filter(|&&l| l != Layer::Sys) {
            let mut with = base.clone();
            with.push(l);
            let names = layer_names(&LayerSelection::only(&with)).join(" + ");
            traced.push((format!("dc-trace: {names}"), LayerSelection::only(&with)));
        }
    }
    let mut out = vec![Setup {
        name: "untraced".into(),
        layers: None,
        app_tracer: false,
    }];
    for (name, layers) in traced {
        // With one layer besides sys, "sys + it" is the pipeline's own setup.
        if !out.iter().any(|s| s.layers.as_ref() == Some(&layers)) {
            out.push(Setup {
                name,
                layers: Some(layers),
                app_tracer: false,
            });
        }
    }
    if let Some(t) = &app.app_tracer {
        out.push(Setup {
            name: t.name.clone(),
            layers: None,
            app_tracer: true,
        });
        out.push(Setup {
            name: format!("dc-trace + {}", t.name),
            layers: Some(all),
            app_tracer: true,
        });
    }
    out
}

/// Runs `spec` once in `setup`, in the empty directory `dir`; returns the figures its output holds.
fn attempt(
    p: &Pipeline,
    spec: &RunSpec,
    setup: &Setup,
    layout: &Layout,
    dir: &Path,
    exe: &Path,
) -> Result<Vec<MetricValue>> {
    for d in [dir.to_path_buf(), layout.run_dir(&spec.id)] {
        if d.exists() {
            fs::remove_dir_all(&d).map_err(io_at("removing", &d))?;
        }
        fs::create_dir_all(&d).map_err(io_at("creating", &d))?;
    }
    // The service stops, and what it left is killed, when `service` drops, even on an error.
    let (argv, service, metrics) = match &spec.kind {
        RunKind::App { command, app } => {
            let mut s = Service::prepare(&spec.workload, command, app, dir)?;
            if let Some(t) = &app.app_tracer {
                s.set_env(if setup.app_tracer { &t.on } else { &t.off }.clone());
            }
            (s.runner_argv(exe)?, Some(s), app.metrics.as_slice())
        }
        RunKind::Command(argv) => (argv.clone(), None, &[][..]),
        RunKind::IoBench(_) => {
            return Err(Error::Benchmark {
                id: spec.id.clone(),
            });
        }
    };
    // What the setup and the attempt before wrote (a database, a trace) is written back now, not while this
    // attempt runs.
    // SAFETY: sync(2) takes no argument and cannot fail.
    unsafe { libc::sync() };
    let status = match &setup.layers {
        Some(layers) => {
            let mut o = crate::pipeline::run::collect_options(p, dir.join("trace.pfw.gz"), argv);
            o.layers = layers.clone();
            tracer::collect(&o).map_err(Error::Tracer)?.exit_status
        }
        None => {
            let file = |f: &str| -> Result<fs::File> {
                let path = dir.join(f);
                Ok(fs::File::create(&path).map_err(io_at("creating", &path))?)
            };
            Command::new(&argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(file("app.out")?)
                .stderr(file("app.err")?)
                .status()
                .map_err(|source| Error::Command {
                    program: argv[0].clone(),
                    source,
                })?
                .code()
        }
    };
    if status != Some(0) {
        return Err(Error::Exited {
            status,
            dir: dir.to_path_buf(),
        });
    }
    if let Some(s) = service {
        s.finish()?;
    }
    Ok(metrics::read_run(metrics, dir))
}

fn layer_names(l: &LayerSelection) -> Vec<String> {
    l.0.iter().map(|l| l.name().to_string()).collect()
}

/// A setup's name as part of a directory name: runs of anything but letters and digits become one `-`.
fn slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_end_matches('-').to_string()
}

/// The 1-minute load average (`/proc/loadavg`'s first field).
fn load_average() -> Result<f64> {
    let path = Path::new("/proc/loadavg");
    let text = fs::read_to_string(path).map_err(io_at("reading", path))?;
    text.split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| Error::LoadAverage {
            text: text.trim().to_string(),
        })
}

/// One round's setups by index: untraced (0) first, last and between every two others, which run in order
/// on even rounds and in reverse on odd ones.
fn order(setups: usize, round: u32) -> Vec<usize> {
    let mut others: Vec<usize> = (1..setups).collect();
    if round % 2 == 1 {
        others.reverse();
    }
    std::iter::once(0)
        .chain(others.into_iter().flat_map(|i| [i, 0]))
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::AppTracer;

    fn pipeline(layers: &str) -> Pipeline {
        let text = format!(
            "name = \"p\"\n[tracer]\nlayers = {layers}\n[[workload]]\nname = \"w\"\ncommand = [\"true\"]\n"
        );
        Pipeline::parse(&text, Path::new("p.toml")).unwrap()
    }

    fn names(s: &[Setup]) -> Vec<&str> {
        s.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn per_layer_adds_each_layer_to_sys_alone_and_skips_the_pipelines_own_setup() {
        let p = pipeline("[\"sys\", \"block\", \"sched\"]");
        let s = setups(&p, &App::default(), true);
        assert_eq!(
            names(&s),
            [
                "untraced",
                "dc-trace",
                "dc-trace: sys",
                "dc-trace: sys + block",
                "dc-trace: sys + sched"
            ]
        );
        let two = setups(&pipeline("[\"sys\", \"block\"]"), &App::default(), true);
        assert_eq!(names(&two), ["untraced", "dc-trace", "dc-trace: sys"]);
        let no_sys = setups(&pipeline("[\"block\", \"sched\"]"), &App::default(), true);
        assert_eq!(
            names(&no_sys),
            ["untraced", "dc-trace", "dc-trace: block", "dc-trace: sched"]
        );
    }

    #[test]
    fn an_application_tracer_adds_itself_alone_and_beside_dc_trace() {
        let app = App {
            app_tracer: Some(AppTracer {
                name: "DFTracer".into(),
                on: BTreeMap::from([("DFTRACER_ENABLE".into(), "1".into())]),
                off: BTreeMap::from([("DFTRACER_ENABLE".into(), "0".into())]),
            }),
            ..App::default()
        };
        let s = setups(&pipeline("[\"sys\", \"block\"]"), &app, false);
        assert_eq!(
            names(&s),
            ["untraced", "dc-trace", "DFTracer", "dc-trace + DFTracer"]
        );
        assert_eq!(
            s.iter()
                .map(|s| (s.layers.is_some(), s.app_tracer))
                .collect::<Vec<_>>(),
            [(false, false), (true, false), (false, true), (true, true)]
        );
        assert_eq!(slug("dc-trace + DFTracer"), "dc-trace-dftracer");
    }

    #[test]
    fn every_setup_runs_between_two_untraced_attempts_in_reverse_every_other_round() {
        assert_eq!(order(4, 0), [0, 1, 0, 2, 0, 3, 0]);
        assert_eq!(order(4, 1), [0, 3, 0, 2, 0, 1, 0]);
        assert_eq!(order(2, 2), [0, 1, 0]);
    }
}
