//! dc-report reads its traces once (`read_once`): the summary, the calls' tables and the job scan it gives must be
//! what the three reads apart give (`TraceSummary::scan`, `features::build_tables` with the summary's
//! `call_options`, `JobScan::run` over that matrix), which stay the library's path for dc-pipeline. Checked on the
//! real traces of every format the fixtures hold, and on traces written here with what only the job scan reads:
//! off-CPU intervals inside and outside calls, with wakers of the job and from outside it and stacks to expand,
//! device requests, pages the page cache let go of and took back, a thread with no call, a darshan record, an exact
//! duplicate, and two inputs whose hashes collide.

use std::path::{Path, PathBuf};

use datasets::read::ReadOptions;
use datasets::write::{Header, TraceWriter};
use datasets::{ArgValue, Args, Event, Phase};
use report::diagnose::inputs::{ReadOnce, read_once};
use report::diagnose::scan::JobScan;
use report::load::call_options;
use report::summary::TraceSummary;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/fixtures/");

fn apart(paths: &[PathBuf]) -> ReadOnce {
    let read = ReadOptions::default();
    let summary = TraceSummary::scan(paths, read.clone(), |_| {}).unwrap();
    let tables = match call_options(&summary, &read) {
        Some(opts) => features::build_tables(paths, &opts, |_| {}).unwrap().0,
        None => features::Tables::default(),
    };
    let scan = JobScan::run(paths, read, &tables.matrix, |_| {}).unwrap();
    ReadOnce {
        summary,
        tables,
        scan,
    }
}

fn assert_same(paths: &[PathBuf]) {
    let what = format!("{paths:?}");
    let want = apart(paths);
    let got = read_once(paths, &ReadOptions::default(), false).unwrap();
    let (a, b) = (&got.summary, &want.summary);
    assert_eq!(a.traces, b.traces, "{what}");
    assert_eq!(
        (&a.headers, &a.closings),
        (&b.headers, &b.closings),
        "{what}"
    );
    assert_eq!((&a.hosts, &a.pids), (&b.hosts, &b.pids), "{what}");
    assert_eq!((a.first_ns, a.last_ns), (b.first_ns, b.last_ns), "{what}");
    assert_eq!((&a.events, a.metadata), (&b.events, b.metadata), "{what}");
    assert_eq!(a.ops, b.ops, "{what}");
    assert_eq!(a.size_histogram, b.size_histogram, "{what}");
    assert_eq!(a.common_sizes, b.common_sizes, "{what}");
    assert_eq!(a.files, b.files, "{what}");
    assert_eq!(
        (a.timeline.origin_ns, a.timeline.width_ns, &a.timeline.bins),
        (b.timeline.origin_ns, b.timeline.width_ns, &b.timeline.bins),
        "{what}"
    );
    let counts = |r: &datasets::read::ReadStats| (r.events, r.lines, r.duplicates, r.text_bytes);
    assert_eq!(counts(&a.read), counts(&b.read), "{what}");
    // Debug, not ==: a NaN cell equals itself only in print.
    assert_eq!(
        format!("{:?}", got.tables),
        format!("{:?}", want.tables),
        "{what}"
    );
    let (a, b) = (&got.scan, &want.scan);
    assert_eq!(a.threads, b.threads, "{what}");
    assert_eq!(a.reads, b.reads, "{what}");
    assert_eq!(a.alignment, b.alignment, "{what}");
    assert_eq!(a.darshan, b.darshan, "{what}");
    assert_eq!(a.has_sched, b.has_sched, "{what}");
    assert_eq!(a.device_requests, b.device_requests, "{what}");
    assert_eq!(a.synced_writes, b.synced_writes, "{what}");
    assert_eq!(
        (
            &a.refaults,
            &a.pages_added,
            a.refaults_outside_calls,
            a.pages_added_outside_calls
        ),
        (
            &b.refaults,
            &b.pages_added,
            b.refaults_outside_calls,
            b.pages_added_outside_calls
        ),
        "{what}"
    );
    assert_eq!(a.limits, b.limits, "{what}");
    assert_eq!(a.activities(), b.activities(), "{what}");
    assert_eq!(counts(&a.read), counts(&b.read), "{what}");
}

#[test]
fn one_read_of_real_traces_gives_what_three_reads_gave() {
    for trace in [
        "datacrumbs/case-read-simple.trace.pfw.gz",
        "dftracer/dlio-unet3d.pfw.gz",
        "dftracer/posix-old.pfw",
    ] {
        assert_same(&[PathBuf::from(SHARED).join(trace)]);
    }
    let both = ["dftracer/posix-old.pfw", "dftracer/dlio-unet3d.pfw.gz"]
        .map(|t| PathBuf::from(SHARED).join(t));
    assert_same(&both);
}

fn event(name: &str, cat: &str, tid: u64, ts_ns: u64, dur_ns: u64, args: Args) -> Event {
    Event {
        id: None,
        name: name.into(),
        cat: cat.into(),
        ph: Phase::Complete,
        pid: 7,
        tid,
        ts_ns,
        dur_ns,
        args,
    }
}

fn other(pairs: &[(&str, i64)]) -> Args {
    Args {
        other: pairs
            .iter()
            .map(|(k, v)| ((*k).into(), ArgValue::Int(*v)))
            .collect(),
        ..Args::default()
    }
}

