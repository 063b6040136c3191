//! A write to an [`Output`] that fails part-way (here: past the file size limit, as a full disk
//! fails) is an error naming the path the user gave, however the writer is wrapped, and leaves no
//! file behind. Its own test binary, because the size limit holds for the whole process.

use std::io::{BufWriter, Write};

use datasets::output::{self, Existing, Output};

const LIMIT: u64 = 64 << 10;

#[test]
fn a_failed_write_names_the_path_given_and_leaves_nothing() {
    // SAFETY: plain syscalls on this process; no other test runs in this binary.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: LIMIT,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
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
