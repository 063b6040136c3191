//! Every file in datasets/fixtures loads, with exact counts checked against `zcat | wc -l` and
//! against an independent `serde_json::Value` scan.

use crate::common::{Oracle, count_by, fixture};
use datasets::read::{Compression, ReadOptions, UnitSource, read_all};
use datasets::{ArgValue, Hash, Phase, TimeUnit};

fn load(rel: &str) -> (datasets::read::Trace, Oracle) {
    let path = fixture(rel);
    let trace = read_all(std::slice::from_ref(&path), ReadOptions::default()).unwrap();
    (trace, Oracle::scan(&path))
}

fn check_against_oracle(t: &datasets::read::Trace, o: &Oracle) {
    assert_eq!(t.stats.lines, o.lines);
    assert_eq!(t.events.len(), o.events.len());
    assert_eq!(
        count_by(t.events.iter(), |e| e.cat.to_string()),
        o.count_by("cat")
    );
    assert_eq!(
        count_by(t.events.iter(), |e| e.name.to_string()),
        o.count_by("name")
    );
    assert_eq!(
        count_by(t.events.iter(), |e| (e.ph.as_byte() as char).to_string()),
        o.count_by("ph")
    );
    let unit = match t.stats.files[0].time_unit {
        TimeUnit::Us => 1000,
        TimeUnit::Ns => 1,
    };
    let ts: u64 = o
        .events
        .iter()
        .map(|e| Oracle::int(&e["ts"]).unwrap_or(0) * unit)
        .sum();
    let dur: u64 = o
        .events
        .iter()
        .map(|e| Oracle::int(&e["dur"]).unwrap_or(0) * unit)
        .sum();
    assert_eq!(t.events.iter().map(|e| e.ts_ns).sum::<u64>(), ts);
    assert_eq!(t.events.iter().map(|e| e.dur_ns).sum::<u64>(), dur);
    let pids: u64 = o
        .events
        .iter()
        .map(|e| Oracle::int(&e["pid"]).unwrap_or(0))
        .sum();
    assert_eq!(t.events.iter().map(|e| e.pid).sum::<u64>(), pids);
}

#[test]
fn datacrumbs_trace_128_bit_hashes_missing_dur() {
    // `zcat | wc -l`: 216,632 lines.
    let t = check_datacrumbs_trace("datacrumbs/case-read-simple.trace.pfw.gz", 216_632);
    let f = &t.stats.files[0];
    assert_eq!(
        (f.compression, f.time_unit, f.unit_source),
        (Compression::Gzip, TimeUnit::Us, UnitSource::Default)
    );
    assert_eq!(
        count_by(t.events.iter(), |e| e.cat.to_string())["os_cache"],
        126_397
    );

    let ebpf = Hash(314_828_689_199_209_182_275_661_060_106_169_083_757);
    assert_eq!(t.events[0].name, "HH");
    assert_eq!(t.events[0].args.value, Some(ebpf));
    assert_eq!(t.strings.host(ebpf), Some("ebpf"));
    let e = &t.events[1];
    assert_eq!(
        (e.name.as_str(), e.cat.as_str(), e.pid, e.ts_ns, e.dur_ns),
        ("copy_to_page [kernel]", "os_cache", 40998, 8_000, 1_000)
    );
    assert_eq!(e.args.hhash, Some(ebpf));
    assert_eq!(t.events[2].dur_ns, 0, "dur omitted when 0");
    let conf = Hash(133_892_054_826_312_681_618_397_557_253_802_428_535);
    let read = t
        .events
        .iter()
        .find(|e| e.name == "read" && e.args.fhash == Some(conf))
        .unwrap();
    assert_eq!(read.args.get("size_sum"), Some(&ArgValue::Int(3357)));
    assert_eq!(
        t.strings.file(conf),
        Some("/etc/openmpi/openmpi-mca-params.conf")
    );
    let last = t.events.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.ts_ns, last.dur_ns),
        ("_fini", 945_054_000, 3_000)
    );
}

#[test]
fn datacrumbs_write_trace_closing_bracket() {
    // `zcat | wc -l`: 216,133 lines.
    let t = check_datacrumbs_trace("datacrumbs/case-write-simple.trace.pfw.gz", 216_133);
    assert_eq!(t.stats.skipped, 0);
}

