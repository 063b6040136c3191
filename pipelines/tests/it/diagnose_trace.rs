//! dc-report on fresh dc-trace traces (as root). The diagnosis: direct reads are device-bound, and the same reads
//! under a blkio throttle are held above the device, which the comparison names as the cause of the added time. fio,
//! whose main process sleeps on a timer while its job process reads, is diagnosed by the job's wall-clock time: the
//! throttle is named, not the sleep, and two runs without it name nothing. Programs nobody here wrote (sqlite3, dd)
//! get their root cause first, each second claimed once, and the gain of each fix.
//! The page of a trace of dd, in headless Chromium: every section, and dd's output file with the bytes dd wrote.
//! The report's own tests (`pipelines/report/tests/`) need no tracer; these are here because they trace.

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use datasets::output::Existing;
use report::diagnose::compare::compare;
use report::diagnose::inputs::load;
use report::diagnose::kinds::Kind;
use report::diagnose::thresholds::WALL_NOISE_SHARE;
use report::diagnose::{Finding, Reason, Scope};
use report::trace_report::sections::{JOB, OPERATIONS, PER_FILE, TIME, TIMELINE};
use report::trace_report::{self, TraceReportOptions};
use test_support::chromium::{artefacts, check_page};

/// Reads of 64 KiB: the whole 4 MiB file.
const READS: u64 = 64;

/// What `dc-report` (the library, as the binary is the `report` crate's) is given without options.
fn options() -> TraceReportOptions {
    TraceReportOptions {
        traces: Vec::new(),
        read: Default::default(),
        output: PathBuf::new(),
        existing: Existing::Refuse,
        baseline: Vec::new(),
        json: None,
        summaries: Vec::new(),
        progress: false,
    }
}

fn data_file(dir: &Path) -> PathBuf {
    let p = dir.join("data.bin");
    let mut f = fs::File::create(&p).unwrap();
    f.write_all(&vec![7u8; (READS * 65536) as usize]).unwrap();
    // On the device before the reads, so that none of them flushes it first.
    f.sync_all().unwrap();
    p
}

fn dd(file: &Path) -> String {
    format!(
        "exec dd if={} of=/dev/null bs=64K count={READS} iflag=direct status=none",
        file.display()
    )
}

fn trace(out: &Path, script: String) {
    let command = vec!["sh".to_owned(), "-c".to_owned(), script];
    let summary = tracer::collect(&tracer::CollectOptions::command(out, command)).unwrap();
    assert_eq!(summary.exit_status, Some(0));
}

/// A blkio (cgroup v1) group that limits reads from one device, removed when dropped.
struct Throttle {
    dir: PathBuf,
    device: String,
}

impl Throttle {
    fn new(name: &str, device: String, iops: u32) -> Throttle {
        let dir = PathBuf::from(format!(
            "/sys/fs/cgroup/blkio/datacrumbs-{name}-{}",
            std::process::id()
        ));
        fs::create_dir(&dir).unwrap();
        let t = Throttle { dir, device };
        fs::write(
            t.dir.join("blkio.throttle.read_iops_device"),
            format!("{} {iops}", t.device),
        )
        .unwrap();
        t
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = fs::write(
            self.dir.join("blkio.throttle.read_iops_device"),
            format!("{} 0", self.device),
        );
        let _ = fs::remove_dir(&self.dir);
    }
}

fn direct_reads() -> Scope {
    Scope::Calls(Kind {
        op: "read".into(),
        mode: Some("direct".into()),
        size_class: Some("10K-100K".into()),
    })
}

