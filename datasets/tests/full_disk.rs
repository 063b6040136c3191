//! A write that fails part-way (here: past the file size limit, as a full disk fails) is an
//! error naming the file, for every write after it and at `finish`, and leaves no file behind.
//! Its own test binary, because the size limit holds for the whole process.

use compact_str::CompactString;
use datasets::write::{Header, TraceWriter, WriteOptions};
use datasets::{Args, Event, Phase};

const LIMIT: u64 = 256 << 10;

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
    // SAFETY: plain syscalls on this process; no other test runs in this binary.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: LIMIT,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
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
