//! `report.html` of a pipeline run: the verdict and findings (also `data/diagnosis.json`), where the time goes at each workload
//! point, then the bandwidth sweep,
//! the models' quality and the per-layer rankings (what `report.md` holds), then the job summary of every run's
//! trace. One self-contained page, like dc-report's.

use std::fs;
use std::path::{Path, PathBuf};

use datasets::output::{Existing, Output};
use features::FeatureMatrix;
use report::answer::{self, Answer};
use report::diagnose::{compare::Run, json::Diagnosis, scan::JobScan};
use report::html::{Cell, Page, Table};
use report::load::scan;
use report::size::format_size;
use report::trace_report::breakdown::Breakdown;
use report::trace_report::sections::{self, Job};
use report::trace_report::{commit_page, csv_path};

use crate::pipeline::charts::rank::importance_name;
use crate::pipeline::charts::{BandwidthChart, ImportanceChart, quartiles};
use crate::pipeline::config::Pipeline;
use crate::pipeline::error::{Error, Result, io_at};
use crate::pipeline::records::Data;
use crate::pipeline::verdict;

pub const STACK: &str = "Which layers explain it";
pub const BANDWIDTH: &str = "Bandwidth";
pub const MODELS: &str = "Model quality";
pub const RANKINGS: &str = "Rankings";

fn f3(v: f64) -> Cell {
    Cell::num(format!("{v:.3}"), v)
}

/// The diagnosis of a report directory's runs: the findings of its matrix and its traces.
pub fn diagnose(p: &Pipeline, out: &Path, d: &Data, matrix: &FeatureMatrix) -> Result<Diagnosis> {
    let traces: Vec<PathBuf> = d.runs.iter().map(|r| out.join(&r.trace)).collect();
    Ok(Diagnosis::of(
        &Run {
            name: p.name.clone(),
            matrix: matrix.clone(),
            scan: Some(JobScan::run(&traces, Default::default(), matrix, |_| {})?),
        },
        None,
    )?)
}

/// What the page draws on.
pub struct Inputs<'a> {
    pub data: &'a Data,
    pub bandwidth: &'a BandwidthChart,
    pub time: &'a Breakdown,
    pub matrix: &'a FeatureMatrix,
    pub diagnosis: &'a Diagnosis,
    pub answer: &'a Answer,
}

/// Writes `report.html`, `report.files.csv` and `data/diagnosis.json` into `out`; returns the page's path.
pub fn write(p: &Pipeline, out: &Path, i: &Inputs) -> Result<PathBuf> {
    let (d, bw, time, matrix) = (i.data, i.bandwidth, i.time, i.matrix);
    let html = out.join("report.html");
    let csv = csv_path(&html);
    // Made before the traces are read again, so that a path that cannot be written fails at once.
    let html_out = Output::create(&html, Existing::Replace)?;
    let csv_out = Output::create(&csv, Existing::Replace)?;
    let diagnosis_out = Output::create(out.join("data/diagnosis.json"), Existing::Replace)?;
    let traces: Vec<PathBuf> = d.runs.iter().map(|r| out.join(&r.trace)).collect();
    let mut page = Page::new(&format!("{}: dc-pipeline report", p.name));
    if !p.description.is_empty() {
        page.paragraph(p.description.trim());
    }
    answer::html::section(&mut page, i.answer, None);
    sections::time(
        &mut page,
        "Each call's time at each workload point, split by the layer active at each instant (the innermost interval on its thread); self is the call's own time. Read it against the bandwidth below.",
        "workload point",
        time,
    )?;
    crate::pipeline::app_report::AppSections::read(p, out, &d.runs, matrix).html(&mut page);
    stack(&mut page, d);
    bandwidth(&mut page, bw)?;
    models(&mut page, d)?;

    let mut summary = scan(&traces, &Default::default(), false)?;
    summary.add_sequential(matrix);
    let first = d
        .runs
        .first()
        .map(|r| out.join(&r.summary))
        .map(|path| -> Result<datasets::summary::Summary> {
            let text = fs::read_to_string(&path).map_err(io_at("reading", &path))?;
            serde_json::from_str(&text).map_err(|source| Error::Decode { path, source })
        })
        .transpose()?;
    let job = Job {
        commands: d.runs.iter().map(|r| r.shown(out)).collect(),
        probes: first.into_iter().collect(),
    };
    sections::job(&mut page, &summary, &job);
    sections::operations(&mut page, &summary)?;
    sections::per_file(&mut page, &summary, "report.files.csv");
    sections::timeline(&mut page, &summary)?;
    i.diagnosis.commit(diagnosis_out)?;
    commit_page(
        html_out,
        page.finish(),
        csv_out,
        sections::files_csv(&summary),
    )?;
    Ok(html)
}