/// What both DataCrumbs fixtures hold: `lines` lines, of which `[` and `]` frame the events, each as the oracle
/// reads it; 124 metadata events naming 123 files and one host; and every file hash an event uses resolves through
/// an FH event.
fn check_datacrumbs_trace(rel: &str, lines: u64) -> datasets::read::Trace {
    let (t, o) = load(rel);
    assert_eq!(t.stats.lines, lines);
    assert_eq!(t.events.len() as u64, lines - 2);
    check_against_oracle(&t, &o);
    assert_eq!(
        t.events.iter().filter(|e| e.ph == Phase::Metadata).count(),
        124
    );
    assert!(
        t.events
            .iter()
            .filter_map(|e| e.args.fhash)
            .all(|h| t.strings.file(h).is_some())
    );
    assert_eq!(t.strings.len(), (123, 1, 0));
    t
}

fn check_profile(rel: &str, lines: u64, freq_cat: &str) {
    let (t, o) = load(rel);
    assert_eq!(t.stats.lines, lines);
    assert_eq!(
        t.events.len() as u64,
        lines - 1,
        "a profile has `[` and no `]`"
    );
    check_against_oracle(&t, &o);
    assert!(t.events.iter().all(|e| e.ph == Phase::Counter));
    let freq = |e: &datasets::Event| match e.args.get("freq") {
        Some(ArgValue::Int(n)) => *n,
        other => panic!("freq {other:?}"),
    };
    let ours: i64 = t
        .events
        .iter()
        .filter(|e| e.cat == freq_cat)
        .map(freq)
        .sum();
    let theirs: i64 = o
        .events
        .iter()
        .filter(|e| e["cat"] == freq_cat)
        .map(|e| e["args"]["freq"].as_i64().unwrap())
        .sum();
    assert_eq!(ours, theirs);
    let time: f64 = t
        .events
        .iter()
        .map(|e| match e.args.get("time") {
            Some(ArgValue::Float(f)) => *f,
            Some(ArgValue::Int(n)) => *n as f64,
            other => panic!("time {other:?}"),
        })
        .sum();
    let otime: f64 = o
        .events
        .iter()
        .map(|e| e["args"]["time"].as_f64().unwrap())
        .sum();
    assert_eq!(time, otime);
    let nulls = t
        .events
        .iter()
        .filter(|e| e.args.get("size_sum") == Some(&ArgValue::Null))
        .count();
    assert_eq!(
        nulls,
        o.events
            .iter()
            .filter(|e| e["args"]["size_sum"].is_null())
            .count()
    );
    let fnames = t.events.iter().filter(|e| e.args.fname.is_some()).count();
    assert_eq!(
        fnames,
        o.events
            .iter()
            .filter(|e| e["args"]["fname"].is_string())
            .count()
    );
}

#[test]
fn datacrumbs_profile_counters() {
    check_profile("datacrumbs/case-read-simple.profile.pfw.gz", 1020, "sys");
    let (t, _) = load("datacrumbs/case-read-simple.profile.pfw.gz");
    let e = &t.events[0];
    assert_eq!(
        (e.name.as_str(), e.cat.as_str(), e.pid, e.ts_ns),
        ("open", "c", 9362, 0)
    );
    assert_eq!(e.args.get("freq"), Some(&ArgValue::Int(4)));
    assert_eq!(e.args.get("time"), Some(&ArgValue::Float(1.1969e-05)));
    assert_eq!(e.args.hostname.as_deref(), Some("ebpf"));
    assert_eq!(e.args.fname, None);
    assert_eq!(t.events.last().unwrap().ts_ns, 1_000_000_000);
    let openat = &t.events[3];
    let f = "/tmp/ompi.ebpf.1000/pid.9350/pmix_dstor_ds21_9350/initial-pmix_shared-segment-0";
    assert_eq!(openat.args.fname.as_deref(), Some(f));
    assert_eq!(openat.args.fhash, Some(datasets::hash::hash_str(f)));
    assert_eq!(t.strings.file_of(openat), Some(f));
}

