//! The page's "By thread" section: each thread's calls and their time beside the time its kernel events took outside
//! every call (the no-call table, `features::nocall`), so that a thread reading through mmap'd pages, or waiting
//! between its calls, shows with the time it spent that way.

use std::collections::BTreeMap;

use features::{FeatureKind, FeatureMatrix};

use crate::html::{Cell, Page, Table};

pub const BY_THREAD: &str = "By thread";
/// Rows of the table, the threads with the most time first.
pub const TOP_THREADS: usize = 50;
/// Layers named for a thread's time outside calls.
const TOP_LAYERS: usize = 3;

/// One thread: its calls, and what its kernel events outside them add up to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadRow {
    pub pid: u64,
    pub tid: u64,
    pub process: Option<String>,
    pub thread: Option<String>,
    pub calls: u64,
    /// The calls' summed durations.
    pub call_ns: u64,
    /// The exclusive time of its events outside every call (the bucket's `dur`).
    pub outside_ns: u64,
    pub outside_events: u64,
    /// That time by layer, largest first.
    pub outside_layers: Vec<(String, u64)>,
}

/// Every thread of `calls` (one row per call) and `no_call` (one row per thread), the most time first.
pub fn rows(calls: &FeatureMatrix, no_call: &FeatureMatrix) -> Vec<ThreadRow> {
    let mut by_thread: BTreeMap<(u64, u64), ThreadRow> = BTreeMap::new();
    for i in 0..calls.n_rows() {
        let r = entry(&mut by_thread, calls, i);
        r.calls += 1;
        r.call_ns += calls.dur_ns[i];
    }
    for i in 0..no_call.n_rows() {
        let r = entry(&mut by_thread, no_call, i);
        r.outside_ns += no_call.dur_ns[i];
        for f in &no_call.features {
            let v = f.values[i] as u64;
            match f.kind {
                FeatureKind::Count => r.outside_events += v,
                FeatureKind::ExclusiveNs if v > 0 => r.outside_layers.push((f.layer.clone(), v)),
                _ => {}
            }
        }
        r.outside_layers
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    }
    let mut out: Vec<ThreadRow> = by_thread.into_values().collect();
    out.sort_by_key(|r| (std::cmp::Reverse(r.call_ns + r.outside_ns), r.pid, r.tid));
    out
}

/// The row of row `i`'s thread of `m`, named by its first row that has names.
fn entry<'a>(
    by_thread: &'a mut BTreeMap<(u64, u64), ThreadRow>,
    m: &FeatureMatrix,
    i: usize,
) -> &'a mut ThreadRow {
    let r = by_thread
        .entry((m.pid[i], m.tid[i]))
        .or_insert_with(|| ThreadRow {
            pid: m.pid[i],
            tid: m.tid[i],
            ..ThreadRow::default()
        });
    r.process = r.process.take().or_else(|| m.process[i].clone());
    r.thread = r.thread.take().or_else(|| m.thread[i].clone());
    r
}

fn ms(ns: u64) -> Cell {
    Cell::num(format!("{:.3}", ns as f64 / 1e6), ns as f64)
}

pub fn section(page: &mut Page, rows: &[ThreadRow]) {
    page.section("threads", BY_THREAD);
    page.paragraph(
        "Each thread's calls and their time, beside the time its kernel events (page faults, off-CPU waits, block \
         requests, ...) took outside every call: exclusive time, each instant counted once for the innermost event. \
         A thread that reads through mmap'd pages does its I/O there.",
    );
    if rows.is_empty() {
        page.note("No thread has a call or a kernel event.");
        return;
    }
    let mut t = Table::new(&[
        "process",
        "thread",
        "pid",
        "tid",
        "calls",
        "call time (ms)",
        "outside calls (ms)",
        "events outside calls",
        "where the outside time goes",
    ])
    .sortable();
    for r in rows.iter().take(TOP_THREADS) {
        let total = r.outside_ns.max(1) as f64;
        let layers: Vec<String> = r
            .outside_layers
            .iter()
            .take(TOP_LAYERS)
            .map(|(l, ns)| format!("{l} {:.0}%", *ns as f64 / total * 100.0))
            .collect();
        t.row(vec![
            Cell::text(r.process.clone().unwrap_or_default()),
            Cell::text(r.thread.clone().unwrap_or_default()),
            Cell::int(r.pid),
            Cell::int(r.tid),
            Cell::int(r.calls),
            ms(r.call_ns),
            ms(r.outside_ns),
            Cell::int(r.outside_events),
            Cell::text(layers.join(", ")),
        ]);
    }
    page.table(&t);
    if rows.len() > TOP_THREADS {
        page.note(&format!(
            "The {TOP_THREADS} threads with the most time of {}.",
            rows.len()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::{Args, Event, Phase};

    fn event(tid: u64, cat: &str, name: &str, ts: u64, dur: u64) -> Event {
        Event {
            id: None,
            name: name.into(),
            cat: cat.into(),
            ph: if dur == 0 {
                Phase::Instant
            } else {
                Phase::Complete
            },
            pid: 7,
            tid,
            ts_ns: ts,
            dur_ns: dur,
            args: Args::default(),
        }
    }

    #[test]
    fn a_thread_reading_through_a_mapping_shows_its_time_outside_calls() {
        // Thread 1: two reads (100 ns and 50 ns). Thread 2: no call, three page faults and a 300 ns D sleep of
        // which a block request covers 200 ns.
        let events = vec![
            event(1, "sys", "read", 0, 100),
            event(1, "sys", "read", 200, 50),
            event(2, "mm", "page_fault_user", 10, 0),
            event(2, "mm", "page_fault_user", 20, 0),
            event(2, "block", "block_device_read", 50, 200),
            event(2, "sched", "offcpu_D", 30, 300),
            event(2, "mm", "page_fault_user", 400, 0),
        ];
        let t = features::tables_of_events(&events, &features::BuildOptions::default()).unwrap();
        let rows = rows(&t.matrix, &t.no_call);
        assert_eq!(
            rows,
            [
                ThreadRow {
                    pid: 7,
                    tid: 2,
                    outside_ns: 300,
                    outside_events: 5,
                    outside_layers: vec![("block".into(), 200), ("sched".into(), 100)],
                    ..ThreadRow::default()
                },
                ThreadRow {
                    pid: 7,
                    tid: 1,
                    calls: 2,
                    call_ns: 150,
                    ..ThreadRow::default()
                },
            ]
        );
        let mut page = Page::new("t");
        section(&mut page, &rows);
        let html = page.finish();
        assert!(html.contains("block 67%, sched 33%"), "{html}");
    }
}