fn block_finding(f: &[Finding]) -> &Finding {
    f.iter()
        .find(|x| x.layer == "block" && x.scope == direct_reads())
        .unwrap_or_else(|| panic!("no block finding for direct reads in {f:?}"))
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn throttled_direct_reads_are_held_above_the_device_and_named_the_cause() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path());
    let dev = fs::metadata(&file).unwrap().dev();
    let device = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let plain = dir.path().join("plain.pfw.gz");
    trace(&plain, dd(&file));
    let throttled = dir.path().join("throttled.pfw.gz");
    {
        let t = Throttle::new("diagnose", device, 200);
        trace(
            &throttled,
            format!(
                "echo $$ > {}/cgroup.procs && {}",
                t.dir.display(),
                dd(&file)
            ),
        );
    }

    let base = load(std::slice::from_ref(&plain), &Default::default(), false).unwrap();
    let b = block_finding(&base.findings()).clone();
    // One request on the device per 64 KiB read, counted inside the reads.
    assert_eq!(b.evidence["device_requests"], READS as f64);
    // Whether the plain reads are device_bound depends on the machine's load: a D wait ends when the woken thread
    // runs again, so on a busy machine the wait past the device's completion can outgrow the device time.
    assert_eq!(b.evidence["calls"], READS as f64);
    let cand = load(std::slice::from_ref(&throttled), &Default::default(), false).unwrap();
    let cf = cand.findings();
    let c = block_finding(&cf);
    assert_eq!(
        (c.reason, c.evidence["calls"]),
        (Reason::ThrottledAboveDevice, READS as f64)
    );
    // The candidate's costliest finding is the throttle.
    assert_eq!(
        (cf[0].layer.as_str(), cf[0].reason),
        ("block", Reason::ThrottledAboveDevice)
    );

    let diff = compare(&base, &cand).unwrap();
    let cause = diff.cause.as_ref().unwrap();
    assert_eq!(
        (cause.layer.as_str(), cause.reason),
        ("block", Reason::ThrottledAboveDevice),
        "{:#?}",
        diff.wall
    );
    assert!(cause.share > 0.5, "{cause:?}");
    let reads = diff
        .calls
        .iter()
        .find(|d| Scope::Calls(d.kind.clone()) == direct_reads())
        .unwrap();
    assert_eq!(
        (reads.baseline_calls, reads.candidate_calls),
        (READS, READS)
    );
    let sum: f64 = reads.layers.iter().map(|l| l.delta_ns_per_call).sum();
    assert!(
        (sum - reads.delta_ns_per_call).abs() <= 1e-6 * reads.delta_ns_per_call.abs(),
        "{sum} {}",
        reads.delta_ns_per_call
    );
    assert!(reads.interval.is_some(), "{:?}", reads.interval_note);
    assert!(
        diff.between_calls.is_some(),
        "{:?}",
        diff.between_calls_note
    );

    // dc-report's page opens with the findings, and its JSON carries the cause.
    let page = dir.path().join("report.html");
    let json = dir.path().join("diag.json");
    trace_report::write(&TraceReportOptions {
        traces: vec![throttled],
        output: page.clone(),
        baseline: vec![plain],
        json: Some(json.clone()),
        ..options()
    })
    .unwrap();
    let html = fs::read_to_string(&page).unwrap();
    let first = html.find("<h2 ").unwrap();
    assert_eq!(&html[first..first + 21], "<h2 id=\"findings\">Fin");
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["comparison"]["cause"]["layer"], "block");
    assert_eq!(v["comparison"]["cause"]["reason"], "throttled_above_device");
}

