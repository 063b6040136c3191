//! The fuzzer's regression corpus (fuzz/corpus/parse_line) runs through the same property as
//! the fuzz target on every `cargo test`.

use datasets::TimeUnit;
use datasets::parse::{check_roundtrip, parse_line};

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/parse_line");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn corpus_roundtrips() {
    let files = corpus();
    assert!(files.len() >= 29);
    for (name, data) in &files {
        check_roundtrip(data).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn corpus_edge_cases() {
    let files = corpus();
    let get = |n: &str| &files.iter().find(|(name, _)| name == n).unwrap().1;
    let e = parse_line(get("edge-mixed"), TimeUnit::Us)
        .unwrap()
        .unwrap();
    assert_eq!(
        (e.id, e.pid, e.tid, e.ts_ns, e.dur_ns),
        (Some(7), 12, 3, 12_346, 1_000_000)
    );
    assert_eq!(e.name, "a\0b\"c");
    assert_eq!(e.args.fhash.unwrap().as_u64(), Some(u64::MAX));
    assert_eq!(
        e.args.get("value"),
        Some(&datasets::ArgValue::Str("not a hash".into()))
    );
    assert_eq!(
        e.args.get("big"),
        Some(&datasets::ArgValue::BigInt(i128::MIN))
    );
    let fh = parse_line(get("edge-u128-max"), TimeUnit::Us)
        .unwrap()
        .unwrap();
    assert_eq!(fh.args.value, Some(datasets::Hash(u128::MAX)));
    let err = parse_line(get("edge-overflow"), TimeUnit::Us).unwrap_err();
    assert_eq!(err.field, "ts");
    let err = parse_line(get("edge-overflow"), TimeUnit::Ns).unwrap_err();
    assert_eq!(err.field, "dur");
    assert_eq!(
        parse_line(get("edge-bad-phase"), TimeUnit::Us)
            .unwrap_err()
            .field,
        "ph"
    );
    assert!(
        parse_line(get("edge-spaces"), TimeUnit::Us)
            .unwrap()
            .is_some()
    );
}
