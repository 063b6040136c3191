//! Read throughput on a large realistic trace, against `zcat` on the same file in the same run.
//!
//! `cargo bench -p datasets --bench read [-- COPIES]`: repeats the DataCrumbs trace in
//! datasets/fixtures COPIES times (default 20) with `synth::repeat_trace`, writes it as BGZF at
//! the writer's default level and at level 6 and as single-member gzip -6, then times
//! `zcat FILE > /dev/null` and our reader (inflate + parse into events) on each, in wall time and
//! in CPU time (which other work on a shared machine does not inflate).

mod cpu;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use datasets::read::{ReadOptions, TraceReader, read_all};
use datasets::write::{DEFAULT_LEVEL, Header, TraceWriter};

const MB: f64 = 1e6;

/// Wall and CPU seconds of `zcat FILE > /dev/null`.
fn zcat(path: &Path, tick: f64) -> (f64, f64) {
    let before = cpu::process(tick).1;
    let t = Instant::now();
    let st = Command::new("zcat")
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .expect("zcat runs");
    assert!(st.success(), "zcat failed on {}", path.display());
    (t.elapsed().as_secs_f64(), cpu::process(tick).1 - before)
}

/// Wall seconds, events, text bytes and CPU seconds of reading `path`.
fn read(path: &Path, threads: usize, tick: f64) -> (f64, u64, u64, f64) {
    let before = cpu::process(tick).0;
    let t = Instant::now();
    let opts = ReadOptions {
        threads,
        ..ReadOptions::default()
    };
    let mut r = TraceReader::open(&[path.to_path_buf()], opts).expect("open");
    let mut events = 0u64;
    for b in r.by_ref() {
        events += b.expect("valid trace").events.len() as u64;
    }
    let wall = t.elapsed().as_secs_f64();
    let text = r.stats().text_bytes;
    drop(r);
    (wall, events, text, cpu::process(tick).0 - before)
}

fn report(label: &str, path: &Path, tick: f64) {
    let size = std::fs::metadata(path).expect("file").len() as f64;
    let (z, zcpu) = zcat(path, tick);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (t1, _, _, cpu1) = read(path, 1, tick);
    let (t, events, text, cpu) = read(path, 0, tick);
    let text = text as f64;
    println!(
        "{label}: {:.1} MB on disk, {:.1} MB text",
        size / MB,
        text / MB
    );
    println!(
        "  zcat > /dev/null          {z:6.2} s  {:7.1} MB/s text                     CPU {zcpu:5.2} s",
        text / MB / z
    );
    println!(
        "  read, 1 worker thread     {t1:6.2} s  {:7.1} MB/s  {:5.2} M events/s  CPU {cpu1:5.2} s",
        text / MB / t1,
        events as f64 / t1 / 1e6
    );
    println!(
        "  read, {cores} worker threads    {t:6.2} s  {:7.1} MB/s  {:5.2} M events/s  CPU {cpu:5.2} s  zcat time / read time = {:.2}, zcat CPU / read CPU = {:.2}",
        text / MB / t,
        events as f64 / t / 1e6,
        z / t,
        zcpu / cpu
    );
}

fn main() {
    let copies: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let src_path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
    ));
    let src = read_all(&[src_path], ReadOptions::default()).expect("fixture reads");
    let dir = tempfile::tempdir().expect("tempdir");
    let header = || Header::new("datasets-bench", env!("CARGO_PKG_VERSION"));

    let mut paths = Vec::new();
    for level in [DEFAULT_LEVEL, 6] {
        let path = dir.path().join(format!("bench-l{level}.pfw.gz"));
        let t = Instant::now();
        let mut w = TraceWriter::create_with_level(&path, header(), level).expect("create");
        datasets::synth::repeat_into(&src, copies, &mut w).expect("write");
        let stats = w.finish(Vec::new()).expect("finish");
        let s = t.elapsed().as_secs_f64();
        println!(
            "write BGZF level {level}: {} events in {s:.2} s = {:.2} M events/s, {:.1} MB/s text, {:.1} MB file, {} members",
            stats.events,
            stats.events as f64 / s / 1e6,
            stats.text_bytes as f64 / s / MB,
            stats.file_bytes as f64 / MB,
            stats.members
        );
        paths.push((format!("BGZF level {level}"), path));
    }
    // The same text as one gzip member, as gzip -6 would write it.
    let single = dir.path().join("bench-single.pfw.gz");
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(&paths[1].1).expect("open"))
        .read_to_end(&mut text)
        .expect("inflate");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&single).expect("create"),
        flate2::Compression::new(6),
    );
    enc.write_all(&text).expect("deflate");
    enc.finish().expect("finish");
    drop(text);
    paths.push(("single-member gzip -6".into(), single));

    let tick = cpu::clock_tick();
    for (label, path) in &paths {
        report(label, path, tick);
    }
}
