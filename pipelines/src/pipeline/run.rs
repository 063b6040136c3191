//! `dc-pipeline run`: trace every run, build one feature matrix, rank every layer, write the report.
//!
//! Each step leaves its outputs in the report directory before the next starts, so a failure keeps
//! them and `--resume` starts from them: a run is done when its `run.json` exists, the features when
//! `data/features.parquet` does, the ranking when `data/rank.json` does.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

// Every file in the report directory is dc-pipeline's own, written again by a run or a resume:
// an existing one is replaced, but never through a symbolic link.
use datasets::output::{self, Existing};
use features::FeatureMatrix;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use report::load::spinner;
use tracer::collect::monotonic_ns;

use crate::apps::service::Service;
use crate::bench::iobench::{self, BenchReport};
use crate::pipeline::config::Pipeline;
use crate::pipeline::error::{Error, Result, io_at, pretty};
use crate::pipeline::plan::{self, Layout, RunKind, RunSpec};
use crate::pipeline::records::{BenchRow, RunRecord};

pub struct RunOptions {
    pub pipeline: PathBuf,
    pub out: PathBuf,
    pub resume: bool,
    /// The dc-pipeline executable: the built-in benchmark runs as `EXE iobench ...` under the tracer.
    pub exe: PathBuf,
    pub progress: bool,
}

/// A failure, with the step it happened in; the outputs of the steps before it stay in place.
#[derive(Debug, thiserror::Error)]
#[error("step `{step}` failed")]
pub struct StepError {
    pub step: &'static str,
    #[source]
    pub cause: Box<Error>,
}

impl StepError {
    /// Whether the steps before it left outputs that `--resume` continues from: loading the pipeline
    /// file and preparing the report directory leave none.
    pub fn resumable(&self) -> bool {
        !matches!(self.step, "load" | "prepare")
    }
}

