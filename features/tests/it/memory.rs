//! Memory is bounded per thread: the events a thread holds do not grow with the length of the trace, and stay
//! within the events it has between two system calls; the rows whose intervals it keeps for their exclusive time
//! are its latest.

use std::collections::HashMap;
use std::path::PathBuf;

use datasets::read::{ReadOptions, read_all};
use datasets::{Event, Phase};
use features::BuildOptions;
use features::stream::Stream;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);

/// The most events, and the most unsettled rows, any thread holds between batches of 512 events.
fn most_pending(events: &[Event]) -> (usize, usize) {
    let opts = BuildOptions::default();
    let mut stream = Stream::new(&opts, 2, None);
    let (mut most, mut rows) = (0, 0);
    for (i, batch) in events.chunks(512).enumerate() {
        stream.add(batch, (i * 512) as u64).unwrap();
        assert!(!stream.disorder());
        for t in stream.shards.iter().flat_map(|s| &s.threads) {
            most = most.max(t.pending());
            rows = rows.max(t.unsettled());
        }
    }
    (most, rows)
}

/// The most events one thread has in a row, in file order, between two of its system call events.
fn longest_run(events: &[Event]) -> usize {
    let mut runs: HashMap<(u64, u64), usize> = HashMap::new();
    let mut longest = 0;
    for e in events
        .iter()
        .filter(|e| matches!(e.ph, Phase::Complete | Phase::Instant))
    {
        let run = runs.entry((e.pid, e.tid)).or_default();
        if e.cat == "sys" {
            *run = 0;
        } else {
            *run += 1;
            longest = longest.max(*run);
        }
    }
    longest
}

#[test]
fn held_events_do_not_grow_with_the_trace() {
    let events = read_all(&[PathBuf::from(TRACE)], ReadOptions::default())
        .unwrap()
        .events;
    let start = events.iter().map(|e| e.ts_ns).min().unwrap();
    let end = events.iter().map(Event::end_ns).max().unwrap();
    // The trace again and again on the same thread, each copy after the previous one.
    let copies = |n: u64| -> Vec<Event> {
        (0..n)
            .flat_map(|k| {
                events.iter().map(move |e| Event {
                    ts_ns: e.ts_ns + k * (end - start + 1),
                    ..e.clone()
                })
            })
            .collect()
    };
    let mut held = Vec::new();
    for trace in [copies(1), copies(2), copies(3)] {
        let (most, rows) = most_pending(&trace);
        let longest = longest_run(&trace);
        assert!(
            0 < most && most <= longest,
            "{most} events held, {longest} between system calls"
        );
        // A row is settled when the thread's next system call starts: only the latest one waits.
        assert_eq!(rows, 1, "unsettled rows");
        held.push(most);
    }
    assert_eq!(held[1], held[2], "held events grow with the trace");
}
