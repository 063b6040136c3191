//! `report.md`, `report.html` and the charts, drawn from the report directory's data files; both pages open with
//! the same verdict and findings, said once from the diagnosis ([`report::answer`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use datasets::output::{self, Existing};
use features::FeatureMatrix;
use report::answer::Answer;
use report::charts::render;
use report::diagnose::json::Diagnosis;
use report::size::format_size;
use report::trace_report::breakdown::Breakdown;
use report::trace_report::charts::StackedBars;

use crate::pipeline::charts::rank::importance_name;
use crate::pipeline::charts::{
    BandwidthChart, HeatmapChart, ImportanceChart, PcaChart, PredictionChart, quartiles,
};
use crate::pipeline::config::Pipeline;
use crate::pipeline::error::{Error, Result, io_at};
use crate::pipeline::records::Data;
use crate::pipeline::{report_html, verdict};

/// The charts of a report, each drawn as `charts/NAME.svg` and `charts/NAME.png`.
pub const CHARTS: [&str; 6] = [
    "time",
    "bandwidth",
    "importance",
    "pca",
    "correlation",
    "predictions",
];

/// The files of a report directory outside `runs/`, relative to it.
pub fn files() -> Vec<PathBuf> {
    let fixed = [
        "pipeline.toml",
        "report.md",
        "report.html",
        "report.files.csv",
        "data/features.parquet",
        "data/features.no-call.parquet",
        "data/runs.json",
        "data/bench-samples.json",
        "data/rank.json",
        "data/rank-skipped.json",
        "data/diagnosis.json",
    ];
    let charts = CHARTS
        .iter()
        .flat_map(|c| ["svg", "png"].map(|ext| format!("charts/{c}.{ext}")));
    fixed
        .into_iter()
        .map(String::from)
        .chain(charts)
        .map(PathBuf::from)
        .collect()
}

/// Refuses, before a run or a redraw starts, a report file that could not be replaced at the end: a
/// symbolic link, a directory.
pub fn check_files(out: &Path) -> Result<()> {
    for f in files() {
        output::check_target(&out.join(f), Existing::Replace)?;
    }
    Ok(())
}

/// Draws the report of a finished (or resumed) report directory again, from its `pipeline.toml` and data.
pub fn redraw(out: &Path) -> Result<PathBuf> {
    let p = Pipeline::load_saved(&out.join("pipeline.toml"))?;
    check_files(out)?;
    write(&p, out)
}

/// Draws the charts and writes `report.md` and `report.html`; returns the path of `report.md`.
pub fn write(p: &Pipeline, out: &Path) -> Result<PathBuf> {
    let data = Data::read(out)?;
    let features = out.join("data/features.parquet");
    let matrix = FeatureMatrix::read(&features).map_err(|source| Error::Matrix {
        path: features.clone(),
        source,
    })?;
    let time = Breakdown::by_run(&matrix);
    let dir = out.join("charts");
    fs::create_dir_all(&dir).map_err(io_at("creating", &dir))?;
    if !time.groups.is_empty() {
        render(
            &dir,
            "time",
            &StackedBars {
                title: TIME_TITLE.into(),
                breakdown: &time,
            },
        )?;
    }
    let bandwidth = BandwidthChart::from_samples(&data.bench);
    if !bandwidth.series.is_empty() {
        render(&dir, "bandwidth", &bandwidth)?;
    }
    render(&dir, "importance", &ImportanceChart { rank: &data.rank })?;
    render(&dir, "pca", &PcaChart { rank: &data.rank })?;
    render(&dir, "correlation", &HeatmapChart { rank: &data.rank })?;
    render(&dir, "predictions", &PredictionChart { rank: &data.rank })?;
    let diagnosis = report_html::diagnose(p, out, &data, &matrix)?;
    let answer = Answer::of(&diagnosis);
    let path = out.join("report.md");
    output::write(
        &path,
        Existing::Replace,
        markdown(p, out, &data, &bandwidth, &time, &matrix, &answer),
    )?;
    report_html::write(
        p,
        out,
        &report_html::Inputs {
            data: &data,
            bandwidth: &bandwidth,
            time: &time,
            matrix: &matrix,
            diagnosis: &diagnosis,
            answer: &answer,
        },
    )?;
    Ok(path)
}

