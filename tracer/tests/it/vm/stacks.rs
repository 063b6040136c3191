//! Issue 27's proof against the exact view, on 6.12: one workload traced at once through the
//! kernel layer (kprobe_multi), off-CPU stacks (sched) and on-CPU samples (oncpu), so that every
//! figure the stacks give has its exact counterpart in the same trace. The guest runs with
//! `-icount` (see `Vm::icount`): with the host's clock, a busy host that deschedules QEMU adds
//! time to the exact intervals that no tick can land in.
//!
//! The probe set is a few functions each read, write and fsync calls once, and the functions the
//! waits sleep in, not the default set: a tick that fires while a kprobe program runs is dropped by
//! the kernel (`bpf_overflow_handler` returns while `bpf_prog_active` is held, and counts nothing),
//! so the samples miss the programs' own time, which the exact intervals of the functions around
//! them hold. With a probe per page that is much of a call; with a few probes a call it is small,
//! and the test takes it off the exact time, measured: `kernel.bpf_stats_enabled` times every run
//! of the kernel layer's program.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use datasets::{ArgValue, Event, Phase};
use features::matrix::{FeatureKind, FeatureMatrix};
use test_support::vm::collected::Collected;
use test_support::vm::{SERIES_6_12, Vm, work};

use super::{DC_TRACE, TMP, contains};

const TIMEOUT: Duration = Duration::from_secs(400);
const SAMPLE_HZ: u32 = 4999;
/// Standard errors the sampled time may be off by.
const SIGMAS: f64 = 4.0;
/// A (kind of call, function) is compared when the exact view expects this many samples in it.
const MIN_EXPECTED: f64 = 200.0;
/// Comparisons the test needs, so that it cannot pass on too few.
const MIN_COMPARED: usize = 10;
/// Functions that end by jumping into another (`return ext4_buffered_write_iter(...)` compiles to
/// a `jmp`), so that no frame of theirs is on the stack while the callee runs, though the return
/// hook still closes their interval when it returns: the stacks cannot see them (under 5% of the
/// samples their exact time expects, the test asserts) and their time shows in the callee's.
const TAIL_CALLERS: [&str; 2] = ["ext4_file_read_iter", "ext4_file_write_iter"];
/// Waits the test needs on the exact view's path.
const MIN_WAITS: usize = 20;
/// Waits in a traced wait function the test needs: each of the workload's six fsyncs waits for
/// its journal commit in `jbd2_log_wait_commit` (a direct I/O waits in `__iomap_dio_rw` only when
/// its bio has not completed by then, which under `-icount` varied from 1 of 64 to all).
const MIN_NAMED: usize = 6;

const PROBES: &str = r#"
[[layer]]
name = "vfs"
functions = ["^vfs_read$", "^vfs_write$", "^vfs_fsync_range$", "^rw_verify_area$"]

[[layer]]
name = "ext4"
functions = [
    "^ext4_file_read_iter$", "^ext4_file_write_iter$", "^ext4_buffered_write_iter$",
    "^ext4_sync_file$",
]

[[layer]]
name = "page_cache"
functions = [
    "^filemap_read$", "^generic_perform_write$", "^file_write_and_wait_range$",
    "^__filemap_fdatawait_range$", "^folio_wait_writeback$",
]

[[layer]]
name = "iomap"
functions = ["^iomap_dio_rw$", "^__iomap_dio_rw$"]

[[layer]]
name = "jbd2"
functions = ["^jbd2_complete_transaction$", "^jbd2_log_wait_commit$"]
"#;

