//! Copies (copy_file_range, sendfile, splice) and io_uring requests are rows of the default matrix, with their bytes
//! and their file: a copy's is its destination, io_uring's the file its request named. io_uring requests in flight
//! together overlap on their submitting thread, and every one of them is still a row. The trace is written here, in
//! dc-trace's format, and the expected rows are read off the same list of calls that wrote it.

use std::io::Write;

use features::{BuildOptions, build};

/// (name, ts µs, dur µs, file, args after `fhash`) of each call; `ret` alone gives a copy's bytes, as a trace from
/// another tool would.
const CALLS: &[(&str, u64, u64, &str, &str)] = &[
    (
        "copy_file_range",
        10,
        30,
        "/d/dst",
        r#""ret":3000000,"src_fhash":1"#,
    ),
    (
        "copy_file_range",
        50,
        1,
        "/d/dst",
        r#""size":0,"ret":0,"src_fhash":1"#,
    ),
    (
        "sendfile",
        60,
        5,
        "/d/dst",
        r#""size":4096,"ret":4096,"src_fhash":1"#,
    ),
    (
        "io_uring_read",
        100,
        40,
        "/d/src",
        r#""size":16384,"ret":16384"#,
    ),
    (
        "io_uring_read",
        110,
        40,
        "/d/src",
        r#""size":16384,"ret":16384"#,
    ),
    (
        "io_uring_write",
        120,
        50,
        "/d/dst",
        r#""size":8192,"ret":8192"#,
    ),
];

fn hash(file: &str) -> u64 {
    if file == "/d/src" { 1 } else { 2 }
}

#[test]
fn copies_and_io_uring_requests_are_rows_with_their_bytes_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pfw");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "[").unwrap();
    for file in ["/d/src", "/d/dst"] {
        writeln!(
            f,
            r#"{{"id":0,"name":"FH","cat":"dftracer","pid":0,"tid":0,"ts":0,"ph":"M","args":{{"name":"{file}","value":{}}}}}"#,
            hash(file)
        )
        .unwrap();
    }
    for (i, (name, ts, dur, file, args)) in CALLS.iter().enumerate() {
        writeln!(
            f,
            r#"{{"id":{},"name":"{name}","cat":"sys","pid":7,"tid":7,"ts":{ts},"dur":{dur},"ph":"X","args":{{"fhash":{},{args}}}}}"#,
            i + 1,
            hash(file)
        )
        .unwrap();
    }
    drop(f);
    let m = build(&[path], &BuildOptions::default()).unwrap();
    let mut rows: Vec<(String, String, i64)> = (0..m.n_rows())
        .map(|r| {
            (
                m.op[r].clone(),
                m.file[r].clone().unwrap(),
                m.size[r].unwrap(),
            )
        })
        .collect();
    rows.sort();
    let mut want: Vec<(String, String, i64)> = CALLS
        .iter()
        .map(|(name, _, _, file, args)| {
            let bytes = args
                .split(',')
                .find_map(|a| {
                    a.strip_prefix(r#""size":"#)
                        .or_else(|| a.strip_prefix(r#""ret":"#))
                })
                .unwrap()
                .parse()
                .unwrap();
            (name.to_string(), file.to_string(), bytes)
        })
        .collect();
    want.sort();
    assert_eq!(rows, want);
}
