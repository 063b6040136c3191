//! Random nested traces: the matrix against brute-force O(n·m) implementations of both rules, for events in
//! completion order, in start order and shuffled. Exclusive time is checked nanosecond by nanosecond, and
//! `self_ns + Σ excl::* == dur` on every row. So is the no-call table: per thread, the kernel events no row holds.

use std::collections::BTreeMap;

use datasets::{Args, Event, Phase};
use features::{
    BuildOptions, FeatureKind, Mode, Tables, from_events, stream_tables, sweep_tables,
    tables_of_events,
};

use crate::common::{Cells, Exclusive, RowId, cells_of, exclusive_of};
use proptest::prelude::*;

/// (cat, name) of generated events; the first four `sys` names are rows (the oracle's own table), the first five
/// are system calls, the rest are not.
const NAMES: [(&str, &str); 13] = [
    ("sys", "read"),
    ("sys", "write"),
    ("sys", "__x64_sys_openat"),
    ("sys", "ksys_read [kernel]"),
    ("sys", "close"),
    ("vfs", "vfs_read"),
    ("vfs", "read"),
    ("ext4", "ext4_file_read_iter [kernel]"),
    ("os_cache", "copy_to_page [kernel]"),
    ("block", "block_rq_issue"),
    ("sched", "offcpu_D"),
    ("irq", "irq_handler"),
    ("c", "fread"),
];
const SYSCALLS: u8 = 5;

/// The documented layer order, for the layers above: an instant that innermost intervals of several layers share
/// goes to the first of them here.
const ORDER: [&str; 8] = [
    "irq", "block", "os_cache", "ext4", "vfs", "sys", "c", "sched",
];

fn oracle_op(cat: &str, name: &str) -> Option<&'static str> {
    match (cat, name) {
        ("sys", "read") | ("sys", "ksys_read [kernel]") => Some("read"),
        ("sys", "write") => Some("write"),
        ("sys", "__x64_sys_openat") => Some("openat"),
        _ => None,
    }
}

fn event(thread: u8, ts: u64, dur: u64, name: u8) -> Event {
    let (cat, name) = NAMES[name as usize % NAMES.len()];
    Event {
        id: None,
        name: name.into(),
        cat: cat.into(),
        ph: if dur == 0 && thread.is_multiple_of(2) {
            Phase::Instant
        } else {
            Phase::Complete
        },
        pid: 100 + u64::from(thread / 2),
        tid: 200 + u64::from(thread),
        ts_ns: ts,
        dur_ns: dur,
        args: Args::default(),
    }
}

type Leaf = (u8, u8, u8);
type Child = (u8, u8, u8, Vec<Leaf>);
type Root = (u8, u16, u8, u8, Vec<Child>);

/// Roots anywhere (they may overlap each other), children inside their root, grandchildren inside their child.
/// Offsets and lengths are taken modulo the room left, so nesting holds, with shared endpoints and zero durations.
fn trace() -> impl Strategy<Value = Vec<Event>> {
    let leaf = (any::<u8>(), any::<u8>(), any::<u8>());
    let child = (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        prop::collection::vec(leaf, 0..4),
    );
    let root = (
        0u8..4,
        0u16..400,
        0u8..60,
        any::<u8>(),
        prop::collection::vec(child, 0..5),
    );
    prop::collection::vec(root, 0..25).prop_map(|roots: Vec<Root>| {
        let mut events = Vec::new();
        for (thread, ts, len, name, children) in roots {
            let (ts, len) = (u64::from(ts), u64::from(len));
            events.push(event(thread, ts, len, name));
            for (off, clen, cname, leaves) in children {
                let cts = ts + u64::from(off) % (len + 1);
                let clen = u64::from(clen) % (ts + len - cts + 1);
                events.push(event(thread, cts, clen, cname));
                for (loff, llen, lname) in leaves {
                    let lts = cts + u64::from(loff) % (clen + 1);
                    let llen = u64::from(llen) % (cts + clen - lts + 1);
                    events.push(event(thread, lts, llen, lname));
                }
            }
        }
        events
    })
}

type Kernel = (u8, u8, u8, Vec<Leaf>);
/// (gap before, length, system call, wrapped by a user-level call, kernel events inside).
type Call = (u8, u8, u8, bool, Vec<Kernel>);

