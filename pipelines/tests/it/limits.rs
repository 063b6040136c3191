//! The machine's limits in the diagnosis (as root): `dd` reads a cold file in 128 KiB reads inside a blkio
//! (cgroup v1) group that throttles reads from the file's disk to 8 MiB/s, buffered and then direct. The costliest
//! finding of each trace must be `block` / `throttled_above_device`, citing that limit and the file that sets it.
//! Without the limits recorded (another tool's trace), the findings stay and the diagnosis says once why they cite
//! none. The group is made for the test and removed when it ends, failed or not. The test moves this process into
//! it, so this file holds no other test that does I/O of its own on that disk but a small read.

use std::path::PathBuf;

use report::diagnose::inputs::load;
use report::diagnose::json::Diagnosis;
use report::diagnose::{Reason, Scope};
use test_support::throttle::{Throttled, cold_file, dd_read, disk_of};

const FILE_BYTES: u64 = 8 << 20;
const READ_BPS: u64 = 8 << 20;
/// A trace written by DataCrumbs (the Python tracer), which records no limits.
const OLD_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn throttled_reads_are_named_with_the_cgroups_limit_buffered_or_direct() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let device = disk_of(dir.path());
    for (case, mode, flag) in [
        ("buffered", "buffered", ""),
        ("direct", "direct", " iflag=direct"),
    ] {
        let file = cold_file(dir.path(), FILE_BYTES);
        let trace = dir.path().join(format!("{case}.pfw.gz"));
        let setting = {
            let t = Throttled::enter("datacrumbs-limits-diag", &device, READ_BPS);
            let command = dd_read(&file, flag);
            let summary =
                tracer::collect(&tracer::CollectOptions::command(&trace, command)).unwrap();
            assert_eq!(summary.exit_status, Some(0), "{case}");
            t.dir.join("blkio.throttle.read_bps_device")
        };
        let run = load(std::slice::from_ref(&trace), &Default::default(), false).unwrap();
        let d = Diagnosis::of(&run, None).unwrap();
        assert_eq!(d.limits_note, None, "{case}");
        let top = &d.findings[0];
        assert_eq!(
            (top.layer.as_str(), top.reason),
            ("block", Reason::ThrottledAboveDevice),
            "{case}: {:#?}",
            &d.findings[..d.findings.len().min(4)]
        );
        let Scope::Calls(kind) = &top.scope else {
            panic!("{case}: {:?}", top.scope)
        };
        assert_eq!(
            (kind.op.as_str(), kind.mode.as_deref()),
            ("read", Some(mode))
        );
        assert_eq!(top.evidence["limit_read_bps"], READ_BPS as f64);
        let cited = format!("the cgroup's read_bps limit on {device} is 8.0 MiB/s");
        assert!(
            top.recommendation.contains(&cited)
                && top.recommendation.contains(setting.to_str().unwrap()),
            "{case}: {}",
            top.recommendation
        );
        // The throttle took over the findings of the waits it caused: each second is still claimed once, and
        // removing the throttle removes the wait.
        let shares: f64 = d.findings.iter().map(|f| f.share).sum();
        assert!(shares <= 1.0 + 1e-9, "{case}: {shares}: {:#?}", d.findings);
        assert_eq!(
            (top.gain_ns, top.gain_method.slug.as_str()),
            (top.cost_ns, "wait_removed"),
            "{case}"
        );
        // No other finding names the reads' wait for the device by another reason.
        assert!(
            !d.findings.iter().any(|f| f.scope == top.scope
                && matches!(
                    f.reason,
                    Reason::ReadaheadMiss | Reason::DeviceBound | Reason::IoWait
                )),
            "{case}: {:#?}",
            d.findings
        );
    }
}

/// A trace without limits: the note says so, once, in the JSON; the findings are there all the same.
#[test]
fn a_trace_without_limits_is_diagnosed_with_a_note() {
    let run = load(&[PathBuf::from(OLD_TRACE)], &Default::default(), false).unwrap();
    let d = Diagnosis::of(&run, None).unwrap();
    assert!(!d.findings.is_empty());
    let note = d.limits_note.as_deref().unwrap();
    assert!(note.starts_with("No limits were recorded"), "{note}");
    let json = d.to_json().unwrap();
    assert_eq!(json.matches("No limits were recorded").count(), 1);
}