/// Every finding's claims add up to at most the job, and each gain is what its finding claimed at most, with a
/// method; the JSON carries both.
fn each_second_once(f: &[Finding], trace: &Path) {
    let sum: f64 = f.iter().map(|x| x.share).sum();
    assert!(sum <= 1.0 + 1e-9, "shares add up to {sum}: {f:#?}");
    for x in f {
        assert!(x.gain_ns <= x.cost_ns, "{x:?}");
        assert!(
            !x.gain_method.slug.is_empty() && !x.gain_method.how.is_empty(),
            "{x:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let (page, json) = (dir.path().join("r.html"), dir.path().join("d.json"));
    trace_report::write(&TraceReportOptions {
        traces: vec![trace.to_path_buf()],
        output: page,
        json: Some(json.clone()),
        ..options()
    })
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["share_of"], "job_time");
    for x in v["findings"].as_array().unwrap() {
        assert!(
            x["gain_ns"].as_u64().unwrap() <= x["cost_ns"].as_u64().unwrap(),
            "{x}"
        );
        assert!(x["gain_method"]["slug"].is_string(), "{x}");
    }
}

/// The Why case of issue 37: sqlite3 commits 500 autocommit inserts in WAL mode, one sync of the WAL per commit.
/// The top finding is the sync per commit, claiming the syncs' whole time (the matrix's sync calls on that file,
/// summed), not the block layer inside them.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sqlite_autocommits_are_named_a_sync_per_commit_with_the_syncs_time() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let sql = dir.path().join("inserts.sql");
    let mut text = String::from("PRAGMA journal_mode=WAL;\nCREATE TABLE t(x INTEGER, y TEXT);\n");
    for i in 0..500 {
        text.push_str(&format!("INSERT INTO t VALUES({i}, 'row {i}');\n"));
    }
    fs::write(&sql, text).unwrap();
    let trace_file = dir.path().join("sqlite.pfw.gz");
    trace(
        &trace_file,
        format!(
            "exec sqlite3 {} < {} > /dev/null",
            db.display(),
            sql.display()
        ),
    );
    let run = load(
        std::slice::from_ref(&trace_file),
        &Default::default(),
        false,
    )
    .unwrap();
    let f = run.findings();
    let top = &f[0];
    assert_eq!(
        (top.layer.as_str(), top.reason),
        ("app", Reason::FsyncHeavy),
        "{f:#?}"
    );
    let Scope::File { path } = &top.scope else {
        panic!("{top:?}")
    };
    assert!(path.ends_with("t.db-wal"), "{path}");
    let m = &run.matrix;
    let syncs: Vec<usize> = (0..m.n_rows())
        .filter(|&r| {
            datasets::vocab::op::flushes(&m.op[r]) && m.file[r].as_deref() == Some(path.as_str())
        })
        .collect();
    // One sync of the WAL per commit at least: 500 inserts and the table's creation.
    assert!(syncs.len() >= 500, "{}", syncs.len());
    assert_eq!(top.evidence["syncs"], syncs.len() as f64);
    let sync_ns: u64 = syncs.iter().map(|&r| m.dur_ns[r]).sum();
    assert_eq!(top.cost_ns, sync_ns);
    // Synced once instead, one sync of the 500 is left.
    assert!(
        top.gain_ns > sync_ns / 2 && top.gain_ns < sync_ns,
        "{top:?}"
    );
    assert_eq!(top.gain_method.slug, "syncs_batched");
    // No layer finding claims the WAL's syncs' time again: the layer findings of sync calls claim at most the
    // time of the syncs of other files (the database's at a checkpoint).
    let other: u64 = (0..m.n_rows())
        .filter(|&r| datasets::vocab::op::flushes(&m.op[r]) && !syncs.contains(&r))
        .map(|r| m.dur_ns[r])
        .sum();
    let on_syncs: u64 = f
        .iter()
        .filter(|x| matches!(&x.scope, Scope::Calls(k) if datasets::vocab::op::flushes(&k.op)))
        .map(|x| x.cost_ns)
        .sum();
    assert!(on_syncs <= other, "{on_syncs} > {other}: {f:#?}");
    each_second_once(&f, &trace_file);
}

