//! Write throughput on events shaped like the tracer's syscall events, against `gzip -1` of the
//! same text in the same run.
//!
//! `cargo bench -p datasets --bench write [-- EVENTS]` (default 3M events): formats the events
//! into memory (formatting alone), writes them as plain text, as BGZF level 1 single-threaded
//! (`create_with_level`, the baseline), then times `gzip -1` on the plain text. Each line gives wall and CPU time (CPU
//! counts every thread and is not inflated by other work on a shared machine).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use compact_str::CompactString;
use datasets::write::{Header, TraceWriter, WriteStats, format_event};
use datasets::{ArgValue, Args, Event, Phase, TimeUnit};

const MB: f64 = 1e6;
/// Distinct events cycled through; each round shifts them in time so no line repeats.
const POOL: usize = 1 << 16;
const NAMES: [&str; 8] = [
    "pwrite64", "pread64", "openat", "close", "fsync", "lseek", "write", "read",
];

/// CPU seconds (user + system) used so far by this process and by its waited-for children.
fn cpu(tick: f64) -> (f64, f64) {
    let st = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let f: Vec<f64> = st[st.rfind(')').expect("comm") + 2..]
        .split(' ')
        .skip(11)
        .take(4)
        .map(|v| v.parse().expect("a number"))
        .collect();
    ((f[0] + f[1]) / tick, (f[2] + f[3]) / tick)
}

fn clock_tick() -> f64 {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("CLK_TCK")
}

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
    events: u64,
    text: u64,
    file: u64,
}

fn timed(tick: f64, f: impl FnOnce() -> WriteStats) -> Run {
    let before = cpu(tick).0;
    let t = Instant::now();
    let s = f();
    Run {
        wall: t.elapsed().as_secs_f64(),
        cpu: cpu(tick).0 - before,
        events: s.events,
        text: s.text_bytes,
        file: s.file_bytes,
    }
}

fn gzip1(plain: &Path, tick: f64) -> Run {
    let before = cpu(tick).1;
    let t = Instant::now();
    let out = Command::new("gzip")
        .args(["-1", "-c"])
        .arg(plain)
        .stderr(Stdio::inherit())
        .output()
        .expect("gzip runs");
    assert!(
        out.status.success(),
        "gzip -1 failed on {}",
        plain.display()
    );
    let text = std::fs::metadata(plain).expect("plain file").len();
    Run {
        wall: t.elapsed().as_secs_f64(),
        cpu: cpu(tick).1 - before,
        events: 0,
        text,
        file: out.stdout.len() as u64,
    }
}

fn print(label: &str, r: &Run, events: u64, base: Option<&Run>) {
    let vs = base.map_or(String::new(), |b| {
        format!(
            "  baseline CPU / this CPU = {:.2}, wall = {:.2}",
            b.cpu / r.cpu,
            b.wall / r.wall
        )
    });
    println!(
        "  {label:<34} {:6.2} s wall {:6.1} ns/event  CPU {:6.2} s {:6.1} ns/event  {:6.1} MB/s text  ratio {:5.2}{vs}",
        r.wall,
        r.wall / events as f64 * 1e9,
        r.cpu,
        r.cpu / events as f64 * 1e9,
        r.text as f64 / MB / r.wall,
        r.text as f64 / r.file.max(1) as f64,
    );
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let tick = clock_tick();

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

    let gz_path = dir.path().join("bench.pfw.gz");
    let base = timed(tick, || {
        write(
            TraceWriter::create_with_level(&gz_path, header(), 1).expect("create"),
            n,
        )
    });
    assert_eq!(base.text, plain.text);
    print("BGZF -1, create_with_level (base)", &base, events, None);

    print(
        "gzip -1 of the plain text",
        &gzip1(&plain_path, tick),
        events,
        Some(&base),
    );
}
