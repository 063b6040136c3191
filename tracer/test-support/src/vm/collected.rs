//! What one `dc-trace collect` run left behind (the trace, read with `datasets`, and the JSON and
//! text summaries), and how its events nest.

use std::path::Path;

use datasets::read::{ReadOptions, read_all};
use datasets::{Event, Phase};
use serde_json::Value;

pub struct Collected {
    /// Where the run happened, for messages: `VM 6.1` or `host`.
    pub place: String,
    pub events: Vec<Event>,
    files: Vec<(datasets::Hash, String)>,
    pub summary: Value,
    /// The summary as dc-trace printed it on stderr.
    pub text: String,
}

impl Collected {
    pub fn load(
        place: &str,
        trace: &Path,
        summary: &Path,
        text: &str,
    ) -> Result<Collected, String> {
        let read = read_all(&[trace.to_owned()], ReadOptions::default())
            .map_err(|e| format!("{place}: reading {}: {e}", trace.display()))?;
        let json = std::fs::read_to_string(summary)
            .map_err(|e| format!("{place}: reading {}: {e}", summary.display()))?;
        let summary = serde_json::from_str(&json)
            .map_err(|e| format!("{place}: {} is not JSON: {e}", summary.display()))?;
        Ok(Collected {
            place: place.to_owned(),
            files: read
                .strings
                .files()
                .map(|(h, s)| (h, s.to_owned()))
                .collect(),
            events: read.events,
            summary,
            text: text.to_owned(),
        })
    }

    /// The summary's report of `layer`: mechanism, attached probes and refusals.
    pub fn layer(&self, layer: &str) -> &Value {
        self.summary["layers"]
            .as_array()
            .and_then(|ls| ls.iter().find(|l| l["layer"] == layer))
            .unwrap_or_else(|| {
                panic!(
                    "{}: the summary has no layer {layer}:\n{}",
                    self.place, self.text
                )
            })
    }

    pub fn mechanism(&self, layer: &str) -> &str {
        self.layer(layer)["mechanism"].as_str().unwrap_or("")
    }

    pub fn attached(&self, layer: &str) -> Vec<&str> {
        strings(&self.layer(layer)["attached"])
    }

    /// `(probe, mechanism, reason)` of each refusal.
    pub fn refused(&self, layer: &str) -> Vec<(&str, &str, &str)> {
        self.layer(layer)["refused"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .map(|r| {
                        (
                            r["probe"].as_str().unwrap_or(""),
                            r["mechanism"].as_str().unwrap_or(""),
                            r["reason"].as_str().unwrap_or(""),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn events_in(&self, layer: &str) -> u64 {
        self.summary["events_per_layer"][layer]
            .as_u64()
            .unwrap_or(0)
    }

    /// The line of the printed summary that reports `layer`.
    pub fn text_line(&self, layer: &str) -> &str {
        self.text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(layer))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no summary line for layer {layer}:\n{}",
                    self.place, self.text
                )
            })
    }

    pub fn file(&self, e: &Event) -> Option<&str> {
        let h = e.args.fhash?;
        self.files
            .iter()
            .find(|(fh, _)| *fh == h)
            .map(|(_, s)| s.as_str())
    }

    /// Complete events of layer `cat` named `name` on file `path`, in time order.
    pub fn calls(&self, cat: &str, name: &str, path: &str) -> Vec<&Event> {
        let mut calls: Vec<&Event> = self
            .events
            .iter()
            .filter(|e| e.ph == Phase::Complete && e.cat == cat && e.name == name)
            .filter(|e| self.file(e) == Some(path))
            .collect();
        calls.sort_by_key(|e| e.ts_ns);
        calls
    }

    /// Events of layer `cat` on the same thread as `outer` and within its interval.
    pub fn inside(&self, outer: &Event, cat: &str) -> Vec<&Event> {
        let mut inner: Vec<&Event> = self
            .events
            .iter()
            .filter(|e| e.cat == cat && !std::ptr::eq(*e, outer))
            .filter(|e| e.pid == outer.pid && e.tid == outer.tid)
            .filter(|e| e.ts_ns >= outer.ts_ns && e.end_ns() <= outer.end_ns())
            .collect();
        inner.sort_by_key(|e| e.ts_ns);
        inner
    }

    /// Names of the events of `cat` inside `outer`, in time order.
    pub fn names_inside(&self, outer: &Event, cat: &str) -> Vec<String> {
        self.inside(outer, cat)
            .iter()
            .map(|e| e.name.to_string())
            .collect()
    }

    /// Events of any of `cats` inside `outer`, in time order.
    pub fn inside_any(&self, outer: &Event, cats: &[&str]) -> Vec<&Event> {
        let mut inner: Vec<&Event> = cats.iter().flat_map(|c| self.inside(outer, c)).collect();
        inner.sort_by_key(|e| e.ts_ns);
        inner
    }

    pub fn of_layers(&self, cats: &[&str]) -> Vec<&Event> {
        cats.iter().flat_map(|c| self.of_layer(c)).collect()
    }

    pub fn of_layer(&self, cat: &str) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.cat == cat && e.ph == Phase::Complete)
            .collect()
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}