/// The answer of a written report directory, from its `data/diagnosis.json`: what `report.md` opens with.
pub fn answer(out: &Path) -> Result<Answer> {
    let path = out.join("data/diagnosis.json");
    let text = fs::read_to_string(&path).map_err(io_at("reading", &path))?;
    let d: Diagnosis =
        serde_json::from_str(&text).map_err(|source| Error::NotDiagnosis { path, source })?;
    Ok(Answer::of(&d))
}

/// Title of the time chart, per workload point.
pub const TIME_TITLE: &str =
    "Mean time per call at each workload point, split by layer (exclusive)";

/// The time split by layer as a markdown table, µs per call.
fn time_markdown(s: &mut String, b: &Breakdown) {
    let _ = writeln!(s, "## Where the time goes\n");
    if b.groups.is_empty() {
        let _ = writeln!(
            s,
            "No row belongs to a run, so there is no time to split.\n"
        );
        return;
    }
    let _ = writeln!(
        s,
        "Mean time per call (µs) at each workload point, split by the layer active at each instant; the layers of a row add up to its mean.\n\n![time](charts/time.png)\n"
    );
    let _ = writeln!(
        s,
        "| workload point | calls | mean | {} |\n|---|---:|---:|{}",
        b.layers.join(" | "),
        "---:|".repeat(b.layers.len())
    );
    for g in &b.groups {
        let cells: Vec<String> = g
            .mean_ns
            .iter()
            .map(|v| format!("{:.2}", v / 1e3))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {} |",
            g.label,
            g.calls,
            g.mean_dur_ns / 1e3,
            cells.join(" | ")
        );
    }
    let _ = writeln!(s);
}

