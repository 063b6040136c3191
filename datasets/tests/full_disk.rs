//! A write that fails part-way (here: past the file size limit, as a full disk fails) is an error naming the file,
//! for every write after it and at `finish`, and leaves no file behind: the trace writer's, and an [`Output`]'s
//! however it is wrapped. A binary of its own, because the size limit holds for the whole process: both tests set
//! the same one.

use std::io::{BufWriter, Write};

use compact_str::CompactString;
use datasets::output::{self, Existing, Output};
use datasets::write::{Header, TraceWriter, WriteOptions};
use datasets::{Args, Event, Phase};

const LIMIT: u64 = 64 << 10;

/// Lowers this process's file size limit to [`LIMIT`]; a write past it fails with EFBIG instead of a signal.
fn limit_file_size() {
    // SAFETY: plain syscalls on this process; every test in this binary sets the same limit.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: LIMIT,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
}

fn event(i: u64) -> Event {
    Event {
        id: None,
        name: CompactString::from(format!("read-{}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
        cat: CompactString::from("sys"),
        ph: Phase::Complete,
        pid: i % 7,
        tid: i,
        ts_ns: i * 1000,
        dur_ns: i % 1000,
        args: Args::default(),
    }
}

#[test]
fn a_failed_write_is_an_error_naming_the_file_and_leaves_nothing() {
    limit_file_size();
    for threads in [0, 1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.pfw.gz");
        let opts = WriteOptions {
            level: 1,
            compress_threads: threads,
            ..WriteOptions::default()
        };
        let header = Header::new("test", "1");
        let mut w = TraceWriter::create_with(&path, header, opts).unwrap();
        let n = 200_000;
        let failed_at = (0..n).position(|i| w.write(&event(i)).is_err());
        let expected = format!("{}: File too large (os error 27)", path.display());
        if let Some(i) = failed_at {
            assert!(i > 0, "{threads} threads");
            let again = w.write(&event(i as u64)).unwrap_err();
            assert_eq!(again.to_string(), expected, "{threads} threads");
        }
        let err = w.finish(Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), expected, "{threads} threads");
        assert!(failed_at.is_some(), "{threads} threads: no write failed");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_failed_write_names_the_path_given_and_leaves_nothing() {
    limit_file_size();
    let dir = tempfile::tempdir().unwrap();
    let too_large =
        |path: &std::path::Path| format!("{}: File too large (os error 27)", path.display());

    let page = dir.path().join("page.html");
    let err = output::write(&page, Existing::Refuse, vec![b'x'; 2 * LIMIT as usize]).unwrap_err();
    assert_eq!(err.to_string(), too_large(&page));

    // As `dc-features` writes JSON lines: a serializer over a buffer over the output.
    let rows = dir.path().join("rows.jsonl");
    let mut w = BufWriter::new(Output::create(&rows, Existing::Refuse).unwrap());
    let row = serde_json::json!({"op": "read", "file": "x".repeat(100)});
    let err = (0..LIMIT)
        .find_map(|_| {
            serde_json::to_writer(&mut w, &row)
                .map_err(|e| e.to_string())
                .and_then(|()| w.write_all(b"\n").map_err(|e| e.to_string()))
                .err()
        })
        .expect("a write past the limit fails");
    assert_eq!(err, too_large(&rows));
    let err = w.flush().unwrap_err();
    assert_eq!(err.to_string(), too_large(&rows));
    drop(w);

    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
