//! Kernel functions at scale, on both VM kernels: Debian's 6.1 (fentry, no kprobe_multi) and
//! 6.12 (CONFIG_FPROBE: kprobe_multi). Each boot discovers this kernel's probe set
//! (`probes --discover`), traces the workload with the shipped default probe set (over a thousand
//! functions) through kprobe_multi, and with a discovered set of the VFS and ext4 file functions
//! through fentry (one trampoline update per function end, each waiting for the kernel: 53 ms
//! to attach and 217 ms to detach a function under TCG, so a thousand would take minutes), and
//! prints `kernel functions attached: N in X ms (mechanism)`. On 6.12 a longer run of the workload
//! through the default probe set is brought back, and its vfs functions ranked on the host. The
//! two kernels boot in parallel (one QEMU thread each).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use test_support::vm::collected::Collected;
use test_support::vm::{SERIES_6_1, SERIES_6_12, Vm, VmRun, work};

use super::{DC_TRACE, TMP};
use crate::TESTLOAD;

const TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_SET: &str = include_str!("../../../src/layers/probesets/default.toml");
const BLOCKS: usize = 4;
const BLOCK: usize = 4096;

/// The probe set each `--kernel-probes` value traces the workload with, and more flags: the
/// discovered set must attach whole (`--strict`); the shipped one has families some kernels lack.
const RUNS: [(&str, &str, &str); 2] = [
    ("kprobe-multi", "/data/default.toml", ""),
    ("fentry", "/data/files.toml", "--strict"),
];
/// The ranked run: the workload this many times over, for enough calls to hold some out.
const RANK_LOOPS: usize = 12;
/// Function families of storage, memory, networking, drivers and the kernel's own machinery:
/// DataCrumbs' scale (8,723 probes), discovered and traced whole on 6.12.
const WIDE: &str = "'^(vfs|ext4|filemap|folio|page|blk|bio|block|iomap|jbd2|mpage|writeback|submit|\
    generic|file|do_|ksys|__x64_sys|d_|dput|inode|security|mnt|path|lookup|fs|seq|kernfs|proc|\
    sysfs|shmem|mm|vm|mem|lru|swap|rmap|pte|pmd|anon|tlb|flush|tcp|udp|sock|net|skb|ip_|task|irq|\
    timer|hrtimer|crypto|pci|usb|acpi|virtio|scsi|ata|dev|driver|kobject|sysctl|cgroup|perf|\
    bpf_map|ring_buffer|trace_|audit|key|sig|pipe|epoll|eventfd|futex|posix|tty|serial|input|\
    char|misc|module|kthread|work|queue)'";

fn scenario(series: &str) -> String {
    let mut s = format!(
        "cat > /data/default.toml <<'EOF'\n{DEFAULT_SET}EOF\n\
         step filter_functions cat /sys/kernel/tracing/available_filter_functions\n\
         step discover dc-trace probes --discover\n\
         step discover_files dc-trace probes --discover ^vfs_ ^ext4_file_\n\
         cp /out/discover_files/stdout /data/files.toml\n"
    );
    for (m, set, flags) in RUNS {
        s.push_str(&format!(
            "mkdir -p /data/{m}\nstep {m} dc-trace collect --layers sys,kernel --kernel-probes {m} \
             --probes {set} {flags} -o /out/{m}.pfw.gz --summary-json /out/{m}.json \
             -- dc-trace-testload /data/{m} {BLOCKS} {BLOCK}\n"
        ));
    }
    if series == SERIES_6_12 {
        s.push_str(&format!(
            "mkdir -p /data/rank\nstep rank dc-trace collect --layers sys,kernel --kernel-probes \
             kprobe-multi --probes /data/default.toml -o /out/rank.pfw.gz --summary-json /out/rank.json \
             -- dc-trace-testload /data/rank {BLOCKS} {BLOCK} --loop {RANK_LOOPS}\n"
        ));
        // After the ranked run: the kernel frees a wide link's fprobe in the background.
        s.push_str(&format!(
            "step discover_wide dc-trace probes --discover {WIDE}\n\
             cp /out/discover_wide/stdout /data/wide.toml\n\
             mkdir -p /data/wide\nstep wide dc-trace collect --layers sys,kernel --kernel-probes \
             kprobe-multi --probes /data/wide.toml --strict -o /out/wide.pfw.gz --summary-json \
             /out/wide.json -- dc-trace-testload /data/wide {BLOCKS} {BLOCK}\n"
        ));
    }
    s
}