fn step<T>(step: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T, StepError> {
    f().map_err(|cause| StepError {
        step,
        cause: Box::new(cause),
    })
}

/// A long step, which says on stderr how long it took, so a user sees where the minutes went.
fn timed<T>(name: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T, StepError> {
    let start = std::time::Instant::now();
    let out = step(name, f)?;
    // A closed stderr loses the line, not the run.
    let _ = writeln!(
        std::io::stderr(),
        "dc-pipeline: {name:<8} {:7.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(out)
}

/// Runs the pipeline; returns the path of `report.md`.
pub fn run(opts: &RunOptions) -> Result<PathBuf, StepError> {
    let pipeline = step("load", || Ok(Pipeline::load(&opts.pipeline)?))?;
    let pipeline_dir = step("load", || {
        let dir = opts
            .pipeline
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Ok(dir.canonicalize().map_err(io_at("resolving", dir))?)
    })?;
    let out = step("prepare", || prepare_out(opts))?;
    let layout = Layout {
        out: out.clone(),
        pipeline_dir,
    };
    let specs = plan::runs(&pipeline, &layout);
    let mut records = timed("trace", || trace_all(&pipeline, &layout, &specs, opts))?;
    let matrix = timed("features", || {
        features(&pipeline, &layout, &mut records, opts)
    })?;
    timed("rank", || rank(&pipeline, &layout, &matrix, opts))?;
    timed("report", || {
        crate::pipeline::report::write(&pipeline, &layout.out)
    })
}

fn prepare_out(opts: &RunOptions) -> Result<PathBuf> {
    let text = fs::read_to_string(&opts.pipeline).map_err(io_at("reading", &opts.pipeline))?;
    fs::create_dir_all(&opts.out).map_err(io_at("creating", &opts.out))?;
    let out = opts
        .out
        .canonicalize()
        .map_err(io_at("resolving", &opts.out))?;
    let saved = out.join("pipeline.toml");
    if opts.resume {
        if let Ok(old) = fs::read_to_string(&saved)
            && old != text
        {
            return Err(Error::Changed {
                pipeline: opts.pipeline.clone(),
                out,
                saved,
            });
        }
    } else {
        for dir in ["runs", "data", "charts", "work"] {
            let d = out.join(dir);
            if d.exists() {
                fs::remove_dir_all(&d).map_err(io_at("removing the previous", &d))?;
            }
        }
        for f in [
            "report.md",
            "report.html",
            "report.files.csv",
            "pipeline.toml",
        ] {
            let _ = fs::remove_file(out.join(f));
        }
    }
    for dir in ["runs", "data", "charts", "work"] {
        let d = out.join(dir);
        fs::create_dir_all(&d).map_err(io_at("creating", &d))?;
    }
    crate::pipeline::report::check_files(&out)?;
    output::write(&saved, Existing::Replace, text)?;
    Ok(out)
}

fn bar(opts: &RunOptions, len: u64, what: &str) -> ProgressBar {
    let pb = if opts.progress {
        ProgressBar::new(len)
    } else {
        ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden())
    };
    pb.set_style(
        ProgressStyle::with_template(
            "{prefix:>9} [{bar:30}] {pos}/{len} {elapsed_precise} {wide_msg}",
        )
        .expect("the template is valid")
        .progress_chars("=> "),
    );
    pb.set_prefix(what.to_string());
    pb
}

fn trace_all(
    p: &Pipeline,
    layout: &Layout,
    specs: &[RunSpec],
    opts: &RunOptions,
) -> Result<Vec<RunRecord>> {
    let pb = bar(opts, specs.len() as u64, "trace");
    let mut records = Vec::with_capacity(specs.len());
    // One attach for every run: started at the first run traced (a resume may trace none) and
    // detached when the runs are done.
    let mut session: Option<tracer::Session> = None;
    for spec in specs {
        pb.set_message(spec.id.clone());
        let done = layout.run_dir(&spec.id).join("run.json");
        let record = match fs::read_to_string(&done) {
            Ok(text) if opts.resume => {
                serde_json::from_str(&text).map_err(|source| Error::Decode {
                    path: done.clone(),
                    source,
                })?
            }
            _ => trace_one(p, layout, spec, opts, &mut session).map_err(|e| Error::Run {
                id: spec.id.clone(),
                source: Box::new(e),
            })?,
        };
        records.push(record);
        pb.inc(1);
    }
    drop(session);
    pb.finish_with_message(format!("{} runs traced", specs.len()));
    let _ = fs::remove_dir_all(layout.work_dir());
    Ok(records)
}

fn trace_one(
    p: &Pipeline,
    layout: &Layout,
    spec: &RunSpec,
    opts: &RunOptions,
    session: &mut Option<tracer::Session>,
) -> Result<RunRecord> {
    let dir = layout.run_dir(&spec.id);
    // What an unfinished attempt left is stale: the run starts over in an empty directory.
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io_at("removing", &dir))?;
    }
    fs::create_dir_all(&dir).map_err(io_at("creating", &dir))?;
    let work = layout.work_dir();
    fs::create_dir_all(&work).map_err(io_at("creating", &work))?;
    if let RunKind::IoBench(b) = &spec.kind {
        // The file is made outside the trace, so the trace holds only the measured iterations.
        iobench::prepare(&b.file, b.total_size)?;
    }
    let argv = plan::argv(spec, &opts.exe);
    // A real application's service is stopped and its processes killed when `service` drops, even on an error.
    let service = match &spec.kind {
        RunKind::App { command, app } => {
            Some(Service::prepare(&spec.workload, command, app, &dir)?)
        }
        _ => None,
    };
    let traced = match &service {
        Some(s) => s.runner_argv(&opts.exe)?,
        None => argv.clone(),
    };
    let sampler = service.as_ref().map(Service::sample_processes);
    let collect = collect_options(p, dir.join("trace.pfw.gz"), traced);
    let session = match session {
        Some(s) => s,
        None => session.insert(tracer::Session::start(&collect).map_err(Error::Tracer)?),
    };
    let start_ns = monotonic_ns();
    let summary = session.collect(&collect).map_err(Error::Tracer)?;
    let end_ns = monotonic_ns();
    if let Some(sampler) = sampler {
        output::write(
            dir.join("processes.json"),
            Existing::Replace,
            pretty("the processes", &sampler.finish())?,
        )?;
    }
    if summary.exit_status != Some(0) {
        let status = summary
            .exit_status
            .map(|s| s.to_string())
            .unwrap_or_else(|| "unknown".into());
        return Err(Error::Exited {
            command: argv.join(" "),
            status,
            dir,
        });
    }
    // Stopped only after a run that succeeded: after a failure, `service` stops what is left as it drops.
    if let (Some(s), RunKind::App { app, .. }) = (service, &spec.kind) {
        s.finish()?;
        output::write(
            dir.join("metrics.json"),
            Existing::Replace,
            pretty(
                "the metrics",
                &crate::apps::metrics::read_run(&app.metrics, &dir),
            )?,
        )?;
    }
    output::write(
        dir.join("summary.json"),
        Existing::Replace,
        pretty("the summary", &summary)?,
    )?;
    let rel = |f: &str| PathBuf::from("runs").join(&spec.id).join(f);
    let record = RunRecord {
        spec: spec.clone(),
        argv,
        trace: rel("trace.pfw.gz"),
        summary: rel("summary.json"),
        bench: matches!(spec.kind, RunKind::IoBench(_)).then(|| rel("bench.json")),
        start_ns,
        end_ns,
        events: summary.events,
        drops: summary.drops,
        exit_status: summary.exit_status,
        rows: None,
    };
    output::write(
        dir.join("run.json"),
        Existing::Replace,
        pretty("the run record", &record)?,
    )?;
    Ok(record)
}

pub(crate) fn collect_options(
    p: &Pipeline,
    output: PathBuf,
    argv: Vec<String>,
) -> tracer::CollectOptions {
    let mut o = p.tracer.collect(output, argv);
    // Only a run that did not finish is traced again; its leftovers are replaced.
    o.existing = Existing::Replace;
    o
}

