//! The report's opening section: the findings, most costly first, and against a baseline, the diagnosis.

use crate::diagnose::Finding;
use crate::diagnose::compare::Comparison;
use crate::diagnose::thresholds::WALL_NOISE_SHARE;
use crate::html::{Cell, Page, Table};

/// The section's heading.
pub const FINDINGS: &str = "Findings";
/// Findings listed on the page; the JSON has them all.
pub const TOP_FINDINGS: usize = 20;

fn ms(ns: f64) -> Cell {
    Cell::num(format!("{:.3}", ns / 1e6), ns)
}

fn us(ns: f64) -> Cell {
    Cell::num(format!("{:.2}", ns / 1e3), ns)
}

fn pct(share: f64) -> Cell {
    Cell::num(format!("{:.1}%", share * 100.0), share)
}

fn evidence(f: &Finding) -> String {
    f.evidence
        .iter()
        .map(|(k, v)| {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{k} {}", *v as i64)
            } else {
                format!("{k} {v:.3}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn section(page: &mut Page, findings: &[Finding], comparison: Option<&Comparison>) {
    page.section("findings", FINDINGS);
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
    if findings.is_empty() {
        page.note("No finding: no rule's threshold is reached.");
        return;
    }
    page.paragraph(
        "Each finding claims its own time: an application pattern first (the cause), then the layers of what is left, so the shares add up to at most 100% of the I/O time (every call's duration, over all threads). The gain is what the job would save without the cause.",
    );
    let mut t = Table::new(&[
        "scope",
        "layer",
        "reason",
        "cost ms",
        "share of I/O time",
        "gain ms",
        "how the gain is computed",
        "evidence",
        "what to do",
    ]);
    for f in findings.iter().take(TOP_FINDINGS) {
        t.row(vec![
            Cell::text(f.scope.label()),
            Cell::text(&f.layer),
            Cell::text(f.reason.slug()),
            ms(f.cost_ns as f64),
            pct(f.share),
            ms(f.gain_ns as f64),
            Cell::text(format!("{}: {}", f.gain_method.slug, f.gain_method.how)),
            Cell::text(evidence(f)),
            Cell::text(&f.recommendation),
        ]);
    }
    page.table(&t);
    if findings.len() > TOP_FINDINGS {
        page.note(&format!(
            "{} findings; the {TOP_FINDINGS} most costly are shown, the JSON (--json) has every one.",
            findings.len()
        ));
    }
}