/// A page cache event of thread `tid`: page `index` of inode 5 on 8:0 added, or let go of.
fn page(added: bool, tid: u64, ts_ns: u64, index: i64) -> Event {
    let name = if added {
        "mm_filemap_add_to_page_cache"
    } else {
        "mm_filemap_delete_from_page_cache"
    };
    let mut args = other(&[("i_ino", 5), ("index", index)]);
    args.other
        .push(("s_dev".into(), ArgValue::Str("8:0".into())));
    Event {
        ph: Phase::Instant,
        ..event(name, "page_cache", tid, ts_ns, 0, args)
    }
}

/// A job of two threads: 1 reads `file` and writes; 2 never calls, sleeps until 1 wakes it, and has a `sys` event
/// of another operation before its first sleep (which its life does not start with). Read `i` adds page `i % 3` to
/// the page cache; after the third read, pages 0 and 1 are let go of, so the fourth and fifth reads read them
/// again, and thread 2 reads page 7 again outside every call (a fault on a mapped file).
fn write_job(path: &Path, file: &str, shift: u64) {
    let mut w = TraceWriter::create(path, Header::new("one-pass-test", "0")).unwrap();
    let fhash = w.intern_file(file).unwrap();
    let mut events = vec![event("getpid", "sys", 2, shift + 50, 5, Args::default())];
    for i in 0..6u64 {
        let ts = shift + 1_000 + i * 10_000;
        let read = Args {
            fhash: Some(fhash),
            // The third read reads the first one's bytes again; the fifth is not 4 KiB-aligned.
            offset: Some(if i == 2 {
                0
            } else {
                (i * 4096 + u64::from(i == 4)) as i64
            }),
            size: Some(4096),
            ret: Some(4096),
            ..Args::default()
        };
        events.push(event("read", "sys", 1, ts, 6_000, read));
        events.push(page(true, 1, ts + 200, (i % 3) as i64));
        if i == 2 {
            events.extend([0, 1].map(|p| page(false, 1, ts + 9_000, p)));
            events.push(page(false, 2, ts + 9_100, 7));
            events.push(page(true, 2, ts + 9_200, 7));
        }
        events.push(event(
            "block_device_read",
            "block",
            1,
            ts + 1_000,
            3_000,
            Args::default(),
        ));
        // Asleep inside the call, with the stack it waited in (which the build expands into frames), then runnable
        // outside it while thread 2 holds the CPU.
        let stack = |v: &str| ArgValue::Str(v.to_owned());
        events.push(event(
            "offcpu_D",
            "sched",
            1,
            ts + 500,
            4_000,
            Args {
                other: vec![
                    ("stack".into(), stack("io_schedule;ext4_file_read_iter")),
                    ("stack_layers".into(), stack("kernel;ext4")),
                ],
                ..Args::default()
            },
        ));
        events.push(event(
            "offcpu_R",
            "sched",
            1,
            ts + 6_500,
            1_000,
            other(&[("held_by_pid", 7), ("held_by_tid", 2)]),
        ));
        events.push(event(
            "offcpu_S@futex",
            "sched",
            2,
            ts,
            8_000,
            other(&[
                ("waker_pid", 7),
                ("waker_tid", if i % 2 == 0 { 1 } else { 99 }),
            ]),
        ));
        events.push(event(
            "write",
            "sys",
            1,
            ts + 8_000,
            500,
            Args {
                size: Some(100 + i as i64),
                ret: Some(100 + i as i64),
                ..Args::default()
            },
        ));
    }
    events.push(Event {
        ph: Phase::Counter,
        ..event(
            "POSIX",
            "darshan",
            1,
            shift + 70_000,
            0,
            other(&[("rank", 0), ("POSIX_READS", 6)]),
        )
    });
    // The same event twice, as a buffer flushed twice writes it: the reader drops the second.
    let mut twice = event(
        "read",
        "sys",
        1,
        shift + 80_000,
        100,
        Args {
            fhash: Some(fhash),
            offset: Some(0),
            size: Some(10),
            ret: Some(10),
            ..Args::default()
        },
    );
    twice.id = Some(1_000_000);
    events.push(twice.clone());
    events.push(twice);
    events.sort_by_key(|e| e.ts_ns);
    for e in &events {
        w.write(e).unwrap();
    }
    w.finish(Vec::new()).unwrap();
}

#[test]
fn one_read_of_a_job_with_sleeps_wakers_and_device_requests_gives_what_three_reads_gave() {
    let dir = tempfile::tempdir().unwrap();
    let [one, two, again] = ["one", "two", "again"].map(|n| dir.path().join(format!("{n}.pfw.gz")));
    write_job(&one, "/data/a", 0);
    write_job(&two, "/data/b", 1_000_000);
    // The same threads at the same times in another file: the stream cannot attribute them, the build reads again.
    write_job(&again, "/data/c", 0);
    let ReadOnce { scan, tables, .. } = apart(std::slice::from_ref(&one));
    assert!(scan.has_sched && scan.device_requests.iter().sum::<u32>() > 0);
    let m = &tables.matrix;
    let read_again: Vec<u64> = (0..m.n_rows())
        .filter(|&r| scan.refaults[r] > 0)
        .map(|r| (m.ts_ns[r] - 1_000) / 10_000)
        .collect();
    assert_eq!(read_again, [3, 4]);
    assert_eq!(scan.refaults.iter().sum::<u32>(), 2);
    assert_eq!(
        (scan.refaults_outside_calls, scan.pages_added_outside_calls),
        (1, 1)
    );
    assert_eq!(scan.darshan.len(), 1);
    assert_same(std::slice::from_ref(&one));
    assert_same(&[one.clone(), two]);
    assert_same(&[one, again]);
}
