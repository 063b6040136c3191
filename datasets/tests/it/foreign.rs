//! bpftrace, bcc, KernMLOps and L41 io-benchmark files through the same reader as traces: exact
//! counts and byte sums against a plain scan of each fixture, and the documented quirks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use datasets::read::{ReadOptions, read_all};
use datasets::{ArgValue, Event, Phase};

fn data(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(rel)
}

fn events(rel: &str) -> Vec<Event> {
    read_all(&[data(rel)], ReadOptions::default())
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .events
}

/// The rows of a text table by a plain scan: the lines after the header line, split on
/// whitespace, as (column → value) maps.
fn scan(text: &str, header_start: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header_start));
    let cols: Vec<String> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            cols.iter()
                .cloned()
                .zip(l.split_whitespace().map(String::from))
                .collect()
        })
        .collect()
}

fn int(row: &BTreeMap<String, String>, col: &str) -> i64 {
    row[col].parse().unwrap()
}

fn other(e: &Event, key: &str) -> ArgValue {
    e.args
        .get(key)
        .cloned()
        .unwrap_or_else(|| panic!("{key} in {e:?}"))
}

#[test]
fn mlperf_bio_counts_bytes_and_requester_pids() {
    let text = std::fs::read_to_string(data("bpftrace/mlperf-bio.out")).unwrap();
    let rows = scan(&text, "TIMESTAMP");
    let ev = events("bpftrace/mlperf-bio.out");
    assert_eq!(ev.len(), rows.len());
    for (e, r) in ev.iter().zip(&rows) {
        assert_eq!(e.cat, "block");
        assert_eq!(e.name, if r["T"] == "1" { "write" } else { "read" });
        // The event belongs to the requester; the completion's context is kept aside.
        assert_eq!(e.pid as i64, int(r, "PID"));
        assert_eq!(other(e, "done_pid"), ArgValue::Int(int(r, "DONEPID")));
        assert_eq!(e.args.size, Some(int(r, "BYTES")));
        assert_eq!(e.dur_ns as i64, int(r, "LAT(ns)"));
        assert_eq!((e.ts_ns + e.dur_ns) as i64, int(r, "TIMESTAMP"));
    }
    let other_context = rows.iter().filter(|r| r["PID"] != r["DONEPID"]).count();
    assert_eq!(other_context, 5);
}

#[test]
fn mlperf_open_keeps_file_names_with_spaces() {
    let ev = events("bpftrace/mlperf-open.out");
    let text = std::fs::read_to_string(data("bpftrace/mlperf-open.out")).unwrap();
    assert_eq!(ev.len(), scan(&text, "TIMESTAMP").len());
    let by: BTreeMap<(String, String), usize> = ev.iter().fold(BTreeMap::new(), |mut m, e| {
        *m.entry((e.cat.to_string(), e.name.to_string()))
            .or_default() += 1;
        m
    });
    assert_eq!(by[&("vfs".into(), "vfs_open".into())], 3);
    assert_eq!(by[&("sys".into(), "openat".into())], 3);
    assert_eq!(
        ev[5].args.fname.as_deref(),
        Some("/data/preprocessed/img 0001 copy.npy")
    );
}

#[test]
fn mlperf_vfs_rw_fixes_the_latency_overflow() {
    for rel in ["bpftrace/mlperf-vfs_rw.out", "bpftrace/bpftrace-json.out"] {
        let ev: Vec<Event> = events(rel).into_iter().filter(|e| e.cat == "vfs").collect();
        let overflowed = ev
            .iter()
            .find(|e| e.args.fname.as_deref() == Some("case_00013_x.npy"))
            .unwrap();
        assert_eq!(overflowed.dur_ns, (1u64 << 32) - 2_094_967_296, "{rel}");
        assert_eq!(overflowed.dur_ns, 2_200_000_000);
    }
    let text = std::fs::read_to_string(data("bpftrace/mlperf-vfs_rw.out")).unwrap();
    let rows = scan(&text, "TIMESTAMP");
    let ev = events("bpftrace/mlperf-vfs_rw.out");
    assert_eq!(ev.len(), rows.len());
    let returned: i64 = rows
        .iter()
        .map(|r| int(r, "RETURNED"))
        .filter(|&v| v >= 0)
        .sum();
    assert_eq!(ev.iter().filter_map(|e| e.args.size).sum::<i64>(), returned);
    assert_eq!(ev.iter().filter(|e| e.args.ret == Some(-11)).count(), 1);
    assert_eq!(
        ev.iter()
            .filter(|e| e.args.fname.as_deref() == Some(""))
            .count(),
        1
    );
    assert_eq!(ev.iter().filter(|e| e.name == "vfs_write").count(), 2);
}

#[test]
fn bcc_and_bpftrace_biosnoop() {
    let text = std::fs::read_to_string(data("bpftrace/bcc-biosnoop.out")).unwrap();
    let rows = scan(&text, "TIME(s)");
    let ev = events("bpftrace/bcc-biosnoop.out");
    assert_eq!(ev.len(), rows.len());
    assert_eq!(
        ev.iter().map(|e| e.args.size.unwrap()).sum::<i64>(),
        rows.iter().map(|r| int(r, "BYTES")).sum::<i64>()
    );
    assert_eq!(ev.iter().filter(|e| e.name == "write").count(), 4);
    // 0.010870 s completion, 2.07 ms latency.
    assert_eq!(
        (ev[3].ts_ns, ev[3].dur_ns),
        (10_870_000 - 2_070_000, 2_070_000)
    );
    let text = std::fs::read_to_string(data("bpftrace/biosnoop-bt.out")).unwrap();
    let rows = scan(&text, "TIME(ms)");
    let ev = events("bpftrace/biosnoop-bt.out");
    assert_eq!(ev.len(), rows.len());
    let pids: Vec<u64> = ev.iter().map(|e| e.pid).collect();
    let want: Vec<u64> = rows.iter().map(|r| int(r, "PID") as u64).collect();
    assert_eq!(pids, want);
}