/// Which layers explain the target, from the model over all of them together.
fn stack(page: &mut Page, d: &Data) {
    page.section("stack", STACK);
    let Some(st) = &d.rank.stack else {
        page.note("The ranking has no model over all layers together; each layer is ranked on its own below.");
        return;
    };
    let q = &st.quality;
    page.paragraph(&format!(
        "One model over the context and every layer's features: held-out R² {:.3} (CV {:.3} ± {:.3}); the context alone reaches {}. A layer's share is its part of the model's mean |SHAP|; ΔR² is what its own model adds to the context's.",
        q.test_r2,
        q.cv_r2_mean,
        q.cv_r2_sd,
        st.context_r2
            .map(|r| format!("{r:.3}"))
            .unwrap_or_else(|| "n/a (no context column varies)".into())
    ));
    let mut t = Table::new(&["layer", "share", "ΔR² over context"]);
    t.row(vec![
        Cell::text("context"),
        f3(st.context_share),
        Cell::text(""),
    ]);
    for l in &st.layers {
        t.row(vec![Cell::text(&l.layer), f3(l.share), f3(l.delta_r2)]);
    }
    page.table(&t);
    if st.groups.is_empty() {
        return;
    }
    page.paragraph("By kind of call: each layer's share of the model on those calls, and its share of their time.");
    let mut t = Table::new(&["calls", "layer", "share", "time share"]).sortable();
    for g in &st.groups {
        for l in &g.layers {
            t.row(vec![
                Cell::text(&g.group),
                Cell::text(&l.layer),
                f3(l.share),
                l.time_share.map_or_else(|| Cell::text("none"), f3),
            ]);
        }
    }
    page.table(&t);
    for line in verdict::stack_groups(&st.groups) {
        page.paragraph(&line);
    }
}

fn bandwidth(page: &mut Page, bw: &BandwidthChart) -> Result<()> {
    page.section("bandwidth", BANDWIDTH);
    if bw.series.is_empty() {
        page.note("No benchmark ran, so there is no bandwidth sweep.");
        return Ok(());
    }
    page.paragraph("The benchmark's own measurements (wall clock per iteration), in MiB/s.");
    page.chart(bw)?;
    let mut t = Table::new(&["series", "buffer", "iterations", "median", "Q1", "Q3"]).sortable();
    for (label, points) in &bw.series {
        for (size, v) in points {
            let (q1, m, q3) = quartiles(v);
            t.row(vec![
                Cell::text(label),
                Cell::num(format_size(*size), *size as f64),
                Cell::int(v.len() as u64),
                Cell::num(format!("{m:.1}"), m),
                Cell::num(format!("{q1:.1}"), q1),
                Cell::num(format!("{q3:.1}"), q3),
            ]);
        }
    }
    page.table(&t);
    Ok(())
}

fn models(page: &mut Page, d: &Data) -> Result<()> {
    page.section("models", MODELS);
    page.paragraph(&format!(
        "Target `{}`, ranked by {} importance, features kept to a {:.0}% cumulative share; {} rows.",
        d.rank.target,
        importance_name(d.rank.importance),
        d.rank.cumulative * 100.0,
        d.rank.rows_total
    ));
    let mut t = Table::new(&[
        "layer",
        "rows",
        "kept features",
        "GBM test R²",
        "GBM test MAPE",
        "GBM CV R²",
        "Lasso test R²",
        "PCA components for 95%",
    ]);
    for l in &d.rank.layers {
        let q = &l.gbm.quality;
        t.row(vec![
            Cell::text(&l.layer),
            Cell::int(l.rows as u64),
            Cell::int(l.ranking.len() as u64),
            f3(q.test_r2),
            q.test_mape
                .map(|m| Cell::num(format!("{:.1}%", m * 100.0), m))
                .unwrap_or_else(|| Cell::text("n/a")),
            Cell::text(format!("{:.3} ± {:.3}", q.cv_r2_mean, q.cv_r2_sd)),
            f3(l.lasso.quality.test_r2),
            Cell::text(format!(
                "{} of {}",
                l.pca.components_95,
                l.pca.explained_variance_ratio.len()
            )),
        ]);
    }
    page.table(&t);
    for sk in &d.skipped {
        page.note(&format!("Not ranked: {}: {}", sk.layer, sk.reason));
    }

    page.section("rankings", RANKINGS);
    page.chart(&ImportanceChart { rank: &d.rank })?;
    for l in &d.rank.layers {
        page.subsection(&format!(
            "{}: {} rows ({} train, {} held out)",
            l.layer, l.rows, l.train_rows, l.test_rows
        ));
        let mut t =
            Table::new(&["rank", "feature", "share", "cumulative", "fold stability"]).sortable();
        for r in &l.ranking {
            t.row(vec![
                Cell::int(r.rank as u64),
                Cell::text(&r.feature),
                f3(r.share),
                f3(r.cumulative_share),
                Cell::num(format!("{:.2}", r.fold_stability), r.fold_stability),
            ]);
        }
        page.table(&t);
    }
    Ok(())
}
