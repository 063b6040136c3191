//! Findings on the shared traces of every format the readers take: DataCrumbs' (with kernel layers), DFTracer's
//! (POSIX calls only), and Darshan logs (counters, and DXT segments where the log has them).

use std::fs;
use std::path::PathBuf;

use report::diagnose::inputs::load;
use report::diagnose::{Finding, Reason};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/fixtures/");

fn findings(trace: &str) -> Vec<Finding> {
    load(
        &[PathBuf::from(SHARED).join(trace)],
        &Default::default(),
        false,
    )
    .unwrap()
    .findings()
}

type Row = (String, String, String, u64);

fn summary(f: &[Finding]) -> Vec<Row> {
    f.iter()
        .map(|f| (f.scope.label(), f.layer.clone(), f.reason.slug(), f.cost_ns))
        .collect()
}

fn row(scope: &str, layer: &str, reason: &str, cost: u64) -> Row {
    (scope.into(), layer.into(), reason.into(), cost)
}

#[test]
fn datacrumbs_small_reads_spend_their_time_in_vfs() {
    let f = findings("datacrumbs/case-read-simple.trace.pfw.gz");
    assert_eq!(
        summary(&f)[..5],
        [
            row("read 1K-10K", "vfs", "kernel_cpu", 790_000),
            row("read 100-1K", "vfs", "kernel_cpu", 154_000),
            row("openat", "self", "call_overhead", 139_000),
            row("close", "self", "call_overhead", 98_000),
            row("read 100-1K", "ext4", "kernel_cpu", 92_000),
        ]
    );
    // vfs holds 790 of the 842 µs of the 78 reads of 1 to 10 KiB, vfs_read 10.2 µs a call.
    assert_eq!(f[0].evidence["ns_per_call"], 790_000.0 / 78.0);
    assert_eq!(f[0].evidence["mean_ns"], 842_000.0 / 78.0);
    assert_eq!(
        f[0].evidence["event:vfs_read:ns_per_call"],
        794_000.0 / 78.0
    );
    // 192 reads, all small, are far from Drishti's minimum of 1000 small requests: no application pattern.
    assert!(f.iter().all(|x| x.layer != "app"), "{:?}", summary(&f));
    assert_eq!(f.len(), 9);
}

#[test]
fn dftracer_calls_without_layers_get_the_application_rules_only() {
    assert_eq!(
        summary(&findings("dftracer/dlio-unet3d.pfw.gz")),
        // The slowest thread brought down to the mean of the 4 threads that read at the same time.
        [row("thread 0/339092", "app", "imbalance", 5_193_872_000)]
    );
    // Its small reads are under Drishti's minimum of 1000.
    assert_eq!(summary(&findings("dftracer/posix-old.pfw")), []);
}

#[test]
fn darshan_counters_give_drishtis_rules() {
    // One random read and write of four each: under Drishti's minimum of 1000 random requests.
    let f = findings("darshan/mpi-io-test-x86_64-3.4.0.darshan");
    assert_eq!(
        summary(&f),
        [row(
            "/tmp/test/mpi-io-test.tmp.dat",
            "POSIX",
            "imbalance",
            17_985_821
        )]
    );
    let snyder = findings(
        "darshan/snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan",
    );
    // 353 small reads of 3038 are over 10% but under Drishti's minimum of 1000; 15 files were read past their
    // extent (more bytes than their highest offset read): the excess was read again.
    assert!(!snyder.iter().any(|x| x.reason == Reason::SmallRequests));
    let misaligned = snyder
        .iter()
        .find(|x| x.reason == Reason::Misaligned)
        .unwrap();
    assert_eq!(
        summary(std::slice::from_ref(misaligned)),
        [row("the job", "POSIX", "misaligned", 490_924_325)]
    );
    assert_eq!(misaligned.evidence["file_not_aligned"], 304.0);
    assert_eq!(
        snyder
            .iter()
            .filter(|x| x.layer == "POSIX" && x.reason == Reason::Reread)
            .count(),
        15
    );
    let stdio = findings("darshan/partial_data_stdio.darshan");
    assert_eq!(
        summary(&stdio)[0],
        row("the job", "STDIO", "stdio_instead_of_posix", 5_446_892_883)
    );
    assert_eq!(stdio[0].evidence["stdio_bytes"], 17_129_537_858.0);
}

#[test]
fn darshan_dxt_segments_also_give_the_per_call_rules() {
    let f =
        findings("darshan/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan");
    // 32 processes read and wrote at the same time; the slowest, brought down to their mean, saves 0.92 s. Its 65
    // random and 64 small writes are under Drishti's minimum of 1000.
    assert_eq!(
        summary(&f),
        [row("process 14", "app", "imbalance", 917_564_464)]
    );
    assert_eq!(f[0].evidence["processes"], 32.0);
    // Ten ranks read the same Python modules, nine tenths of their bytes again, yet no file's re-reads reach 1% of
    // the job's I/O time: only the counters' findings remain.
    let h = findings("darshan/hdf5_diagonal_write_1_byte_dxt.darshan");
    assert_eq!(
        summary(&h),
        [
            row("the job", "POSIX", "metadata_heavy", 330_661_297),
            row("the job", "POSIX", "misaligned", 11_185_283),
        ]
    );
    assert!(h.iter().map(|x| x.share).sum::<f64>() <= 1.0);
}

#[test]
fn every_darshan_log_is_diagnosed() {
    // The empty log, and runs of four reads and four writes over four ranks as balanced as Drishti's straggler
    // rule asks: Drishti fires no problem on them either (pipelines/report/tests/it/drishti.rs).
    let nothing_to_fix = [
        "empty_log.darshan",
        "mpi-io-test-x86_64-3.0.1.darshan",
        "mpi-io-test-x86_64-3.1.0.darshan",
        "mpi-io-test-x86_64-3.1.1.darshan",
        "mpi-io-test-x86_64-3.4.1.darshan",
        "mpi-io-test-x86_64-3.4.4.darshan",
        "mpi-io-test-x86_64-3.4.6.darshan",
        "mpi-io-test-x86_64-3.5.0.darshan",
    ];
    let mut n = 0;
    for e in fs::read_dir(PathBuf::from(SHARED).join("darshan")).unwrap() {
        let p = e.unwrap().path();
        let run = load(std::slice::from_ref(&p), &Default::default(), false)
            .unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
        let f = run.findings();
        if nothing_to_fix.iter().any(|name| p.ends_with(name)) {
            assert_eq!(f, [], "{}", p.display());
        } else {
            assert!(!f.is_empty(), "{}: no finding", p.display());
        }
        n += 1;
    }
    assert_eq!(n, 31);
}