/// Traces as a tracer sees them: per thread, system calls one after another (touching when the gap is 0), kernel
/// events nested inside them, some calls inside a user-level call. Each event comes with its depth.
fn calls() -> impl Strategy<Value = Vec<(Event, u8)>> {
    let leaf = (any::<u8>(), any::<u8>(), any::<u8>());
    let kernel = (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        prop::collection::vec(leaf, 0..3),
    );
    let call = (
        0u8..4,
        0u8..40,
        0..SYSCALLS,
        any::<bool>(),
        prop::collection::vec(kernel, 0..4),
    );
    let thread = (0u8..30, prop::collection::vec(call, 0..10));
    prop::collection::vec(thread, 0..4).prop_map(|threads: Vec<(u8, Vec<Call>)>| {
        let kernel_name = |n: u8| SYSCALLS + n % (NAMES.len() as u8 - SYSCALLS - 1);
        let mut events = Vec::new();
        for (thread, (start, calls)) in threads.into_iter().enumerate() {
            let thread = thread as u8;
            let mut t = u64::from(start);
            for (gap, len, name, wrapped, kernel) in calls {
                let (ts, len) = (t + u64::from(gap), u64::from(len));
                events.push((event(thread, ts, len, name), 1));
                if wrapped {
                    let user = NAMES.len() as u8 - 1;
                    events.push((event(thread, ts.saturating_sub(1), len + 2, user), 0));
                }
                for (off, klen, kname, leaves) in kernel {
                    let kts = ts + u64::from(off) % (len + 1);
                    let klen = u64::from(klen) % (ts + len - kts + 1);
                    events.push((event(thread, kts, klen, kernel_name(kname)), 2));
                    for (loff, llen, lname) in leaves {
                        let lts = kts + u64::from(loff) % (klen + 1);
                        let llen = u64::from(llen) % (kts + klen - lts + 1);
                        events.push((event(thread, lts, llen, kernel_name(lname)), 3));
                    }
                }
                t = ts + len;
            }
        }
        events
    })
}

/// The events as written at completion: by end, enclosed events first.
fn completion_order(mut events: Vec<(Event, u8)>) -> Vec<Event> {
    events.sort_by_key(|(e, depth)| (e.end_ns(), std::cmp::Reverse(*depth)));
    events.into_iter().map(|(e, _)| e).collect()
}

/// The events by start, enclosing events first.
fn start_order(mut events: Vec<(Event, u8)>) -> Vec<Event> {
    events.sort_by_key(|(e, depth)| (e.ts_ns, *depth));
    events.into_iter().map(|(e, _)| e).collect()
}

/// Rows as (op, pid, tid, ts, dur) with their nonzero cells, in the matrix's row order.
fn brute_force(events: &[Event], notebook: bool) -> Vec<(RowId, Cells)> {
    let mut rows: Vec<(usize, &Event, &str)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| oracle_op(&e.cat, &e.name).map(|op| (i, e, op)))
        .collect();
    rows.sort_by_key(|(i, r, _)| (r.ts_ns, r.pid, r.tid, *i));
    rows.iter()
        .map(|&(i, r, op)| {
            let mut cells = Cells::new();
            for (j, e) in events.iter().enumerate() {
                let inside = if notebook {
                    e.ts_ns <= r.end_ns() && e.end_ns() >= r.ts_ns
                } else {
                    e.pid == r.pid
                        && e.tid == r.tid
                        && e.ts_ns >= r.ts_ns
                        && e.end_ns() <= r.end_ns()
                };
                if inside && j != i {
                    let cell = cells
                        .entry((e.cat.to_string(), e.name.to_string()))
                        .or_default();
                    cell.0 += e.dur_ns;
                    cell.1 += 1;
                }
            }
            ((op.to_string(), r.pid, r.tid, r.ts_ns, r.dur_ns), cells)
        })
        .collect()
}

/// Every row's exclusive time, one nanosecond at a time: at instant t the intervals active on the row's thread
/// (inside the row, dur > 0, of another layer than the row's) that hold no other active interval are the
/// innermost; the first of their layers in [`ORDER`] gets t. An instant no interval covers is the row's own.
fn brute_exclusive(events: &[Event]) -> Vec<(RowId, Exclusive, u64)> {
    let mut rows: Vec<(usize, &Event, &str)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| oracle_op(&e.cat, &e.name).map(|op| (i, e, op)))
        .collect();
    rows.sort_by_key(|(i, r, _)| (r.ts_ns, r.pid, r.tid, *i));
    let order = |cat: &str| ORDER.iter().position(|c| *c == cat).unwrap();
    rows.iter()
        .map(|&(_, r, op)| {
            let inside: Vec<&Event> = events
                .iter()
                .filter(|e| {
                    e.pid == r.pid
                        && e.tid == r.tid
                        && e.ts_ns >= r.ts_ns
                        && e.end_ns() <= r.end_ns()
                        && e.dur_ns > 0
                        && e.cat != r.cat
                })
                .collect();
            let mut excl = Exclusive::new();
            let mut own = 0;
            for t in r.ts_ns..r.end_ns() {
                let active: Vec<&&Event> = inside
                    .iter()
                    .filter(|e| e.ts_ns <= t && e.end_ns() > t)
                    .collect();
                let innermost = active.iter().filter(|x| {
                    !active.iter().any(|y| {
                        y.ts_ns >= x.ts_ns
                            && y.end_ns() <= x.end_ns()
                            && (y.ts_ns, y.end_ns()) != (x.ts_ns, x.end_ns())
                    })
                });
                match innermost.min_by_key(|e| order(&e.cat)) {
                    Some(e) => *excl.entry(e.cat.to_string()).or_default() += 1,
                    None => own += 1,
                }
            }
            ((op.to_string(), r.pid, r.tid, r.ts_ns, r.dur_ns), excl, own)
        })
        .collect()
}

