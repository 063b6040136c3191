//! The report's sections for real applications, one model rendered to Markdown and to HTML: who does the I/O,
//! and the application's own figures.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use features::FeatureMatrix;
use report::html::{Cell, Page, Table};

use super::metrics::MetricValue;
use super::roles::RoleRow;
use crate::pipeline::config::Pipeline;
use crate::pipeline::records::RunRecord;

const WHO: &str = "Who does the I/O";
const WHO_TEXT: &str = "Calls by the role of the thread that made them (its name, or the workload's `roles`) and by what they were on: file I/O apart from sockets and pipes (\"no file\" is an fd the tracer did not see made, such as a signalfd). Time is the calls' total; where it goes is the layers' share of it (exclusive time).";
const FIGURES: &str = "The application's own figures";
const FIGURES_TEXT: &str =
    "Read from each run's output (`runs/<run>/app.out`, then `app.err`), traced.";
const WHO_HEADERS: [&str; 9] = [
    "role",
    "on",
    "processes",
    "threads",
    "calls",
    "bytes",
    "time (ms)",
    "mean (µs)",
    "where the time goes",
];

/// What the sections show; both empty when no workload is a real application.
pub struct AppSections {
    pub roles: Vec<RoleRow>,
    /// Each run's figures.
    pub figures: Vec<(String, MetricValue)>,
}

impl AppSections {
    pub fn read(p: &Pipeline, out: &Path, runs: &[RunRecord], matrix: &FeatureMatrix) -> Self {
        let rules: BTreeMap<String, Vec<super::RoleRule>> = p
            .workloads
            .iter()
            .map(|w| (w.name.clone(), w.app.roles.clone()))
            .collect();
        let roles = super::roles::table(matrix, &super::roles::roles(out, runs, &rules, matrix));
        let mut figures = Vec::new();
        for r in runs {
            let file = out.join("runs").join(&r.spec.id).join("metrics.json");
            let Ok(text) = fs::read_to_string(&file) else {
                continue;
            };
            let Ok(values) = serde_json::from_str::<Vec<MetricValue>>(&text) else {
                continue;
            };
            figures.extend(values.into_iter().map(|v| (r.spec.id.clone(), v)));
        }
        AppSections { roles, figures }
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        if !self.roles.is_empty() {
            let _ = writeln!(
                s,
                "## {WHO}\n\n{WHO_TEXT}\n\n| {} |\n|---|---|---:|---:|---:|---:|---:|---:|---|",
                WHO_HEADERS.join(" | ")
            );
            for r in &self.roles {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} |",
                    r.role,
                    r.on,
                    r.processes,
                    r.threads,
                    r.calls,
                    r.bytes,
                    r.time_ms,
                    r.mean_us,
                    r.where_time_goes
                );
            }
            s.push('\n');
        }
        if !self.figures.is_empty() {
            let _ = writeln!(
                s,
                "## {FIGURES}\n\n{FIGURES_TEXT}\n\n| run | figure | of | value |\n|---|---|---|---:|"
            );
            for (run, v) in &self.figures {
                let _ = writeln!(s, "| `{run}` | {} | {} | {:.1} |", v.name, v.label, v.value);
            }
            s.push('\n');
        }
        s
    }

    pub fn html(&self, page: &mut Page) {
        if !self.roles.is_empty() {
            page.section("roles", WHO);
            page.paragraph(WHO_TEXT);
            let mut t = Table::new(&WHO_HEADERS).sortable();
            for r in &self.roles {
                t.row(vec![
                    Cell::text(&r.role),
                    Cell::text(r.on),
                    Cell::int(r.processes as u64),
                    Cell::int(r.threads as u64),
                    Cell::int(r.calls),
                    Cell::int(r.bytes.max(0) as u64),
                    Cell::num(format!("{:.1}", r.time_ms), r.time_ms),
                    Cell::num(format!("{:.1}", r.mean_us), r.mean_us),
                    Cell::text(&r.where_time_goes),
                ]);
            }
            page.table(&t);
        }
        if !self.figures.is_empty() {
            page.section("figures", FIGURES);
            page.paragraph(FIGURES_TEXT);
            let mut t = Table::new(&["run", "figure", "of", "value"]);
            for (run, v) in &self.figures {
                t.row(vec![
                    Cell::text(run),
                    Cell::text(&v.name),
                    Cell::text(&v.label),
                    Cell::num(format!("{:.1}", v.value), v.value),
                ]);
            }
            page.table(&t);
        }
    }
}