struct Booted {
    run: VmRun,
    runs: BTreeMap<&'static str, Collected>,
}

fn boot(series: &str) -> Result<Booted, String> {
    let vm = Vm::new(series, &scenario(series), TIMEOUT)?
        .binary(Path::new(DC_TRACE), "dc-trace")
        .binary(Path::new(TESTLOAD), "dc-trace-testload");
    let tag = series.trim_end_matches('.');
    let run = vm.run(
        &work(TMP, &format!("initramfs-{tag}")),
        &work(TMP, &format!("scale-{tag}")),
    )?;
    eprintln!(
        "vm: kernel {} ran the scale scenario in {:.1} s",
        run.kernel.release,
        run.wall.as_secs_f64()
    );
    let place = format!("VM {}", run.kernel.release);
    let mut runs = BTreeMap::new();
    let only_6_12 = if series == SERIES_6_12 {
        &["rank", "wide"][..]
    } else {
        &[]
    };
    for &m in RUNS.iter().map(|r| &r.0).chain(only_6_12) {
        let step = run.step(m)?;
        if step.rc != 0 {
            return Err(format!(
                "{place}: dc-trace ({m}) exited with {}:\n{}",
                step.rc, step.stderr
            ));
        }
        let c = Collected::load(
            &place,
            &run.out.join(format!("{m}.pfw.gz")),
            &run.out.join(format!("{m}.json")),
            &step.stderr,
        )?;
        runs.insert(m, c);
    }
    Ok(Booted { run, runs })
}

static VM_6_1: LazyLock<Result<Booted, String>> = LazyLock::new(|| boot(SERIES_6_1));
static VM_6_12: LazyLock<Result<Booted, String>> = LazyLock::new(|| boot(SERIES_6_12));

fn booted(vm: &'static LazyLock<Result<Booted, String>>) -> &'static Booted {
    vm.as_ref()
        .unwrap_or_else(|e| panic!("kernel test VM failed:\n{e}"))
}

/// Function → layer, of the probe set step `step` discovered.
fn discovered(b: &Booted, step: &str) -> BTreeMap<String, String> {
    let text = b.run.step(step).unwrap().stdout;
    let value: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut out = BTreeMap::new();
    for l in value["layer"].as_array().unwrap() {
        let layer = l["name"].as_str().unwrap();
        for f in l["functions"].as_array().unwrap() {
            out.insert(f.as_str().unwrap().to_owned(), layer.to_owned());
        }
    }
    out
}

/// Prints the attach line and returns the kernel layer's attached functions.
fn attached<'a>(c: &'a Collected, mechanism: &str) -> Vec<&'a str> {
    let t = &c.layer("kernel")["timing"];
    let n = c.attached("kernel").len();
    let ms = |field: &str| t[field].as_f64().unwrap_or(f64::NAN) / 1e3;
    eprintln!(
        "{}: kernel functions attached: {n} in {:.1} ms ({mechanism}, {} links); detached in \
         {:.1} ms; resolving them took {:.1} ms before",
        c.place,
        ms("attach_us"),
        t["links"],
        ms("detach_us"),
        ms("prepare_us"),
    );
    assert_eq!(c.mechanism("kernel"), mechanism, "{}", c.text);
    assert_eq!(t["functions"], n, "{}", c.text);
    c.attached("kernel")
}

/// Each pread64 of the workload's raw.dat holds vfs_read and ext4_file_read_iter, named from the
/// link's cookie (kprobe_multi) or the trampoline's ip (fentry) and filed by the probe set: a
/// kprobe session tells entry from return right.
fn check_reads(c: &Collected, m: &str) {
    let preads = c.calls("sys", "pread64", &format!("/data/{m}/raw.dat"));
    assert_eq!(preads.len(), 2 * BLOCKS, "{}: {m}", c.place);
    for p in preads {
        let inner: Vec<(String, String)> = c
            .inside_any(p, &["vfs", "ext4"])
            .into_iter()
            .map(|e| (e.cat.to_string(), e.name.to_string()))
            .collect();
        for want in [("vfs", "vfs_read"), ("ext4", "ext4_file_read_iter")] {
            let want = (want.0.to_owned(), want.1.to_owned());
            assert_eq!(
                inner.iter().filter(|e| **e == want).count(),
                1,
                "{}: {m}: {want:?} inside {p:?}: {inner:?}",
                c.place
            );
        }
    }
}

