//! Random nested traces: the matrix against brute-force O(n·m) implementations of both rules, for events in
//! completion order, in start order and shuffled.

use datasets::{Args, Event, Phase};
use features::{BuildOptions, Mode, from_events, stream_events};

mod common;
use common::{Cells, RowId, cells_of};
use proptest::prelude::*;

/// (cat, name) of generated events; the first four `sys` names are rows (the oracle's own table), the first five
/// are system calls, the rest are not.
const NAMES: [(&str, &str); 10] = [
    ("sys", "read"),
    ("sys", "write"),
    ("sys", "__x64_sys_openat"),
    ("sys", "ksys_read [kernel]"),
    ("sys", "close"),
    ("vfs", "vfs_read"),
    ("vfs", "read"),
    ("ext4", "ext4_file_read_iter [kernel]"),
    ("os_cache", "copy_to_page [kernel]"),
    ("c", "fread"),
];
const SYSCALLS: u8 = 5;

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

fn options(mode: Mode) -> BuildOptions {
    BuildOptions {
        counts: true,
        mode,
        ..BuildOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn exact_sweep_matches_brute_force(events in trace()) {
        let m = from_events(&events, &options(Mode::Exact)).unwrap();
        prop_assert_eq!(cells_of(&m), brute_force(&events, false));
    }

    #[test]
    fn stream_matches_brute_force_in_completion_order(events in calls()) {
        let events = completion_order(events);
        let m = stream_events(&events, &options(Mode::Exact)).unwrap();
        prop_assert!(m.is_some(), "completion order must stream");
        prop_assert_eq!(cells_of(&m.unwrap()), brute_force(&events, false));
    }

    #[test]
    fn stream_matches_brute_force_in_start_order(events in calls()) {
        let events = start_order(events);
        let m = stream_events(&events, &options(Mode::Exact)).unwrap();
        prop_assert!(m.is_some(), "start order must stream");
        prop_assert_eq!(cells_of(&m.unwrap()), brute_force(&events, false));
    }

    #[test]
    fn shuffled_input_matches_brute_force(
        events in calls().prop_flat_map(|v| Just(completion_order(v)).prop_shuffle())
    ) {
        let m = from_events(&events, &options(Mode::Exact)).unwrap();
        prop_assert_eq!(cells_of(&m), brute_force(&events, false));
    }

    #[test]
    fn shuffled_nested_input_matches_brute_force(events in trace().prop_flat_map(|v| Just(v).prop_shuffle())) {
        let m = from_events(&events, &options(Mode::Exact)).unwrap();
        prop_assert_eq!(cells_of(&m), brute_force(&events, false));
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
    assert_eq!(columns, ["vfs::vfs_read", "count::vfs::vfs_read"]);
    let m = from_events(&events, &options(Mode::Notebook)).unwrap();
    let columns: Vec<&str> = m.features.iter().map(|f| f.column.as_str()).collect();
    assert_eq!(
        columns,
        [
            "ext4::ext4_file_read_iter [kernel]",
            "vfs::vfs_read",
            "count::ext4::ext4_file_read_iter [kernel]",
            "count::vfs::vfs_read"
        ]
    );
}