/// Per thread with a kernel event (the layers of [`ORDER`] below `sys`) that no row holds, in (ts, pid, tid) order:
/// those events' cells, and their exclusive time one nanosecond at a time as [`brute_exclusive`] does; the bucket's
/// dur is that time, its own time 0.
#[allow(clippy::type_complexity)]
fn brute_no_call(events: &[Event]) -> (Vec<(RowId, Cells)>, Vec<(RowId, Exclusive, u64)>) {
    let rows: Vec<&Event> = events
        .iter()
        .filter(|e| oracle_op(&e.cat, &e.name).is_some())
        .collect();
    let kernel = ["irq", "block", "os_cache", "ext4", "vfs", "sched"];
    let mut threads: BTreeMap<(u64, u64), Vec<&Event>> = BTreeMap::new();
    for e in events.iter().filter(|e| kernel.contains(&e.cat.as_str())) {
        let held = rows.iter().any(|r| {
            r.pid == e.pid && r.tid == e.tid && e.ts_ns >= r.ts_ns && e.end_ns() <= r.end_ns()
        });
        if !held {
            threads.entry((e.pid, e.tid)).or_default().push(e);
        }
    }
    let order = |cat: &str| ORDER.iter().position(|c| *c == cat).unwrap();
    let mut out: Vec<(RowId, Cells, Exclusive)> = threads
        .into_iter()
        .map(|((pid, tid), outside)| {
            let mut cells = Cells::new();
            for e in &outside {
                let cell = cells
                    .entry((e.cat.to_string(), e.name.to_string()))
                    .or_default();
                cell.0 += e.dur_ns;
                cell.1 += 1;
            }
            let mut excl = Exclusive::new();
            let from = outside.iter().map(|e| e.ts_ns).min().unwrap();
            let to = outside.iter().map(|e| e.end_ns()).max().unwrap();
            for t in from..to {
                let active: Vec<&&Event> = outside
                    .iter()
                    .filter(|e| e.ts_ns <= t && e.end_ns() > t)
                    .collect();
                let innermost = active.iter().filter(|x| {
                    !active.iter().any(|y| {
                        y.ts_ns >= x.ts_ns
                            && y.end_ns() <= x.end_ns()
                            && (y.ts_ns, y.end_ns()) != (x.ts_ns, x.end_ns())
                    })
                });
                if let Some(e) = innermost.min_by_key(|e| order(&e.cat)) {
                    *excl.entry(e.cat.to_string()).or_default() += 1;
                }
            }
            let dur = excl.values().sum();
            (("(no call)".to_string(), pid, tid, from, dur), cells, excl)
        })
        .collect();
    out.sort_by_key(|(id, _, _)| (id.3, id.1, id.2));
    let cells = out
        .iter()
        .map(|(id, c, _)| (id.clone(), c.clone()))
        .collect();
    let excl = out.into_iter().map(|(id, _, x)| (id, x, 0)).collect();
    (cells, excl)
}

/// The columns the default build (no `--counts`) gives, by the brute-force cells: a time column for each name with
/// time in some row, a count column for each name counted but with no time in any row.
fn brute_columns(cells: &[(RowId, Cells)]) -> Vec<String> {
    let mut time: BTreeMap<&(String, String), u64> = BTreeMap::new();
    for (_, row) in cells {
        for (key, (ns, _)) in row {
            *time.entry(key).or_default() += ns;
        }
    }
    let named = |timed: bool, prefix: &'static str| {
        time.iter()
            .filter(move |(_, ns)| (**ns > 0) == timed)
            .map(move |((cat, name), _)| format!("{prefix}{cat}::{name}"))
            .collect::<Vec<String>>()
    };
    [named(true, ""), named(false, "count::")].concat()
}

fn options(mode: Mode) -> BuildOptions {
    BuildOptions {
        counts: true,
        mode,
        ..BuildOptions::default()
    }
}

/// The matrix's and the no-call table's cells and exclusive times are the brute force's.
fn matches_brute_force(t: &Tables, events: &[Event]) -> Result<(), TestCaseError> {
    prop_assert_eq!(cells_of(&t.matrix), brute_force(events, false));
    prop_assert_eq!(exclusive_of(&t.matrix), brute_exclusive(events));
    let (cells, exclusive) = brute_no_call(events);
    prop_assert_eq!(cells_of(&t.no_call), cells);
    prop_assert_eq!(exclusive_of(&t.no_call), exclusive);
    Ok(())
}