fn markdown(
    p: &Pipeline,
    out: &Path,
    d: &Data,
    bw: &BandwidthChart,
    time: &Breakdown,
    matrix: &FeatureMatrix,
    answer: &Answer,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {}: dc-pipeline report\n", p.name);
    if !p.description.is_empty() {
        let _ = writeln!(s, "{}\n", p.description.trim());
    }
    s.push_str(&report::answer::markdown::render(answer));
    let rows: usize = d.runs.iter().filter_map(|r| r.rows).sum();
    let _ = writeln!(
        s,
        "{} runs traced; {} events; {} feature rows (system calls) in `data/features.parquet`; target `{}`, ranked by {} importance, features kept to a {:.0}% cumulative share.\n",
        d.runs.len(),
        d.runs.iter().map(|r| r.events).sum::<u64>(),
        d.rank.rows_total,
        d.rank.target,
        importance_name(d.rank.importance),
        d.rank.cumulative * 100.0
    );
    if rows != d.rank.rows_total {
        let _ = writeln!(s, "{} of the rows fall inside a run's time window.\n", rows);
    }
    time_markdown(&mut s, time);
    s.push_str(&crate::pipeline::app_report::AppSections::read(p, out, &d.runs, matrix).markdown());
    if let Some(st) = &d.rank.stack {
        let _ = writeln!(
            s,
            "## Which layers explain it\n\nOne model over the context and every layer: held-out R² {:.3}; the context alone: {}.\n\n| layer | share | ΔR² over context |\n|---|---:|---:|\n| context | {:.3} | |",
            st.quality.test_r2,
            st.context_r2
                .map(|r| format!("{r:.3}"))
                .unwrap_or_else(|| "n/a".into()),
            st.context_share
        );
        for l in &st.layers {
            let _ = writeln!(s, "| {} | {:.3} | {:.3} |", l.layer, l.share, l.delta_r2);
        }
        if !st.groups.is_empty() {
            let _ = writeln!(
                s,
                "\nBy kind of call: each layer's share of the model on those calls, and its share of their time.\n\n| calls | layer | share | time share |\n|---|---|---:|---:|"
            );
            for g in &st.groups {
                for l in &g.layers {
                    let time = l
                        .time_share
                        .map_or("none".to_string(), |t| format!("{t:.3}"));
                    let _ = writeln!(s, "| {} | {} | {:.3} | {time} |", g.group, l.layer, l.share);
                }
            }
            let _ = writeln!(s);
            for line in verdict::stack_groups(&st.groups) {
                let _ = writeln!(s, "- {line}");
            }
        }
        let _ = writeln!(s);
    }

    let _ = writeln!(
        s,
        "## Runs\n\n| run | command | events | dropped | feature rows |\n|---|---|---:|---:|---:|"
    );
    for r in &d.runs {
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} | {} | {} |",
            r.spec.id,
            r.shown(out),
            r.events,
            r.drops,
            r.rows.map(|n| n.to_string()).unwrap_or_default()
        );
    }

    if !bw.series.is_empty() {
        let _ = writeln!(
            s,
            "\n## Bandwidth against buffer size\n\nThe benchmark's own measurements (wall clock per iteration), in MiB/s.\n\n![bandwidth](charts/bandwidth.png)\n\n| series | buffer | iterations | median | Q1 | Q3 |\n|---|---:|---:|---:|---:|---:|"
        );
        for (label, points) in &bw.series {
            for (size, v) in points {
                let (q1, m, q3) = quartiles(v);
                let _ = writeln!(
                    s,
                    "| {label} | {} | {} | {m:.1} | {q1:.1} | {q3:.1} |",
                    format_size(*size),
                    v.len()
                );
            }
        }
        let mut io: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for b in &d.bench {
            let e = io.entry(b.run.as_str()).or_default();
            e.0 += b.sample.inblock;
            e.1 += b.sample.oublock;
        }
        let total_in: i64 = io.values().map(|v| v.0).sum();
        let total_out: i64 = io.values().map(|v| v.1).sum();
        let _ = writeln!(
            s,
            "\ngetrusage over all iterations: {total_in} blocks in, {total_out} blocks out (512 bytes each); per-sample values are in `data/bench-samples.json`."
        );
    }

    let _ = writeln!(s, "\n## Layers\n");
    let _ = writeln!(
        s,
        "| layer | rows | kept features | GBM test R² | GBM test MAPE | GBM CV R² | Lasso test R² | PCA components for 95% |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for l in &d.rank.layers {
        let q = &l.gbm.quality;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {} | {:.3} ± {:.3} | {:.3} | {} of {} |",
            l.layer,
            l.rows,
            l.ranking.len(),
            q.test_r2,
            q.test_mape
                .map(|m| format!("{:.1}%", m * 100.0))
                .unwrap_or_else(|| "n/a".into()),
            q.cv_r2_mean,
            q.cv_r2_sd,
            l.lasso.quality.test_r2,
            l.pca.components_95,
            l.pca.explained_variance_ratio.len()
        );
    }
    for sk in &d.skipped {
        let _ = writeln!(s, "\nNot ranked: `{}`: {}", sk.layer, sk.reason);
    }
    let _ = writeln!(s, "\n![importance](charts/importance.png)\n");
    for l in &d.rank.layers {
        let _ = writeln!(
            s,
            "### {}\n\n{} rows ({} train, {} held out).\n\n| rank | feature | share | cumulative | fold stability |\n|---:|---|---:|---:|---:|",
            l.layer, l.rows, l.train_rows, l.test_rows
        );
        for r in &l.ranking {
            let _ = writeln!(
                s,
                "| {} | `{}` | {:.3} | {:.3} | {:.2} |",
                r.rank, r.feature, r.share, r.cumulative_share, r.fold_stability
            );
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "## PCA\n\n![pca](charts/pca.png)\n\n## Correlations of the top features\n\n![correlation](charts/correlation.png)\n\n## Predicted against measured (held-out rows)\n\n![predictions](charts/predictions.png)\n"
    );
    let _ = writeln!(
        s,
        "## Data\n\n- `data/features.parquet`: the feature matrix, one row per system call (layer metadata inside)\n- `data/rank.json`: the full ranking report of every layer; `data/rank-skipped.json`: layers not ranked\n- `data/runs.json`: every run, its command, its time window and its rows; `runs/<run>/trace.pfw.gz` and `runs/<run>/summary.json`: its trace and the tracer's summary\n- `data/bench-samples.json`: every benchmark iteration (bandwidth, time, utime, stime, inblock, oublock)\n- `charts/*.svg` and `charts/*.png`; `report.html`: this report as one page, with the traces' summary (`report.files.csv`: its per-file table)"
    );
    s
}
