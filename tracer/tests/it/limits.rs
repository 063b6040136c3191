//! The limits dc-trace records with a trace, against real settings (as root): `dd` reads a cold file in a blkio
//! (cgroup v1) group that throttles reads from the file's disk to 8 MiB/s. The trace must hold the limit as written,
//! and counters that moved by at least the bytes the cold reads had to take from the disk. The group is made for the
//! test and removed when it ends, failed or not. One test in this file: it moves the test process into the group.
//! DFTracer's validator (from scripts/setup.sh's venv) must still accept the trace.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use datasets::ArgValue;
use datasets::limits::{IoLimit, Limits, Moment};
use datasets::read::{ReadOptions, read_all};
use test_support::throttle::{Throttled, cold_file, dd_read, disk_of};
use tracer::{CollectOptions, collect};

/// The file read: 8 MiB, a second's worth at the limit.
const FILE_BYTES: u64 = 8 << 20;
const READ_BPS: u64 = 8 << 20;

fn readings(trace: &Path) -> (Limits, Limits) {
    let t = read_all(&[trace.to_owned()], ReadOptions::default()).unwrap();
    let mut all: Vec<Limits> = t
        .events
        .iter()
        .filter_map(Limits::from_event)
        .map(Result::unwrap)
        .collect();
    assert_eq!(all.len(), 2, "one reading at the start, one at the end");
    let end = all.pop().unwrap();
    let start = all.pop().unwrap();
    assert_eq!((start.at, end.at), (Moment::Start, Moment::End));
    assert!(start.ts_ns < end.ts_ns);
    (start, end)
}

/// The recorded limits of `dir`'s group, and its bytes and reads on `device` between the readings.
fn recorded(start: &Limits, end: &Limits, dir: &Path, device: &str) -> (Vec<IoLimit>, u64, u64) {
    let dir = dir.display().to_string();
    let group = |l: &Limits| {
        l.cgroups
            .iter()
            .find(|c| c.dir == dir)
            .unwrap_or_else(|| panic!("{dir} not recorded in {:?}", l.cgroups))
            .clone()
    };
    let (a, b) = (group(start), group(end));
    assert_eq!(a.io_limits, b.io_limits);
    let io = |c: &datasets::limits::Cgroup| {
        c.io.iter()
            .find(|i| i.device == device)
            .cloned()
            .unwrap_or_default()
    };
    let (ia, ib) = (io(&a), io(&b));
    (
        b.io_limits,
        ib.read_bytes - ia.read_bytes,
        ib.reads - ia.reads,
    )
}

/// The job's read requests on `device` in the trace's block layer, and their bytes.
fn job_reads_on(trace: &Path, device: &str) -> (u64, u64) {
    let t = read_all(&[trace.to_owned()], ReadOptions::default()).unwrap();
    t.events
        .iter()
        .filter(|e| e.name == "block_device_read")
        .filter(|e| matches!(e.args.get("dev"), Some(ArgValue::Str(d)) if d == device))
        .fold((0, 0), |(n, b), e| {
            (n + 1, b + e.args.size.unwrap_or(0) as u64)
        })
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_blkio_read_throttle_is_recorded_with_its_counters() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let device = disk_of(dir.path());
    let queue_setting = |f: &str| -> u64 {
        let name = fs::canonicalize(format!("/sys/dev/block/{device}")).unwrap();
        fs::read_to_string(name.join("queue").join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    for (case, flag) in [("buffered", ""), ("direct", " iflag=direct")] {
        let file = cold_file(dir.path(), FILE_BYTES);
        let trace = dir.path().join(format!("{case}.pfw.gz"));
        let group = {
            let t = Throttled::enter("datacrumbs-limits", &device, READ_BPS);
            let command = dd_read(&file, flag);
            let summary = collect(&CollectOptions::command(&trace, command)).unwrap();
            assert_eq!(summary.exit_status, Some(0), "{case}");
            t.dir.clone()
        };
        assert!(!group.exists(), "{case}: the group was not removed");
        let (start, end) = readings(&trace);
        let (limits, bytes, reads) = recorded(&start, &end, &group, &device);
        assert_eq!(
            limits,
            [IoLimit {
                device: device.clone(),
                read_bps: Some(READ_BPS),
                ..IoLimit::default()
            }],
            "{case}"
        );
        // A cold file is read whole from the disk, and nothing but dd ran in the group meanwhile: the group's
        // counters moved by the file's bytes at least (readahead stops at the end of the file).
        assert!(bytes >= FILE_BYTES, "{case}: {bytes} bytes read");
        assert!(reads > 0, "{case}");
        let queue = end.devices.iter().find(|d| d.device == device).unwrap();
        // The device's own counters, every process's: at least the group's bytes, and at least the requests and
        // bytes the trace's block layer gave the job on that device. (Not all of the file's: a bio the throttle
        // held is queued when a kworker dispatches it, outside the job.)
        let before = start.devices.iter().find(|d| d.device == device).unwrap();
        let disk = before.stat.unwrap().since(&queue.stat.unwrap());
        let (job_reads, job_bytes) = job_reads_on(&trace, &device);
        assert!(job_reads > 0, "{case}: no request of the job's on {device}");
        assert!(
            disk.reads >= job_reads && disk.read_bytes >= job_bytes.max(bytes),
            "{case}: the device read {disk:?}; the job {job_reads} requests, {job_bytes} bytes; the group {bytes} bytes"
        );
        assert_eq!(queue.read_ahead_kb, Some(queue_setting("read_ahead_kb")));
        assert_eq!(queue.nr_requests, Some(queue_setting("nr_requests")));
        assert!(
            end.mounts.iter().any(|m| m.mount_point == "/"),
            "{:?}",
            end.mounts
        );
        assert_eq!(
            end.dirty.dirty_ratio,
            Some(
                fs::read_to_string("/proc/sys/vm/dirty_ratio")
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            )
        );
        assert_eq!(end.errors, Vec::<String>::new());
        // DFTracer's validator still takes the trace, readings and all.
        let venv = std::env::var_os("DC_VENV")
            .map_or_else(|| PathBuf::from("/opt/datacrumbs-venv"), PathBuf::from);
        let out = Command::new(venv.join("bin/dftracer_validate"))
            .arg("--files")
            .arg(&trace)
            .output()
            .expect("dftracer_validate (scripts/setup.sh installs it)");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && report.contains("1 passed, 0 failed"),
            "{case}: {report}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
