//! Thread and process names over time, from Chrome-trace `thread_name` and `process_name` metadata events. dc-trace
//! writes one per name change, at the time of the change, so a thread renamed mid-run (a pool worker, a postgres
//! backend after exec) has several. Names are scoped per (input, pid) like the interned strings, since a tid means
//! a thread only within its own trace.

use std::collections::HashMap;

use super::scope::Scope;
use crate::{Event, Phase};

/// Names in force from a time on, sorted by that time.
type Timeline = Vec<(u64, String)>;

#[derive(Clone, Debug, Default)]
pub struct ThreadNames {
    threads: HashMap<(Scope, u64), Timeline>,
    processes: HashMap<Scope, Timeline>,
}

impl ThreadNames {
    /// Learns from one event of input `input`, when it is a `thread_name` or `process_name` metadata event.
    pub fn insert_event_in(&mut self, input: u32, e: &Event) {
        if e.ph != Phase::Metadata {
            return;
        }
        let Some(name) = &e.args.name else { return };
        let scope = Scope { input, pid: e.pid };
        let timeline = match e.name.as_str() {
            "thread_name" => self.threads.entry((scope, e.tid)).or_default(),
            "process_name" => self.processes.entry(scope).or_default(),
            _ => return,
        };
        insert(timeline, e.ts_ns, name);
    }

    /// The name thread `tid` had at `ts`: the last one given at or before `ts`, else its first.
    pub fn thread_at(&self, scope: Scope, tid: u64, ts: u64) -> Option<&str> {
        at(self.threads.get(&(scope, tid))?, ts)
    }

    /// The name the process had at `ts`: the last one given at or before `ts`, else its first.
    pub fn process_at(&self, scope: Scope, ts: u64) -> Option<&str> {
        at(self.processes.get(&scope)?, ts)
    }

    /// Adds every name of `other`, the names of one input, as input `input`.
    pub fn merge_input(&mut self, input: u32, other: &ThreadNames) {
        for ((s, tid), v) in &other.threads {
            let mine = self
                .threads
                .entry((Scope { input, pid: s.pid }, *tid))
                .or_default();
            v.iter().for_each(|(ts, n)| insert(mine, *ts, n));
        }
        for (s, v) in &other.processes {
            let mine = self
                .processes
                .entry(Scope { input, pid: s.pid })
                .or_default();
            v.iter().for_each(|(ts, n)| insert(mine, *ts, n));
        }
    }
}

/// Of names given at the same time, the one read last holds.
fn insert(timeline: &mut Timeline, ts: u64, name: &str) {
    let i = timeline.partition_point(|(t, _)| *t <= ts);
    timeline.insert(i, (ts, name.to_owned()));
}

fn at(timeline: &Timeline, ts: u64) -> Option<&str> {
    let n = timeline.partition_point(|(t, _)| *t <= ts);
    timeline
        .get(n.saturating_sub(1))
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Args;

    fn named(kind: &str, pid: u64, tid: u64, ts: u64, name: &str) -> Event {
        Event {
            pid,
            tid,
            ts_ns: ts,
            args: Args {
                name: Some(name.into()),
                ..Args::default()
            },
            ..Event::new(kind, "datacrumbs", Phase::Metadata)
        }
    }

    #[test]
    fn a_thread_has_the_name_last_given_before_the_time_and_its_first_before_any() {
        let mut t = ThreadNames::default();
        for e in [
            named("thread_name", 1, 2, 200, "worker"),
            named("thread_name", 1, 2, 100, "python3"),
            named("thread_name", 1, 3, 50, "other"),
            named("process_name", 1, 1, 100, "python3"),
        ] {
            t.insert_event_in(0, &e);
        }
        let s = Scope { input: 0, pid: 1 };
        let names: Vec<_> = [0, 100, 199, 200, 10_000]
            .map(|ts| t.thread_at(s, 2, ts))
            .to_vec();
        assert_eq!(
            names,
            [
                Some("python3"),
                Some("python3"),
                Some("python3"),
                Some("worker"),
                Some("worker")
            ]
        );
        assert_eq!(t.thread_at(s, 4, 100), None);
        assert_eq!(t.thread_at(Scope { input: 1, pid: 1 }, 2, 100), None);
        assert_eq!(t.process_at(s, 0), Some("python3"));
    }

    #[test]
    fn merged_inputs_keep_their_own_names_for_the_same_tid() {
        let (mut a, mut b) = (ThreadNames::default(), ThreadNames::default());
        a.insert_event_in(0, &named("thread_name", 1, 2, 0, "in a"));
        b.insert_event_in(0, &named("thread_name", 1, 2, 0, "in b"));
        let mut all = ThreadNames::default();
        all.merge_input(0, &a);
        all.merge_input(1, &b);
        let got = [0, 1].map(|input| all.thread_at(Scope { input, pid: 1 }, 2, 5));
        assert_eq!(got, [Some("in a"), Some("in b")]);
    }
}