fn features(
    p: &Pipeline,
    layout: &Layout,
    records: &mut [RunRecord],
    opts: &RunOptions,
) -> Result<FeatureMatrix> {
    let data = layout.data_dir();
    let path = data.join("features.parquet");
    let matrix = if opts.resume && path.exists() {
        FeatureMatrix::read(&path).map_err(|source| Error::Matrix {
            path: path.clone(),
            source,
        })?
    } else {
        let traces: Vec<PathBuf> = records.iter().map(|r| layout.out.join(&r.trace)).collect();
        let b = features::BuildOptions {
            runs: records
                .iter()
                .map(|r| (layout.out.join(&r.trace), r.spec.id.clone()))
                .collect(),
            ..p.features.clone()
        };
        let pb = spinner(opts.progress, "features");
        let (features::Tables { matrix, no_call }, stats) =
            features::build_tables(&traces, &b, |s| {
                pb.set_message(format!(
                    "{} events, {} MB of text",
                    s.events,
                    s.text_bytes >> 20
                ));
            })?;
        let no_call_path = b.writes_no_call().then(|| features::nocall::path(&path));
        pb.finish_with_message(format!(
            "{} rows × {} features from {} events{}",
            matrix.n_rows(),
            matrix.features.len(),
            stats.events,
            no_call_path.as_ref().map_or(String::new(), |p| format!(
                "; {} outside every row, by thread, in {}",
                features::nocall::events(&no_call),
                p.display()
            ))
        ));
        if matrix.n_rows() == 0 {
            return Err(Error::NoRows {
                events: stats.events,
                file_regex: p.features.file_regex.as_ref().map(|r| r.to_string()),
            });
        }
        matrix.write(&path, Existing::Replace)?;
        if let Some(p) = &no_call_path {
            no_call.write(p, Existing::Replace)?;
        }
        matrix
    };
    for r in records.iter_mut() {
        r.rows = Some(
            matrix
                .ts_ns
                .iter()
                .filter(|&&t| t >= r.start_ns && t <= r.end_ns)
                .count(),
        );
    }
    output::write(
        data.join("runs.json"),
        Existing::Replace,
        pretty("the runs", &records)?,
    )?;
    let mut rows = Vec::new();
    for r in records.iter() {
        let Some(bench) = &r.bench else { continue };
        let file = layout.out.join(bench);
        let text = fs::read_to_string(&file).map_err(io_at("reading", &file))?;
        let report: BenchReport = serde_json::from_str(&text).map_err(|source| Error::Decode {
            path: file.clone(),
            source,
        })?;
        let o = &report.options;
        rows.extend(report.samples.into_iter().map(|sample| BenchRow {
            run: r.spec.id.clone(),
            workload: r.spec.workload.clone(),
            op: o.op.name().to_string(),
            call: o.call,
            direct: o.direct,
            fsync: o.fsync,
            buffer_size: o.buffer_size,
            total_size: o.total_size,
            sample,
        }));
    }
    output::write(
        data.join("bench-samples.json"),
        Existing::Replace,
        pretty("the benchmark's samples", &rows)?,
    )?;
    Ok(matrix)
}

fn rank(p: &Pipeline, layout: &Layout, matrix: &FeatureMatrix, opts: &RunOptions) -> Result<()> {
    let path = layout.data_dir().join("rank.json");
    if opts.resume && path.exists() {
        return Ok(());
    }
    let layers = models::input::resolve_layers(matrix, &p.model.layers)?;
    let pb = bar(opts, layers.len() as u64, "rank");
    let report = rank_layers(matrix, &p.model, &layers, &pb)?;
    pb.finish_with_message(format!(
        "{} layers ranked, {} skipped",
        report.layers.len(),
        report.skipped_layers.len()
    ));
    write_rank(&layout.data_dir(), &report)
}

/// Ranks the layers in one call, which reports a layer the models cannot rank (too few rows, no positive
/// importance) in `skipped_layers` instead of failing the others; with every layer asked for, one more model
/// over every layer together (the stack) says which layers explain the target.
pub fn rank_layers(
    matrix: &FeatureMatrix,
    opts: &models::RankOptions,
    layers: &[String],
    pb: &ProgressBar,
) -> Result<models::RankReport> {
    pb.set_message(layers.join(", "));
    let report = models::rank(matrix, opts)?;
    pb.inc(layers.len() as u64);
    Ok(report)
}

/// Writes the skipped layers to `rank-skipped.json`, then `rank.json`, whose presence marks the step done.
pub fn write_rank(data: &Path, report: &models::RankReport) -> Result<()> {
    output::write(
        data.join("rank-skipped.json"),
        Existing::Replace,
        pretty("the skipped layers", &report.skipped_layers)?,
    )?;
    output::write(
        data.join("rank.json"),
        Existing::Replace,
        pretty("the ranking", report)?,
    )?;
    Ok(())
}