#[test]
fn datacrumbs_profile_plain_without_hostname() {
    check_profile("datacrumbs/simple_test_1MB_128K.profile.pfw", 5613, "sys");
    let (t, _) = load("datacrumbs/simple_test_1MB_128K.profile.pfw");
    assert_eq!(t.stats.files[0].compression, Compression::Plain);
    assert!(t.events.iter().all(|e| e.args.hostname.is_none()));
    let e = &t.events[1];
    assert_eq!(
        (e.name.as_str(), e.args.get("size_sum")),
        ("read", Some(&ArgValue::Int(64)))
    );
    assert_eq!(
        e.args.fname.as_deref(),
        Some("/sys/bus/pci/devices/0000:85:0f.7/config")
    );
}

#[test]
fn datacrumbs_profile_mpi_kernel_names() {
    check_profile("datacrumbs/write_all.profile.pfw.gz", 18438, "vfs");
    let (t, _) = load("datacrumbs/write_all.profile.pfw.gz");
    assert_eq!(
        t.events[1].name,
        "__jbd2_journal_temp_unlink_buffer [kernel]"
    );
    assert_eq!(t.events.last().unwrap().ts_ns, 56_000_000_000);
}

#[test]
fn dftracer_dlio_all_string_fields() {
    let (t, o) = load("dftracer/dlio-unet3d.pfw.gz");
    assert_eq!(t.stats.lines, 93_895);
    assert_eq!(t.events.len(), 93_894);
    check_against_oracle(&t, &o);
    assert_eq!(
        count_by(t.events.iter(), |e| e.cat.to_string())["POSIX"],
        88_090
    );
    let e = &t.events[0];
    assert_eq!(e.id, Some(0));
    assert_eq!(
        (e.name.as_str(), e.cat.as_str(), e.pid, e.tid),
        ("TorchFramework.__init__", "ai_framework", 0, 338_684)
    );
    assert_eq!((e.ts_ns, e.dur_ns), (1_698_352_095_942_658_000, 8_000));
    assert_eq!(e.args.hostname.as_deref(), Some("ruby165"));
    assert_eq!(t.strings.host_of(e), Some("ruby165"));
    let last = t.events.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.dur_ns),
        ("DLIOBenchmark.finalize", 44_865_000)
    );
    assert_eq!(last.args.get("step"), Some(&ArgValue::Int(1)));
    let fnames = t.events.iter().filter(|e| e.args.fname.is_some()).count();
    assert_eq!(
        fnames,
        o.events
            .iter()
            .filter(|e| e["args"]["fname"].is_string())
            .count()
    );
    assert_eq!(t.strings.len().1, 1);
}

#[test]
fn dftracer_posix_old_leading_space() {
    let (t, o) = load("dftracer/posix-old.pfw");
    assert_eq!(t.stats.lines, 1013);
    assert_eq!(t.events.len(), 1012);
    check_against_oracle(&t, &o);
    assert_eq!(t.events[0].name, "__lxstat");
    let open = &t.events[2];
    assert_eq!((open.name.as_str(), open.args.ret), ("open", Some(18)));
    assert_eq!(open.args.get("flags"), Some(&ArgValue::Int(66)));
    assert_eq!(
        open.args.fname.as_deref(),
        Some("/p/lustre1/haridev/dftracer_data/file_0-40.bat")
    );
    let last = t.events.last().unwrap();
    assert_eq!(
        (last.id, last.name.as_str(), last.dur_ns),
        (Some(1011), "remove", 759_589_000)
    );
}

#[test]
fn glob_reads_every_fixture_in_order() {
    let pattern = fixture("*/*.pfw*").to_string_lossy().into_owned();
    let paths = datasets::read::expand_globs(&[pattern]).unwrap();
    assert_eq!(paths.len(), 7);
    let t = read_all(&paths, ReadOptions::default()).unwrap();
    assert_eq!(
        t.events.len(),
        216_630 + 1019 + 216_131 + 5612 + 18_437 + 93_894 + 1012
    );
    assert_eq!(t.stats.files.len(), 7);
    assert_eq!(t.stats.skipped, 0);
}

#[test]
fn time_unit_option_applies_to_files_without_header() {
    let path = fixture("dftracer/posix-old.pfw");
    let opts = ReadOptions {
        time_unit: Some(TimeUnit::Ns),
        ..ReadOptions::default()
    };
    let t = read_all(&[path], opts).unwrap();
    assert_eq!(t.stats.files[0].unit_source, UnitSource::Option);
    assert_eq!(t.events[0].ts_ns, 1_698_080_323_775_554);
    assert_eq!(t.events[0].dur_ns, 141);
}