/// Events in this `order` stream (no fallback to the sweep), and give the brute force's matrix and the sweep's.
fn streams_and_matches_brute_force(events: &[Event], order: &str) -> Result<(), TestCaseError> {
    let m = stream_tables(events, &options(Mode::Exact)).unwrap();
    prop_assert!(m.is_some(), "{} order must stream", order);
    let m = m.unwrap();
    matches_brute_force(&m, events)?;
    prop_assert_eq!(m, sweep_tables(events, &options(Mode::Exact)).unwrap());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn exact_sweep_matches_brute_force(events in trace()) {
        let m = sweep_tables(&events, &options(Mode::Exact)).unwrap();
        matches_brute_force(&m, &events)?;
    }

    #[test]
    fn stream_matches_brute_force_in_completion_order(events in calls()) {
        streams_and_matches_brute_force(&completion_order(events), "completion")?;
    }

    #[test]
    fn stream_matches_brute_force_in_start_order(events in calls()) {
        streams_and_matches_brute_force(&start_order(events), "start")?;
    }

    #[test]
    fn shuffled_input_matches_brute_force(
        events in calls().prop_flat_map(|v| Just(completion_order(v)).prop_shuffle())
    ) {
        let t = tables_of_events(&events, &options(Mode::Exact)).unwrap();
        matches_brute_force(&t, &events)?;
    }

    #[test]
    fn shuffled_nested_input_matches_brute_force(events in trace().prop_flat_map(|v| Just(v).prop_shuffle())) {
        let t = tables_of_events(&events, &options(Mode::Exact)).unwrap();
        matches_brute_force(&t, &events)?;
    }

    #[test]
    fn point_events_are_counts_by_default(events in trace()) {
        let m = from_events(&events, &BuildOptions::default()).unwrap();
        let columns: Vec<String> = m
            .features
            .iter()
            .filter(|f| f.kind != FeatureKind::ExclusiveNs)
            .map(|f| f.column.clone())
            .collect();
        let cells = brute_force(&events, false);
        prop_assert_eq!(columns, brute_columns(&cells));
        let with_counts = from_events(&events, &options(Mode::Exact)).unwrap();
        for f in &m.features {
            prop_assert_eq!(&with_counts.column(&f.column).unwrap().values, &f.values);
        }
    }

    #[test]
    fn notebook_matches_brute_force(events in trace()) {
        let m = from_events(&events, &options(Mode::Notebook)).unwrap();
        prop_assert_eq!(cells_of(&m), brute_force(&events, true));
    }
}

#[test]
fn every_column_has_a_nonzero_count() {
    let events = vec![event(0, 10, 5, 0), event(0, 11, 0, 5), event(1, 11, 1, 7)];
    let m = from_events(&events, &options(Mode::Exact)).unwrap();
    let columns: Vec<&str> = m.features.iter().map(|f| f.column.as_str()).collect();
    assert_eq!(columns, ["count::vfs::vfs_read"]);
    assert_eq!(m.self_ns, [5]);
    let m = from_events(&events, &options(Mode::Notebook)).unwrap();
    let columns: Vec<&str> = m.features.iter().map(|f| f.column.as_str()).collect();
    assert_eq!(
        columns,
        [
            "ext4::ext4_file_read_iter [kernel]",
            "count::ext4::ext4_file_read_iter [kernel]",
            "count::vfs::vfs_read"
        ]
    );
}

#[test]
fn block_time_inside_a_sleep_goes_to_block() {
    // read [0, 100): vfs [10, 90) holds a D sleep [20, 80), which overlaps block [30, 85) without nesting, and an
    // irq [40, 45) lands inside the block interval.
    let events = vec![
        event(0, 0, 100, 0),
        event(0, 10, 80, 5),
        event(0, 20, 60, 10),
        event(0, 30, 55, 9),
        event(0, 40, 5, 11),
    ];
    let m = from_events(&events, &options(Mode::Exact)).unwrap();
    let excl: Vec<(&str, f64)> = m
        .features
        .iter()
        .filter(|f| f.kind == FeatureKind::ExclusiveNs)
        .map(|f| (f.column.as_str(), f.values[0]))
        .collect();
    // vfs: [10, 20) and [85, 90); sched: [20, 30); block: [30, 40) and [45, 85); irq: [40, 45); own: 20.
    assert_eq!(
        excl,
        [
            ("excl::block", 50.0),
            ("excl::irq", 5.0),
            ("excl::sched", 10.0),
            ("excl::vfs", 15.0)
        ]
    );
    assert_eq!(m.self_ns, [20]);
}
