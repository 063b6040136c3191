//! What processes outside the job submit to a device while it runs, which a trace records beside the device's own
//! counters (`submitted_by_others`): those counters also hold the job's writeback, done by kernel threads, and cannot
//! tell it from a neighbour's writes. A process outside the scope writes 8 MiB with O_DIRECT to a fresh ext4 on a
//! loop device while the job waits for it; bpftrace counts the bios that non-kernel threads queue on that device.

use std::os::unix::fs::MetadataExt;
use std::process::Command;

use datasets::limits::{DiskStat, Limits, Moment};
use datasets::read::{ReadOptions, read_all};
use test_support::ext4::JournalledExt4;
use test_support::oracle::Oracle;
use tracer::{CollectOptions, collect};

const MIB: u64 = 8;

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn bios_other_processes_submit_are_counted_per_device_as_bpftrace_counts_them() {
    let _machine = test_support::machine();
    let ext4 = JournalledExt4::new(64, 4);
    let mnt = ext4.mount_point();
    let dev = std::fs::metadata(&mnt).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    // rwbs names the operation first, after a flush's F: R, W, D (discard), N (none). (Its 10 bytes past the NUL
    // vary, so it is no map key.)
    let probe = |op: &str| {
        format!(
            r#"tracepoint:block:block_bio_queue /args->dev == {dev} && !(curtask->flags & 0x200000) &&
    (strncmp(args->rwbs, "{op}", 1) == 0 || strncmp(args->rwbs, "F{op}", 2) == 0)/ {{
    @n["{op}"] = count(); @bytes["{op}"] = sum(args->nr_sector * 512);
}}
"#,
            dev = (major << 20) | minor
        )
    };
    let oracle = Oracle::start(&format!(
        "BEGIN {{ printf(\"ready\\n\"); }}\n{}{}",
        probe("R"),
        probe("W")
    ));
    // The job waits on files elsewhere, so that only the neighbour's bios reach the device.
    let dir = tempfile::tempdir().unwrap();
    let (go, done) = (dir.path().join("go"), dir.path().join("done"));
    let neighbour = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while [ ! -e {go} ]; do sleep 0.01; done; dd if=/dev/zero of={mnt}/other bs=1M count={MIB} oflag=direct status=none && touch {done}",
            go = go.display(),
            done = done.display(),
            mnt = mnt.display(),
        ))
        .spawn()
        .unwrap();
    let _neighbour = test_support::workload::Killed(neighbour);
    let trace = dir.path().join("trace.pfw.gz");
    let job = format!(
        "touch {go}; while [ ! -e {done} ]; do sleep 0.01; done",
        go = go.display(),
        done = done.display()
    );
    let summary = collect(&CollectOptions::command(
        &trace,
        vec!["sh".into(), "-c".into(), job],
    ))
    .expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0));
    let oracle_skipped = oracle.skipped_runs();
    let maps = oracle.stop();
    // Either tracer misses a bio whose program the kernel skipped, a BPF program being in progress on that CPU.
    let skipped = summary
        .kernel_skipped_per_layer
        .get("block")
        .copied()
        .unwrap_or(0);

    let t = read_all(&[trace], ReadOptions::default()).unwrap();
    let end: Limits = t
        .events
        .iter()
        .filter_map(Limits::from_event)
        .map(Result::unwrap)
        .find(|l| l.at == Moment::End)
        .expect("the end's reading");
    let device = format!("{major}:{minor}");
    let ours = end
        .devices
        .iter()
        .find(|d| d.device == device)
        .unwrap_or_else(|| panic!("{device} not recorded: {:?}", end.devices))
        .submitted_by_others
        .expect("the block layer counts others' bios");
    let get =
        |map: &str, op: &str| maps.get(map).and_then(|m| m.get(op)).copied().unwrap_or(0) as u64;
    let theirs = DiskStat {
        reads: get("@n", "R"),
        read_bytes: get("@bytes", "R"),
        writes: get("@n", "W"),
        write_bytes: get("@bytes", "W"),
        io_ticks_ms: 0,
    };
    eprintln!(
        "ours {ours:?}, {skipped} skipped; bpftrace's {theirs:?}, {oracle_skipped} skipped ({maps:?})"
    );
    let within =
        |a: u64, b: u64, b_missed: u64, a_missed: u64| b <= a + b_missed && a <= b + a_missed;
    assert!(
        within(ours.reads, theirs.reads, oracle_skipped, skipped)
            && within(ours.writes, theirs.writes, oracle_skipped, skipped),
        "ours {ours:?}, {skipped} skipped; bpftrace's {theirs:?}, {oracle_skipped} skipped"
    );
    // dd's are the only writes to the device from a process: its MIB bios of 1 MiB.
    for (who, got, missed) in [
        ("ours", ours, skipped),
        ("bpftrace's", theirs, oracle_skipped),
    ] {
        assert!(
            got.write_bytes <= MIB << 20 && got.write_bytes + (missed << 20) >= MIB << 20,
            "{who}: {got:?}, {missed} skipped"
        );
    }
}
