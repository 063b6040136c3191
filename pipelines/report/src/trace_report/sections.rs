//! The job summary's sections, written onto a [`Page`]: Job, Where the time goes, Operations, Per file, Timeline.
//! Each says so when the traces hold nothing for it.

use std::fmt::Write as _;

use crate::charts::draw::ChartError;
use crate::html::{Cell, Page, Table, escape};
use crate::size::human_size;
use crate::summary::{CALL_LAYERS, Direction, SIZE_BINS, TraceSummary};
use crate::trace_report::breakdown::Breakdown;
use crate::trace_report::charts::{SizeHistogram, StackedBars, TimelineChart, seconds};

/// Rows of the per-file table on the page; the CSV beside it has them all.
pub const TOP_FILES: usize = 50;
/// (layer, operation) rows of the operations table; the rest are summed into one row.
pub const TOP_OPS: usize = 40;
/// Rows of the common access sizes table.
pub const TOP_SIZES: usize = 10;

/// Section headings, in page order.
pub const JOB: &str = "Job";
pub const TIME: &str = "Where the time goes";
pub const OPERATIONS: &str = "Operations";
pub const PER_FILE: &str = "Per file";
pub const TIMELINE: &str = "Timeline";

fn ms(ns: f64) -> Cell {
    Cell::num(format!("{:.3}", ns / 1e6), ns)
}

fn us(ns: f64) -> Cell {
    Cell::num(format!("{:.2}", ns / 1e3), ns)
}

fn bytes(b: u64) -> Cell {
    Cell::num(human_size(b), b as f64)
}

/// What the page knows about the job besides the traces.
#[derive(Clone, Debug, Default)]
pub struct Job {
    /// The traced command of each trace, in order, where known (a pipeline's runs).
    pub commands: Vec<String>,
    /// dc-trace's summaries (`--summary-json`), for the probes that attached and how.
    pub probes: Vec<datasets::summary::Summary>,
}

/// Probes named on the page per layer; a layer's count is always whole.
pub const PROBES_NAMED: usize = 4;

fn shortlist(names: &[String]) -> String {
    let mut s = format!(
        "{}: {}",
        names.len(),
        names[..names.len().min(PROBES_NAMED)].join(", ")
    );
    if names.len() > PROBES_NAMED {
        s.push_str(", …");
    }
    s
}

pub fn job(page: &mut Page, s: &TraceSummary, job: &Job) {
    page.section("job", JOB);
    let mut t = Table::new(&["", ""]);
    let mut kv = |k: &str, v: String| t.row(vec![Cell::text(k), Cell::text(v)]);
    kv("traces", s.traces.len().to_string());
    if job.commands.is_empty() {
        kv("command", "not recorded in the trace".into());
    }
    for key in ["writer", "version", "host", "kernel", "clock", "time_unit"] {
        let mut values: Vec<&str> = s
            .headers
            .iter()
            .filter_map(|h| h.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()))
            .collect();
        values.sort_unstable();
        values.dedup();
        if !values.is_empty() {
            kv(key, values.join(", "));
        }
    }
    if s.headers.is_empty() {
        kv("hosts", s.hosts.join(", "));
        kv("writer", "no datacrumbs header (a foreign trace)".into());
    }
    kv("duration", seconds(s.duration_ns() as f64 * 1e-9));
    kv("processes", s.pids.len().to_string());
    let events: u64 = s.events.values().flat_map(|p| p.values()).sum();
    kv(
        "events",
        format!("{events} ({} metadata records besides)", s.metadata),
    );
    if s.read.skipped > 0 {
        kv("invalid lines skipped", s.read.skipped.to_string());
    }
    page.table(&t);
    let mut t = Table::new(&["trace", "command"]);
    for (i, path) in s.traces.iter().enumerate() {
        let command = job.commands.get(i).cloned().unwrap_or_default();
        t.row(vec![
            Cell::text(path.display().to_string()),
            Cell::text(command),
        ]);
    }
    page.table(&t);
    if events == 0 {
        page.note("The traces hold no events: there is nothing to summarize.");
    }

    page.subsection("Events per layer");
    let mut t = Table::new(&["layer", "events", "phases"]).sortable();
    for (layer, phases) in &s.events {
        let n: u64 = phases.values().sum();
        let ph: Vec<String> = phases.iter().map(|(p, n)| format!("{p}: {n}")).collect();
        t.row(vec![
            Cell::text(layer),
            Cell::int(n),
            Cell::text(ph.join(", ")),
        ]);
    }
    page.table(&t);

    page.subsection("Drops and kernel-skipped runs");
    if s.closings.is_empty() {
        page.note("No dc_closing record: the trace was not written by dc-trace, so its losses are unknown.");
    } else {
        let mut records: Vec<(&str, Vec<&str>)> = Vec::new();
        for (k, v) in s.closings.iter().flatten() {
            match records.iter_mut().find(|(r, _)| r == k) {
                Some((_, vs)) => vs.push(v),
                None => records.push((k, vec![v])),
            }
        }
        let mut t = Table::new(&["record", "value"]);
        for (k, vs) in records {
            let sum: Option<i64> = vs.iter().map(|v| v.parse::<i64>().ok()).sum();
            let value = match sum {
                Some(n) => n.to_string(),
                None => vs.join("; "),
            };
            t.row(vec![Cell::text(k), Cell::text(value)]);
        }
        page.table(&t);
        if s.closings.len() > 1 {
            page.note(&format!(
                "Counts summed over the {} traces' closing records.",
                s.closings.len()
            ));
        }
    }

    page.subsection("Probes");
    if job.probes.is_empty() {
        page.note("The trace does not record its probes; give dc-report the summary dc-trace wrote with --summary-json to list them.");
    }
    for summary in &job.probes {
        let mut t = Table::new(&["layer", "mechanism", "attached", "refused"]);
        for l in &summary.layers {
            let refused: Vec<String> = l
                .refused
                .iter()
                .map(|r| format!("{} ({}): {}", r.probe, r.mechanism, r.reason))
                .collect();
            t.row(vec![
                Cell::text(&l.layer),
                Cell::text(l.mechanism.to_string()),
                Cell::text(shortlist(&l.attached)),
                Cell::text(refused.join("; ")),
            ]);
        }
        page.table(&t);
    }
}

