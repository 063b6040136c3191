//! `dc-pipeline overhead`: what tracing costs an application by its own measure. Each run of each application
//! workload is run untraced and traced in turn (first one, then the other), `rounds` times, each time on a fresh setup; the table gives the
//! median of each figure both ways.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use datasets::output::{self, Existing};
use serde::Serialize;

use super::metrics::{self, MetricValue};
use super::service::Service;
use crate::pipeline::config::Pipeline;
use crate::pipeline::plan::{self, Layout, RunKind};

pub struct OverheadOptions {
    pub pipeline: PathBuf,
    /// Where each attempt's output, trace and the table (`overhead.json`, `overhead.md`) go.
    pub out: PathBuf,
    pub rounds: u32,
    /// The dc-pipeline executable, which runs `serve`.
    pub exe: PathBuf,
}

/// One figure of one run: every value measured untraced and traced, and their medians.
#[derive(Debug, Serialize)]
pub struct Overhead {
    pub run: String,
    pub name: String,
    pub label: String,
    pub untraced: Vec<f64>,
    pub traced: Vec<f64>,
    pub untraced_median: f64,
    pub traced_median: f64,
}

/// A figure of a run: the run, the figure's name and its label.
type Figure = (String, String, String);

/// Runs the measurements; returns the Markdown table, also written to `out/overhead.md`.
pub fn overhead(opts: &OverheadOptions) -> Result<String> {
    let p = Pipeline::load(&opts.pipeline)?;
    fs::create_dir_all(&opts.out).with_context(|| format!("creating {}", opts.out.display()))?;
    let out = opts.out.canonicalize()?;
    let pipeline_dir = opts
        .pipeline
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .canonicalize()?;
    let layout = Layout {
        out: out.clone(),
        pipeline_dir,
    };
    let mut figures: BTreeMap<Figure, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for spec in plan::runs(&p, &layout) {
        let RunKind::App { command, app } = &spec.kind else {
            continue;
        };
        if app.metrics.is_empty() {
            continue;
        }
        for round in 0..opts.rounds {
            // Alternated, so that neither always runs first (on a warmer or colder machine).
            let order = if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for traced in order {
                let how = if traced { "traced" } else { "untraced" };
                let dir = out.join(format!("{}-r{round}-{how}", spec.id));
                if dir.exists() {
                    fs::remove_dir_all(&dir)?;
                }
                fs::create_dir_all(&dir)?;
                eprintln!("dc-pipeline overhead: {} round {round} {how}", spec.id);
                let values = attempt(&p, &spec.workload, command, app, &dir, traced, &opts.exe)
                    .with_context(|| format!("run `{}` {how}", spec.id))?;
                for v in values {
                    let e = figures
                        .entry((spec.id.clone(), v.name, v.label))
                        .or_default();
                    if traced { &mut e.1 } else { &mut e.0 }.push(v.value);
                }
            }
        }
    }
    if figures.is_empty() {
        bail!(
            "{}: no workload has `metrics` to compare",
            opts.pipeline.display()
        );
    }
    let rows: Vec<Overhead> = figures
        .into_iter()
        .map(|((run, name, label), (untraced, traced))| Overhead {
            untraced_median: median(&untraced),
            traced_median: median(&traced),
            run,
            name,
            label,
            untraced,
            traced,
        })
        .collect();
    output::write(
        out.join("overhead.json"),
        Existing::Replace,
        serde_json::to_string_pretty(&rows)? + "\n",
    )?;
    let table = markdown(&rows, opts.rounds);
    output::write(out.join("overhead.md"), Existing::Replace, table.clone())?;
    Ok(table)
}

fn attempt(
    p: &Pipeline,
    workload: &str,
    command: &[String],
    app: &super::App,
    dir: &Path,
    traced: bool,
    exe: &Path,
) -> Result<Vec<MetricValue>> {
    let service = Service::prepare(workload, command, app, dir)?;
    let argv = service.runner_argv(exe)?;
    let status = if traced {
        let o = crate::pipeline::run::collect_options(p, dir.join("trace.pfw.gz"), argv);
        tracer::collect(&o).context("tracing")?.exit_status
    } else {
        Command::new(&argv[0])
            .args(&argv[1..])
            .status()
            .with_context(|| format!("running {}", argv[0]))?
            .code()
    };
    if status != Some(0) {
        bail!(
            "the command exited with status {status:?}; its output is in {}",
            dir.display()
        );
    }
    service.finish()?;
    let text = fs::read_to_string(dir.join("app.out")).unwrap_or_default();
    Ok(metrics::read(&app.metrics, &text))
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

fn markdown(rows: &[Overhead], rounds: u32) -> String {
    let mut s = format!(
        "Median of {rounds} round(s), untraced and traced in turn (alternating which goes first), each on a fresh setup.\n\n| run | figure | of | untraced | traced | traced/untraced |\n|---|---|---|---:|---:|---:|\n"
    );
    // A figure the application reports as 0 both ways (fio's reads in a write-only job) says nothing.
    for r in rows
        .iter()
        .filter(|r| r.untraced_median != 0.0 || r.traced_median != 0.0)
    {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {:.1} | {:.1} | {:.3} |",
            r.run,
            r.name,
            r.label,
            r.untraced_median,
            r.traced_median,
            r.traced_median / r.untraced_median
        );
    }
    s
}
