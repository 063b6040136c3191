//! Write throughput and size on events shaped like the tracer's syscall events, against `gzip -1`
//! and `gzip -6` of the same text in the same run.
//!
//! `cargo bench -p datasets --bench write [-- EVENTS]` (default 3M events): formats the events
//! into memory (formatting alone), writes them as plain text, then as BGZF at level 1 and at
//! [`DEFAULT_LEVEL`], each on the calling thread (`create_with_level`, the baseline of its
//! level) and with 1 and 2 compression threads (`create_with`, which catch up at level 1 when
//! they fall behind), then times `gzip -1` and `gzip -6` on the plain text. Each line gives wall time, CPU time of the whole process (not
//! inflated by other work on a shared machine), CPU time of the calling thread, which is what a
//! tracer's writer thread pays, and the file's bytes per event.

mod cpu;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use compact_str::CompactString;
use datasets::write::{DEFAULT_LEVEL, Header, TraceWriter, WriteOptions, WriteStats, format_event};
use datasets::{ArgValue, Args, Event, Phase, TimeUnit};

const MB: f64 = 1e6;
/// Distinct events cycled through; each round shifts them in time so no line repeats.
const POOL: usize = 1 << 16;
const NAMES: [&str; 8] = [
    "pwrite64", "pread64", "openat", "close", "fsync", "lseek", "write", "read",
];

fn header() -> Header {
    Header::new("datasets-bench", env!("CARGO_PKG_VERSION"))
}

/// A pool of syscall events over `files` interned files, with a small xorshift for variety.
fn pool(w: &mut TraceWriter, files: usize) -> Vec<Event> {
    let hashes: Vec<_> = (0..files)
        .map(|i| w.intern_file(&format!("/scratch/run-42/rank-{i:04}/data.h5")))
        .collect::<Result<_, _>>()
        .expect("intern");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ts = 12_345_678_901_234u64;
    (0..POOL)
        .map(|i| {
            let r = rnd();
            let size = 1i64 << (r % 21);
            ts += 200 + r % 5000;
            Event {
                id: None,
                name: NAMES[i % NAMES.len()].into(),
                cat: "sys".into(),
                ph: Phase::Complete,
                pid: 184_000 + r % 8,
                tid: 184_000 + r % 64,
                ts_ns: ts,
                dur_ns: 1000 + (r >> 20) % 90_000,
                args: Args {
                    fhash: Some(hashes[(r >> 8) as usize % files]),
                    size: Some(size),
                    ret: Some(size),
                    offset: Some(((r >> 32) % 1024) as i64 * size),
                    other: vec![(
                        CompactString::from("fd"),
                        ArgValue::Int(3 + (r >> 40) as i64 % 60),
                    )],
                    ..Args::default()
                },
            }
        })
        .collect()
}

/// Calls `f` on `n` events, cycling through `events` and shifting them in time each round.
fn cycle(events: &mut [Event], n: usize, mut f: impl FnMut(&Event)) {
    let span = events.last().expect("pool").end_ns() - events[0].ts_ns + 1000;
    for round in 0..n.div_ceil(POOL) {
        if round > 0 {
            for e in events.iter_mut() {
                e.ts_ns += span;
            }
        }
        events[..POOL.min(n - round * POOL)].iter().for_each(&mut f);
    }
}

/// Writes `n` events to `w` and finishes it.
fn write(mut w: TraceWriter, n: usize) -> WriteStats {
    let mut events = pool(&mut w, 256);
    cycle(&mut events, n, |e| w.write(e).expect("write"));
    w.finish(Vec::new()).expect("finish")
}

/// Formats `n` events into a buffer emptied every 64 KiB: formatting without any I/O.
fn format_only(n: usize) -> WriteStats {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = TraceWriter::create(dir.path().join("pool.pfw"), header()).expect("create");
    let mut events = pool(&mut w, 256);
    let (mut buf, mut text, mut id) = (Vec::with_capacity(1 << 17), 0, 0);
    cycle(&mut events, n, |e| {
        format_event(&mut buf, e, Some(id), TimeUnit::Us);
        id += 1;
        if buf.len() >= 1 << 16 {
            text += buf.len() as u64;
            buf.clear();
        }
    });
    WriteStats {
        events: n as u64,
        text_bytes: text + buf.len() as u64,
        ..WriteStats::default()
    }
}