/// Mean time per call of each group, split by layer (exclusive), as stacked bars and as a table.
pub fn time(page: &mut Page, intro: &str, group: &str, b: &Breakdown) -> Result<(), ChartError> {
    page.section("time", TIME);
    page.paragraph(intro);
    if b.groups.is_empty() {
        page.note("No calls: there is no time to split.");
        return Ok(());
    }
    page.chart(&StackedBars {
        title: format!("Mean time per call by {group}, split by layer (exclusive)"),
        breakdown: b,
    })?;
    let mut headers = vec![group, "calls", "mean µs"];
    headers.extend(b.layers.iter().map(|l| l.as_str()));
    let mut t = Table::new(&headers).sortable();
    for g in &b.groups {
        let mut row = vec![Cell::text(&g.label), Cell::int(g.calls), us(g.mean_dur_ns)];
        row.extend(g.mean_ns.iter().map(|&v| us(v)));
        t.row(row);
    }
    page.table(&t);
    page.note("Every cell is µs per call; a row's layers add up to its mean.");
    Ok(())
}

pub fn operations(page: &mut Page, s: &TraceSummary) -> Result<(), ChartError> {
    page.section("operations", OPERATIONS);
    let mut rows: Vec<(&str, &str, &crate::summary::OpStats)> = s
        .ops
        .iter()
        .flat_map(|(l, ops)| ops.iter().map(move |(o, st)| (l.as_str(), o.as_str(), st)))
        .collect();
    if rows.is_empty() {
        page.note("No events.");
        return Ok(());
    }
    rows.sort_by(|a, b| {
        b.2.time_ns
            .cmp(&a.2.time_ns)
            .then(b.2.count.cmp(&a.2.count))
            .then((a.0, a.1).cmp(&(b.0, b.1)))
    });
    let mut t =
        Table::new(&["layer", "operation", "count", "bytes", "time ms", "mean µs"]).sortable();
    let op_row = |l: &str, o: &str, count: u64, b: u64, time_ns: u64| {
        vec![
            Cell::text(l),
            Cell::text(o),
            Cell::int(count),
            bytes(b),
            ms(time_ns as f64),
            us(time_ns as f64 / count.max(1) as f64),
        ]
    };
    for (l, o, st) in rows.iter().take(TOP_OPS) {
        t.row(op_row(l, o, st.count, st.bytes, st.time_ns));
    }
    if rows.len() > TOP_OPS {
        let rest = &rows[TOP_OPS..];
        t.row(op_row(
            "",
            &format!("{} more operations", rest.len()),
            rest.iter().map(|r| r.2.count).sum(),
            rest.iter().map(|r| r.2.bytes).sum(),
            rest.iter().map(|r| r.2.time_ns).sum(),
        ));
    }
    page.table(&t);
    page.note("Time is inclusive: a layer's events contain the events of the layers below them.");

    page.subsection("Access sizes");
    if s.io_calls() == 0 {
        page.note(&format!(
            "No read or write calls with a size in the call layers ({}).",
            CALL_LAYERS.join(", ")
        ));
        return Ok(());
    }
    page.chart(&SizeHistogram {
        counts: (0..SIZE_BINS.len())
            .map(|i| (s.size_histogram[0][i], s.size_histogram[1][i]))
            .collect(),
    })?;
    page.subsection("Common access sizes");
    let mut t = Table::new(&["access size (bytes)", "direction", "calls"]);
    for (size, d, count) in s.top_sizes(TOP_SIZES) {
        let d = match d {
            Direction::Read => "read",
            Direction::Write => "write",
        };
        t.row(vec![Cell::int(size), Cell::text(d), Cell::int(count)]);
    }
    page.table(&t);
    Ok(())
}

