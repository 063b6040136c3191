//! Off-CPU stacks explain a wait: 64 KiB O_DIRECT reads, plain and with the device throttled for
//! the reader by a blkio cgroup (v1), are traced, and the time the throttle adds to each read must
//! go to the block layer in the features, under the function the thread waited in, not to
//! `sched`. Needs root, BPF, kallsyms and the blkio controller; it fails (never skips) where they
//! are missing. bpftrace counts the waits the kernel reported, as the oracle of how many there are.

use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use datasets::ArgValue;
use datasets::read::{ReadOptions, read_all};
use datasets::vocab::Mechanism;
use features::{FeatureKind, FeatureMatrix};
use test_support::machine;
use test_support::oracle::{Maps, Oracle};
use test_support::throttle::disk_of;
use tracer::{CollectOptions, Layer, LayerSelection, collect};

const READ: usize = 64 << 10;
const FILE: usize = 4 << 20;
/// Bytes a second the throttled reader may read: the file takes about a second.
const THROTTLE_BPS: u64 = 4 << 20;
const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A blkio cgroup, removed when the test ends however it ends.
struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Traces `dd` reading `file` with O_DIRECT, from inside `cgroup` when given.
fn trace(dir: &Path, name: &str, file: &Path, cgroup: Option<&Path>) -> FeatureMatrix {
    let dd = format!(
        "dd if={} of=/dev/null bs={READ} iflag=direct status=none",
        file.display()
    );
    let script = match cgroup {
        Some(cg) => format!("echo $$ > {}/cgroup.procs && exec {dd}", cg.display()),
        None => format!("exec {dd}"),
    };
    let output = dir.join(format!("{name}.pfw"));
    let mut opts = CollectOptions::command(&output, vec!["sh".into(), "-c".into(), script]);
    opts.layers = LayerSelection::only(&[Layer::Sys, Layer::Block, Layer::Sched, Layer::Iomap]);
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0), "{name}: dd failed");
    assert_eq!((summary.drops, summary.stack_errors), (0, 0), "{name}");
    let sched = summary.layers.iter().find(|l| l.layer == "sched").unwrap();
    assert_eq!(sched.with, ["kernel stacks"], "{name}: {sched:?}");
    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    features::from_events(&trace.events, &features::BuildOptions::default()).unwrap()
}

/// bpftrace counting the waits the kernel reports of the threads that read inode `ino` directly: each time such a
/// thread leaves the CPU uninterruptibly (D) and is switched back in, keyed by its kernel stack. Under load the kernel
/// now and then delivers a sched_switch to no BPF program at all (bpftrace misses the same one as dc-trace, and no
/// miss counter moves), so a read can have no wait in any trace: the waits dc-trace names are checked against this
/// count, not against the number of reads.
fn dio_waits(ino: u64) -> Oracle {
    Oracle::start(&format!(
        r#"BEGIN {{ printf("ready\n"); }}
tracepoint:iomap:iomap_dio_rw_begin /args->ino == {ino}/ {{ @reader[tid] = 1; }}
tracepoint:sched:sched_switch /@reader[args->prev_pid]/ {{
  if (args->prev_state == 2) {{ @stack[args->prev_pid] = kstack(8); @off[args->prev_pid] = 1; }}
  else {{ delete(@off[args->prev_pid]); }}
}}
tracepoint:sched:sched_switch /@off[args->next_pid]/ {{
  @waits[@stack[args->next_pid]] = count(); delete(@off[args->next_pid]);
}}"#
    ))
}

/// The waits in `__iomap_dio_rw` among bpftrace's.
fn waits_in_dio(maps: &Maps) -> usize {
    maps.get("@waits").map_or(0, |by_stack| {
        by_stack
            .iter()
            .filter(|(stack, _)| stack.contains("__iomap_dio_rw"))
            .map(|(_, n)| *n as usize)
            .sum()
    })
}