#[test]
fn discovery_lists_only_functions_the_kernel_can_attach_by_layer() {
    let _machine = test_support::machine();
    for b in [booted(&VM_6_1), booted(&VM_6_12)] {
        let filter = b.run.step("filter_functions").unwrap().stdout;
        let filter: BTreeSet<&str> = filter.lines().filter_map(|l| l.split(' ').next()).collect();
        let found = discovered(b, "discover");
        let layers: BTreeSet<&str> = found.values().map(String::as_str).collect();
        for layer in ["vfs", "ext4", "page_cache", "block", "jbd2", "iomap"] {
            assert!(
                layers.contains(layer),
                "{}: {layers:?}",
                b.run.kernel.release
            );
        }
        for f in found.keys() {
            assert!(
                filter.contains(f.as_str()),
                "{f} is not in available_filter_functions"
            );
        }
        let files = discovered(b, "discover_files");
        assert!(
            files
                .iter()
                .all(|(f, l)| (f.starts_with("vfs_") && l == "vfs")
                    || (f.starts_with("ext4_file_") && l == "ext4")),
            "{files:?}"
        );
        for f in [
            "vfs_read",
            "vfs_write",
            "ext4_file_read_iter",
            "ext4_file_write_iter",
        ] {
            assert!(files.contains_key(f), "{f}: {files:?}");
        }
        eprintln!(
            "VM {}: discovered {} functions in {} layers",
            b.run.kernel.release,
            found.len(),
            layers.len()
        );
    }
}

#[test]
fn kprobe_multi_attaches_the_default_probe_set_on_6_12_with_a_cookie_per_function() {
    let _machine = test_support::machine();
    let b = booted(&VM_6_12);
    let c = &b.runs["kprobe-multi"];
    let found = discovered(b, "discover");
    let got = attached(c, "kprobe_multi");
    assert!(got.len() >= 1000, "{}: {} functions", c.place, got.len());
    // 6.12 has kprobe sessions: both ends through one link, one ftrace registration.
    assert_eq!(c.layer("kernel")["timing"]["links"], 1, "{}", c.text);
    for f in &got {
        assert!(found.contains_key(*f), "{f} attached but not discovered");
    }
    check_reads(c, "kprobe-multi");
}

/// Over ten thousand discovered functions attach whole (`--strict`) through one kprobe session
/// link on 6.12, among them static functions that share a name, each at its own address where
/// ftrace can patch it (one it cannot failed the whole link before).
#[test]
fn kprobe_multi_attaches_over_ten_thousand_discovered_functions_whole_on_6_12() {
    let _machine = test_support::machine();
    let b = booted(&VM_6_12);
    let c = &b.runs["wide"];
    let got = attached(c, "kprobe_multi");
    assert!(got.len() >= 10_000, "{}: {} functions", c.place, got.len());
    assert_eq!(c.refused("kernel"), [], "{}", c.text);
    assert_eq!(c.layer("kernel")["timing"]["links"], 1, "{}", c.text);
    assert_eq!(
        got.into_iter().collect::<BTreeSet<&str>>(),
        discovered(b, "discover_wide")
            .keys()
            .map(String::as_str)
            .collect()
    );
    check_reads(c, "wide");
}

/// The discovered set, under `--strict`, attaches whole through fentry on both kernels.
#[test]
fn fentry_attaches_a_discovered_probe_set_whole_on_both_kernels() {
    let _machine = test_support::machine();
    for b in [booted(&VM_6_1), booted(&VM_6_12)] {
        let c = &b.runs["fentry"];
        let got: BTreeSet<&str> = attached(c, "fentry").into_iter().collect();
        assert_eq!(c.refused("kernel"), [], "{}", c.text);
        assert_eq!(
            c.layer("kernel")["timing"]["links"],
            2 * got.len(),
            "{}",
            c.text
        );
        let files = discovered(b, "discover_files");
        assert_eq!(got, files.keys().map(String::as_str).collect());
        check_reads(c, "fentry");
    }
}