const FILE_HEADERS: [&str; 10] = [
    "layer",
    "file",
    "bytes read",
    "bytes written",
    "reads",
    "writes",
    "ops",
    "time ms",
    "MiB/s",
    "sequential share",
];

/// Every (layer, file) row as CSV, most bytes first; bytes exact, time in nanoseconds.
pub fn files_csv(s: &TraceSummary) -> String {
    let mut out = String::from(
        "layer,file,bytes_read,bytes_written,reads,writes,ops,time_ns,bandwidth_mibs,sequential_share\n",
    );
    let quote = |f: &str| format!("\"{}\"", f.replace('"', "\"\""));
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for (l, f, st) in s.file_rows() {
        let _ = writeln!(
            out,
            "{l},{},{},{},{},{},{},{},{},{}",
            quote(f),
            st.bytes_read,
            st.bytes_written,
            st.reads,
            st.writes,
            st.ops,
            st.time_ns,
            opt(st.bandwidth_mibs()),
            opt(st.sequential_share())
        );
    }
    out
}

pub fn per_file(page: &mut Page, s: &TraceSummary, csv_name: &str) {
    page.section("files", PER_FILE);
    let rows = s.file_rows();
    if rows.is_empty() {
        page.note(&format!(
            "No calls on a named file in the call layers ({}).",
            CALL_LAYERS.join(", ")
        ));
        return;
    }
    page.raw(&format!(
        "<p>{} files, the {} with the most bytes first; click a heading to sort. Every file is in <a href=\"{}\">{}</a>.</p>",
        rows.len(),
        rows.len().min(TOP_FILES),
        escape(csv_name),
        escape(csv_name)
    ));
    let mut t = Table::new(&FILE_HEADERS).sortable();
    for (l, f, st) in rows.into_iter().take(TOP_FILES) {
        let bw = st.bandwidth_mibs();
        let seq = st.sequential_share();
        t.row(vec![
            Cell::text(l),
            Cell::text(f),
            Cell::num(st.bytes_read.to_string(), st.bytes_read as f64),
            Cell::num(st.bytes_written.to_string(), st.bytes_written as f64),
            Cell::int(st.reads),
            Cell::int(st.writes),
            Cell::int(st.ops),
            ms(st.time_ns as f64),
            Cell::num(
                bw.map(|v| format!("{v:.1}")).unwrap_or("n/a".into()),
                bw.unwrap_or(f64::NAN),
            ),
            Cell::num(
                seq.map(|v| format!("{:.0}%", v * 100.0))
                    .unwrap_or("n/a".into()),
                seq.unwrap_or(f64::NAN),
            ),
        ]);
    }
    page.table(&t);
    page.note("Bandwidth is bytes over the time spent in the file's calls. Sequential share: of the calls whose own and previous offsets (same file and process) are known, those starting at the previous offset plus its size (n/a: the trace records no offsets).");
}

pub fn timeline(page: &mut Page, s: &TraceSummary) -> Result<(), ChartError> {
    page.section("timeline", TIMELINE);
    let chart = TimelineChart::from_timeline(&s.timeline);
    if chart.rows.is_empty() {
        page.note("No read or write call moved bytes.");
    } else {
        page.chart(&chart)?;
    }
    let traces: Vec<String> = s
        .traces
        .iter()
        .map(|p| format!("<code>{}</code>", escape(&p.display().to_string())))
        .collect();
    page.raw(&format!(
        "<p>Every event on its thread's track: open <a href=\"https://ui.perfetto.dev/\">ui.perfetto.dev</a> and choose “Open trace file” with {}.</p>",
        traces.join(", ")
    ));
    Ok(())
}
