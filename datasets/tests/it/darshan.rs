//! Darshan logs against PyDarshan: every sample log in `datasets/fixtures/darshan` read natively
//! must give exactly what libdarshan-util gave `datasets/reference/darshan_fixtures.py`.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use datasets::formats::darshan::{self, Compression, Log, Segment};
use datasets::read::{ReadOptions, read_all};
use datasets::{ArgValue, Phase};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/darshan");

fn samples() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(common::fixture("darshan"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "darshan"))
        .collect();
    v.sort();
    v
}

fn oracle(sample: &str) -> Value {
    let f = std::fs::File::open(format!("{FIXTURES}/{sample}.json.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn float(v: f64) -> Value {
    // Exact: serde_json parses the fixture's shortest round-trip text back to the same bits.
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn segment(s: &Segment) -> Value {
    json!([s.offset, s.length, float(s.start), float(s.end), s.thread])
}

/// The log in the fixture's shape.
fn view(log: &Log) -> Value {
    let mut mounts: Vec<Value> = log
        .mounts
        .iter()
        .map(|m| json!([m.path, m.fs_type]))
        .collect();
    mounts.sort_by_key(|m| m.to_string());
    let modules: BTreeMap<_, _> = log
        .modules
        .iter()
        .filter_map(|m| Some((m.name?, json!({"ver": m.version, "partial": m.partial}))))
        .collect();
    let mut records: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for r in &log.records {
        let c: BTreeMap<_, _> = r.counters.iter().map(|&(k, v)| (k, json!(v))).collect();
        let f: BTreeMap<_, _> = r.fcounters.iter().map(|&(k, v)| (k, float(v))).collect();
        records
            .entry(r.module)
            .or_default()
            .push(json!({"id": r.id, "rank": r.rank, "counters": c, "fcounters": f}));
    }
    let mut dxt: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for r in &log.dxt {
        dxt.entry(r.module).or_default().push(json!({
            "id": r.id,
            "rank": r.rank,
            "hostname": r.hostname,
            "write_segments": r.writes.iter().map(segment).collect::<Vec<_>>(),
            "read_segments": r.reads.iter().map(segment).collect::<Vec<_>>(),
        }));
    }
    let j = &log.job;
    let metadata: BTreeMap<_, _> = j.metadata.iter().cloned().collect();
    json!({
        "log_ver": log.version,
        "job": {
            "uid": j.uid,
            "start_time_sec": j.start_time_sec,
            "start_time_nsec": j.start_time_nsec,
            "end_time_sec": j.end_time_sec,
            "end_time_nsec": j.end_time_nsec,
            "nprocs": j.nprocs,
            "jobid": j.jobid,
            "metadata": metadata,
        },
        "exe": log.exe,
        "mounts": mounts,
        "modules": modules,
        "names": log.names.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<BTreeMap<_, _>>(),
        "records": records,
        "dxt": dxt,
    })
}

fn read(path: &Path) -> Log {
    darshan::read(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
}

/// Compares field by field, so that a failure names the first record that differs.
fn assert_same(name: &str, ours: &Value, theirs: &Value) {
    for key in ["log_ver", "job", "exe", "mounts", "modules", "names"] {
        assert_eq!(ours[key], theirs[key], "{name}: {key}");
    }
    for key in ["records", "dxt"] {
        let (o, t) = (
            ours[key].as_object().unwrap(),
            theirs[key].as_object().unwrap(),
        );
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            t.keys().collect::<Vec<_>>(),
            "{name}: {key}"
        );
        for (module, recs) in t {
            let (o, t) = (o[module].as_array().unwrap(), recs.as_array().unwrap());
            assert_eq!(o.len(), t.len(), "{name}: {module} records");
            for (i, (a, b)) in o.iter().zip(t).enumerate() {
                assert_eq!(a, b, "{name}: {module} record {i}");
            }
        }
    }
}

#[test]
fn every_sample_agrees_with_pydarshan() {
    let samples = samples();
    assert_eq!(samples.len(), 31);
    let (mut records, mut segments) = (0, 0);
    for path in &samples {
        let name = path.file_name().unwrap().to_str().unwrap();
        let log = read(path);
        assert_eq!(log.compression, Compression::Zlib, "{name}");
        assert_same(name, &view(&log), &oracle(name));
        records += log.records.len();
        segments += log
            .dxt
            .iter()
            .map(|r| r.reads.len() + r.writes.len())
            .sum::<usize>();
    }
    // What the fixtures hold in all: the comparison above covered every one.
    let (mut want_records, mut want_segments) = (0, 0);
    for path in &samples {
        let o = oracle(path.file_name().unwrap().to_str().unwrap());
        for recs in o["records"].as_object().unwrap().values() {
            want_records += recs.as_array().unwrap().len();
        }
        for recs in o["dxt"].as_object().unwrap().values() {
            for r in recs.as_array().unwrap() {
                want_segments += r["read_segments"].as_array().unwrap().len()
                    + r["write_segments"].as_array().unwrap().len();
            }
        }
    }
    assert_eq!((records, segments), (want_records, want_segments));
    assert!(segments > 10_000, "{segments} DXT segments");
}

#[test]
fn bzip2_regions_read_like_zlib() {
    let log = read(Path::new(&format!("{FIXTURES}/bzip2.darshan")));
    assert_eq!(log.compression, Compression::Bzip2);
    let name = "mpi-io-test-x86_64-3.4.1.darshan";
    assert_same("bzip2.darshan", &view(&log), &oracle(name));
}

#[test]
fn partial_log_is_read_and_reported() {
    let path = common::fixture("darshan/partial_data_stdio.darshan");
    let log = read(&path);
    assert!(log.partial());
    let partial: Vec<_> = log
        .modules
        .iter()
        .filter(|m| m.partial)
        .map(|m| m.name)
        .collect();
    assert_eq!(partial, [Some("STDIO")]);
    let t = read_all(&[path], ReadOptions::default()).unwrap();
    let job = &t.events[0];
    assert_eq!(
        (job.ph, job.name.as_str()),
        (Phase::Metadata, "darshan_job")
    );
    assert_eq!(
        job.args.get("partial_modules"),
        Some(&ArgValue::Json(r#"["STDIO"]"#.into()))
    );
    let stdio = t.events.iter().filter(|e| e.name == "STDIO").count();
    assert_eq!(
        stdio,
        oracle("partial_data_stdio.darshan")["records"]["STDIO"]
            .as_array()
            .unwrap()
            .len()
    );
}

#[test]
fn dxt_segments_become_events() {
    let name = "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan";
    let path = common::fixture(&format!("darshan/{name}"));
    let t = read_all(&[path], ReadOptions::default()).unwrap();
    let o = oracle(name);
    let mut want: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
    for (module, cat) in [("DXT_POSIX", "POSIX"), ("DXT_MPIIO", "MPIIO")] {
        for r in o["dxt"][module].as_array().unwrap() {
            for (key, op) in [("read_segments", "read"), ("write_segments", "write")] {
                for s in r[key].as_array().unwrap() {
                    let w = want.entry((cat.into(), op.into())).or_default();
                    w.0 += 1;
                    w.1 += s[1].as_i64().unwrap();
                }
            }
        }
    }
    let mut got: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
    for e in t.events.iter().filter(|e| e.ph == Phase::Complete) {
        let g = got
            .entry((e.cat.to_string(), e.name.to_string()))
            .or_default();
        g.0 += 1;
        g.1 += e.args.size.unwrap();
        assert!(e.args.fname.is_some(), "{e:?}");
    }
    assert_eq!(got, want);
    let counters = t.events.iter().filter(|e| e.ph == Phase::Counter).count();
    let records: usize = o["records"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_array().unwrap().len())
        .sum();
    assert_eq!(counters, records);
}

#[test]
fn bad_logs_name_the_file_and_byte() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(common::fixture("darshan/mpi-io-test-x86_64-3.4.1.darshan")).unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "cut.darshan",
            good[..2000].to_vec(),
            "byte 1947: field `name`: region of 183 bytes at byte 1947 runs past the end of the 2000-byte file",
        ),
        (
            "comp.darshan",
            [&good[..16], &[7], &good[17..]].concat(),
            "byte 16: field `comp_type`: unknown compression 7",
        ),
        (
            "zlib.darshan",
            [&good[..1400], &[0xff; 8], &good[1408..]].concat(),
            "byte 1328: field `job`: zlib data does not inflate: corrupt deflate stream",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let err = read_all(std::slice::from_ref(&path), ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(err, format!("{}: {want}", path.display()));
    }
}

/// What the fuzz target (`fuzz/fuzz_targets/darshan_log.rs`) checks, on every sample cut short
/// at every 251st byte and with bytes overwritten every 509: no panic, and an error points inside the file.
#[test]
fn damaged_samples_fail_cleanly() {
    let mut checked = 0;
    for path in samples() {
        let good = std::fs::read(&path).unwrap();
        let mut variants: Vec<Vec<u8>> = (0..good.len())
            .step_by(251)
            .map(|n| good[..n].to_vec())
            .collect();
        for at in (0..good.len()).step_by(509) {
            for b in [0x00, 0xff, 0x7f] {
                let mut v = good.clone();
                v[at] = b;
                variants.push(v);
            }
        }
        for v in variants {
            if let Err(e) = darshan::read(&v) {
                assert!(e.offset <= v.len() as u64, "{}: {e:?}", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked > 3_000, "{checked}");
}