/// Issue 19's ranking: every system call of the workload (`dc-features build --rows sys`), traced
/// through the default probe set on 6.12, ranks the vfs functions that explain its time with at
/// least 30 of them in the model's input, cut at 95% of the importance. (Its reads and writes alone, by
/// bandwidth, meet 13 vfs functions: this workload's transfers take few paths through the VFS.)
#[test]
fn the_default_probe_sets_vfs_functions_rank_on_6_12() {
    let _machine = test_support::machine();
    let c = &booted(&VM_6_12).runs["rank"];
    attached(c, "kprobe_multi");
    let every_call = features::BuildOptions {
        ops: Vec::new(),
        ..features::BuildOptions::default()
    };
    let matrix = features::from_events(&c.events, &every_call)
        .expect("the VM's trace builds a feature matrix");
    let opts = models::RankOptions {
        layers: vec!["vfs".to_owned()],
        target: "duration".to_owned(),
        ..models::RankOptions::default()
    };
    let report = models::rank(&matrix, &opts).expect("the vfs layer ranks");
    let json = work(TMP, "scale-6.12").join("rank-vfs.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    let vfs = &report.layers[0];
    // The model's input: every vfs function that varies over the calls. Near-duplicates (|r| > 0.95)
    // are fitted through one leader per group, listed beside it.
    let functions: Vec<&str> = (vfs.correlation.names.iter())
        .map(String::as_str)
        .filter(|f| f.starts_with("vfs::"))
        .collect();
    let leaders = (vfs.importances.iter())
        .filter(|i| i.feature.starts_with("vfs::"))
        .count();
    eprintln!(
        "{}: {} rows; vfs model: {} functions, {leaders} fitted as leaders of their near-duplicate \
         groups, {} ranked to 95%, held-out R² {:.3} ({})",
        c.place,
        vfs.rows,
        functions.len(),
        vfs.ranking.len(),
        vfs.gbm.quality.test_r2,
        json.display()
    );
    assert!(functions.len() >= 30, "{}: {functions:?}", c.place);
    let cut: Vec<f64> = vfs.ranking.iter().map(|r| r.cumulative_share).collect();
    assert!(cut.last().is_some_and(|&c| c >= 0.95 - 1e-12), "{cut:?}");
    assert!(cut.iter().rev().skip(1).all(|&c| c < 0.95), "{cut:?}");
}

#[test]
fn kprobe_multi_is_refused_on_6_1_with_the_kernels_reason() {
    let _machine = test_support::machine();
    let c = &booted(&VM_6_1).runs["kprobe-multi"];
    assert_eq!(c.mechanism("kernel"), "none", "{}", c.text);
    let refused = c.refused("kernel");
    assert!(!refused.is_empty());
    for (_, m, why) in refused {
        assert!(
            m == "probes" || (m == "kprobe_multi" && why.contains("Operation not supported")),
            "{}: {m}: {why}",
            c.place
        );
    }
}

/// This host refuses kprobes and fentry and hides available_filter_functions: a probe set is
/// refused with the reason and the run goes on, unless `--strict`.
#[test]
fn on_the_host_a_probe_set_is_refused_with_the_reason_and_the_run_goes_on() {
    let _machine = test_support::machine();
    let set = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/layers/probesets/default.toml");
    let dir = tempfile::tempdir().unwrap();
    let run = |strict: bool| {
        let mut cmd = std::process::Command::new(DC_TRACE);
        cmd.args(["collect", "--layers", "sys,kernel", "--probes"])
            .arg(&set)
            .arg("-o")
            .arg(dir.path().join(format!("t{strict}.pfw.gz")))
            .arg("--summary-json")
            .arg(dir.path().join(format!("t{strict}.json")));
        if strict {
            cmd.arg("--strict");
        }
        cmd.args(["--", "true"]).output().unwrap()
    };
    let out = run(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let c = Collected::load(
        "host",
        &dir.path().join("tfalse.pfw.gz"),
        &dir.path().join("tfalse.json"),
        &stderr,
    )
    .unwrap();
    assert_eq!(c.mechanism("kernel"), "none", "{stderr}");
    let refused = c.refused("kernel");
    let want = format!("{}: no function can attach: ", set.display());
    assert!(
        matches!(refused[..], [("probe set", "probes", why)]
            if why.starts_with(&want) && why.contains("available_filter_functions")),
        "{refused:?}"
    );
    let strict = run(true);
    assert_eq!(strict.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(
        stderr.starts_with(&format!("dc-trace: {}: reading ", set.display())),
        "{stderr}"
    );
}