/// Healthy runs: nothing in the application is worth fixing, so no application finding claims over 5% of the job.
fn healthy(name: &str, script: String) {
    let dir = tempfile::tempdir().unwrap();
    let trace_file = dir.path().join(format!("{name}.pfw.gz"));
    trace(&trace_file, script);
    let run = load(
        std::slice::from_ref(&trace_file),
        &Default::default(),
        false,
    )
    .unwrap();
    let f = run.findings();
    let app: Vec<&Finding> = f
        .iter()
        .filter(|x| x.layer == "app" && x.share > 0.05)
        .collect();
    assert!(app.is_empty(), "{name}: {app:#?}");
    each_second_once(&f, &trace_file);
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_sequential_read_of_a_warm_file_has_no_application_finding() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("warm.bin");
    fs::write(&file, vec![3u8; 64 << 20]).unwrap();
    // Read once so that the traced read finds every page in the cache.
    fs::read(&file).unwrap();
    healthy(
        "dd",
        format!(
            "exec dd if={} of=/dev/null bs=1M status=none",
            file.display()
        ),
    );
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn dd_trace_page() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dd.out");
    let trace = dir.path().join("dd.pfw.gz");
    let command = vec![
        "dd".to_owned(),
        "if=/dev/zero".to_owned(),
        format!("of={}", file.display()),
        "bs=64K".to_owned(),
        "count=24".to_owned(),
        "status=none".to_owned(),
    ];
    let summary = tracer::collect(&tracer::CollectOptions::command(&trace, command)).unwrap();
    assert_eq!(summary.exit_status, Some(0));
    let summary_json = dir.path().join("summary.json");
    fs::write(&summary_json, serde_json::to_string(&summary).unwrap()).unwrap();
    let page = artefacts(env!("CARGO_TARGET_TMPDIR")).join("dd.html");
    trace_report::write(&TraceReportOptions {
        traces: vec![trace],
        output: page.clone(),
        // The page stays in target/tmp for a person to open, and a later run replaces it.
        existing: Existing::Replace,
        summaries: vec![summary_json],
        ..options()
    })
    .unwrap();
    let dom = check_page("dd", &page, &[JOB, TIME, OPERATIONS, PER_FILE, TIMELINE]);

    // The oracle: the size of the file dd created.
    let written = fs::metadata(&file).unwrap().len();
    assert_eq!(written, 24 * 65536);
    let row = regex::Regex::new(&format!(
        "<tr><td>sys</td><td>{}</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td><td[^>]*>(\\d+)</td>",
        regex::escape(file.to_str().unwrap())
    ))
    .unwrap();
    let cells = row
        .captures(&dom)
        .unwrap_or_else(|| panic!("no row for {} in the per-file table", file.display()));
    let n = |i: usize| cells[i].parse::<u64>().unwrap();
    // bytes read, bytes written, reads, writes
    assert_eq!((n(1), n(2), n(3), n(4)), (0, written, 0, 24));
    let csv = fs::read_to_string(page.with_file_name("dd.files.csv")).unwrap();
    assert!(
        csv.contains(&format!("sys,\"{}\",0,{written},0,24,", file.display())),
        "{csv}"
    );
    // The probes dc-trace reported are on the page.
    assert!(dom.contains("<h3>Probes</h3>"));
    assert!(dom.contains("tracepoint"));
}

/// Random 4 KiB O_DIRECT reads of every block of an 8 MiB file, with pread (fio's psync engine), as one job: fio's
/// main process starts a job process and sleeps until it is done.
const FIO_JOB: &str = "[randread]
rw=randread
bs=4k
direct=1
ioengine=psync
size=8m
";
const FIO_READS: u64 = 2048;

fn fio(dir: &Path, file: &Path) -> String {
    let job = dir.join("randread.fio");
    fs::write(&job, FIO_JOB).unwrap();
    format!(
        "exec fio --output-format=terse --filename={} {}",
        file.display(),
        job.display()
    )
}

fn fio_file(dir: &Path) -> PathBuf {
    let p = dir.join("fio.bin");
    let mut f = fs::File::create(&p).unwrap();
    f.write_all(&vec![7u8; (FIO_READS * 4096) as usize])
        .unwrap();
    f.sync_all().unwrap();
    p
}

fn traced_run(path: &Path) -> report::diagnose::compare::Run {
    let run = load(&[path.to_owned()], &Default::default(), false).unwrap();
    let scan = run.scan.as_ref().unwrap();
    assert!(
        scan.has_sched,
        "{}: no off-CPU intervals: the sched layer did not attach",
        path.display()
    );
    // fio's main process and its job process.
    let pids: std::collections::BTreeSet<u64> = run.matrix.pid.iter().copied().collect();
    assert!(
        pids.len() >= 2,
        "{}: one process only: {pids:?}",
        path.display()
    );
    run
}

/// The job's 4 KiB direct reads, counted in the matrix.
/// The rows of the job's 4 KiB direct reads.
fn fio_read_rows(run: &report::diagnose::compare::Run) -> impl Iterator<Item = usize> + '_ {
    let kind = Kind {
        op: "read".into(),
        mode: Some("direct".into()),
        size_class: Some("1K-10K".into()),
    };
    (0..run.matrix.n_rows()).filter(move |&r| Kind::of(&run.matrix, r) == kind)
}

/// The first start and the last end of the job's 4 KiB direct reads, for a failure's message.
fn fio_reads_span(run: &report::diagnose::compare::Run) -> (u64, u64) {
    let m = &run.matrix;
    fio_read_rows(run).fold((u64::MAX, 0), |(a, b), r| {
        (a.min(m.ts_ns[r]), b.max(m.ts_ns[r] + m.dur_ns[r]))
    })
}