/// Buffered writes and cached reads of 64 and 256 KiB (the copy functions dominate), then writes
/// that fsync and direct reads and writes, which wait.
const WORKLOAD: &str = "\
dd if=/dev/zero of=/data/s/f bs=256k count=128
for i in 1 2 3; do dd if=/data/s/f of=/dev/null bs=256k; done
for i in 1 2 3; do dd if=/data/s/f of=/dev/null bs=64k; done
dd if=/dev/zero of=/data/s/g bs=64k count=256
for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/data/s/h$i bs=64k count=32 conv=fsync; done
dd if=/data/s/f of=/dev/null bs=256k count=32 iflag=direct
dd if=/dev/zero of=/data/s/d bs=64k count=32 oflag=direct
cat /proc/$(pidof dc-trace)/fdinfo/* > /out/fdinfo
";
/// The kernel layer's layers in [`PROBES`].
const LAYERS: [&str; 5] = ["vfs", "ext4", "page_cache", "iomap", "jbd2"];

fn scenario() -> String {
    format!(
        "cat > /data/stacks.toml <<'EOF'\n{PROBES}EOF\n\
         cat > /data/work.sh <<'EOF'\n{WORKLOAD}EOF\n\
         mkdir -p /data/s\n\
         echo 1 > /proc/sys/kernel/bpf_stats_enabled\n\
         step stacks dc-trace collect --layers sys,sched,oncpu,kernel --kernel-probes kprobe-multi \
         --probes /data/stacks.toml --strict --sample-hz {SAMPLE_HZ} -o /out/stacks.pfw.gz \
         --summary-json /out/stacks.json -- sh /data/work.sh\n"
    )
}

/// What the kprobe program's runs took, by the kernel's count: (runs, ns).
struct ProgramRuns(f64, f64);

fn traced() -> (Collected, ProgramRuns) {
    let vm = Vm::new(SERIES_6_12, &scenario(), TIMEOUT)
        .map(|vm| vm.icount().binary(Path::new(DC_TRACE), "dc-trace"))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = (vm.run(&work(TMP, "initramfs-stacks"), &work(TMP, "stacks-6.12")))
        .unwrap_or_else(|e| panic!("kernel test VM failed:\n{e}"));
    let step = run.step("stacks").unwrap();
    assert_eq!(step.rc, 0, "{}", step.stderr);
    eprintln!(
        "VM {}: traced in {:.1} s:\n{}",
        run.kernel.release,
        run.wall.as_secs_f64(),
        step.stderr
    );
    let c = Collected::load(
        &format!("VM {}", run.kernel.release),
        &run.out.join("stacks.pfw.gz"),
        &run.out.join("stacks.json"),
        &step.stderr,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let fdinfo = std::fs::read_to_string(run.out.join("fdinfo")).unwrap();
    (c, kprobe_runs(&fdinfo))
}

/// The runs of dc-trace's kprobe programs (`prog_type` 2; the kernel layer's only, since no
/// uprobe is traced) and their time, from its fds' `/proc/PID/fdinfo`.
fn kprobe_runs(fdinfo: &str) -> ProgramRuns {
    let mut runs = ProgramRuns(0.0, 0.0);
    for fd in fdinfo.split("pos:").skip(1) {
        let field = |name: &str| {
            (fd.lines())
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(|v| v.trim().parse::<f64>().unwrap())
        };
        if field("prog_type") == Some(2.0) {
            runs.0 += field("run_cnt").unwrap();
            runs.1 += field("run_time_ns").unwrap();
        }
    }
    assert!(
        runs.0 > 0.0 && runs.1 > 0.0,
        "no timed kprobe runs in:\n{fdinfo}"
    );
    runs
}

fn values<'m>(m: &'m FeatureMatrix, column: &str) -> Option<&'m [f64]> {
    m.column(column).map(|c| c.values.as_slice())
}

#[test]
fn samples_agree_with_the_kprobe_view_and_waits_lie_on_its_path_on_6_12() {
    let _machine = test_support::machine();
    let (c, runs) = traced();
    assert_eq!(c.mechanism("kernel"), "kprobe_multi", "{}", c.text);
    assert_eq!(c.summary["drops"], 0, "{}", c.text);
    let opts = features::BuildOptions {
        counts: true,
        file_regex: Some(regex::Regex::new("^/data/s/").unwrap()),
        ..features::BuildOptions::default()
    };
    let m = features::from_events(&c.events, &opts).expect("the VM's trace builds features");
    let period = sample_period(&c.events);
    let per_run = runs.1 / runs.0;
    eprintln!(
        "{}: sample period {period} ns; the kprobe program ran {} times, {per_run:.0} ns a run",
        c.place, runs.0
    );
    on_cpu_agrees(&c, &m, period, &nested_runs(&c, &m), per_run);
    waits_lie_on_the_exact_path(&c);
}

/// Per row and function, the kprobe program runs inside that function's intervals: an entry and a
/// return for each traced function call nested in it.
fn nested_runs(c: &Collected, m: &FeatureMatrix) -> HashMap<(usize, String), f64> {
    let rows: HashMap<(u64, u64), usize> = (0..m.n_rows())
        .map(|r| ((m.tid[r], m.ts_ns[r]), r))
        .collect();
    let calls = c.of_layer("sys");
    let mut kernel = c.of_layers(&LAYERS);
    kernel.sort_by_key(|k| (k.tid, k.ts_ns, std::cmp::Reverse(k.end_ns())));
    let mut out = HashMap::new();
    for (i, k) in kernel.iter().enumerate() {
        let Some(row) = (calls.iter())
            .find(|s| contains(s, k))
            .and_then(|s| rows.get(&(s.tid, s.ts_ns)))
        else {
            continue;
        };
        let inside = kernel[i + 1..]
            .iter()
            .take_while(|j| j.tid == k.tid && j.ts_ns <= k.end_ns())
            .filter(|j| contains(k, j))
            .count();
        *out.entry((*row, k.name.to_string())).or_default() += 2.0 * inside as f64;
    }
    out
}

fn sample_period(events: &[Event]) -> f64 {
    let e = (events.iter())
        .find(|e| e.cat == "oncpu" && e.name == "sample")
        .expect("on-CPU samples in the trace");
    match e.args.get("period_ns") {
        Some(ArgValue::Int(p)) => *p as f64,
        other => panic!("period_ns {other:?}"),
    }
}

/// Per kind of call (op, size, O_DIRECT), over the calls that never left the CPU, each kernel
/// function's exact inclusive time against its samples × period.
///
/// A CPU-clock tick comes every period P of the CPU's time, at a phase unrelated to the calls, so
/// an interval of d ns holds ⌊d/P⌋ or ⌈d/P⌉ ticks: its count's variance is f(1−f) ≤ min(d/P, 1/4)
/// (f the fractional part of d/P), never more than a Poisson count of mean d/P. Summed over the
/// calls, a function with exact time E expects E/P samples with variance at most E/P: the sampled
/// time K·P has a standard error of at most √(E·P), and the test allows SIGMAS of them. Only
/// functions whose exact time expects MIN_EXPECTED samples or more are compared (chosen by the
/// exact view, not by the samples, so a function the sampler misses is a failure).
fn on_cpu_agrees(
    c: &Collected,
    m: &FeatureMatrix,
    period: f64,
    nested: &HashMap<(usize, String), f64>,
    per_run: f64,
) {
    let off_cpu: Vec<&[f64]> = (m.features.iter())
        .filter(|f| f.kind == FeatureKind::TimeNs && f.name.contains("offcpu"))
        .map(|f| f.values.as_slice())
        .collect();
    let mut kinds: BTreeMap<(String, Option<i64>, Option<bool>), Vec<usize>> = BTreeMap::new();
    for row in 0..m.n_rows() {
        if off_cpu.iter().all(|v| v[row] == 0.0) {
            let kind = (m.op[row].clone(), m.size[row], m.direct[row]);
            kinds.entry(kind).or_default().push(row);
        }
    }
    let kernel: Vec<(&str, &str)> = (m.features.iter())
        .filter(|f| f.kind == FeatureKind::TimeNs && !f.name.contains('@'))
        .filter(|f| !["sys", "sched", "oncpu"].contains(&f.layer.as_str()))
        .map(|f| (f.layer.as_str(), f.name.as_str()))
        .collect();
    let mut compared = 0;
    let mut worst: f64 = 0.0;
    let mut failed = Vec::new();
    for ((op, size, direct), rows) in &kinds {
        for &(layer, f) in &kernel {
            let interval: f64 = values(m, &format!("{layer}::{f}"))
                .map(|v| rows.iter().map(|&r| v[r]).sum())
                .unwrap_or(0.0);
            let runs: f64 = (rows.iter())
                .filter_map(|&r| nested.get(&(r, f.to_owned())))
                .sum();
            let exact = interval - runs * per_run;
            let expected = exact / period;
            let samples: f64 = values(m, &format!("count::{layer}::oncpu@{f}"))
                .map(|v| rows.iter().map(|&r| v[r]).sum())
                .unwrap_or(0.0);
            let sampled = samples * period;
            if interval == 0.0 && samples == 0.0 {
                continue;
            }
            let calls = rows.len() as f64;
            let sigma = (exact * period).sqrt();
            let line = format!(
                "{op} {size:?} direct {direct:?} ({} calls): {layer}::{f}: exact {:.1} µs a call \
                 ({:.1} µs less {:.1} nested program runs), sampled {:.1} µs ({samples} samples, \
                 {expected:.0} expected), off by {:.2} σ",
                rows.len(),
                exact / calls / 1e3,
                interval / calls / 1e3,
                runs / calls,
                sampled / calls / 1e3,
                (sampled - exact) / sigma,
            );
            eprintln!("  {line}");
            if expected < MIN_EXPECTED {
                continue;
            }
            if TAIL_CALLERS.contains(&f) {
                if samples > 0.05 * expected {
                    failed.push(format!("{line}: seen on stacks though it tail-calls"));
                }
                continue;
            }
            compared += 1;
            worst = worst.max((sampled - exact).abs() / sigma);
            if (sampled - exact).abs() > SIGMAS * sigma {
                failed.push(line);
            }
        }
    }
    eprintln!(
        "{}: {compared} (kind of call, function) pairs with ≥ {MIN_EXPECTED} expected samples \
         compared; worst {worst:.2} σ (allowed {SIGMAS})",
        c.place
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(compared >= MIN_COMPARED, "{compared} compared");
}

/// Each off-CPU wait inside a traced call, with its stack, against the exact view's call path at
/// that moment: the kernel-function intervals of the same thread that hold the wait. The path is
/// not empty; every traced function on the stack is on it (the thread slept inside that call, so
/// its probe saw it enter and not yet return); its innermost function is on the stack (the path
/// may also hold a function that tail-called, whose frame is gone, but never as its innermost);
/// and the wait's function, when the probe set traces it, is on it.
fn waits_lie_on_the_exact_path(c: &Collected) {
    let kernel: Vec<&Event> = c.of_layers(&LAYERS);
    let traced: Vec<&str> = c.attached("kernel");
    let calls = c.of_layer("sys");
    let (mut checked, mut named) = (0, 0);
    let mut by_fn: BTreeMap<String, usize> = BTreeMap::new();
    for w in (c.events.iter()).filter(|e| e.cat == "sched" && e.ph == Phase::Complete) {
        let Some(stack) = text(w, "stack") else {
            continue;
        };
        if !calls.iter().any(|s| contains(s, w)) {
            continue;
        }
        let stack: Vec<&str> = stack.split(';').collect();
        let wait_fn = text(w, "wait_fn").unwrap_or("");
        let mut path: Vec<&&Event> = kernel.iter().filter(|k| contains(k, w)).collect();
        path.sort_by_key(|k| (k.ts_ns, std::cmp::Reverse(k.end_ns())));
        let names: Vec<&str> = path.iter().map(|k| k.name.as_str()).collect();
        let innermost = names.last().unwrap_or_else(|| {
            panic!(
                "{}: a wait in {wait_fn} outside every traced function: {w:?}",
                c.place
            )
        });
        assert!(
            stack.contains(innermost),
            "{}: the wait's stack {stack:?} lacks {innermost}, the innermost of {names:?}",
            c.place
        );
        for f in stack.iter().filter(|f| traced.contains(f)) {
            assert!(
                names.contains(f),
                "{}: {f} of {stack:?} not in {names:?}",
                c.place
            );
        }
        if traced.contains(&wait_fn) {
            assert!(
                names.contains(&wait_fn),
                "{}: {wait_fn} not in {names:?}",
                c.place
            );
            named += 1;
        }
        *by_fn.entry(format!("{}@{wait_fn}", w.name)).or_default() += 1;
        checked += 1;
    }
    eprintln!(
        "{}: {checked} waits inside traced calls on the exact path, {named} of them in a traced \
         wait function: {by_fn:?}",
        c.place
    );
    assert!(checked >= MIN_WAITS, "{checked} waits");
    assert!(named >= MIN_NAMED, "{named} waits in a traced function");
}

fn text<'e>(e: &'e Event, key: &str) -> Option<&'e str> {
    match e.args.get(key) {
        Some(ArgValue::Str(s)) => Some(s.as_str()),
        _ => None,
    }
}
