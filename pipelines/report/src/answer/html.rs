//! The page's opening section: the verdict, against a baseline what changed, then the findings as the terminal
//! and Markdown list them, each with its evidence behind a disclosure.

use std::fmt::Write as _;

use crate::answer::model::{Answer, Item, MINOR_SHARE, Severity};
use crate::answer::units;
use crate::diagnose::compare::Comparison;
use crate::diagnose::thresholds::WALL_NOISE_SHARE;
use crate::html::{Cell, Page, Table, escape};

/// The section's heading.
pub const FINDINGS: &str = "Findings";

fn us(ns: f64) -> Cell {
    Cell::num(format!("{:.2}", ns / 1e3), ns)
}

/// The section: the verdict, the comparison with a baseline when there is one, and the findings.
pub fn section(page: &mut Page, a: &Answer, comparison: Option<&Comparison>) {
    page.section("findings", FINDINGS);
    page.raw(&format!(
        "<p class=\"verdict\"><b>Verdict:</b> {}</p>",
        escape(&a.verdict)
    ));
    if let Some(line) = &a.comparison {
        page.paragraph(line);
    }
    findings(page, a);
    if let Some(c) = comparison {
        page.subsection(&format!("Against the baseline {}", c.baseline));
        match &c.cause {
            Some(cause) => page.paragraph(&format!(
                "The added time is mostly {} / {}{}: {:.1}% of it ({:.3} ms).",
                cause.layer,
                cause.reason.slug(),
                cause.through.as_ref().map_or(String::new(), |t| format!(
                    ", through {} / {}",
                    t.layer,
                    t.reason.slug()
                )),
                cause.share * 100.0,
                cause.added_ns / 1e6
            )),
            None if c.wall.is_some() => page.note(&format!(
                "No cause: the wall-clock time did not grow, or no cause added, more than {:.0}% of the baseline's.",
                WALL_NOISE_SHARE * 100.0
            )),
            None => page.note("Nothing added time: the candidate is not slower."),
        }
        if let Some(w) = &c.wall {
            let parts: Vec<String> = w
                .causes
                .iter()
                .filter(|x| x.added_ns.abs() >= 1e-3 * w.delta_ns.unsigned_abs() as f64)
                .map(|x| format!("{} / {} {:+.3}", x.layer, x.reason.slug(), x.added_ns / 1e6))
                .collect();
            page.paragraph(&format!(
                "Wall-clock time: {:.3} ms against {:.3} ms ({:+.3} ms), instant by instant, by what the job waited for (ms): {}.",
                w.candidate_ns as f64 / 1e6,
                w.baseline_ns as f64 / 1e6,
                w.delta_ns as f64 / 1e6,
                parts.join(", ")
            ));
        }
        let mut t = Table::new(&[
            "calls",
            "baseline calls",
            "candidate calls",
            "Δ µs per call",
            "interval µs",
            "Δ MiB/s",
            "largest change",
        ])
        .sortable();
        for d in &c.calls {
            let largest = d
                .layers
                .iter()
                .max_by(|a, b| {
                    a.delta_ns_per_call
                        .abs()
                        .total_cmp(&b.delta_ns_per_call.abs())
                })
                .map(|l| {
                    format!(
                        "{} / {}: {:+.2} µs",
                        l.layer,
                        l.reason.slug(),
                        l.delta_ns_per_call / 1e3
                    )
                })
                .unwrap_or_default();
            let interval = match (&d.interval, &d.interval_note) {
                (Some(i), _) => format!("{:+.2} … {:+.2}", i.low / 1e3, i.high / 1e3),
                (None, Some(note)) => note.clone(),
                (None, None) => String::new(),
            };
            t.row(vec![
                Cell::text(&d.label),
                Cell::int(d.baseline_calls),
                Cell::int(d.candidate_calls),
                us(d.delta_ns_per_call),
                Cell::text(interval),
                Cell::num(
                    d.delta_mibs
                        .map(|v| format!("{v:+.1}"))
                        .unwrap_or("n/a".into()),
                    d.delta_mibs.unwrap_or(f64::NAN),
                ),
                Cell::text(largest),
            ]);
        }
        page.table(&t);
        let j = &c.job;
        let requests: Vec<String> = j
            .requests
            .iter()
            .map(|r| {
                format!(
                    "{} {}{} requests of {:.0} bytes on average against {} of {:.0}",
                    r.candidate_calls,
                    r.mode.as_ref().map_or(String::new(), |m| format!("{m} ")),
                    r.direction,
                    r.candidate_mean_bytes,
                    r.baseline_calls,
                    r.baseline_mean_bytes
                )
            })
            .collect();
        page.paragraph(&format!(
            "The whole job: {} calls took {:.3} ms against {} calls in {:.3} ms ({:+.3} ms){}{}.",
            j.candidate_calls,
            j.candidate_ns / 1e6,
            j.baseline_calls,
            j.baseline_ns / 1e6,
            j.delta_ns / 1e6,
            if requests.is_empty() {
                String::new()
            } else {
                format!("; {}", requests.join(", "))
            },
            if j.names_the_cause {
                "; the requests are smaller, so the cause is named over the whole job"
            } else {
                ""
            }
        ));
        if let Some(note) = &c.between_calls_note {
            page.note(note);
        }
        for (what, list) in [("appeared", &c.appeared), ("went away", &c.gone)] {
            if !list.is_empty() {
                let names: Vec<String> = list
                    .iter()
                    .map(|f| format!("{} / {} ({})", f.layer, f.reason.slug(), f.scope.label()))
                    .collect();
                page.paragraph(&format!("Findings that {what}: {}.", names.join("; ")));
            }
        }
    }
}