#[test]
fn bpftrace_json_joins_printf_pieces_and_keeps_maps() {
    let text = std::fs::read_to_string(data("bpftrace/bpftrace-json.out")).unwrap();
    let mut printed = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if matches!(v["type"].as_str(), Some("printf" | "time")) {
            printed += v["data"].as_str().unwrap();
        }
    }
    let rows = scan(&printed, "TIMESTAMP");
    let ev = events("bpftrace/bpftrace-json.out");
    let vfs: Vec<&Event> = ev.iter().filter(|e| e.cat == "vfs").collect();
    assert_eq!(vfs.len(), rows.len());
    let counters: Vec<(String, ArgValue)> = ev
        .iter()
        .filter(|e| e.ph == Phase::Counter)
        .map(|e| (e.name.to_string(), other(e, "value")))
        .collect();
    assert_eq!(counters.len(), 4);
    assert_eq!(counters[2], ("@total".into(), ArgValue::Json("7".into())));
    assert_eq!(ev.iter().filter(|e| e.ph == Phase::Metadata).count(), 1);
}

#[test]
fn kernmlops_tables() {
    let dir = "kernmlops/a1b2c3d4-0000-4000-8000-000000000001";
    let block = events(&format!("{dir}.block_io_latency.parquet"));
    assert_eq!(block.len(), 40);
    assert_eq!(block.iter().filter(|e| e.name == "write").count(), 10);
    assert_eq!(
        block.iter().map(|e| e.args.size.unwrap()).sum::<i64>(),
        4096 * (14 + 13 * 2 + 13 * 3)
    );
    // Completion at 5_000_000 us, block latency 120 us.
    assert_eq!((block[0].ts_ns, block[0].dur_ns), (4_999_880_000, 120_000));
    let files = events(&format!("{dir}.file_data.parquet"));
    assert_eq!(files.len(), 12);
    assert!(files.iter().all(|e| e.pid == 4100));
    assert_eq!(
        files
            .iter()
            .filter(|e| e.args.fname.as_deref() == Some("/tmp/log.json"))
            .count(),
        4
    );
    let info = events(&format!("{dir}.system_info.parquet"));
    assert_eq!(info.len(), 1);
    assert_eq!(
        other(&info[0], "benchmark_name"),
        ArgValue::Str("redis".into())
    );
    assert_eq!(other(&info[0], "cores"), ArgValue::Int(2));
}

#[test]
fn bad_lines_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bio.out",
            "TIMESTAMP PID COMM DONEPID DONECOMM DISK T BYTES LAT(ns)\n1 2 python 0 swapper sda 0 4096 10\n1 2 python 0 swapper sda X 4096 10\n",
            ":3: field `T`: `X` is not R, W, 0 or 1",
        ),
        (
            "vfs.out",
            "TIMESTAMP TIME PID COMM R/W LAT(ns) REQUESTED RETURNED FILE\n5 t 1 c R -5000000000 1 1 f\n",
            ":2: field `LAT(ns)`: -5000000000 is below -2^32, no 32-bit overflow",
        ),
        (
            "short.out",
            "TIME(ms)     DISK    COMM             PID    LAT(ms)\n1 vda dd 4\n",
            ":2: field `-`: 4 columns, the header has 5",
        ),
        (
            "l41.json",
            "{\n \"host_configuration\": {},\n \"benchmark_configuration\": {},\n \"benchmark_samples\": [{\"bandwidth\": \"fast\", \"time\": 1}]\n}\n",
            ":4: field `benchmark_samples[0].bandwidth`: invalid type",
        ),
        (
            "b.json",
            "{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n{\"type\": \"join\", \"data\": {}}\n",
            ":2: field `type`: unknown bpftrace output type `join`",
        ),
    ];
    for (name, text, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = read_all(std::slice::from_ref(&path), ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{}{want}", path.display())),
            "{name}: {err}"
        );
    }
}

/// What the fuzz target (`fuzz/fuzz_targets/foreign_text.rs`) checks, on every fixture cut at
/// every byte: no panic, and without --skip-invalid at most one error.
#[test]
fn cut_fixtures_never_panic() {
    use datasets::formats::{bpftrace, iobench};
    for name in [
        "mlperf-bio.out",
        "mlperf-open.out",
        "mlperf-vfs_rw.out",
        "bcc-biosnoop.out",
        "biosnoop-bt.out",
        "bpftrace-json.out",
    ] {
        let text = std::fs::read_to_string(data(&format!("bpftrace/{name}"))).unwrap();
        for n in (0..text.len()).filter(|&n| text.is_char_boundary(n)) {
            for (_, errors) in [
                bpftrace::read_text(&text[..n], false),
                bpftrace::read_json(&text[..n], false),
            ] {
                assert!(errors.len() <= 1, "{name} cut at {n}");
            }
            let _ = iobench::read(&text.as_bytes()[..n]);
        }
    }
}
