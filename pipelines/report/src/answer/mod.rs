//! The answer a report gives, built once from a [`Diagnosis`] and rendered three ways: a verdict in one line (the
//! job's wall-clock time, the share of it in I/O calls, the main cause and what removing it would gain), then every
//! finding, what would gain most first (the rest most costly first), each with its severity, a sentence in
//! words with units, the recommendation, the gain and two to four numbers named in words. [`terminal`], [`markdown`]
//! and [`html`] render it; none of them walks the diagnosis itself, so the three cannot drift apart. [`model`] holds
//! it, [`words`] says a finding in words, [`units`] formats its numbers.

pub mod html;
pub mod markdown;
pub mod model;
pub mod terminal;
pub mod units;
pub mod words;

use crate::diagnose::json::{Diagnosis, JobTime};
use crate::diagnose::thresholds::WALL_NOISE_SHARE;
use crate::diagnose::{Finding, Reason};
pub use model::{Answer, HIGH_SHARE, Item, MINOR_SHARE, Number, Severity};
use words::{Phrase, said};

impl Item {
    pub fn of(f: &Finding) -> Item {
        let Phrase { sentence, numbers } = said(f);
        Item {
            severity: Severity::of(f.share),
            sentence,
            recommendation: f.recommendation.clone(),
            gain: (f.gain_ns > 0)
                .then(|| format!("saves up to {}", units::duration(f.gain_ns as f64))),
            gain_how: f.gain_method.how.clone(),
            numbers,
            key: format!("{} / {} ({})", f.layer, f.reason.slug(), f.scope.label()),
            evidence: f.evidence.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            files: f.files.as_ref().map(words::file_list),
        }
    }
}

impl Answer {
    pub fn of(d: &Diagnosis) -> Answer {
        Answer {
            verdict: verdict(d),
            comparison: d.comparison.as_ref().map(|c| {
                let said = match &c.cause {
                Some(cause) => format!(
                    "Against the baseline {}: {} of the added time ({}) is {}{}.",
                    c.baseline,
                    units::percent(cause.share),
                    units::duration(cause.added_ns),
                    words::reason(cause.reason, &cause.layer),
                    cause.through.as_ref().map_or(String::new(), |t| format!(
                        ", which shows as {}",
                        words::reason(t.reason, &t.layer)
                    )),
                ),
                None if c.wall.is_some() => format!(
                    "Against the baseline {}: no cause named, as the wall-clock time did not grow by more than {} of the baseline's, or no cause added that much.",
                    c.baseline,
                    units::percent(WALL_NOISE_SHARE)
                ),
                None => format!(
                    "Against the baseline {}: nothing added time, the candidate is not slower.",
                    c.baseline
                ),
                };
                match &c.programs_note {
                    Some(note) => format!("{said} Note: {note}."),
                    None => said,
                }
            }),
            items: d.findings.iter().map(Item::of).collect(),
            note: [&d.limits_note, &d.elsewhere_note]
                .into_iter()
                .flatten()
                .cloned()
                .reduce(|a, b| format!("{a} {b}")),
        }
    }
}

fn verdict(d: &Diagnosis) -> String {
    let job = d.job.as_ref().map_or_else(String::new, job_time);
    let cause = match d.findings.first() {
        None => "No finding: no rule's threshold is reached.".to_owned(),
        Some(f) => {
            let gain = if f.gain_ns > 0 {
                format!(
                    "; removing it saves up to {}",
                    units::duration(f.gain_ns as f64)
                )
            } else if matches!(
                f.reason,
                Reason::MemoryCopy | Reason::CallOverhead | Reason::KernelCpu | Reason::Compute
            ) {
                "; it is the calls' own work, saved only by making fewer or larger calls".to_owned()
            } else {
                String::new()
            };
            format!(
                "Main cause: {} ({} of the job's time){gain}.",
                words::cause(f),
                units::percent(f.share)
            )
        }
    };
    format!("{job}{cause}")
}

fn job_time(j: &JobTime) -> String {
    let io = units::duration(j.io_time_ns as f64);
    match (j.wall_ns, j.wall_in_calls_ns) {
        (Some(wall), Some(in_calls)) => format!(
            "The job ran {} ({} {}), {} of it in I/O calls ({io} of I/O time summed over threads). ",
            units::duration(wall as f64),
            units::count(j.threads.unwrap_or(0) as f64),
            if j.threads == Some(1) {
                "thread"
            } else {
                "threads"
            },
            units::percent(in_calls as f64 / wall as f64),
        ),
        _ => format!("The calls took {io} of I/O time summed over threads. "),
    }
}
