//! Every scenario in pipelines/scenarios, run small by `dc-pipeline scenario` (as root): the run-against-run
//! diagnosis names the injected cause as the top layer and reason, and so does the candidate's costliest finding.
//! And a scenario killed with SIGKILL mid-run leaves the machine as it found it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pipelines::scenario::inject::Inject;
use pipelines::scenario::{Expect, Scenario, Verdict, false_causes, names_a_cause};
use report::diagnose::Reason;
use report::diagnose::json::Diagnosis;

const PIPELINE: &str = env!("CARGO_BIN_EXE_dc-pipeline");

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// Runs a scenario; returns its expected cause, its diagnosis, its verdict and what dc-pipeline printed.
fn run(name: &str) -> (Option<Expect>, Diagnosis, Verdict, String) {
    let _machine = test_support::machine();
    let file = scenarios_dir().join(format!("{name}.toml"));
    let expect = Scenario::load(&file).unwrap().expect;
    // DC_SCENARIO_OUT keeps each scenario's report directory there (for the README's table); else it goes.
    let tmp = tempfile::tempdir().unwrap();
    let out = std::env::var_os("DC_SCENARIO_OUT")
        .map_or_else(|| tmp.path().to_owned(), |d| PathBuf::from(d).join(name));
    let run = Command::new(PIPELINE)
        .args(["scenario", file.to_str().unwrap(), "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    // Exit 1 is a verdict (asserted by the callers with the numbers); anything else is a failure to run.
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let read = |f: &str| fs::read_to_string(out.join("data").join(f)).unwrap();
    let d: Diagnosis = serde_json::from_str(&read("diagnosis.json")).unwrap();
    let v: Verdict = serde_json::from_str(&read("scenario.json")).unwrap();
    (expect, d, v, stdout)
}

/// The comparison names the injected cause, and so does the candidate's costliest finding, which is returned.
fn diagnose(name: &str) -> report::diagnose::finding::Finding {
    let (expect, d, _, stdout) = run(name);
    let expect = expect.expect("a scenario that injects a cause names it");
    let comparison = d
        .comparison
        .as_ref()
        .expect("a scenario's diagnosis compares two runs");
    let cause = comparison
        .cause
        .as_ref()
        .map(|c| (c.layer.as_str(), c.reason));
    assert_eq!(
        cause,
        Some((expect.layer.as_str(), expect.reason)),
        "{stdout}wall-clock change: {:?}",
        comparison.wall
    );
    let top = &d.findings[0];
    assert_eq!(
        (top.layer.as_str(), top.reason),
        (expect.layer.as_str(), expect.reason),
        "{stdout}"
    );
    top.clone()
}

/// What scenario `name` injects.
fn injected(name: &str) -> Inject {
    Scenario::load(&scenarios_dir().join(format!("{name}.toml")))
        .unwrap()
        .inject
}

/// A CPU quota scenario's top finding cites the quota the scenario set, in µs of each 100 ms period.
fn cites_its_quota(name: &str) {
    let Inject::CpuQuota { cpus } = injected(name) else {
        panic!("{name} injects no CPU quota");
    };
    let top = diagnose(name);
    assert_eq!(
        (
            top.evidence.get("cpu_quota_us"),
            top.evidence.get("cpu_period_us")
        ),
        (Some(&(cpus * 100_000.0)), Some(&100_000.0)),
        "{top:?}"
    );
    assert!(top.evidence["nr_throttled"] > 0.0, "{top:?}");
}

/// A neighbour scenario's top finding names the disk its scratch directory is on, and the other processes' share
/// of that disk's work over the candidate's run.
fn cites_its_neighbours(name: &str) -> report::diagnose::finding::Finding {
    let top = diagnose(name);
    let out = std::env::var_os("DC_SCENARIO_OUT").map_or_else(std::env::temp_dir, PathBuf::from);
    let disk = test_support::throttle::disk_of(&out);
    assert!(
        top.recommendation.contains(&format!("({disk})")),
        "{}: {top:?}",
        top.recommendation
    );
    assert!(
        top.evidence["device_others_share"] >= report::diagnose::limits::SHARED_DEVICE_SHARE,
        "{top:?}"
    );
    assert!(
        top.evidence["device_others_requests"]
            >= report::diagnose::limits::SHARED_DEVICE_MIN_REQUESTS as f64,
        "{top:?}"
    );
    top
}

/// A job that writes back beside other writers: their writes are counted as they submitted them, since the
/// device's counters also hold the job's own writeback.
fn cites_its_writing_neighbours(name: &str) {
    let top = cites_its_neighbours(name);
    assert!(
        top.recommendation
            .contains("their writes as they submitted them"),
        "{}",
        top.recommendation
    );
}

/// A healthy run, twice: the comparison names no cause or application pattern (it may name a change in what any
/// run does, such as the device's speed), and no finding names one above the healthy share of the job's wall-clock
/// time.
fn healthy(name: &str) -> Diagnosis {
    let (expect, d, v, stdout) = run(name);
    assert_eq!(expect, None, "{name} is a healthy scenario");
    let comparison = d.comparison.as_ref().expect("two runs compared");
    let cause = comparison.cause.as_ref().filter(|c| names_a_cause(c));
    assert_eq!(
        cause.map(|c| (&c.layer, c.reason)),
        None,
        "{stdout}wall-clock change: {:?}",
        comparison.wall
    );
    assert_eq!(false_causes(&d), [], "{stdout}");
    assert!(v.named(), "{}", v.line());
    d
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_device_throttled_for_the_workloads_cgroup_is_named() {
    diagnose("blkio-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_busy_loop_on_the_io_threads_cpu_is_named() {
    diagnose("cpu-contention");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_memory_limit_below_the_working_set_is_named() {
    diagnose("memory-pressure");
}

/// A memory limit scenario's top finding cites the limit the scenario set, and the pages the job read again because
/// the limit let go of them.
fn cites_its_memory_limit(name: &str) {
    let Inject::Memory { limit } = injected(name) else {
        panic!("{name} injects no memory limit");
    };
    let top = diagnose(name);
    assert_eq!(
        top.evidence.get("memory_limit_bytes"),
        Some(&(limit.0 as f64)),
        "{top:?}"
    );
    assert!(top.evidence["refaulted_pages"] > 0.0, "{top:?}");
    assert_eq!(top.gain_method.slug, "evicted_pages_kept", "{top:?}");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tar_reading_again_what_a_memory_limit_let_go_of_is_named_for_the_limit() {
    cites_its_memory_limit("tar-memory-limit");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn db_bench_reading_again_what_a_memory_limit_let_go_of_is_named_for_the_limit() {
    cites_its_memory_limit("db_bench-memory-limit");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn find_reading_again_the_inode_blocks_a_memory_limit_let_go_of_is_named_for_the_limit() {
    cites_its_memory_limit("find-memory-limit");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_low_dirty_bytes_is_named() {
    diagnose("dirty-throttling");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn unzip_under_a_low_dirty_bytes_is_named() {
    diagnose("unzip-dirty-bytes");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_file_opened_o_dsync_is_named_a_sync_per_write() {
    diagnose("journal-commits");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn writers_appending_to_one_file_are_named_for_its_lock() {
    diagnose("lock-contention");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn readahead_off_is_named() {
    diagnose("readahead-off");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_noisy_neighbour_is_named() {
    cites_its_neighbours("noisy-neighbour");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn the_same_bytes_in_small_requests_are_named() {
    diagnose("small-requests");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_shallow_device_queue_is_named() {
    diagnose("shallow-queue");
}

// Real programs under an injected cause: fio, sqlite3, RocksDB's db_bench, GNU tar and Python, none written here.

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fio_jobs_under_a_read_throttle_are_named_block_not_fios_waiting_main_process() {
    diagnose("fio-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fios_jobs_starting_cold_under_a_read_throttle_are_named_for_the_throttle() {
    diagnose("fio-jobs-cold-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fios_io_uring_reads_under_a_read_throttle_are_named_block_not_a_sleep() {
    diagnose("fio-uring-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fios_sequential_reads_with_readahead_off_are_named() {
    diagnose("fio-readahead-off");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sqlite_committing_every_insert_is_named_a_sync_per_commit() {
    diagnose("sqlite-sync-per-commit");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn db_bench_syncing_every_write_is_named_a_sync_per_write() {
    diagnose("db_bench-sync");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tar_with_readahead_off_is_named() {
    diagnose("tar-readahead-off");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tars_buffered_reads_under_a_read_throttle_are_named_for_the_throttle() {
    diagnose("tar-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn finds_stats_under_a_read_throttle_are_named_for_the_throttle() {
    diagnose("find-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn cps_copy_under_a_read_throttle_is_named_for_the_throttle_not_a_writes_wait() {
    diagnose("cp-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pythons_small_reads_are_named() {
    diagnose("python-small-reads");
}

/// Python reads a cold file through `mmap`: no read call, only page faults between its calls, each waiting for the
/// one page it asked for (held out in round seven, where the job's I/O wait was named, not readahead). The finding
/// is over the job, and cites the disk's setting.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pythons_faults_through_a_mapping_with_readahead_off_are_named_readahead() {
    let top = diagnose("python-mmap-readahead-off");
    assert_eq!(top.scope, report::diagnose::Scope::Job);
    assert_eq!(top.evidence["read_ahead_kb"], 0.0);
    assert!(top.evidence["pages_added_between_calls"] > 0.0, "{top:?}");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn cps_copy_with_readahead_off_is_named_readahead_not_the_device() {
    diagnose("cp-readahead-off");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pgbenchs_commits_under_a_write_throttle_are_named_for_the_throttle() {
    diagnose("pgbench-write-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pgbench_sharing_its_cpu_with_busy_loops_is_named() {
    diagnose("pgbench-cpu-contention");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn db_bench_sharing_its_cpu_is_named_for_its_wait_between_calls() {
    diagnose("db_bench-cpu-contention");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sqlites_scan_under_a_read_throttle_is_named_for_the_throttle() {
    diagnose("sqlite-read-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pythons_cold_reads_under_a_read_throttle_are_named_for_the_throttle() {
    diagnose("python-read-throttle");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fios_own_aio_job_file_beside_other_readers_is_named_for_the_shared_device() {
    cites_its_neighbours("fio-neighbour");
}

/// Round nine's held-out case: fio's butterfly example reads every byte twice, and the bytes read again, a pattern
/// of the job's own, had claimed half the reads' waits for the others' requests before the shared device was found.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fios_butterfly_reading_every_byte_twice_beside_other_readers_is_named_for_the_shared_device() {
    cites_its_neighbours("fio-butterfly-neighbour");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pythons_direct_reads_beside_other_readers_are_named_for_the_shared_device() {
    cites_its_neighbours("python-neighbour");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pgbench_beside_other_writers_is_named_for_the_shared_device() {
    cites_its_writing_neighbours("pgbench-neighbour-writers");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sqlites_sync_per_commit_beside_other_writers_is_named_for_the_shared_device() {
    cites_its_writing_neighbours("sqlite-neighbour-writers");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn db_bench_writing_its_log_a_put_at_a_time_is_named_for_small_requests() {
    diagnose("db_bench-wal-writes");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tar_extracting_in_512_byte_records_is_named_for_small_requests() {
    diagnose("tar-extract-records");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tar_under_a_cpu_quota_is_named_for_its_wait_citing_the_quota() {
    cites_its_quota("tar-cpu-quota");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fios_jobs_under_a_cpu_quota_are_named_for_their_wait_citing_the_quota() {
    cites_its_quota("fio-cpu-quota");
}

// Healthy runs: the same workload twice, no cause injected.

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_cold_sequential_read_with_readahead_on_is_healthy() {
    healthy("healthy-sequential-read");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tar_of_cold_files_with_readahead_on_is_healthy() {
    healthy("healthy-tar");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn find_over_directories_of_the_same_names_is_healthy() {
    healthy("healthy-find");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn git_checking_out_a_cached_repository_is_healthy() {
    healthy("healthy-git-checkout");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sqlite_inserting_in_one_transaction_is_healthy() {
    healthy("healthy-sqlite-transaction");
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn pgbench_with_its_defaults_is_healthy_its_commits_answer_its_client() {
    healthy("healthy-pgbench");
}

/// GNU sort reads a cached file into a fresh 256 MiB buffer: the reads fault its pages in for the first time. That
/// is the job's own work, not memory pressure (held out in round seven, where it was the top finding).
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sort_faulting_in_its_own_buffer_is_healthy() {
    let d = healthy("healthy-sort");
    let named = |r: Reason| {
        d.findings
            .iter()
            .filter(|f| f.reason == r)
            .map(|f| (f.layer.clone(), f.scope.label(), f.cost_ns))
            .collect::<Vec<_>>()
    };
    assert_eq!(named(Reason::MemoryPressure), [], "{:?}", d.findings);
    assert!(!named(Reason::PageFaults).is_empty(), "{:?}", d.findings);
}

#[test]
fn every_scenario_file_has_a_test() {
    let tests =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/scenarios.rs"))
            .unwrap();
    let mut names: Vec<String> = fs::read_dir(scenarios_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 48);
    for n in names {
        assert!(
            [
                "diagnose",
                "healthy",
                "cites_its_quota",
                "cites_its_neighbours",
                "cites_its_writing_neighbours",
                "cites_its_memory_limit"
            ]
            .iter()
            .any(|f| tests.contains(&format!("{f}(\"{n}\")"))),
            "{n} has no test"
        );
    }
}

#[test]
fn a_bad_scenario_is_refused_with_its_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    fs::write(
        &file,
        "name = \"x\"\nworkload = \"true\"\n\n[inject]\nkind = \"hugepages\"\n\n[expect]\nlayer = \"block\"\nreason = \"device_bound\"\n",
    )
    .unwrap();
    let e = Scenario::load(&file).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}:5: field `inject.kind`: unknown variant `hugepages`",
            file.display()
        )),
        "{e}"
    );
    fs::write(
        &file,
        "name = \"x\"\nworkload = \"true\"\n\n[inject]\nkind = \"cpu_quota\"\ncpus = 0.001\n\n[expect]\nlayer = \"sched\"\nreason = \"cpu_contention\"\n",
    )
    .unwrap();
    assert_eq!(
        Scenario::load(&file).unwrap_err().to_string(),
        format!(
            "{}:6: field `inject.cpus`: 0.001 CPUs is no quota the kernel takes: at least 0.01 (1 ms of each 100 ms period)",
            file.display()
        )
    );
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_scenario_killed_with_sigkill_restores_the_knob_and_removes_its_cgroups() {
    let _machine = test_support::machine();
    let out = tempfile::tempdir().unwrap();
    let disk = pipelines::scenario::inject::Disk::of(out.path()).unwrap();
    let knob = PathBuf::from(format!("/sys/block/{}/queue/read_ahead_kb", disk.name));
    let before = fs::read_to_string(&knob).unwrap();
    let injected = if before.trim() == "64" { "96" } else { "64" };
    let file = out.path().join("kill.toml");
    // The candidate, and only it, sleeps: it sees the knob changed.
    fs::write(
        &file,
        format!(
            "name = \"kill\"\nworkload = \"if [ $(cat {k}) = {injected} ]; then sleep 600; fi\"\n\n[inject]\nkind = \"queue\"\nknob = \"read_ahead_kb\"\nvalue = \"{injected}\"\n\n[expect]\nlayer = \"block\"\nreason = \"device_bound\"\n",
            k = knob.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(PIPELINE)
        .args(["scenario", file.to_str().unwrap(), "-q", "--out"])
        .arg(out.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let group = PathBuf::from(format!(
        "/sys/fs/cgroup/pids/datacrumbs-scenario-{}",
        child.id()
    ));
    let sleeping = || {
        fs::read_to_string(group.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .any(|p| {
                fs::read_to_string(format!("/proc/{}/comm", p.trim())).is_ok_and(|c| c == "sleep\n")
            })
    };
    wait_for("the candidate's sleep", sleeping);
    assert_eq!(fs::read_to_string(&knob).unwrap().trim(), injected);
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for("the knob restored and the cgroups removed", || {
        fs::read_to_string(&knob).unwrap() == before
            && !group.exists()
            && !Path::new(&format!("{}-helpers", group.display())).exists()
    });
    assert!(
        !Path::new(&format!(
            "{}/{}.jsonl",
            pipelines::scenario::restore::JOURNAL_DIR,
            child.id()
        ))
        .exists()
    );
}