/// Per 64 KiB read: mean duration, and mean exclusive time in `block` and `sched`.
fn per_read(m: &FeatureMatrix) -> (usize, f64, f64, f64) {
    let rows: Vec<usize> = (0..m.op.len())
        .filter(|&i| m.op[i] == "read" && m.size[i] == Some(READ as i64))
        .collect();
    let mean =
        |v: &dyn Fn(usize) -> f64| rows.iter().map(|&i| v(i)).sum::<f64>() / rows.len() as f64;
    let excl = |layer: &str| {
        m.features
            .iter()
            .find(|c| c.kind == FeatureKind::ExclusiveNs && c.layer == layer)
            .map_or(0.0, |c| mean(&|i| c.values[i]))
    };
    (
        rows.len(),
        mean(&|i| m.dur_ns[i] as f64),
        excl("block"),
        excl("sched"),
    )
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_throttled_direct_read_waits_in_the_block_layer_not_in_sched() {
    let _machine = machine();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("direct.dat");
    let mut f = std::fs::File::create(&file).unwrap();
    f.write_all(&vec![0x5a; FILE]).unwrap();
    f.sync_all().unwrap();
    drop(f);

    let plain = per_read(&trace(dir.path(), "plain", &file, None));

    let cg = Cgroup(PathBuf::from(BLKIO).join(format!("dc-trace-offcpu-{}", std::process::id())));
    std::fs::create_dir(&cg.0).unwrap_or_else(|e| panic!("mkdir {}: {e}", cg.0.display()));
    std::fs::write(
        cg.0.join("blkio.throttle.read_bps_device"),
        format!("{} {THROTTLE_BPS}", disk_of(dir.path())),
    )
    .unwrap();
    let oracle = dio_waits(std::fs::metadata(&file).unwrap().ino());
    let m = trace(dir.path(), "throttled", &file, Some(&cg.0));
    let waits = waits_in_dio(&oracle.stop());
    let throttled = per_read(&m);

    let reads = FILE / READ;
    assert_eq!((plain.0, throttled.0), (reads, reads), "64 KiB reads");
    let added = throttled.1 - plain.1;
    let to_block = throttled.2 - plain.2;
    assert!(
        to_block >= 0.9 * added,
        "the throttle added {added:.0} ns a read; block got {to_block:.0} ns of it, sched {:.0} ns",
        throttled.3 - plain.3
    );
    let wait = m
        .features
        .iter()
        .find(|c| {
            c.kind == FeatureKind::TimeNs && c.layer == "block" && c.name.starts_with("offcpu_D@")
        })
        .map(|c| c.name.as_str());
    assert_eq!(wait, Some("offcpu_D@__iomap_dio_rw"), "the wait's function");

    let trace = read_all(&[dir.path().join("throttled.pfw")], ReadOptions::default()).unwrap();
    let named = trace.events.iter().filter(|e| {
        e.cat == "sched"
            && e.args.get("wait_fn") == Some(&ArgValue::Str("__iomap_dio_rw".into()))
            && e.args.get("wait_layer") == Some(&ArgValue::Str("block".into()))
    });
    assert_eq!(
        named.count(),
        waits,
        "every wait of a throttled read the kernel reported is named __iomap_dio_rw"
    );

    // Every function on a wait's stack gets the wait's time, by the kernel layer map's layer: a read's
    // `vfs::offcpu@vfs_read` is the sum of its thread's waits inside it whose stack holds vfs_read.
    let text = |e: &datasets::Event, key: &str| match e.args.get(key) {
        Some(ArgValue::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    let in_vfs_read: Vec<&datasets::Event> = trace
        .events
        .iter()
        .filter(|e| {
            let frames = text(e, "stack");
            let layers = text(e, "stack_layers");
            assert_eq!(
                frames.split(';').count(),
                layers.split(';').count(),
                "a layer for every frame: {frames} / {layers}"
            );
            frames
                .split(';')
                .zip(layers.split(';'))
                .any(|f| f == ("vfs_read", "vfs"))
        })
        .collect();
    assert!(in_vfs_read.len() >= waits, "waits under vfs_read");
    let column = m
        .features
        .iter()
        .find(|c| c.column == "vfs::offcpu@vfs_read")
        .expect("a vfs::offcpu@vfs_read column");
    for i in (0..m.op.len()).filter(|&i| m.op[i] == "read") {
        let (ts, end) = (m.ts_ns[i], m.ts_ns[i] + m.dur_ns[i]);
        let waited: u64 = in_vfs_read
            .iter()
            .filter(|e| e.tid == m.tid[i] && e.ts_ns >= ts && e.end_ns() <= end)
            .map(|e| e.dur_ns)
            .sum();
        assert_eq!(column.values[i], waited as f64, "read at {ts}");
    }
}

/// The refusal both stack users give when /proc/kallsyms names no address.
const NO_ADDRESSES: &str =
    "/proc/kallsyms has no address for `schedule` (empty, or hidden by kptr_restrict)";

/// Runs dc-trace with the off-CPU stacks and the on-CPU sampler over `sleep`, as a shell script
/// `prefix` leads that `launcher` runs; returns its summary.
fn collect_stacks(launcher: &[&str], prefix: &str) -> tracer::Summary {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("t.pfw");
    let summary = dir.path().join("summary.json");
    let status = std::process::Command::new(launcher[0])
        .args(&launcher[1..])
        .arg(format!(
            "{prefix}exec {} collect -o {} --summary-json {} --layers sys,sched,oncpu -- sleep 0.01",
            env!("CARGO_BIN_EXE_dc-trace"),
            output.display(),
            summary.display()
        ))
        .status()
        .unwrap();
    assert!(status.success(), "dc-trace: {status}");
    serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap()
}

/// Both stack users refused their stacks by name, and the run went on without them.
fn assert_stacks_refused(s: &tracer::Summary) {
    let layer = |name: &str| s.layers.iter().find(|l| l.layer == name).unwrap();
    let refused = |probe: &str| {
        vec![tracer::Refused {
            probe: probe.into(),
            mechanism: Mechanism::Kallsyms,
            reason: NO_ADDRESSES.into(),
        }]
    };
    let sched = layer("sched");
    assert_eq!(
        (sched.attached.as_slice(), sched.with.len()),
        (
            [
                "sched/sched_switch",
                "sched/sched_waking",
                "workqueue/workqueue_execute_start"
            ]
            .map(String::from)
            .as_slice(),
            0
        ),
        "no off-CPU stacks"
    );
    assert_eq!(sched.refused, refused("kernel stacks"));
    let oncpu = layer("oncpu");
    assert_eq!(
        (oncpu.attached.len(), oncpu.with.len()),
        (0, 0),
        "no sampler"
    );
    assert_eq!(oncpu.refused, refused("cpu-clock"));
    assert!(s.events_per_layer["sched"] > 0, "{:?}", s.events_per_layer);
    assert!(s.events_per_layer["sys"] > 0, "{:?}", s.events_per_layer);
    assert_eq!(s.events_per_layer.get("oncpu").copied().unwrap_or(0), 0);
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn an_empty_kallsyms_is_refused_by_name_and_the_run_goes_on() {
    let _machine = machine();
    // /dev/null over /proc/kallsyms, in a mount namespace of dc-trace's own.
    let s = collect_stacks(
        &["unshare", "--mount", "sh", "-c"],
        "mount --bind /dev/null /proc/kallsyms && ",
    );
    assert_stacks_refused(&s);
}

const KPTR_RESTRICT: &str = "/proc/sys/kernel/kptr_restrict";

/// kptr_restrict at 2 (kernel addresses read as zero, root included) for the whole machine,
/// put back as it was when dropped, however the test ends.
struct HiddenAddresses(String);

impl HiddenAddresses {
    fn new() -> HiddenAddresses {
        let was = std::fs::read_to_string(KPTR_RESTRICT).unwrap();
        std::fs::write(KPTR_RESTRICT, "2").unwrap_or_else(|e| panic!("{KPTR_RESTRICT}: {e}"));
        HiddenAddresses(was)
    }
}

impl Drop for HiddenAddresses {
    fn drop(&mut self) {
        let _ = std::fs::write(KPTR_RESTRICT, self.0.trim());
    }
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn kallsyms_hidden_by_kptr_restrict_is_refused_by_name_and_the_run_goes_on() {
    let _machine = machine();
    // Other test processes read kallsyms too: the addresses stay hidden for one short dc-trace run.
    let hidden = HiddenAddresses::new();
    let mut first = String::new();
    std::io::BufReader::new(std::fs::File::open("/proc/kallsyms").unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(
        first.starts_with("0000000000000000 "),
        "kptr_restrict=2 must hide addresses: {first}"
    );
    let s = collect_stacks(&["sh", "-c"], "");
    drop(hidden);
    assert_stacks_refused(&s);
}

/// Two processes of one job on one CPU, `yes | head`: each time `yes` fills the pipe and wakes `head`, `head` waits
/// for the CPU `yes` holds. Every such wait names `yes` as the CPU's last holder, as many times as bpftrace sees the
/// CPU pass from `yes` to `head` after `head` had left it; the holder is a process the trace holds.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn a_wait_for_a_cpu_names_the_task_that_held_it() {
    let _machine = machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw");
    let oracle = Oracle::start(
        r#"BEGIN { printf("ready\n"); }
tracepoint:sched:sched_switch /comm == "head"/ { @out[args->prev_pid] = 1; }
tracepoint:sched:sched_switch /comm == "yes" && @out[args->next_pid]/ { @held = count(); delete(@out[args->next_pid]); }
tracepoint:sched:sched_switch /comm != "yes" && @out[args->next_pid]/ { delete(@out[args->next_pid]); }"#,
    );
    let mut opts = CollectOptions::command(
        &output,
        [
            "taskset",
            "-c",
            "0",
            "sh",
            "-c",
            "yes | head -c 20000000 > /dev/null",
        ]
        .map(String::from)
        .to_vec(),
    );
    opts.layers = LayerSelection::only(&[Layer::Sys, Layer::Sched]);
    let summary = collect(&opts).expect("BPF must work on this machine");
    let maps = oracle.stop();
    assert_eq!((summary.exit_status, summary.drops), (Some(0), 0));
    let t = read_all(&[output], ReadOptions::default()).unwrap();
    // Each process as named by its exec (bpftrace's `comm` is the exec'd name too), and when.
    let named = |comm: &str| -> Vec<(u64, u64)> {
        let mut p: Vec<(u64, u64)> = (t.events.iter())
            .filter(|e| e.name == "thread_name" && e.args.name.as_deref() == Some(comm))
            .map(|e| (e.pid, e.ts_ns))
            .collect();
        p.dedup_by_key(|x| x.0);
        p
    };
    let (yes, head) = (named("yes"), named("head"));
    assert_eq!((yes.len(), head.len()), (1, 1), "{yes:?} {head:?}");
    let held: Vec<_> = (t.events.iter())
        .filter(|e| e.pid == head[0].0 && e.ts_ns >= head[0].1)
        .filter(|e| e.args.get("held_by_comm") == Some(&ArgValue::Str("yes".into())))
        .collect();
    for e in &held {
        assert_eq!(e.name, "offcpu_R", "{e:?}");
        assert_eq!(
            e.args.get("held_by_pid"),
            Some(&ArgValue::Int(yes[0].0 as i64)),
            "{e:?}"
        );
    }
    let want = maps
        .get("@held")
        .and_then(|m| m.values().next().copied())
        .unwrap_or(0);
    assert!(
        want > 100,
        "bpftrace saw the CPU pass from yes to head {want} times"
    );
    assert_eq!(held.len() as i64, want);
}