fn fio_reads(run: &report::diagnose::compare::Run) -> u64 {
    fio_read_rows(run).count() as u64
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fio_under_a_read_throttle_is_named_block_not_its_sleeping_main_process() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let file = fio_file(dir.path());
    let dev = fs::metadata(&file).unwrap().dev();
    let device = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let runs: Vec<PathBuf> = ["plain1", "plain2", "throttled"]
        .iter()
        .map(|n| dir.path().join(format!("{n}.pfw.gz")))
        .collect();
    trace(&runs[0], fio(dir.path(), &file));
    trace(&runs[1], fio(dir.path(), &file));
    // The device's requests completed while the throttled job ran, by the kernel's own count (reads and writes).
    let completed = || -> u64 {
        let stat = fs::read_to_string(format!("/sys/dev/block/{device}/stat")).unwrap();
        let v: Vec<u64> = stat
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        v[0] + v[4]
    };
    let before = completed();
    {
        // 500 reads a second: the 2048 reads take about 4 s instead of well under one.
        let t = Throttle::new("critpath-fio", device.clone(), 500);
        trace(
            &runs[2],
            format!(
                "echo $$ > {}/cgroup.procs && {}",
                t.dir.display(),
                fio(dir.path(), &file)
            ),
        );
    }
    let others = completed().saturating_sub(before + FIO_READS);
    let [plain1, plain2, throttled] = [0, 1, 2].map(|i| traced_run(&runs[i]));
    for r in [&plain1, &plain2, &throttled] {
        assert_eq!(fio_reads(r), FIO_READS, "{}", r.name);
    }

    let diff = compare(&plain1, &throttled).unwrap();
    let wall = diff.wall.as_ref().unwrap();
    let sum: f64 = wall.causes.iter().map(|c| c.added_ns).sum();
    assert!(
        (sum - wall.delta_ns as f64).abs() <= 1e-6 * wall.delta_ns.abs() as f64,
        "{sum} {}",
        wall.delta_ns
    );
    let cause = diff.cause.as_ref().unwrap();
    // Other processes (the suite's other tests, in a `.ci/run` of 2026-11-29) can send as many of the device's
    // requests as the job while it runs throttled: the diagnosis then names them, as the kernel's count of the
    // device's requests must confirm.
    if (cause.layer.as_str(), cause.reason) == ("block", Reason::SharedDevice) {
        assert!(
            others >= FIO_READS / 2,
            "shared_device named, but the device completed {others} requests besides the job's {FIO_READS}"
        );
        return;
    }
    // Failed once in eight `.ci/run`s (2026-11-28): fio reported 511 reads a second over 4 s, yet the throttled
    // trace's wall-clock time was 0.49 s; the reads' span says which of the two the trace holds.
    assert_eq!(
        (cause.layer.as_str(), cause.reason),
        ("block", Reason::ThrottledAboveDevice),
        "reads from {:?} (plain) and {:?} (throttled); {:#?}",
        fio_reads_span(&plain1),
        fio_reads_span(&throttled),
        wall
    );
    assert!(cause.share > 0.5, "{cause:?}");
    // The job's reads alone, at the throttle's 500 a second, take 2048 / 500 s: the wall-clock time grew by at
    // least most of that.
    assert!(
        wall.delta_ns as f64 > 0.75 * FIO_READS as f64 / 500.0 * 1e9,
        "{wall:?}"
    );

    // Two runs of the same job differ by the machine's noise. Within the noise share nothing is named; past it a
    // part of the change is, but never a throttle nor the main process's sleep. Past it twice in `.ci/run`s: +17%,
    // all but a fifth of it fio's own CPU time; and +17% (the CI of stop 50), of which 41 ms of 71 ms was the
    // device answering slower (`block`/`device_bound`, truly so: nothing held the reads above it).
    let same = compare(&plain1, &plain2).unwrap();
    let w = same.wall.as_ref().unwrap();
    if w.delta_ns as f64 <= WALL_NOISE_SHARE * w.baseline_ns as f64 {
        assert_eq!(same.cause, None, "{:#?}", same.wall);
    } else {
        assert!(
            same.cause.as_ref().is_none_or(|c| !matches!(
                c.reason,
                Reason::ThrottledAboveDevice | Reason::SleepWait
            )),
            "{:#?}",
            same.wall
        );
    }
}