/// The findings in order: a severity, the sentence, the numbers, what to do, and behind a disclosure the evidence
/// as the JSON has it; the minor ones under one disclosure of their own.
fn findings(page: &mut Page, a: &Answer) {
    if a.items.is_empty() {
        page.note("No finding: no rule's threshold is reached.");
        return;
    }
    let mut out = String::from("<ol class=\"findings\">\n");
    let minor = a.minor();
    for (i, it) in a.items.iter().enumerate() {
        if it.severity == Severity::Low && i + minor == a.items.len() {
            let _ = write!(
                out,
                "</ol>\n<details class=\"minor\"><summary>{minor} minor finding{}, each below {} of the job's time</summary>\n<ol class=\"findings\" start=\"{}\">\n",
                if minor == 1 { "" } else { "s" },
                units::percent(MINOR_SHARE),
                i + 1
            );
        }
        item(&mut out, it);
    }
    out.push_str("</ol>\n");
    if minor > 0 {
        out.push_str("</details>\n");
    }
    page.raw(&out);
    if let Some(n) = &a.note {
        page.note(n);
    }
    page.note(
        "Each finding claims its own time: an application pattern first (the cause), then the layers of what is left, so the shares add up to at most 100% of the job's time (every call's duration, over all threads, and the wait for a CPU between calls when a finding names it). The gain is what the job would save without the cause.",
    );
}

fn item(out: &mut String, it: &Item) {
    let sev = it.severity.label();
    let _ = write!(
        out,
        "<li class=\"{}\"><p class=\"finding\"><span class=\"sev\">{sev}</span> {}</p><p class=\"numbers\">{}</p>",
        sev.to_lowercase(),
        escape(&it.sentence),
        escape(&it.numbers_line())
    );
    if it.severity != Severity::Low {
        let _ = write!(
            out,
            "<p class=\"todo\"><b>What to do:</b> {}</p>",
            escape(&it.recommendation)
        );
    }
    let _ = write!(
        out,
        "<details><summary>Evidence</summary><p><code>{}</code></p><p>{}</p><table>",
        escape(&it.key),
        escape(&format!("Gain: {}", it.gain_how))
    );
    if let Some(files) = &it.files {
        let _ = write!(out, "<p>{}</p>", escape(files));
    }
    for (k, v) in &it.evidence {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td class=\"n\">{v}</td></tr>",
            escape(k)
        );
    }
    out.push_str("</table></details></li>\n");
}