struct Run {
    wall: f64,
    cpu: f64,
    /// CPU of the thread that formats the events; the same as `cpu` without compression threads.
    caller_cpu: f64,
    events: u64,
    text: u64,
    file: u64,
}

fn timed(tick: f64, f: impl FnOnce() -> WriteStats) -> Run {
    let (before, caller_before) = (cpu::process(tick).0, cpu::thread(tick));
    let t = Instant::now();
    let s = f();
    Run {
        wall: t.elapsed().as_secs_f64(),
        cpu: cpu::process(tick).0 - before,
        caller_cpu: cpu::thread(tick) - caller_before,
        events: s.events,
        text: s.text_bytes,
        file: s.file_bytes,
    }
}

fn gzip(level: u32, plain: &Path, tick: f64) -> Run {
    let before = cpu::process(tick).1;
    let t = Instant::now();
    let out = Command::new("gzip")
        .arg(format!("-{level}"))
        .arg("-c")
        .arg(plain)
        .stderr(Stdio::inherit())
        .output()
        .expect("gzip runs");
    assert!(
        out.status.success(),
        "gzip -{level} failed on {}",
        plain.display()
    );
    let text = std::fs::metadata(plain).expect("plain file").len();
    let cpu = cpu::process(tick).1 - before;
    Run {
        wall: t.elapsed().as_secs_f64(),
        cpu,
        caller_cpu: cpu,
        events: 0,
        text,
        file: out.stdout.len() as u64,
    }
}

fn print(label: &str, r: &Run, events: u64, base: Option<&Run>) {
    let per_event = |s: f64| s / events as f64 * 1e9;
    let size = if r.file > 0 {
        format!(
            "ratio {:5.2}  {:5.2} B/event",
            r.text as f64 / r.file as f64,
            r.file as f64 / events as f64
        )
    } else {
        "ratio     -".into()
    };
    let vs = base.map_or(String::new(), |b| {
        format!(
            "  base / this: wall {:.2}, CPU {:.2}, caller CPU {:.2}, bytes {:.2}",
            b.wall / r.wall,
            b.cpu / r.cpu,
            b.caller_cpu / r.caller_cpu,
            b.file as f64 / r.file as f64
        )
    });
    println!(
        "  {label:<34} wall {:6.2} s {:6.1} ns/event  CPU {:6.2} s {:6.1} ns/event  caller CPU {:6.1} ns/event  {:6.1} MB/s text  {size}{vs}",
        r.wall,
        per_event(r.wall),
        r.cpu,
        per_event(r.cpu),
        per_event(r.caller_cpu),
        r.text as f64 / MB / r.wall,
    );
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let tick = cpu::clock_tick();

    let fmt = timed(tick, || format_only(n));
    let plain_path = dir.path().join("bench.pfw");
    let plain = timed(tick, || {
        write(
            TraceWriter::create(&plain_path, header()).expect("create"),
            n,
        )
    });
    let events = plain.events;
    println!(
        "{events} events, {:.1} MB text, {:.0} bytes/event",
        plain.text as f64 / MB,
        plain.text as f64 / events as f64
    );
    print("format_event into memory", &fmt, events, None);
    print("plain text file", &plain, events, None);

    // Each level against gzip at the level it is compared with: the default against `gzip -6`.
    for (level, gzip_level) in [(1, 1), (DEFAULT_LEVEL, 6)] {
        let gz_path = dir.path().join(format!("bench-{level}.pfw.gz"));
        let base = timed(tick, || {
            write(
                TraceWriter::create_with_level(&gz_path, header(), level).expect("create"),
                n,
            )
        });
        assert_eq!(base.text, plain.text);
        print(
            &format!("BGZF -{level}, create_with_level (base)"),
            &base,
            events,
            None,
        );
        for threads in [1, 2] {
            let opts = WriteOptions {
                level,
                compress_threads: threads,
                ..WriteOptions::default()
            };
            let path = dir.path().join(format!("bench-{level}-{threads}.pfw.gz"));
            let r = timed(tick, || {
                write(
                    TraceWriter::create_with(&path, header(), opts).expect("create"),
                    n,
                )
            });
            // Threads that fall behind compress some blocks at a cheaper level: same text, more bytes.
            assert_eq!(r.text, base.text);
            let label = format!("BGZF -{level}, {threads} compress thread(s)");
            print(&label, &r, events, Some(&base));
        }
        print(
            &format!("gzip -{gzip_level} of the plain text"),
            &gzip(gzip_level, &plain_path, tick),
            events,
            Some(&base),
        );
    }
}
